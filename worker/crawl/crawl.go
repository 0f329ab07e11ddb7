package crawl

import (
	"context"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"storecrawl/durable/object"
	"storecrawl/worker/appstore"
	"storecrawl/worker/catalogue"
	"storecrawl/worker/d1"
	"storecrawl/worker/enrichment"
	"storecrawl/worker/logx"
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
	Tiers           map[string]bool // tiers with a category due for a scan
	PendingKeywords bool
	// RankingFill: an enriched app whose rankings were never filled or are stale.
	RankingFill bool
}

// Store is the D1 side of the crawl cycle.
type Store interface {
	// Gaps runs the cheap existence checks (LIMIT 1 each, in one round).
	Gaps(ctx context.Context, now time.Time) (Gaps, error)
	// PendingKeywords returns up to n keywords never searched.
	PendingKeywords(ctx context.Context, n int) ([]string, error)
	// SaveRankings records one keyword's search results (and queues the apps).
	SaveRankings(ctx context.Context, keyword string, apps []appstore.App, now time.Time) error
	// SaveDevelopers upserts developers (already deduplicated).
	SaveDevelopers(ctx context.Context, developers map[int64]string, now time.Time) error
	// NextCategory is the most overdue category of a tier (never scanned first).
	NextCategory(ctx context.Context, tier string, now time.Time) (genreID int, name string, err error)
	// SaveScan upserts the discovered apps and chart positions and marks the
	// category scanned, in statement batches.
	SaveScan(ctx context.Context, genreID int, country string, charts map[string][]appstore.ChartEntry, now time.Time) (apps int, err error)
	// FillCandidates returns up to n enriched apps whose rankings were never
	// filled or were filled RankingRefreshAge or more before now, most overdue first.
	FillCandidates(ctx context.Context, n int, now time.Time) ([]FillApp, error)
	// KeywordsSearchedAt says when each of kws that is known was last
	// searched (the zero time: pending); unknown keywords are absent.
	KeywordsSearchedAt(ctx context.Context, kws []string) (map[string]time.Time, error)
	// SaveFillRankings records one ranking-fill search: the keyword
	// (inserted if new) and where the apps rank.
	SaveFillRankings(ctx context.Context, keyword string, apps []appstore.App, now time.Time) error
	// MarkFilled records that these apps' rankings were filled at now.
	MarkFilled(ctx context.Context, ids []int64, now time.Time) error
}

// CategoryScanLimit is how many ranks of each chart a scan reads.
const CategoryScanLimit = 200

// Result is what one crawl cycle did.
type Result struct {
	Action  string `json:"action"` // idle | category_scan | keyword_mapping | ranking_fill | error
	Tier    string `json:"tier,omitempty"`
	GenreID int    `json:"genre_id,omitempty"`
	Found   int    `json:"found,omitempty"`
	Apps    int    `json:"apps,omitempty"`   // distinct apps upserted (queued if new)
	Filled  int    `json:"filled,omitempty"` // apps whose rankings were filled
	// Keywords mapped this cycle (for the rankings-updated event).
	Keywords []string `json:"-"`
	// Side is the task run alongside the primary one, if any.
	Side  *Result `json:"side,omitempty"`
	Error string  `json:"error,omitempty"`
}

// CrawlCycle is the 5-minute discovery step: exit early when nothing is
// due; otherwise run one primary task by priority: a category scan (tier by
// weighted choice) queuing what it finds for the EnrichmentController, else
// keyword mapping, else ranking fill. Ranking fill also runs as a side task
// next to keyword mapping (each with its own error handling; 2 × KeywordChunk
// searches in flight at most, within the 6 connections of an invocation).
func CrawlCycle(ctx context.Context, store Store, fetch func(ctx context.Context, url string) upstream.Response, apiBase, country string, sleep func(time.Duration), r float64, now time.Time) Result {
	gaps, err := store.Gaps(ctx, now)
	if err != nil {
		return Result{Action: "error", Error: "gap check: " + err.Error()}
	}
	tier := PickTier(gaps.Tiers, r)
	switch {
	case tier != "":
		return scanCategory(ctx, store, fetch, apiBase, country, tier, now)
	case gaps.PendingKeywords && gaps.RankingFill:
		var side Result
		done := make(chan struct{})
		go func() {
			defer close(done)
			defer func() {
				if err := logx.Recovered(recover(), "ranking fill"); err != nil {
					side = Result{Action: "error", Error: err.Error()}
				}
			}()
			side = fillRankings(ctx, store, fetch, apiBase, country, sleep, now)
		}()
		res := mapKeywords(ctx, store, fetch, apiBase, country, sleep, now)
		<-done
		res.Side = &side
		res.Keywords = append(res.Keywords, side.Keywords...)
		if side.Error != "" {
			res.Error = strings.TrimPrefix(res.Error+"; ranking_fill: "+side.Error, "; ")
		}
		return res
	case gaps.PendingKeywords:
		return mapKeywords(ctx, store, fetch, apiBase, country, sleep, now)
	case gaps.RankingFill:
		return fillRankings(ctx, store, fetch, apiBase, country, sleep, now)
	}
	return Result{Action: "idle"}
}

// scanCategory scans the most overdue category of tier.
func scanCategory(ctx context.Context, store Store, fetch func(ctx context.Context, url string) upstream.Response, apiBase, country, tier string, now time.Time) Result {
	genre, _, err := store.NextCategory(ctx, tier, now)
	if err != nil {
		return Result{Action: "error", Tier: tier, Error: "pick: " + err.Error()}
	}
	res := Result{Action: "category_scan", Tier: tier, GenreID: genre}
	charts := map[string][]appstore.ChartEntry{}
	for _, coll := range appstore.ChartCollections {
		resp := fetch(ctx, appstore.ChartURL(apiBase, country, coll, genre, CategoryScanLimit))
		if resp.Class != object.ClassOK {
			// The category stays due; the next cycle tries again.
			res.Action, res.Error = "error", fmt.Sprintf("chart %s: %v", coll, resp.Err)
			return res
		}
		items, err := appstore.ParseChart(resp.Body)
		if err != nil {
			res.Action, res.Error = "error", fmt.Sprintf("chart %s: %v", coll, err)
			return res
		}
		charts[coll] = items
		res.Found += len(items)
	}
	n, err := store.SaveScan(ctx, genre, country, charts, now)
	if err != nil {
		res.Action, res.Error = "error", "save: "+err.Error()
		return res
	}
	res.Apps = n
	return res
}

// Keyword mapping bounds.
const (
	KeywordsPerCycle  = 12
	KeywordChunk      = 3 // searches at once
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
}

// searchKeywords searches kws in parallel chunks of KeywordChunk with a
// pause between chunks, and saves each result as it settles.
func searchKeywords(ctx context.Context, kws []string, fetch func(ctx context.Context, url string) upstream.Response, apiBase, country string, sleep func(time.Duration),
	save func(ctx context.Context, kw string, apps []appstore.App, now time.Time) error, now time.Time) []searched {
	out := make([]searched, 0, len(kws))
	for i := 0; i < len(kws); i += KeywordChunk {
		chunk := kws[i:min(i+KeywordChunk, len(kws))]
		results := make([]searched, len(chunk))
		var wg sync.WaitGroup
		for j, kw := range chunk {
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
				if resp.Class != object.ClassOK {
					results[j] = searched{kw: kw, err: fmt.Errorf("search: %v", resp.Err)}
					return
				}
				apps, err := appstore.ParseSearch(resp.Body)
				results[j] = searched{kw: kw, apps: apps, err: err}
			}(j, kw)
		}
		wg.Wait()
		for _, f := range results {
			if f.err == nil {
				f.err = save(ctx, f.kw, f.apps, now)
			}
			out = append(out, f)
		}
		if i+KeywordChunk < len(kws) {
			sleep(KeywordChunkPause)
		}
	}
	return out
}

// settleSearches adds the searches to res: saved keywords (for the
// rankings-updated event), failures (the work stays due) and the developers
// seen, which are upserted once.
func settleSearches(ctx context.Context, store Store, res *Result, results []searched, now time.Time) {
	// Developers repeat across searches: collect them once per cycle.
	developers := map[int64]string{}
	for _, f := range results {
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

// mapKeywords searches pending keywords in bounded parallel chunks and
// records where apps rank; each keyword is settled on its own (a failed one
// stays pending for a later cycle).
func mapKeywords(ctx context.Context, store Store, fetch func(ctx context.Context, url string) upstream.Response, apiBase, country string, sleep func(time.Duration), now time.Time) Result {
	res := Result{Action: "keyword_mapping"}
	kws, err := store.PendingKeywords(ctx, KeywordsPerCycle)
	if err != nil {
		return Result{Action: "error", Error: "pending keywords: " + err.Error()}
	}
	settleSearches(ctx, store, &res, searchKeywords(ctx, kws, fetch, apiBase, country, sleep, store.SaveRankings, now), now)
	return res
}

// searchResultSQL keeps a search result's lookup fields: a search answers
// the lookup's own shape (iTunes Search API, entity=software), so a queued
// app found by a search within LOOKUP_FRESH_H needs no lookup of its own
// (lookup_at). A new app is queued with them, so its markets can be scored
// before it is enriched; a queued app's fields are refreshed; an enriched
// app is left alone (no write: its record comes from its own enrichment).
const searchResultSQL = `INSERT INTO app_registry (` + appstore.StoredLookupColumns + `, lookup_at)
VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)
ON CONFLICT (track_id) DO UPDATE SET ` + appstore.StoredLookupUpdates + `, lookup_at=excluded.lookup_at
WHERE app_registry.enriched_at IS NULL`

// searchResultStmt is searchResultSQL for one result seen at ts.
func searchResultStmt(a appstore.App, ts string) d1.Stmt {
	return d1.Stmt{SQL: searchResultSQL, Args: append(a.StoredLookupArgs(), ts)}
}

// RankingStatements records one keyword search: the apps (queued if new;
// a known app's last sighting and the lookup-level fields the search
// carries, rating, rating count, price and version, with history rows for
// what changed; every app not yet enriched keeps the search result's full
// lookup fields, searchResultSQL), where each ranks now and today, and the
// keyword marked
// searched.
func RankingStatements(keyword string, apps []appstore.App, now time.Time) []d1.Stmt {
	ts := d1.Time(now)
	seen := make([]catalogue.Seen, len(apps))
	ids := make([]int64, len(apps))
	for i, a := range apps {
		seen[i], ids[i] = catalogue.SeenFromApp(a), a.TrackID
	}
	stmts := []d1.Stmt{{SQL: `DELETE FROM crawl_rankings WHERE keyword = ?`, Args: []any{keyword}}}
	stmts = append(stmts, catalogue.ObserveStmt(seen, now)...)
	for _, a := range apps {
		stmts = append(stmts, searchResultStmt(a, ts))
	}
	for i, a := range apps {
		stmts = append(stmts, d1.Stmt{
			SQL:  `INSERT OR REPLACE INTO crawl_rankings (keyword, track_id, rank, seen_at) VALUES (?,?,?,?)`,
			Args: []any{keyword, a.TrackID, i + 1, ts},
		})
	}
	stmts = append(stmts, catalogue.KeywordRankStmt(keyword, ids, now)...)
	return append(stmts, d1.Stmt{
		SQL:  `UPDATE crawl_keywords SET searched_at = ?, result_count = ? WHERE keyword = ?`,
		Args: []any{ts, len(apps), keyword},
	})
}

// KeywordStatements queues keywords derived from titles as pending.
func KeywordStatements(source string, texts []string, now time.Time) []d1.Stmt {
	ts := d1.Time(now)
	seen := map[string]bool{}
	var stmts []d1.Stmt
	for _, t := range texts {
		for _, kw := range appstore.DeriveKeywords(t, "") {
			if seen[kw] {
				continue
			}
			seen[kw] = true
			stmts = append(stmts, d1.Stmt{
				SQL:  `INSERT OR IGNORE INTO crawl_keywords (keyword, source, created_at) VALUES (?,?,?)`,
				Args: []any{kw, source, ts},
			})
		}
	}
	return stmts
}

// ScanStatements writes one category scan: apps queued for enrichment
// (a known app's last sighting updated, its stale mark cleared), current
// chart positions, their history, and the category's scan mark.
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
	var titles []string
	for _, coll := range appstore.ChartCollections {
		for _, e := range charts[coll] {
			titles = append(titles, e.Name)
		}
	}
	stmts = append(stmts, KeywordStatements("title", titles, now)...)
	stmts = append(stmts, d1.Stmt{
		SQL:  `UPDATE category_scans SET last_scanned_at = ?, apps_found = ?, scans = scans + 1 WHERE genre_id = ?`,
		Args: []any{ts, distinctApps(charts), genreID},
	})
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
