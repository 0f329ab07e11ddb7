package crawl

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"storecrawl/internal/objects"
	"storecrawl/worker/appstore"
	"storecrawl/worker/catalogue"
	"storecrawl/worker/d1"
	"storecrawl/worker/enrichment"
	"storecrawl/worker/logx"
	"storecrawl/worker/ratelimit"
	"storecrawl/worker/registry"
	"storecrawl/worker/upstream"
)

// Category tiers: how often each is re-scanned and how often it is picked.
type Tier struct {
	Name   string
	Rescan time.Duration
	Weight int // share of picks, out of the sum of weights
}

// Tiers, most important first. Weighted random choice (90/7/3) keeps the
// low tiers from starving while the high tier gets most scans.
var Tiers = []Tier{
	{"high", 7 * 24 * time.Hour, 90},
	{"medium", 14 * 24 * time.Hour, 7},
	{"low", 30 * 24 * time.Hour, 3},
}

// PickTier chooses among the tiers with due work by weight; r is uniform in
// [0,1). It returns "" when nothing is due.
func PickTier(due map[string]bool, r float64) string {
	total := 0
	for _, t := range Tiers {
		if due[t.Name] {
			total += t.Weight
		}
	}
	if total == 0 {
		return ""
	}
	x := int(r * float64(total))
	for _, t := range Tiers {
		if !due[t.Name] {
			continue
		}
		if x < t.Weight {
			return t.Name
		}
		x -= t.Weight
	}
	return ""
}

// Gaps is what the crawl cycle's existence checks found.
type Gaps struct {
	Tiers map[string]bool // tiers with a category due for a scan
	// DueKeywords: a keyword never searched, or searched and due again.
	DueKeywords bool
	// KeywordsWaiting: a searched keyword whose rest is over, not yet
	// made due (the steering's promote step has work).
	KeywordsWaiting bool
	// RankingFill: an enriched app whose keywords were never handed to
	// the steering (never filled, or renamed since).
	RankingFill bool
}

// Store is the D1 side of the crawl cycle.
type Store interface {
	// Steer revalues the keywords of re-scored clusters and, when
	// promote, makes the searched keywords whose rest is over due
	// (bounded writes).
	Steer(ctx context.Context, now time.Time, promote bool) (SteerResult, error)
	// Gaps runs the cheap existence checks (LIMIT 1 each, in one round).
	Gaps(ctx context.Context, now time.Time) (Gaps, error)
	// PickKeywords returns up to n keywords to search, pending or due, by
	// expected value (highest first): the pending unless slow.FirstSearches,
	// the due unless slow.ReSearches.
	PickKeywords(ctx context.Context, n int, slow Slow) ([]string, error)
	// SaveRankings records one keyword's search results (and queues the apps).
	SaveRankings(ctx context.Context, keyword string, apps []appstore.App, now time.Time) error
	// SaveDevelopers upserts developers (already deduplicated).
	SaveDevelopers(ctx context.Context, developers map[int64]string, now time.Time) error
	// NextCategory is the most overdue category of a tier (never scanned first).
	NextCategory(ctx context.Context, tier string, now time.Time) (genreID int, name string, err error)
	// SaveScan upserts the discovered apps and chart positions and marks the
	// category scanned, in statement batches.
	SaveScan(ctx context.Context, genreID int, country string, charts map[string][]appstore.ChartEntry, now time.Time) (apps int, err error)
	// FillCandidates returns up to n enriched apps never filled (or renamed
	// since), longest enriched first.
	FillCandidates(ctx context.Context, n int, now time.Time) ([]FillApp, error)
	// SaveFill values the known pending keywords among the apps' terms,
	// marks the apps filled and their developers due a portfolio lookup
	// (FillStatements); it returns their distinct terms.
	SaveFill(ctx context.Context, apps []FillApp, now time.Time) (terms int, err error)
	// DuePortfolios returns up to n developers due a portfolio lookup,
	// longest due first.
	DuePortfolios(ctx context.Context, n int) ([]int64, error)
	// SavePortfolio saves a developer's apps and marks the developer looked
	// up (PortfolioStatements); it returns how many apps were new.
	SavePortfolio(ctx context.Context, developerID int64, apps []appstore.App, now time.Time) (newApps int, err error)
	// Unlooked returns up to n apps queued without lookup fields, from the
	// discovery lookups' cursor on (wrapping), and the cursor as read.
	Unlooked(ctx context.Context, n int) ([]int64, d1.Cursor, error)
	// SaveLookups keeps the apps a lookup found (LookupStatements) and
	// moves the cursor to lastAsked.
	SaveLookups(ctx context.Context, cursor d1.Cursor, lastAsked int64, apps []appstore.App, now time.Time) error
}

// Slow is the discretionary work of the cycle the cost guard slows
// (worker/guard.Decide, docs/cost.md): slowed work is not started this
// cycle and stays due. The zero value slows nothing.
type Slow struct {
	FirstSearches bool // keywords never searched
	ReSearches    bool // searched keywords due again
	Scans         bool // category scans
}

type slowKey struct{}

// WithSlow is ctx carrying the cycle's slowed work (Crawler.Run puts it).
func WithSlow(ctx context.Context, s Slow) context.Context {
	return context.WithValue(ctx, slowKey{}, s)
}

func slowOf(ctx context.Context) Slow {
	s, _ := ctx.Value(slowKey{}).(Slow)
	return s
}

// CategoryScanLimit is how many ranks of each chart a scan reads.
const CategoryScanLimit = 200

// Result is what one crawl cycle did.
type Result struct {
	Action  string `json:"action"` // idle | category_scan | keyword_mapping | ranking_fill | error
	Tier    string `json:"tier,omitempty"`
	GenreID int    `json:"genre_id,omitempty"`
	Found   int    `json:"found,omitempty"`
	Apps    int    `json:"apps,omitempty"` // distinct apps upserted (queued if new)
	// NewApps counts the apps the task found that were not known before
	// (developer_portfolios: per lookup sent, Searches).
	NewApps int `json:"new_apps,omitempty"`
	Filled  int `json:"filled,omitempty"` // apps whose rankings were filled (ranking_fill)
	// Searches is how many searches the task sent; RateLimited: a refusal
	// (the global limit's or the upstream's) stopped them.
	Searches    int  `json:"searches,omitempty"`
	RateLimited bool `json:"rate_limited,omitempty"`
	// Conns is the most requests the task had in flight at once.
	Conns int `json:"conns,omitempty"`
	// Steering: keywords of re-scored clusters rescheduled, keywords made due.
	Revalued int `json:"revalued,omitempty"`
	Promoted int `json:"promoted,omitempty"`
	// Keywords mapped this cycle (for the rankings-updated event).
	Keywords []string `json:"-"`
	// Deferred names the charts a scan did not read (refused, or failed):
	// the category stays due and a later cycle reads them.
	Deferred []string `json:"deferred,omitempty"`
	// Refused counts searches the rate limit refused: they stay due, and
	// the pacing handles it (not an error).
	Refused int `json:"refused,omitempty"`
	// Side is the task run alongside the primary one, if any.
	Side *Result `json:"side,omitempty"`
	// Fill is the ranking fill run before the primary task, if it was due
	// (Found: the distinct terms of the apps it filled).
	Fill *Result `json:"fill,omitempty"`
	// Portfolios is the developers' portfolio lookups run after the
	// primary task, when developers were due and no refusal stopped it
	// (Found: developers saved, Searches: lookups sent, NewApps).
	Portfolios *Result `json:"portfolios,omitempty"`
	// Lookups is the discovery lookups run before the primary task, when
	// apps waited without lookup fields (Found: ids asked, Apps: apps
	// found, Searches: lookups sent).
	Lookups *Result `json:"lookups,omitempty"`
	Error   string  `json:"error,omitempty"`
}

// CrawlCycle is the 5-minute discovery step: the existence checks, then
// the steering step (keyword values and due re-searches), then ranking fill
// when due (D1 only: it values the known keywords of enriched apps' terms,
// and marks their developers due a portfolio lookup),
// then one primary task by priority, a category scan (tier by weighted
// choice) queuing what it finds for the EnrichmentController, with keyword
// mapping beside it as the side task whenever keywords are due (alone when
// no scan is), then, in a cycle that did any of that, the due developers'
// portfolio lookups (at most PortfolioLookupsPerCycle, one after another,
// none after a refusal). The side task gets the connections the primary leaves of
// ConnectionBudget, and the cycle's searches stay within
// KeywordSearchesPerCycle, or, while apps wait without lookup fields, what
// the discovery lookups leave them (DiscoveryShare). Each task has its
// own error handling.
func CrawlCycle(ctx context.Context, store Store, fetch func(ctx context.Context, url string) upstream.Response, apiBase, country string, sleep func(time.Duration), r float64, now time.Time) Result {
	gaps, err := store.Gaps(ctx, now)
	if err != nil {
		return Result{Action: "error", Error: "gap check: " + err.Error()}
	}
	slow := slowOf(ctx)
	steered, steerErr := store.Steer(ctx, now, gaps.KeywordsWaiting)
	if steered.Promoted > 0 {
		gaps.DueKeywords = true // checked before the step made some due
	}
	// A revalue may make keywords due too (a cluster scored hot whose
	// keyword rested a day): the next cycle's check finds them; re-scoring
	// alone is no reason to run the pick.
	var fill *Result
	if gaps.RankingFill {
		// The fill adds no keyword (it values pending ones): the gap
		// check's answer on due keywords stands.
		f := fillRankings(ctx, store, now)
		fill = &f
	}
	tier := PickTier(gaps.Tiers, r)
	if slow.Scans {
		tier = "" // the tiers stay due
	}
	if slow.FirstSearches && slow.ReSearches {
		gaps.DueKeywords = false // the keywords stay pending or due
	}
	// The discovery lookups first: the API's most apps a request.
	// While apps wait, they take the searches' calls first (DiscoveryShare).
	lookups, searches := discoveryLookups(ctx, store, fetch, apiBase, country, now)
	if lookups != nil && lookups.RateLimited {
		gaps.DueKeywords = false // the limit said so: the keywords stay due
	}
	res := runTasks(ctx, store, fetch, apiBase, country, sleep, tier, gaps, searches, now)
	switch {
	case lookups != nil && res.Action == "idle" && fill == nil:
		res = *lookups // the cycle's only work
	case lookups != nil:
		res.Lookups = lookups
		if lookups.Error != "" {
			res.Error = joinErr(res.Error, "discovery_lookups: "+lookups.Error)
		}
	}
	// Portfolios only beside other work: the fill is what makes developers
	// due, and an idle cycle stays at its existence checks (a probe of the
	// due developers would read a row every idle cycle).
	if (res.Action != "idle" || fill != nil) && !res.RateLimited && (res.Side == nil || !res.Side.RateLimited) &&
		(res.Lookups == nil || !res.Lookups.RateLimited) {
		if p := portfolios(ctx, store, fetch, apiBase, country, now); p != nil {
			res.Portfolios = p
			if p.Error != "" {
				res.Error = joinErr(res.Error, "developer_portfolios: "+p.Error)
			}
		}
	}
	if fill != nil {
		if res.Action == "idle" {
			p, l := res.Portfolios, res.Lookups
			res = *fill
			res.Portfolios, res.Lookups = p, l
			if l != nil && l.Error != "" {
				res.Error = joinErr(res.Error, "discovery_lookups: "+l.Error)
			}
			if res.Portfolios != nil && res.Portfolios.Error != "" {
				res.Error = joinErr(res.Error, "developer_portfolios: "+res.Portfolios.Error)
			}
		} else {
			res.Fill = fill
			if fill.Error != "" {
				res.Error = joinErr(res.Error, "ranking_fill: "+fill.Error)
			}
		}
	}
	res.Revalued, res.Promoted = steered.Revalued, steered.Promoted
	if steerErr != nil {
		res.Error = joinErr(res.Error, "steer: "+steerErr.Error())
	}
	return res
}

// runTasks runs the cycle's searching tasks: a scan with keyword mapping
// beside it, else keyword mapping, else nothing; at most searches
// searches.
func runTasks(ctx context.Context, store Store, fetch func(ctx context.Context, url string) upstream.Response, apiBase, country string, sleep func(time.Duration), tier string, gaps Gaps, searches int, now time.Time) Result {
	mapping := func(conns, n int) func() Result {
		return func() Result { return mapKeywords(ctx, store, fetch, apiBase, country, sleep, conns, n, now) }
	}
	switch {
	case tier != "":
		scan := func() Result { return scanCategory(ctx, store, fetch, apiBase, country, tier, now) }
		if !gaps.DueKeywords {
			return scan()
		}
		return beside(scan, mapping(ConnectionBudget-ScanConnections, searches), "keyword_mapping")
	case gaps.DueKeywords:
		return mapping(ConnectionBudget, searches)()
	}
	return Result{Action: "idle"}
}

// beside runs side next to primary, each in its own error boundary, and
// folds side's keywords and error into primary's result.
func beside(primary, side func() Result, sideName string) Result {
	var s Result
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() {
			if err := logx.Recovered(recover(), sideName); err != nil {
				s = Result{Action: "error", Error: err.Error()}
			}
		}()
		s = side()
	}()
	res := primary()
	<-done
	res.Side = &s
	res.Keywords = append(res.Keywords, s.Keywords...)
	if s.Error != "" {
		res.Error = joinErr(res.Error, sideName+": "+s.Error)
	}
	return res
}

// Reservations: every acquire at the global limiter is a Durable Object
// request (billed), so a task asks for its sends in one acquire before it
// starts them: keyword mapping for its picked keywords, a scan for its
// charts. A reservation of n is the budget of n acquires of one, and the
// sends are still spread as before (chunks of conns, KeywordChunkPause
// between them); a refused one refuses each send it was for, which stops
// the task with its work still due (ratelimit.Reserved; the Crawler puts
// its Reserve in ctx).

// scanCategory scans the most overdue category of tier.
func scanCategory(ctx context.Context, store Store, fetch func(ctx context.Context, url string) upstream.Response, apiBase, country, tier string, now time.Time) Result {
	genre, _, err := store.NextCategory(ctx, tier, now)
	if err != nil {
		return Result{Action: "error", Tier: tier, Error: "pick: " + err.Error()}
	}
	ctx = ratelimit.Reserved(ctx, len(appstore.ChartCollections)) // its charts, one acquire
	res := Result{Action: "category_scan", Tier: tier, GenreID: genre}
	charts := map[string][]appstore.ChartEntry{}
	for _, coll := range appstore.ChartCollections {
		resp := fetch(ctx, appstore.ChartURL(apiBase, country, coll, genre, CategoryScanLimit))
		if resp.Class == objects.ClassRateLimit {
			// A refusal the pacing handles: the charts read so far are
			// kept, the category stays due (ScanStatements), and a later
			// cycle reads this chart and the rest. No more sends this
			// cycle: the limit said so.
			res.RateLimited = true
			res.Deferred = append(res.Deferred, coll)
			logx.Event("crawl.chart_refused", map[string]any{"level": logx.Warn, "genre_id": genre, "chart": coll,
				"action": "charts read so far kept, the category stays due"})
			break
		}
		if resp.Class != objects.ClassOK {
			res.Error = joinErr(res.Error, fmt.Sprintf("chart %s: %v", coll, resp.Err))
			res.Deferred = append(res.Deferred, coll)
			continue // the others may still come; the category stays due
		}
		items, err := appstore.ParseChart(resp.Body)
		if err != nil {
			res.Error = joinErr(res.Error, fmt.Sprintf("chart %s: %v", coll, err))
			res.Deferred = append(res.Deferred, coll)
			continue
		}
		charts[coll] = items
		res.Found += len(items)
	}
	if len(charts) == 0 {
		if res.Error != "" {
			res.Action = "error"
		}
		return res
	}
	n, err := store.SaveScan(ctx, genre, country, charts, now)
	if err != nil {
		res.Action, res.Error = "error", "save: "+err.Error()
		return res
	}
	res.Apps = n
	return res
}

// Keyword search bounds.
const (
	// KeywordChunkPause spaces a task's chunks (the limiter paces them too).
	KeywordChunkPause = 200 * time.Millisecond
	KeywordSearchSize = 50
	// SearchEntity asks the iTunes Search API for iOS apps only: without it
	// a term also matches songs, films and books, which are not apps.
	SearchEntity = "software"
)

// searched is one keyword search, saved or failed.
type searched struct {
	kw   string
	apps []appstore.App
	err  error
	// limited: the search was refused (rate_limit), nothing was saved.
	limited bool
}

// searchReport is what a run of searches did besides the results.
type searchReport struct {
	sent, peak int
	limited    bool
}

// searchKeywords searches kws in parallel chunks of chunk with a pause
// between chunks, and saves each result as it settles. A refused search
// (the global limit's or the upstream's rate_limit answer) ends the run
// after its chunk: the keywords not searched stay due.
func searchKeywords(ctx context.Context, kws []string, chunk int, fetch func(ctx context.Context, url string) upstream.Response, apiBase, country string, sleep func(time.Duration),
	save func(ctx context.Context, kw string, apps []appstore.App, now time.Time) error, now time.Time) ([]searched, searchReport) {
	chunk = max(chunk, 1)
	ctx = ratelimit.Reserved(ctx, len(kws)) // the task's searches, one acquire
	out := make([]searched, 0, len(kws))
	var rep searchReport
	for i := 0; i < len(kws); i += chunk {
		part := kws[i:min(i+chunk, len(kws))]
		results := make([]searched, len(part))
		var wg sync.WaitGroup
		for j, kw := range part {
			wg.Add(1)
			go func(j int, kw string) {
				defer wg.Done()
				defer func() {
					if err := logx.Recovered(recover(), "keyword search"); err != nil {
						results[j] = searched{kw: kw, err: err}
					}
				}()
				q := url.Values{"term": {kw}, "country": {country}, "entity": {SearchEntity}, "limit": {fmt.Sprint(KeywordSearchSize)}}
				resp := fetch(ctx, apiBase+"/search?"+q.Encode())
				if resp.Class != objects.ClassOK {
					results[j] = searched{kw: kw, err: fmt.Errorf("search: %v", resp.Err), limited: resp.Class == objects.ClassRateLimit}
					return
				}
				apps, err := appstore.ParseSearch(resp.Body)
				results[j] = searched{kw: kw, apps: apps, err: err}
			}(j, kw)
		}
		wg.Wait()
		rep.sent += len(part)
		rep.peak = max(rep.peak, len(part))
		for _, f := range results {
			if f.err == nil {
				f.err = save(ctx, f.kw, f.apps, now)
			}
			rep.limited = rep.limited || f.limited
			out = append(out, f)
		}
		if rep.limited {
			logx.Event("crawl.searches_rate_limited", map[string]any{"level": logx.Warn, "sent": rep.sent, "left": len(kws) - rep.sent})
			break
		}
		if i+chunk < len(kws) {
			sleep(KeywordChunkPause)
		}
	}
	return out, rep
}

// settleSearches adds the searches to res: saved keywords (for the
// rankings-updated event), failures (the work stays due) and the developers
// seen, which are upserted once.
func settleSearches(ctx context.Context, store Store, res *Result, results []searched, now time.Time) {
	// Developers repeat across searches: collect them once per cycle.
	developers := map[int64]string{}
	for _, f := range results {
		if f.limited {
			res.Refused++ // stays due; the pacing handles the refusal
			continue
		}
		if f.err != nil {
			res.Error = strings.TrimPrefix(res.Error+"; "+f.kw+": "+f.err.Error(), "; ")
			continue
		}
		res.Found++
		res.Apps += len(f.apps)
		res.Keywords = append(res.Keywords, f.kw)
		for _, a := range f.apps {
			if a.DeveloperID > 0 {
				developers[a.DeveloperID] = a.DeveloperName
			}
		}
	}
	if len(developers) == 0 {
		return
	}
	if err := store.SaveDevelopers(ctx, developers, now); err != nil {
		res.Error = strings.TrimPrefix(res.Error+"; developers: "+err.Error(), "; ")
	}
}

// mapKeywords searches up to n keywords, the most valuable of the pending
// and the due (PickKeywords), conns at once, and records where apps rank;
// each keyword is settled on its own (a failed one stays due).
func mapKeywords(ctx context.Context, store Store, fetch func(ctx context.Context, url string) upstream.Response, apiBase, country string, sleep func(time.Duration), conns, n int, now time.Time) Result {
	res := Result{Action: "keyword_mapping"}
	if n <= 0 || conns <= 0 {
		return res
	}
	kws, err := store.PickKeywords(ctx, n, slowOf(ctx))
	if err != nil {
		return Result{Action: "error", Error: "pick keywords: " + err.Error()}
	}
	results, rep := searchKeywords(ctx, kws, conns, fetch, apiBase, country, sleep, store.SaveRankings, now)
	res.Searches, res.Conns, res.RateLimited = rep.sent, rep.peak, rep.limited
	settleSearches(ctx, store, &res, results, now)
	return res
}

// searchResultSQL keeps a search result's lookup fields
// (registry.SearchResultSQL): a search answers the lookup's own shape
// (iTunes Search API, entity=software), so a queued app found by a search
// within LOOKUP_FRESH_H needs no lookup of its own (lookup_at). A new app
// is queued with them, so its markets can be scored before it is
// enriched; an enriched app is left alone. The fields catalogue.ObserveStmt
// keeps (ratings, price, currency, version and its date and notes:
// registry.SearchObserved) are its own: it runs first in the same batch,
// with history for what changed. A queued app is rewritten only when one
// of the others differs: a re-search (a day or more later, on the
// keyword's interval) finding it unchanged writes nothing, not even
// lookup_at, whose only reader is that freshness (an UPDATE to the same
// values still writes the row). Its lookup then ages past LOOKUP_FRESH_H
// and the enrichment looks it up in a batch of ids (no D1 row): a
// subrequest shared by a lookup batch of apps, against a row for each
// unchanged queued result of every re-search.
var searchResultSQL = registry.SearchResultSQL

// searchResultStmt is searchResultSQL for one result seen at now.
func searchResultStmt(a appstore.App, now time.Time) d1.Stmt {
	return registry.SearchResult(a.StoredLookupArgs(), d1.Time(now))
}

// rankingsSQL keeps where a keyword's results rank, in one statement (?1
// the keyword, ?2 the time, ?3 catalogue.RankPairs): a new row, or the
// rank (and when it was taken, seen_at) when it moved; an app holding its
// rank is not rewritten. rankingsGoneSQL deletes the rows of the apps no
// longer in the keyword's results (?2, a JSON array of track ids).
const (
	rankingsSQL = `INSERT INTO crawl_rankings (keyword, track_id, rank, seen_at)
SELECT ?1, json_extract(value, '$[0]'), json_extract(value, '$[1]'), ?2 FROM json_each(?3) WHERE true
ON CONFLICT (keyword, track_id) DO UPDATE SET rank = excluded.rank, seen_at = excluded.seen_at
WHERE crawl_rankings.rank IS NOT excluded.rank`
	rankingsGoneSQL = `DELETE FROM crawl_rankings WHERE keyword = ?1 AND track_id NOT IN (SELECT value FROM json_each(?2))`
)

// RankingStatements records one keyword search: the apps (queued if new;
// a known app's last sighting and the lookup-level fields the search
// carries, rating, rating count, price and version, with history rows for
// what changed; every app not yet enriched keeps the search result's full
// lookup fields when they changed, searchResultSQL), how its ranks changed
// (keyword_rank_history, compared with the rankings before they move),
// where each ranks now (the rows of apps gone deleted, of moved ones
// rewritten, in one statement), and the keyword marked searched. Only what
// changed is written: the same results again, within
// catalogue.SightingGranularity (a week, so a hot keyword's daily
// re-search too), write the keyword's mark alone.
func RankingStatements(keyword string, apps []appstore.App, now time.Time) []d1.Stmt {
	ts := d1.Time(now)
	seen := make([]catalogue.Seen, len(apps))
	ids := make([]int64, len(apps))
	for i, a := range apps {
		seen[i], ids[i] = catalogue.SeenFromApp(a), a.TrackID
	}
	present, _ := json.Marshal(ids)
	stmts := catalogue.ObserveStmt(seen, now)
	for _, a := range apps {
		stmts = append(stmts, searchResultStmt(a, now))
	}
	stmts = append(stmts, catalogue.KeywordRankStmt(keyword, ids, now)...)
	stmts = append(stmts,
		d1.Stmt{SQL: rankingsGoneSQL, Args: []any{keyword, string(present)}},
		d1.Stmt{SQL: rankingsSQL, Args: []any{keyword, ts, catalogue.RankPairs(ids)}})
	// The keyword searched, valued and scheduled (searchedSQL): after the
	// rankings, so its enriched carriers are this search's.
	return append(stmts, d1.Stmt{SQL: searchedSQL(), Args: []any{ts, len(apps), keyword}})
}

// ScanStatements writes one category scan: apps queued for enrichment
// (a known app's last sighting updated, its stale mark cleared), current
// chart positions, their history, and the category's scan mark. It
// queues no keyword: a title's words are not search terms until people
// type them (the search hints, hints.go).
// Idempotent: a replay changes nothing but the sighting times.
func ScanStatements(genreID int, country string, charts map[string][]appstore.ChartEntry, now time.Time) []d1.Stmt {
	ts := d1.Time(now)
	var seen []catalogue.Seen
	var stmts []d1.Stmt
	for _, coll := range appstore.ChartCollections {
		for _, e := range charts[coll] {
			seen = append(seen, catalogue.Seen{TrackID: e.TrackID, Name: e.Name, GenreID: genreID})
			stmts = append(stmts,
				d1.Stmt{
					SQL:  `INSERT INTO chart_positions (country, collection, genre_id, rank, track_id, seen_at) VALUES (?,?,?,?,?,?) ON CONFLICT (country, collection, genre_id, rank) DO UPDATE SET track_id = excluded.track_id, seen_at = excluded.seen_at`,
					Args: []any{country, coll, genreID, e.Rank, e.TrackID, ts},
				},
				d1.Stmt{
					SQL:  `INSERT OR IGNORE INTO chart_position_history (country, collection, genre_id, track_id, seen_at, rank) VALUES (?,?,?,?,?,?)`,
					Args: []any{country, coll, genreID, e.TrackID, ts, e.Rank},
				})
		}
	}
	// The apps first, so a chart position never names an unknown app.
	stmts = append(catalogue.ObserveStmt(seen, now), stmts...)
	complete := true
	for _, coll := range appstore.ChartCollections {
		_, ok := charts[coll]
		complete = complete && ok
	}
	// No keyword from the charted titles: the charts are seeds of the
	// search hints (HintSeeds), whose terms are what people type.
	if complete {
		// A scan missing a chart (refused) leaves the category due: the
		// next cycle reads the missing chart (and the others again).
		stmts = append(stmts, d1.Stmt{
			SQL:  `UPDATE category_scans SET last_scanned_at = ?, apps_found = ?, scans = scans + 1 WHERE genre_id = ?`,
			Args: []any{ts, distinctApps(charts), genreID},
		})
	}
	return stmts
}

// distinctApps counts the apps of a scan's charts (an app can be in several).
func distinctApps(charts map[string][]appstore.ChartEntry) int {
	seen := map[int64]bool{}
	for _, entries := range charts {
		for _, e := range entries {
			seen[e.TrackID] = true
		}
	}
	return len(seen)
}

// DeveloperStatements upserts each developer once.
func DeveloperStatements(developers map[int64]string, now time.Time) []d1.Stmt {
	ts := d1.Time(now)
	ids := make([]int64, 0, len(developers))
	for id := range developers {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	stmts := make([]d1.Stmt, 0, len(ids))
	for _, id := range ids {
		stmts = append(stmts, enrichment.DeveloperStmt(id, developers[id], ts))
	}
	return stmts
}
