package worker

import (
	"context"
	"fmt"
	"net/url"
	"time"

	"storecrawl/durable/enrichment"
	"storecrawl/worker/appstore"
	"storecrawl/worker/enrich"
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

// DiscoveryStore is the D1 side of the crawl cycle.
type DiscoveryStore interface {
	// DueTiers runs the cheap existence checks (LIMIT 1 each).
	DueTiers(ctx context.Context, now time.Time) (map[string]bool, error)
	// NextCategory is the most overdue category of a tier (never scanned first).
	NextCategory(ctx context.Context, tier string, now time.Time) (genreID int, name string, err error)
	// SaveScan upserts the discovered apps and chart positions and marks the
	// category scanned, in statement batches.
	SaveScan(ctx context.Context, genreID int, country string, charts map[string][]appstore.ChartEntry, now time.Time) (apps int, err error)
}

// CategoryScanLimit is how many ranks of each chart a scan reads.
const CategoryScanLimit = 200

// CrawlResult is what one crawl cycle did.
type CrawlResult struct {
	Action  string `json:"action"` // idle | category_scan | error
	Tier    string `json:"tier,omitempty"`
	GenreID int    `json:"genre_id,omitempty"`
	Found   int    `json:"found,omitempty"`
	Apps    int    `json:"apps,omitempty"` // distinct apps upserted (queued if new)
	Error   string `json:"error,omitempty"`
}

// CrawlCycle is the 5-minute discovery step: exit early when nothing is
// due; otherwise scan one category, chosen by weighted tier, and queue what
// it finds for the EnrichmentController.
func CrawlCycle(ctx context.Context, store DiscoveryStore, fetch func(ctx context.Context, url string) upstream.Response, apiBase, country string, r float64, now time.Time) CrawlResult {
	due, err := store.DueTiers(ctx, now)
	if err != nil {
		return CrawlResult{Action: "error", Error: "due check: " + err.Error()}
	}
	tier := PickTier(due, r)
	if tier == "" {
		return CrawlResult{Action: "idle"}
	}
	genre, _, err := store.NextCategory(ctx, tier, now)
	if err != nil {
		return CrawlResult{Action: "error", Tier: tier, Error: "pick: " + err.Error()}
	}
	res := CrawlResult{Action: "category_scan", Tier: tier, GenreID: genre}
	charts := map[string][]appstore.ChartEntry{}
	for _, coll := range ChartCollections {
		q := url.Values{"country": {country}, "collection": {coll}, "genre": {fmt.Sprint(genre)}, "limit": {fmt.Sprint(CategoryScanLimit)}}
		resp := fetch(ctx, apiBase+"/charts?"+q.Encode())
		if resp.Class != enrichment.ClassOK {
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

// ScanStatements writes one category scan: apps queued for enrichment
// (existing rows untouched), current chart positions, their history, and
// the category's scan mark. Idempotent: a replay changes nothing.
func ScanStatements(genreID int, country string, charts map[string][]appstore.ChartEntry, now time.Time) []enrich.Stmt {
	ts := now.UTC().Format("2006-01-02T15:04:05.000Z")
	var stmts []enrich.Stmt
	seen := map[int64]bool{}
	for _, coll := range ChartCollections {
		for _, e := range charts[coll] {
			if !seen[e.TrackID] {
				seen[e.TrackID] = true
				stmts = append(stmts, enrich.Stmt{
					SQL:  `INSERT INTO app_registry (track_id, name, genre_id) VALUES (?,?,?) ON CONFLICT (track_id) DO NOTHING`,
					Args: []any{e.TrackID, appstore.Truncate(e.Name, appstore.MaxTextLen), genreID},
				})
			}
			stmts = append(stmts,
				enrich.Stmt{
					SQL:  `INSERT INTO chart_positions (country, collection, genre_id, rank, track_id, seen_at) VALUES (?,?,?,?,?,?) ON CONFLICT (country, collection, genre_id, rank) DO UPDATE SET track_id = excluded.track_id, seen_at = excluded.seen_at`,
					Args: []any{country, coll, genreID, e.Rank, e.TrackID, ts},
				},
				enrich.Stmt{
					SQL:  `INSERT OR IGNORE INTO chart_position_history (country, collection, genre_id, track_id, seen_at, rank) VALUES (?,?,?,?,?,?)`,
					Args: []any{country, coll, genreID, e.TrackID, ts, e.Rank},
				})
		}
	}
	stmts = append(stmts, enrich.Stmt{
		SQL:  `UPDATE category_scans SET last_scanned_at = ?, apps_found = ?, scans = scans + 1 WHERE genre_id = ?`,
		Args: []any{ts, len(seen), genreID},
	})
	return stmts
}
