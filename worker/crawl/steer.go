package crawl

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"

	"storecrawl/durable/limiter"
	"storecrawl/durable/pacing"
	"storecrawl/worker/d1"
	"storecrawl/worker/ratelimit"
	"storecrawl/worker/refresh"
	"storecrawl/worker/upstream"
)

// Keyword steering (issue 16): which keywords the crawl searches next and
// how many a cycle.
//
// Value. A keyword's expected value (KeywordValue) is its market's
// opportunity score (the cluster of the apps ranking for it, 0–100) plus
// KeywordCarrierValue for each enriched app among them, up to
// KeywordCarrierCap. A pending keyword has no market yet: it inherits the
// best score among the clusters of the apps it was derived from, counts
// those of them that are enriched, and adds FirstSearchValue (a first
// search also discovers apps). Values are written by SQL built from these
// constants: on derivation, after each search, and when the markets stage
// re-scores the keyword's cluster (the cycle's revalue step).
//
// Recency. A searched keyword rests for ResearchInterval (shorter for
// high-opportunity markets), then the cycle's promote step makes it due
// (due_value). The pick reads the pending and the due keywords, each set
// from its own partial index in value order, and takes the best n.

// Keyword value and re-search policy.
const (
	// KeywordCarrierValue: each enriched app ranking for a keyword adds
	// this much; KeywordCarrierCap of them (30 points) rival a warm market,
	// since enriched apps are what the API serves and their keywords'
	// ranks are what their history shows.
	KeywordCarrierValue = 3.0
	// KeywordCarrierCap: more carriers than this say nothing more (a
	// search returns KeywordSearchSize apps; ten enriched ones make it a
	// tracked market).
	KeywordCarrierCap = 10
	// FirstSearchValue: what a never-searched keyword is worth on its own.
	// Low: a plain new keyword waits behind any scored market, but beats a
	// searched keyword with no market (score 0) and no carriers.
	FirstSearchValue = 10.0
	// MaxOpportunityScore bounds the score term (the markets' 0–100 scale).
	MaxOpportunityScore = 100.0
	// HotKeywordResearch: a keyword of a market at or above
	// refresh.HotClusterScore is searched again daily, as its members are
	// refreshed; rank history keeps one row a day, so more often adds nothing.
	HotKeywordResearch = 24 * time.Hour
	// WarmKeywordResearch: at or above refresh.WarmClusterScore, weekly,
	// as ranking fill considers rankings stale (RankingRefreshAge).
	WarmKeywordResearch = RankingRefreshAge
	// ColdKeywordResearch: the long tail, monthly, as cold apps are refreshed.
	ColdKeywordResearch = 30 * 24 * time.Hour
	// KeywordPromoteBatch bounds the keywords one cycle makes due: five
	// cycles' searches, so the due set never runs dry while keywords wait,
	// and one bounded write.
	KeywordPromoteBatch = 500
	// KeywordRevalueBatch bounds the re-scored clusters one cycle reads:
	// every search re-scores its cluster, so twice a cycle's searches keeps
	// up with them and the 6-hourly re-clustering.
	KeywordRevalueBatch = 200
	// steerCursorName names the revalue step's cursor in sweep_cursors.
	steerCursorName = "keyword-steering"
)

// KeywordValue is the expected value of searching a keyword whose market
// scores score (0–100) and which carriers enriched apps rank for.
func KeywordValue(score float64, carriers int) float64 {
	return min(max(score, 0), MaxOpportunityScore) + KeywordCarrierValue*float64(min(max(carriers, 0), KeywordCarrierCap))
}

// PendingKeywordValue is a never-searched keyword's value: the best
// cluster score of the apps it was derived from and how many of them are
// enriched, plus FirstSearchValue.
func PendingKeywordValue(inheritedScore float64, enrichedCarriers int) float64 {
	return KeywordValue(inheritedScore, enrichedCarriers) + FirstSearchValue
}

// ResearchInterval is how long a searched keyword of a market scoring
// score rests before it is due again.
func ResearchInterval(score float64) time.Duration {
	switch {
	case score >= refresh.HotClusterScore:
		return HotKeywordResearch
	case score >= refresh.WarmClusterScore:
		return WarmKeywordResearch
	}
	return ColdKeywordResearch
}

// The connection budget of a cycle: the runtime gives an invocation
// ConnectionBudget simultaneous connections; each task in flight holds
// what it sends at once, and keyword mapping, the side task, gets the rest.
const (
	ConnectionBudget = pacing.MaxConnections
	// ScanConnections: a category scan reads its charts one after another.
	ScanConnections = 1
	// FillConnections: ranking fill searches KeywordChunk at once.
	FillConnections = KeywordChunk
)

// The keyword search rate. Searches go through the API host's global limit
// (upstream.CatalogueLimit, like lookups and charts): each waits for its
// slot, a refusal stops the cycle's searches. The count per cycle is a
// share of that limit's allowance over the cycle.
const (
	// CyclePeriod is the crawl cron's period (config.CronCrawlCycle).
	CyclePeriod = 5 * time.Minute
	// KeywordSearchShare: searches may take 1/60 of the API host's
	// allowance (20 of 1,200 calls a minute: the design's 28.8k a day),
	// leaving the rest to the enrichment controller's lookups, whose pace
	// sets how fast the catalogue is enriched and refreshed.
	KeywordSearchShare = 1.0 / 60
	// SubrequestsPerSearch: the limiter's acquire, the search, and its D1
	// batches: a full answer (KeywordSearchSize apps) is 104 statements
	// (RankingStatements), two batches of d1.MaxBatch. A limiter wait adds
	// an acquire; the cycle's developers are upserted once, in batches.
	SubrequestsPerSearch = 4
)

// KeywordSearchesPerCycle bounds one cycle's searches (keyword mapping and
// ranking fill together), from the API host's limit at its defaults:
// 1,200 a minute × 5 minutes / 60 = 100, 28,800 a day.
var KeywordSearchesPerCycle = SearchesPerCycle(ratelimit.Limits[upstream.CatalogueLimit])

// SearchesPerCycle is KeywordSearchShare of what policy admits in a
// CyclePeriod (at least 1).
func SearchesPerCycle(p limiter.Policy) int {
	if p.Window <= 0 {
		return 1
	}
	perCycle := float64(p.Limit) * CyclePeriod.Seconds() / p.Window
	return max(1, int(perCycle*KeywordSearchShare))
}

// SearchesPerDay is what n searches a cycle make in a day of cycles.
func SearchesPerDay(n int) int { return n * int(24*time.Hour/CyclePeriod) }

// The SQL of the policy, with its numbers formatted in from the constants.
var (
	num = func(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
	// valueSQL is KeywordValue over SQL expressions.
	valueSQL = func(score, carriers string) string {
		return fmt.Sprintf(`(min(max(%s, 0), %s) + %s * min(max(%s, 0), %d))`, score, num(MaxOpportunityScore), num(KeywordCarrierValue), carriers, KeywordCarrierCap)
	}
	// intervalSQL is ResearchInterval in seconds.
	intervalSQL = func(score string) string {
		return fmt.Sprintf(`(CASE WHEN %[1]s >= %[2]s THEN %[3]d WHEN %[1]s >= %[4]s THEN %[5]d ELSE %[6]d END)`, score,
			num(refresh.HotClusterScore), int64(HotKeywordResearch/time.Second),
			num(refresh.WarmClusterScore), int64(WarmKeywordResearch/time.Second), int64(ColdKeywordResearch/time.Second))
	}
	// keywordFacts: a keyword's market score (its own cluster's) and its
	// enriched carriers (the apps of its latest search, by primary key).
	keywordFacts = `SELECT k.keyword AS keyword, k.searched_at AS searched_at, COALESCE(o.score, 0) AS score,
  (SELECT count(*) FROM crawl_rankings r JOIN app_registry a ON a.track_id = r.track_id
    WHERE r.keyword = k.keyword AND a.enrichment_source = 'itunes+store') AS carriers
FROM crawl_keywords k LEFT JOIN opportunity_scores o ON o.cluster_id = k.keyword`

	// searchedSQL marks one keyword searched (?1 the time, ?2 the result
	// count, ?3 the keyword) and schedules it from its facts: not due until
	// its interval has passed.
	searchedSQL = sync.OnceValue(func() string {
		return `WITH f AS (SELECT keyword, ` + valueSQL("score", "carriers") + ` AS value, ` + intervalSQL("score") + ` AS iv
  FROM (` + keywordFacts + ` WHERE k.keyword = ?3))
UPDATE crawl_keywords SET searched_at = ?1, result_count = ?2, value = f.value, research_interval_s = f.iv,
  next_search_at = strftime('%Y-%m-%dT%H:%M:%fZ', ?1, '+' || f.iv || ' seconds'), due_value = NULL
FROM f WHERE crawl_keywords.keyword = f.keyword`
	})

	// revalueSQL reschedules searched keywords (?1 a JSON array of them)
	// from their facts now (?2): due at once when the new interval has
	// passed since their search, else not due.
	revalueSQL = sync.OnceValue(func() string {
		return `WITH f AS (SELECT keyword, ` + valueSQL("score", "carriers") + ` AS value, ` + intervalSQL("score") + ` AS iv, searched_at
  FROM (` + keywordFacts + ` WHERE k.keyword IN (SELECT value FROM json_each(?1)) AND k.searched_at IS NOT NULL)),
g AS (SELECT keyword, value, iv, strftime('%Y-%m-%dT%H:%M:%fZ', searched_at, '+' || iv || ' seconds') AS next FROM f)
UPDATE crawl_keywords SET value = g.value, research_interval_s = g.iv, next_search_at = g.next,
  due_value = CASE WHEN g.next <= ?2 THEN g.value END
FROM g WHERE crawl_keywords.keyword = g.keyword`
	})

	// derivedSQL queues one derived keyword (?1, source ?2, at ?3) from the
	// apps whose titles carry it (?4, a JSON array of track ids), valued by
	// PendingKeywordValue; derived again while pending, it keeps the better
	// value (written only when better: a scan deriving the same keywords
	// again writes nothing).
	derivedSQL = sync.OnceValue(func() string {
		return `INSERT INTO crawl_keywords (keyword, source, created_at, value)
SELECT ?1, ?2, ?3, ` + valueSQL(`COALESCE((SELECT max(o.score) FROM market_cluster_members m JOIN opportunity_scores o ON o.cluster_id = m.cluster_id
    WHERE m.track_id IN (SELECT value FROM json_each(?4))), 0)`,
			`(SELECT count(*) FROM app_registry WHERE track_id IN (SELECT value FROM json_each(?4)) AND enrichment_source = 'itunes+store')`) + ` + ` + num(FirstSearchValue) + `
WHERE true
ON CONFLICT (keyword) DO UPDATE SET value = excluded.value
WHERE crawl_keywords.searched_at IS NULL AND excluded.value > crawl_keywords.value`
	})
)

// promoteSQL makes the searched keywords whose rest is over due (?1 now,
// ?2 at most), soonest first, from idx_crawl_keywords_waiting.
const promoteSQL = `UPDATE crawl_keywords SET due_value = value
WHERE keyword IN (` + waitingSQL + `) RETURNING keyword`

// waitingSQL is the promote step's read.
const waitingSQL = `SELECT keyword FROM crawl_keywords
WHERE due_value IS NULL AND next_search_at IS NOT NULL AND next_search_at <= ?1 ORDER BY next_search_at LIMIT ?2`

// rescoredSQL reads the clusters scored since the cursor (?1 computed_at,
// ?2 cluster id), from idx_opportunity_scores_computed.
const rescoredSQL = `SELECT cluster_id, computed_at FROM opportunity_scores
WHERE (computed_at, cluster_id) > (?1, ?2) ORDER BY computed_at, cluster_id LIMIT ?3`

// pickSQL is the best ?1 keywords to search: the pending and the due,
// each read in value order from its partial index (at most ?1 rows each).
const pickSQL = `SELECT keyword, v, t FROM (SELECT keyword, value AS v, created_at AS t FROM crawl_keywords
  WHERE searched_at IS NULL ORDER BY value DESC, created_at LIMIT ?1)
UNION ALL
SELECT keyword, v, t FROM (SELECT keyword, due_value AS v, next_search_at AS t FROM crawl_keywords
  WHERE due_value IS NOT NULL ORDER BY due_value DESC, next_search_at LIMIT ?1)
ORDER BY v DESC, t, keyword LIMIT ?1`

// keywordGapSQL is the keywords' existence check (?1 now): due, a pending
// or a due keyword; waiting, a searched keyword whose rest is over, which
// the steering's promote step would make due (idx_crawl_keywords_waiting).
// Without one the step is skipped, so an idle cycle writes nothing: the
// promote UPDATE reads four rows even when it finds none (the index seek,
// its IN list, the update's own pass and RETURNING), this EXISTS one.
const keywordGapSQL = `SELECT EXISTS (SELECT 1 FROM crawl_keywords WHERE searched_at IS NULL)
  OR EXISTS (SELECT 1 FROM crawl_keywords WHERE due_value IS NOT NULL) AS due,
  EXISTS (SELECT 1 FROM crawl_keywords WHERE due_value IS NULL AND next_search_at IS NOT NULL AND next_search_at <= ?1) AS waiting`

// steerCursor is the revalue step's position: the last cluster re-valued.
type steerCursor struct {
	At, Cluster string
}

// SteerResult is what one steering step did.
type SteerResult struct {
	Revalued int `json:"revalued,omitempty"` // re-scored clusters whose keyword was rescheduled
	Promoted int `json:"promoted,omitempty"` // searched keywords made due
}

// Steer implements Store: the revalue step (keywords of clusters scored
// since the cursor rescheduled from their new scores, the cursor moved in
// the same atomic batch) and, when promote, the promote step (keywords
// whose rest is over made due). With neither there is no write.
func (s D1Store) Steer(ctx context.Context, now time.Time, promote bool) (SteerResult, error) {
	var res SteerResult
	var cur []struct {
		Cursor string `json:"cursor"`
	}
	if err := s.DB.Query(ctx, &cur, `SELECT CAST(cursor AS TEXT) AS cursor FROM sweep_cursors WHERE name = ?`, steerCursorName); err != nil {
		return res, err
	}
	var c steerCursor
	if len(cur) > 0 {
		var pair []string
		if json.Unmarshal([]byte(cur[0].Cursor), &pair) == nil && len(pair) == 2 {
			c = steerCursor{pair[0], pair[1]}
		}
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
			d1.Stmt{SQL: revalueSQL(), Args: []any{string(b), d1.Time(now)}},
			d1.Stmt{SQL: `INSERT INTO sweep_cursors (name, cursor, updated_at) VALUES (?,?,?) ON CONFLICT (name) DO UPDATE SET cursor = excluded.cursor, updated_at = excluded.updated_at`,
				Args: []any{steerCursorName, string(pos), d1.Time(now)}})
		res.Revalued = len(rows)
	}
	if promote {
		stmts = append(stmts, d1.Stmt{SQL: promoteSQL, Args: []any{d1.Time(now), KeywordPromoteBatch}})
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

// SteerHotQueries are the steering's reads.
func steerHotQueries() []d1.NamedQuery {
	return []d1.NamedQuery{
		{Name: "keyword pick", SQL: pickSQL, Args: []any{KeywordSearchesPerCycle}},
		{Name: "keyword gap check", SQL: keywordGapSQL, Args: []any{"2026-01-01T00:00:00.000Z"}},
		{Name: "keywords coming due", SQL: waitingSQL, Args: []any{"2026-01-01T00:00:00.000Z", KeywordPromoteBatch}},
		{Name: "re-scored clusters", SQL: rescoredSQL, Args: []any{"2026-01-01T00:00:00.000Z", "budget", KeywordRevalueBatch}},
		{Name: "keyword facts", SQL: keywordFacts + ` WHERE k.keyword IN (SELECT value FROM json_each(?1))`, Args: []any{`["budget","chat"]`}},
	}
}
