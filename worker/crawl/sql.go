package crawl

import (
	"fmt"
	"strconv"
	"sync"
	"time"

	"storecrawl/worker/refresh"
)

// The keyword steering's SQL: steer.go holds the policy whose constants it
// formats in, store.go runs it.

// The SQL of the policy, with its numbers formatted in from the constants
// (the statements on first use, not in the Worker's cold start).
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
	// topValueSQL and topIntervalSQL are TopSegmentValue and
	// TopSegmentInterval over SQL expressions: a top segment's keyword
	// (top, 0 or 1) valued first and rested as a hot market's.
	topValueSQL = func(value, top string) string {
		return fmt.Sprintf(`(%s + CASE WHEN %s THEN %s ELSE 0 END)`, value, top, num(TopSegmentKeywordValue))
	}
	topIntervalSQL = func(score, top string) string {
		return fmt.Sprintf(`(CASE WHEN %s THEN %d ELSE %s END)`, top, int64(HotKeywordResearch/time.Second), intervalSQL(score))
	}
	// keywordFacts: a keyword's market score (its own cluster's), its
	// enriched carriers (the apps of its latest search, by primary key)
	// and whether it is a top segment's (segment_focus_keywords, by key).
	keywordFacts = `SELECT k.keyword AS keyword, k.searched_at AS searched_at, COALESCE(o.score, 0) AS score,
  (SELECT count(*) FROM crawl_rankings r JOIN app_registry a ON a.track_id = r.track_id
    WHERE r.keyword = k.keyword AND a.enrichment_source = 'itunes+store') AS carriers,
  EXISTS (SELECT 1 FROM segment_focus_keywords t WHERE t.keyword = k.keyword) AS top_segment
FROM crawl_keywords k LEFT JOIN opportunity_scores o ON o.cluster_id = k.keyword`

	// searchedSQL marks one keyword searched (?1 the time, ?2 the result
	// count, ?3 the keyword) and schedules it from its facts: not due until
	// its interval has passed.
	searchedSQL = sync.OnceValue(func() string {
		return `WITH f AS (SELECT keyword, ` + topValueSQL(valueSQL("score", "carriers"), "top_segment") + ` AS value, ` + topIntervalSQL("score", "top_segment") + ` AS iv
  FROM (` + keywordFacts + ` WHERE k.keyword = ?3))
UPDATE crawl_keywords SET searched_at = ?1, result_count = ?2, value = f.value, research_interval_s = f.iv,
  next_search_at = strftime('%Y-%m-%dT%H:%M:%fZ', ?1, '+' || f.iv || ' seconds'), due_value = NULL
FROM f WHERE crawl_keywords.keyword = f.keyword`
	})

	// revalueSQL reschedules searched keywords (?1 a JSON array of them)
	// from their facts now (?2): due at once when the new interval has
	// passed since their search, else not due. Only a keyword whose
	// schedule changed is rewritten (its interval, hence next_search_at,
	// or, for a due one, its due_value, the pick's order): most keywords
	// of a re-scored cluster keep their tier, while their value moves
	// with every small change of the score, and an UPDATE to the same
	// schedule would still write the row and the entries of the indexes on
	// value, due_value and next_search_at (idx_crawl_keywords_due_value,
	// _waiting). A resting keyword's stored value may then lag its score;
	// nothing reads it before the promote step, which values it afresh
	// (promoteSQL), or its next search (searchedSQL).
	revalueSQL = sync.OnceValue(func() string {
		return `WITH f AS (SELECT keyword, ` + topValueSQL(valueSQL("score", "carriers"), "top_segment") + ` AS value, ` + topIntervalSQL("score", "top_segment") + ` AS iv, searched_at
  FROM (` + keywordFacts + ` WHERE k.keyword IN (SELECT value FROM json_each(?1)) AND k.searched_at IS NOT NULL)),
g AS (SELECT keyword, value, iv, next, CASE WHEN next <= ?2 THEN value END AS due
  FROM (SELECT keyword, value, iv, strftime('%Y-%m-%dT%H:%M:%fZ', searched_at, '+' || iv || ' seconds') AS next FROM f))
UPDATE crawl_keywords SET value = g.value, research_interval_s = g.iv, next_search_at = g.next, due_value = g.due
FROM g WHERE crawl_keywords.keyword = g.keyword
  AND (crawl_keywords.research_interval_s IS NOT g.iv OR crawl_keywords.next_search_at IS NOT g.next
    OR crawl_keywords.due_value IS NOT g.due)`
	})

	// promoteSQL makes the searched keywords whose rest is over due (?1
	// now, ?2 at most), soonest first, from idx_crawl_keywords_waiting,
	// valued from their facts now (the revalue step leaves a resting
	// keyword's value as it was while its schedule holds): the due set's
	// order is the markets' of today.
	promoteSQL = sync.OnceValue(func() string {
		return `WITH f AS (SELECT keyword, ` + topValueSQL(valueSQL("score", "carriers"), "top_segment") + ` AS value
  FROM (` + keywordFacts + ` WHERE k.keyword IN (` + waitingSQL + `)))
UPDATE crawl_keywords SET value = f.value, due_value = f.value
FROM f WHERE crawl_keywords.keyword = f.keyword RETURNING crawl_keywords.keyword`
	})
)

// waitingSQL is the promote step's read.
const waitingSQL = `SELECT keyword FROM crawl_keywords
WHERE due_value IS NULL AND next_search_at IS NOT NULL AND next_search_at <= ?1 ORDER BY next_search_at LIMIT ?2`

// rescoredSQL reads the clusters scored since the cursor (?1 computed_at,
// ?2 cluster id), from idx_opportunity_scores_computed.
const rescoredSQL = `SELECT cluster_id, computed_at FROM opportunity_scores
WHERE (computed_at, cluster_id) > (?1, ?2) ORDER BY computed_at, cluster_id LIMIT ?3`

// pickSQL is the best ?1 keywords to search: the pending (at most ?2) and
// the due (at most ?3), each read in value order from its partial index;
// a limit of 0 (the cost guard slowing that kind) reads none.
const pickSQL = `SELECT keyword, v, t FROM (SELECT keyword, value AS v, created_at AS t FROM crawl_keywords
  WHERE searched_at IS NULL ORDER BY value DESC, created_at LIMIT ?2)
UNION ALL
SELECT keyword, v, t FROM (SELECT keyword, due_value AS v, next_search_at AS t FROM crawl_keywords
  WHERE due_value IS NOT NULL ORDER BY due_value DESC, next_search_at LIMIT ?3)
ORDER BY v DESC, t, keyword LIMIT ?1`

// keywordGapSQL is the keywords' existence check (?1 now): due, a pending
// or a due keyword; waiting, a searched keyword whose rest is over, which
// the steering's promote step would make due (idx_crawl_keywords_waiting).
// Without one the step is skipped, so an idle cycle writes nothing: the
// promote UPDATE reads four rows even when it finds none (the index seek,
// its IN list, the update's own pass and RETURNING), this EXISTS one.
const keywordGapSQL = `SELECT EXISTS (SELECT 1 FROM crawl_keywords WHERE searched_at IS NULL LIMIT 1)
  OR EXISTS (SELECT 1 FROM crawl_keywords WHERE due_value IS NOT NULL LIMIT 1) AS due,
  EXISTS (SELECT 1 FROM crawl_keywords WHERE due_value IS NULL AND next_search_at IS NOT NULL AND next_search_at <= ?1 LIMIT 1) AS waiting`
