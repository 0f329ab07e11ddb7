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
// scans never saw it) name the search terms it may rank for, and the fill
// matches them against the keywords the steering knows (the search
// hints' terms, hints.go): a known term still pending is valued from the
// app's markets, so keyword mapping searches it sooner; one already
// searched is re-searched on its market's interval, and the app's rank
// in it is recorded then. A title's words are not keywords of their own:
// a term becomes one when people type it (the hints), so a new app adds
// no keyword. An app is filled once (rankings_filled_at): again only when
// its title or subtitle changes (the 0026 trigger clears the mark), so
// the fill is incremental. It sends no request: one read of its
// candidates and one batch of two statements.

// Ranking fill bounds.
const (
	// RankingFillApps is how many apps one cycle fills: 1,000 a cycle,
	// 288,000 a day, above the design's 182,400 new apps a day, and a
	// backlog of every enriched app at 1.1M (935,000) in 3.2 days, within
	// RankingRefreshAge. One cycle reads its candidates (1,000 rows from
	// idx_app_registry_unfilled) and, in fillKeywordsSQL, each of their
	// terms (at most appstore.MaxKeywordsPerApp an app) by the keywords'
	// unique index with the apps' clusters; it writes the apps' marks and
	// the pending known terms it values higher, never a new keyword
	// (TestRankingFillRowsAndCover counts them).
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

// fillKeywordsSQL values the known pending keywords among the filled
// apps' terms (?1 a JSON array of [term, track id] pairs) as derived from
// them (PendingKeywordValue): the best score of the apps' clusters and
// their count (all enriched). A keyword is rewritten only when that is
// better than its value; a term no keyword holds writes nothing (the fill
// adds no keyword), nor does a searched one. The pairs are read once
// (json_each) and joined by index: the apps' rankings
// (idx_crawl_rankings_track: a market's members are its keyword's
// rankings), their clusters' scores, the keyword's unique index.
var fillKeywordsSQL = sync.OnceValue(func() string {
	return `WITH f AS (SELECT kw, ` + valueSQL("score", "carriers") + ` + ` + num(FirstSearchValue) + ` AS value FROM (
  SELECT p.kw AS kw, COALESCE(max(o.score), 0) AS score, count(DISTINCT p.id) AS carriers
  FROM (SELECT json_extract(value, '$[0]') AS kw, json_extract(value, '$[1]') AS id FROM json_each(?1)) p
  LEFT JOIN crawl_rankings m ON m.track_id = p.id
  LEFT JOIN opportunity_scores o ON o.cluster_id = m.keyword
  GROUP BY p.kw))
UPDATE crawl_keywords SET value = f.value FROM f
WHERE crawl_keywords.keyword = f.kw AND crawl_keywords.searched_at IS NULL AND f.value > crawl_keywords.value`
})

// FillStatements fills apps: the known pending keywords among their
// terms valued for the steering (fillKeywordsSQL), the apps marked
// filled (registry.MarkFilled) and their developers marked due a
// portfolio lookup. It returns how many distinct terms the apps' titles
// and subtitles name.
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
		stmts = append(stmts, d1.Stmt{SQL: fillKeywordsSQL(), Args: []any{string(b)}})
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
// renamed since), their known terms valued, the apps marked, in one batch.
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
		// The apps stay due: the next cycle values their terms again.
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

// Keyword sources (crawl_keywords.source): KeywordSourceHints, a term
// the search hints completed a prefix to (hints.go). Older rows hold
// 'title' and 'fill', the words of an app's title when titles were taken
// for keywords.
const KeywordSourceHints = "hints"
