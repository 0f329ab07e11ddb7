package crawl

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"storecrawl/worker/appstore"
	"storecrawl/worker/d1"
	"storecrawl/worker/enrichment"
	"storecrawl/worker/events"
	"storecrawl/worker/ratelimit"
	"storecrawl/worker/registry"
	"storecrawl/worker/upstream"
)

// dueTierSQL is one existence check: served by idx_category_scans_due_at, it
// reads at most one row.
const dueTierSQL = `SELECT 1 FROM category_scans WHERE tier = ? AND COALESCE(last_scanned_at, '') < ? LIMIT 1`

// nextCategorySQL is the most overdue category of a tier (NULLs, never
// scanned, sort first), also from idx_category_scans_due_at.
const nextCategorySQL = `SELECT genre_id, name FROM category_scans
WHERE tier = ? AND COALESCE(last_scanned_at, '') < ?
ORDER BY COALESCE(last_scanned_at, '') LIMIT 1`

// fillDueSQL is the ranking-fill existence check: served by the partial
// index idx_app_registry_unfilled (migrations/0026), it reads at most one row.
// (Its ORDER BY names the index's key: without statistics the planner would
// otherwise walk idx_app_registry_enriched, every enriched app.)
const fillDueSQL = `SELECT 1 FROM app_registry
WHERE enrichment_source = 'itunes+store' AND rankings_filled_at IS NULL ORDER BY enriched_at LIMIT 1`

// fillCandidatesSQL picks the enriched apps never filled (or renamed
// since), longest enriched first, from the same index: it reads the rows
// it returns.
const fillCandidatesSQL = `SELECT track_id, COALESCE(name, '') AS name, COALESCE(subtitle, '') AS subtitle,
  COALESCE(developer_id, 0) AS developer_id FROM app_registry
WHERE enrichment_source = 'itunes+store' AND rankings_filled_at IS NULL
ORDER BY enriched_at LIMIT ?`

// HotQueries are the crawl cycle's reads.
func HotQueries() []d1.NamedQuery {
	fillMarks := registry.MarkFilled(`[100000001,100000002]`, "2026-01-01T00:00:00.000Z")
	return append([]d1.NamedQuery{
		{Name: "due tier check", SQL: dueTierSQL, Args: []any{"high", "2026-01-01T00:00:00.000Z"}},
		{Name: "next category", SQL: nextCategorySQL, Args: []any{"high", "2026-01-01T00:00:00.000Z"}},
		{Name: "developer portfolios due", SQL: enrichment.PortfolioDueSQL, Args: []any{PortfolioLookupsPerCycle}},
		{Name: "portfolio apps known", SQL: knownCountSQL, Args: []any{`[100000001,100000002]`}},
		{Name: "unlooked apps", SQL: unlookedSQL, Args: []any{100000001, MaxDiscoveryLookupsPerCycle * DiscoveryLookupIDs}},
		{Name: "ranking fill check", SQL: fillDueSQL,
			Bounded: "LIMIT 1: the first entry of the partial index idx_app_registry_unfilled"},
		{Name: "ranking fill candidates", SQL: fillCandidatesSQL, Args: []any{RankingFillApps},
			Bounded: "the head of the partial index idx_app_registry_unfilled (never-filled enriched apps) in enriched order, stopped by its LIMIT (RankingFillApps); each app read is filled and leaves the index"},
		// The fill's writes (explained, not run).
		{Name: "ranking fill keywords", SQL: fillKeywordsSQL(), Args: []any{`[["budget",100000001],["budget planner",100000001]]`}},
		{Name: "ranking fill marks", SQL: fillMarks.SQL, Args: fillMarks.Args},
		// A search's writes (explained, not run): its rankings in one
		// statement, the rows of apps gone.
		{Name: "search rankings", SQL: rankingsSQL, Args: []any{"budget", "2026-01-01T00:00:00.000Z", `[[100000001,1],[100000002,2]]`}},
		{Name: "search rankings gone", SQL: rankingsGoneSQL, Args: []any{"budget", `[100000001,100000002]`}},
	}, append(steerHotQueries(), HintHotQueries()...)...)
}

func cutoff(now time.Time, age time.Duration) string { return d1.Time(now.Add(-age)) }

// D1Store is the crawl's side of D1.
type D1Store struct {
	DB *d1.DB
}

type exists []struct {
	One int `json:"1"`
}

// Gaps runs the existence checks (one row read each at most) in one
// parallel round.
func (s D1Store) Gaps(ctx context.Context, now time.Time) (Gaps, error) {
	type check struct {
		name string // a tier, "keywords" or "fill"
		ok   bool
		// waiting: the keyword check found keywords to promote.
		waiting bool
		err     error
	}
	checks := len(Tiers) + 2
	ch := make(chan check, checks)
	ask := func(name, q string, args ...any) {
		var rows exists
		err := s.DB.Query(ctx, &rows, q, args...)
		ch <- check{name: name, ok: len(rows) > 0, err: err}
	}
	for _, t := range Tiers {
		go ask(t.Name, dueTierSQL, t.Name, cutoff(now, t.Rescan))
	}
	go func() {
		var rows []struct {
			Due     int `json:"due"`
			Waiting int `json:"waiting"`
		}
		err := s.DB.Query(ctx, &rows, keywordGapSQL, d1.Time(now))
		c := check{name: "keywords", err: err}
		if len(rows) > 0 {
			c.ok, c.waiting = rows[0].Due == 1, rows[0].Waiting == 1
		}
		ch <- c
	}()
	go ask("fill", fillDueSQL)
	g := Gaps{Tiers: map[string]bool{}}
	var firstErr error
	for range checks {
		c := <-ch
		if c.err != nil && firstErr == nil {
			firstErr = c.err
		}
		switch c.name {
		case "keywords":
			g.DueKeywords, g.KeywordsWaiting = c.ok, c.waiting
		case "fill":
			g.RankingFill = c.ok
		default:
			g.Tiers[c.name] = c.ok
		}
	}
	return g, firstErr
}

// PickKeywords implements Store: the best n of the pending and the due
// keywords by value (a keyword in both sets once).
func (s D1Store) PickKeywords(ctx context.Context, n int, slow Slow) ([]string, error) {
	var rows []struct {
		Keyword string `json:"keyword"`
	}
	pending, due := n, n
	if slow.FirstSearches {
		pending = 0
	}
	if slow.ReSearches {
		due = 0
	}
	if err := s.DB.Query(ctx, &rows, pickSQL, n, pending, due); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	out := make([]string, 0, len(rows))
	for _, r := range rows {
		if !seen[r.Keyword] {
			seen[r.Keyword] = true
			out = append(out, r.Keyword)
		}
	}
	return out, nil
}

// SaveRankings implements Store.
func (s D1Store) SaveRankings(ctx context.Context, keyword string, apps []appstore.App, now time.Time) error {
	_, err := s.DB.Exec(ctx, RankingStatements(keyword, apps, now)...)
	return err
}

// NextCategory implements Store.
func (s D1Store) NextCategory(ctx context.Context, tier string, now time.Time) (int, string, error) {
	rescan := Tiers[0].Rescan
	for _, t := range Tiers {
		if t.Name == tier {
			rescan = t.Rescan
		}
	}
	var rows []struct {
		GenreID int    `json:"genre_id"`
		Name    string `json:"name"`
	}
	if err := s.DB.Query(ctx, &rows, nextCategorySQL, tier, cutoff(now, rescan)); err != nil {
		return 0, "", err
	}
	if len(rows) == 0 {
		return 0, "", fmt.Errorf("no %s category due", tier)
	}
	return rows[0].GenreID, rows[0].Name, nil
}

// DuePortfolios implements Store.
func (s D1Store) DuePortfolios(ctx context.Context, n int) ([]int64, error) {
	var rows []struct {
		ID int64 `json:"developer_id"`
	}
	if err := s.DB.Query(ctx, &rows, enrichment.PortfolioDueSQL, n); err != nil {
		return nil, err
	}
	out := make([]int64, len(rows))
	for i, r := range rows {
		out[i] = r.ID
	}
	return out, nil
}

// SaveScan implements Store.
func (s D1Store) SaveScan(ctx context.Context, genreID int, country string, charts map[string][]appstore.ChartEntry, now time.Time) (int, error) {
	_, err := s.DB.Exec(ctx, ScanStatements(genreID, country, charts, now)...)
	return distinctApps(charts), err
}

// SaveDevelopers implements Store.
func (s D1Store) SaveDevelopers(ctx context.Context, developers map[int64]string, now time.Time) error {
	_, err := s.DB.Exec(ctx, DeveloperStatements(developers, now)...)
	return err
}

// FillCandidates implements Store.
func (s D1Store) FillCandidates(ctx context.Context, n int, _ time.Time) ([]FillApp, error) {
	var rows []struct {
		TrackID     int64  `json:"track_id"`
		Name        string `json:"name"`
		Subtitle    string `json:"subtitle"`
		DeveloperID int64  `json:"developer_id"`
	}
	if err := s.DB.Query(ctx, &rows, fillCandidatesSQL, n); err != nil {
		return nil, err
	}
	out := make([]FillApp, len(rows))
	for i, r := range rows {
		out[i] = FillApp{TrackID: r.TrackID, Name: r.Name, Subtitle: r.Subtitle, DeveloperID: r.DeveloperID}
	}
	return out, nil
}

// SaveFill implements Store: one atomic batch, so an app is marked only
// with its terms' keywords valued.
func (s D1Store) SaveFill(ctx context.Context, apps []FillApp, now time.Time) (int, error) {
	stmts, kws := FillStatements(apps, now)
	if len(stmts) == 0 {
		return 0, nil
	}
	_, err := s.DB.ExecAtomic(ctx, stmts...)
	return kws, err
}

// Crawler runs the crawl cycle on the Worker's clients and announces what
// it changed.
type Crawler struct {
	Store Store
	Fetch func(ctx context.Context, url string) upstream.Response
	// Reserve, when set, admits n of Fetch's calls in one acquire and
	// returns ctx carrying them (upstream.Limited.Reserve): a task's
	// searches, a scan's charts, each one limiter call (ratelimit.Reserved).
	Reserve func(ctx context.Context, n int) context.Context
	Events  events.Sender
	APIBase string
	Country string
	Sleep   func(time.Duration)
	// Slow is what the cost guard slows this cycle.
	Slow Slow
}

// Run runs one cycle (r picks the tier, uniform in [0,1)) and sends
// rankings-updated for the keywords whose rankings it wrote, so the markets
// stage re-clusters them.
func (c *Crawler) Run(ctx context.Context, r float64, now time.Time) Result {
	res := CrawlCycle(WithSlow(ratelimit.WithReserver(ctx, c.Reserve), c.Slow), c.Store, c.Fetch, c.APIBase, c.Country, c.Sleep, r, now)
	if err := events.Send(ctx, c.Events, events.NewKeyed(events.RankingsUpdated, res.Keywords, now)...); err != nil {
		res.Error = joinErr(res.Error, "emit rankings-updated: "+err.Error())
	}
	return res
}

// steerCursor is the revalue step's position: the last cluster re-valued.
type steerCursor struct {
	At, Cluster string
}

// Steer implements Store: the revalue step (keywords of clusters scored
// since the cursor rescheduled from their new scores, the cursor moved in
// the same atomic batch) and, when promote, the promote step (keywords
// whose rest is over made due). With neither there is no write.
func (s D1Store) Steer(ctx context.Context, now time.Time, promote bool) (SteerResult, error) {
	var res SteerResult
	cur, err := d1.ReadCursor(ctx, s.DB, steerCursorName)
	if err != nil {
		return res, err
	}
	var c steerCursor
	var pair []string
	if json.Unmarshal([]byte(cur.From), &pair) == nil && len(pair) == 2 {
		c = steerCursor{pair[0], pair[1]}
	}
	var rows []struct {
		ClusterID  string `json:"cluster_id"`
		ComputedAt string `json:"computed_at"`
	}
	if err := s.DB.Query(ctx, &rows, rescoredSQL, c.At, c.Cluster, KeywordRevalueBatch); err != nil {
		return res, err
	}
	stmts := []d1.Stmt{}
	if len(rows) > 0 {
		ids := make([]string, len(rows))
		for i, r := range rows {
			ids[i] = r.ClusterID
		}
		b, _ := json.Marshal(ids)
		last := rows[len(rows)-1]
		pos, _ := json.Marshal([]string{last.ComputedAt, last.ClusterID})
		stmts = append(stmts,
			d1.Stmt{SQL: revalueSQL(), Args: []any{string(b), d1.Time(now)}})
		stmts = append(stmts, cur.Write(string(pos), now)...)
		res.Revalued = len(rows)
	}
	if promote {
		stmts = append(stmts, d1.Stmt{SQL: promoteSQL(), Args: []any{d1.Time(now), KeywordPromoteBatch}})
	}
	if len(stmts) == 0 {
		return res, nil
	}
	promoted, err := s.DB.ExecAtomic(ctx, stmts...)
	if err != nil {
		return SteerResult{}, err
	}
	res.Promoted = int(promoted)
	return res, nil
}

// Revalue reschedules searched keywords (a JSON array of them) from their
// facts at now, as the revalue step does for re-scored clusters: only a
// keyword whose schedule changed is written. The segments' focus pass
// puts it after its change to the top segments' keywords, in its batch.
func Revalue(keywords string, now time.Time) d1.Stmt {
	return d1.Stmt{SQL: revalueSQL(), Args: []any{keywords, d1.Time(now)}}
}

// SteerHotQueries are the steering's reads.
func steerHotQueries() []d1.NamedQuery {
	return []d1.NamedQuery{
		{Name: "keyword pick", SQL: pickSQL, Args: []any{KeywordSearchesPerCycle, KeywordSearchesPerCycle, KeywordSearchesPerCycle},
			Bounded: "each arm is the head of a partial index in pick order, stopped by its LIMIT (KeywordSearchesPerCycle)"},
		{Name: "keyword gap check", SQL: keywordGapSQL, Args: []any{"2026-01-01T00:00:00.000Z"},
			Bounded: "EXISTS ... LIMIT 1: the first entry of the pending keywords' partial index"},
		{Name: "keywords coming due", SQL: waitingSQL, Args: []any{"2026-01-01T00:00:00.000Z", KeywordPromoteBatch}},
		{Name: "re-scored clusters", SQL: rescoredSQL, Args: []any{"2026-01-01T00:00:00.000Z", "budget", KeywordRevalueBatch}},
		{Name: "keyword facts", SQL: keywordFacts + ` WHERE k.keyword IN (SELECT value FROM json_each(?1))`, Args: []any{`["budget","chat"]`}},
		// The steering's writes (explained, not run).
		{Name: "keyword searched", SQL: searchedSQL(), Args: []any{"2026-01-01T00:00:00.000Z", 20, "budget"}},
		{Name: "keywords revalued", SQL: revalueSQL(), Args: []any{`["budget","chat"]`, "2026-01-01T00:00:00.000Z"}},
		{Name: "keywords promoted", SQL: promoteSQL(), Args: []any{"2026-01-01T00:00:00.000Z", KeywordPromoteBatch}},
	}
}
