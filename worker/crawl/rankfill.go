package crawl

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"storecrawl/worker/appstore"
	"storecrawl/worker/d1"
	"storecrawl/worker/enrichment"
	"storecrawl/worker/registry"
)

// Ranking fill adds depth to apps already known: an enriched app's title
// and subtitle (the subtitle only exists after enrichment, so category
// scans never saw it) give its keywords, and the fill hands the ones the
// steering does not know yet to it as pending keywords, valued from the
// app's markets. Keyword mapping searches them in value order and the
// steering re-searches them on their market's interval from then on, so
// the app's rankings stay as fresh as the steering schedules, with no
// search of the fill's own. An app is filled once (rankings_filled_at):
// again only when its title or subtitle changes (the 0026 trigger clears
// the mark), so the fill is incremental: each cycle's work is the apps
// enriched since, not the catalogue every RankingRefreshAge. It sends no
// request: one read of its candidates and one batch of two statements.

// Ranking fill bounds.
const (
	// RankingFillApps is how many apps one cycle fills: 1,000 a cycle,
	// 288,000 a day, above the design's 182,400 new apps a day, and a
	// backlog of every enriched app at 1.1M (935,000) in 3.2 days, within
	// RankingRefreshAge. One cycle reads its candidates (1,000 rows from
	// idx_app_registry_unfilled) and, in fillKeywordsSQL, each of their
	// keywords (at most appstore.MaxKeywordsPerApp an app) by primary key
	// with the apps' clusters; it writes the apps' marks and the keywords
	// new to the steering (TestRankingFillRowsAndCover counts them).
	RankingFillApps = 1000
	// RankingRefreshAge: a warm market's keywords are re-searched this
	// often (WarmKeywordResearch). Search ranks move on about that scale,
	// like the high tier's category rescans.
	RankingRefreshAge = 7 * 24 * time.Hour
)

// FillApp is an enriched app due for a ranking fill.
type FillApp struct {
	TrackID  int64
	Name     string
	Subtitle string
	// DeveloperID is its developer (0 unknown), marked due a portfolio
	// lookup by the fill.
	DeveloperID int64
}

// fillKeywordsSQL queues the keywords of the filled apps (?1 the source,
// ?2 now, ?3 a JSON array of [keyword, track id] pairs) as pending, each
// valued as a derived keyword (PendingKeywordValue) from the apps that
// carry it: the best score of their clusters and their count (all
// enriched). A keyword already known is left alone (a pending one takes a
// better value); only new keywords are written, a row each and its entry
// in idx_crawl_keywords_pending_value. The pairs are read once (json_each)
// and joined by index: the keyword's primary key, the apps' rankings
// (idx_crawl_rankings_track: a market's members are its keyword's
// rankings) and their clusters' scores.
var fillKeywordsSQL = sync.OnceValue(func() string {
	return `INSERT INTO crawl_keywords (keyword, source, created_at, value)
SELECT kw, ?1, ?2, ` + valueSQL("score", "carriers") + ` + ` + num(FirstSearchValue) + ` FROM (
  SELECT p.kw AS kw, COALESCE(max(o.score), 0) AS score, count(DISTINCT p.id) AS carriers
  FROM (SELECT json_extract(value, '$[0]') AS kw, json_extract(value, '$[1]') AS id FROM json_each(?3)) p
  LEFT JOIN crawl_rankings m ON m.track_id = p.id
  LEFT JOIN opportunity_scores o ON o.cluster_id = m.keyword
  GROUP BY p.kw) WHERE true
ON CONFLICT (keyword) DO UPDATE SET value = excluded.value
WHERE crawl_keywords.searched_at IS NULL AND excluded.value > crawl_keywords.value`
})

// FillStatements fills apps: their keywords queued for the steering
// (fillKeywordsSQL), the apps marked filled (registry.MarkFilled) and
// their developers marked due a portfolio lookup. It returns how many
// distinct keywords the apps carry.
func FillStatements(apps []FillApp, now time.Time) ([]d1.Stmt, int) {
	ts := d1.Time(now)
	var pairs [][2]any
	seen := map[string]bool{}
	ids := make([]int64, len(apps))
	for i, a := range apps {
		ids[i] = a.TrackID
		for _, kw := range appstore.DeriveKeywords(a.Name, a.Subtitle) {
			pairs = append(pairs, [2]any{kw, a.TrackID})
			seen[kw] = true
		}
	}
	var stmts []d1.Stmt
	if len(pairs) > 0 {
		b, _ := json.Marshal(pairs)
		stmts = append(stmts, d1.Stmt{SQL: fillKeywordsSQL(), Args: []any{KeywordSourceFill, ts, string(b)}})
	}
	if len(ids) > 0 {
		b, _ := json.Marshal(ids)
		stmts = append(stmts, registry.MarkFilled(string(b), ts))
	}
	// Their developers are due a portfolio lookup (written only for a
	// developer never looked up nor due).
	var devs []int64
	dup := map[int64]bool{}
	for _, a := range apps {
		if a.DeveloperID > 0 && !dup[a.DeveloperID] {
			dup[a.DeveloperID] = true
			devs = append(devs, a.DeveloperID)
		}
	}
	if len(devs) > 0 {
		b, _ := json.Marshal(devs)
		stmts = append(stmts, enrichment.DeveloperPortfolioDueStmt(string(b), ts))
	}
	return stmts, len(seen)
}

// fillRankings runs one ranking fill: the apps due (never filled, or
// renamed since), their keywords queued, the apps marked, in one batch.
func fillRankings(ctx context.Context, store Store, now time.Time) Result {
	res := Result{Action: "ranking_fill"}
	apps, err := store.FillCandidates(ctx, RankingFillApps, now)
	if err != nil {
		return Result{Action: "error", Error: "fill candidates: " + err.Error()}
	}
	if len(apps) == 0 {
		return res
	}
	kws, err := store.SaveFill(ctx, apps, now)
	if err != nil {
		// The apps stay due: the next cycle queues their keywords again
		// (known ones write nothing).
		return Result{Action: "error", Error: "save fill: " + err.Error()}
	}
	res.Filled, res.Found = len(apps), kws
	return res
}

func joinErr(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// KeywordSourceFill marks keywords first seen by ranking fill (from an
// enriched app's title or subtitle).
const KeywordSourceFill = "fill"
