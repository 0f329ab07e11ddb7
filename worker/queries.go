package worker

import (
	"strings"

	"storecrawl/worker/d1"
	"storecrawl/worker/enrichment"
	"storecrawl/worker/history"
)

// The SQL of the cron and queue paths, in one place so a test can check
// every plan (EXPLAIN QUERY PLAN: no full-table scans).

// appJSONSQL builds the record in SQLite, so NULLs and JSON columns come out right.
const appJSONSQL = `SELECT json_object(
  'track_id', track_id, 'name', name, 'bundle_id', bundle_id, 'developer_id', developer_id,
  'developer_name', developer_name, 'genre', genre, 'genre_id', genre_id, 'price', price,
  'currency', currency, 'average_rating', average_rating, 'rating_count', rating_count,
  'version', version, 'release_date', release_date,
  'current_version_release_date', current_version_release_date, 'description', description,
  'content_rating', content_rating, 'artwork_url', artwork_url, 'file_size_bytes', file_size_bytes,
  'languages', json(languages), 'subtitle', subtitle, 'rating_histogram', json(rating_histogram),
  'iap_count', iap_count, 'in_app_purchases', json(in_app_purchases),
  'similar_app_ids', json(similar_app_ids), 'html_r2_key', html_r2_key,
  'enrich_priority', enrich_priority, 'enrich_attempts', enrich_attempts,
  'enrichment_source', enrichment_source, 'enrich_error', enrich_error,
  'enriched_at', enriched_at, 'analyzed_at', analyzed_at, 'demand_score', demand_score, 'competitiveness_score', competitiveness_score,
  'rankings_filled_at', rankings_filled_at,
  'discovered_at', discovered_at, 'updated_at', updated_at)
FROM app_registry WHERE track_id = ?`

// ScoreInputsSQL reads the demand-scoring inputs of n apps by primary key.
func ScoreInputsSQL(n int) string {
	return `SELECT track_id, COALESCE(average_rating, 0), COALESCE(rating_count, 0), COALESCE(current_version_release_date, '')
FROM app_registry WHERE track_id IN (?` +
		strings.Repeat(",?", n-1) + `)`
}

// clusterBatchSQL reads one batch of keyword rankings past a keyword cursor
// (crawl_rankings' primary key), with what scoring needs (app_registry's).
const clusterBatchSQL = `SELECT k.keyword AS keyword, k.track_id AS track_id, k.rank AS rank,
  COALESCE(a.rating_count, 0) AS ratings, COALESCE(a.average_rating, 0) AS rating
FROM crawl_rankings k JOIN app_registry a ON a.track_id = k.track_id
WHERE k.keyword IN (SELECT keyword FROM crawl_keywords WHERE keyword > ? AND searched_at IS NOT NULL ORDER BY keyword LIMIT ?)`

// keywordRankingsSQL reads the rankings of n keywords by primary key.
func keywordRankingsSQL(n int) string {
	return `SELECT k.keyword AS keyword, k.track_id AS track_id, k.rank AS rank,
  COALESCE(a.rating_count, 0) AS ratings, COALESCE(a.average_rating, 0) AS rating
FROM crawl_rankings k JOIN app_registry a ON a.track_id = k.track_id
WHERE k.keyword IN (?` + strings.Repeat(",?", n-1) + `)`
}

// clusterAggregatesSQL reads n stored clusters by primary key. A cluster
// whose fragmentation is not analysed yet falls back to 1 − the leader's share.
func clusterAggregatesSQL(n int) string {
	return `SELECT cluster_id, app_count, total_ratings, COALESCE(avg_rating, 0) AS avg_rating, COALESCE(top_share, 1) AS top_share,
  COALESCE(hhi, 1) AS hhi, COALESCE(fragmentation, 1 - COALESCE(top_share, 1)) AS fragmentation
FROM market_clusters WHERE cluster_id IN (?` + strings.Repeat(",?", n-1) + `)`
}

// clusterMemberRatingsSQL reads the member apps' rating counts of n
// clusters (market_cluster_members' primary key, then app_registry's).
func clusterMemberRatingsSQL(n int) string {
	return `SELECT m.cluster_id AS cluster_id, COALESCE(a.rating_count, 0) AS ratings
FROM market_cluster_members m JOIN app_registry a ON a.track_id = m.track_id
WHERE m.cluster_id IN (?` + strings.Repeat(",?", n-1) + `)`
}

// marketJSON renders one market (a cluster, its score and its members).
const marketJSON = `SELECT json_object('cluster_id', o.cluster_id, 'opportunity_score', o.score, 'demand', o.demand,
  'fragmentation', o.fragmentation, 'hhi', c.hhi, 'quality_gap', o.quality_gap, 'app_count', c.app_count,
  'total_ratings', c.total_ratings, 'avg_rating', c.avg_rating, 'computed_at', o.computed_at,
  'members', (SELECT json_group_array(json_object('track_id', m.track_id, 'position', m.position,
      'name', (SELECT name FROM app_registry WHERE track_id = m.track_id)))
    FROM market_cluster_members m WHERE m.cluster_id = o.cluster_id))
FROM opportunity_scores o JOIN market_clusters c ON c.cluster_id = o.cluster_id`

// opportunitiesSQL lists markets by opportunity score (idx_opportunity_scores_score).
const opportunitiesSQL = marketJSON + `
ORDER BY o.score DESC LIMIT ? OFFSET ?`

// clustersSQL lists markets by size (idx_market_clusters_size).
const clustersSQL = marketJSON + `
ORDER BY c.total_ratings DESC LIMIT ? OFFSET ?`

// HotQuery is a query of a cron or queue path with sample arguments.
type HotQuery struct {
	Name string
	SQL  string
	Args []any
}

// featureQueries converts a feature package's hot queries.
func featureQueries(qs []d1.NamedQuery) []HotQuery {
	out := make([]HotQuery, len(qs))
	for i, q := range qs {
		out[i] = HotQuery(q)
	}
	return out
}

// HotQueries lists the cron and queue path reads, for the query-plan test.
func HotQueries() []HotQuery {
	return append([]HotQuery{
		{"enrichment pick", enrichment.PickSQL, []any{50}},
		{"score inputs", ScoreInputsSQL(3), []any{1, 2, 3}},
		{"app record", appJSONSQL, []any{100000001}},
		{"cluster batch", clusterBatchSQL, []any{"", 200}},
		{"opportunities", opportunitiesSQL, []any{20, 0}},
		{"clusters", clustersSQL, []any{20, 0}},
		{"keyword rankings", keywordRankingsSQL(2), []any{"budget", "chat"}},
		{"cluster aggregates", clusterAggregatesSQL(2), []any{"budget", "chat"}},
		{"cluster member ratings", clusterMemberRatingsSQL(2), []any{"budget", "chat"}},
	}, featureQueries(history.HotQueries())...)
}
