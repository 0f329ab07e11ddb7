package markets

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"storecrawl/worker/d1"
	"storecrawl/worker/events"
	"storecrawl/worker/registry"
)

// The markets' SQL: reads by primary key or cursor, never a scan.

// ScoreInputsSQL reads the demand-scoring inputs of n apps by primary key.
func ScoreInputsSQL(n int) string {
	return `SELECT track_id, COALESCE(average_rating, 0) AS avg, COALESCE(rating_count, 0) AS count, COALESCE(current_version_release_date, '') AS updated
FROM app_registry WHERE track_id IN (` + d1.Placeholders(n) + `)`
}

// keywordRankingsSQL reads the rankings of keywords (?1, a JSON array) by
// primary key, with what scoring needs (app_registry's).
const keywordRankingsSQL = `SELECT k.keyword AS keyword, k.track_id AS track_id, k.rank AS rank,
  COALESCE(a.rating_count, 0) AS ratings, COALESCE(a.average_rating, 0) AS rating
FROM crawl_rankings k JOIN app_registry a ON a.track_id = k.track_id
WHERE k.keyword IN (SELECT value FROM json_each(?1))`

// storedClustersSQL reads clusters (?1, a JSON array of ids) as stored,
// by primary key: what a re-clustering compares with, so that it writes
// only what changed. A market's members are its keyword's rankings
// (migrations/0034), which no re-clustering writes.
const storedClustersSQL = `SELECT c.cluster_id AS cluster_id, c.app_count AS app_count, c.total_ratings AS total_ratings,
  c.avg_rating AS avg_rating, c.top_share AS top_share, c.hhi AS hhi, c.fragmentation AS fragmentation, c.member_sum AS member_sum
FROM market_clusters c WHERE c.cluster_id IN (SELECT value FROM json_each(?1))`

// clusterAggregatesSQL reads stored clusters (?1, a JSON array of ids) by
// primary key. A cluster whose fragmentation is not analysed yet falls
// back to 1 − the leader's share.
const clusterAggregatesSQL = `SELECT cluster_id, app_count, total_ratings, COALESCE(avg_rating, 0) AS avg_rating, COALESCE(top_share, 1) AS top_share,
  COALESCE(hhi, 1) AS hhi, COALESCE(fragmentation, 1 - COALESCE(top_share, 1)) AS fragmentation
FROM market_clusters WHERE cluster_id IN (SELECT value FROM json_each(?1))`

// clusterMemberRatingsSQL reads the member apps' rating counts of clusters
// (?1, a JSON array of ids): the members are the keyword's rankings
// (crawl_rankings' primary key), then app_registry's.
const clusterMemberRatingsSQL = `SELECT m.keyword AS cluster_id, COALESCE(a.rating_count, 0) AS ratings
FROM crawl_rankings m JOIN app_registry a ON a.track_id = m.track_id
WHERE m.keyword IN (SELECT value FROM json_each(?1))
  AND EXISTS (SELECT 1 FROM market_clusters c WHERE c.cluster_id = m.keyword)`

// The markets' writes: one statement a table, its rows a JSON array (?1),
// each written only when a value differs from the stored one (the WHERE
// of each upsert), so a redelivery or a re-clustering of unchanged
// rankings writes no row. D1 bills each row written plus each index entry
// the write changes: noted at each statement.
const (
	// clusterRowsSQL writes clusters ([id, apps, total ratings, average
	// rating, leader's share, HHI, fragmentation, members' track id sum]
	// each) at ?2. A new row is the row, its primary key's entry
	// (sqlite_autoindex_market_clusters_1), its idx_market_clusters_size
	// entry and the clusters counter (a trigger); a written one also
	// rewrites its idx_market_clusters_size entry (total_ratings).
	clusterRowsSQL = `INSERT INTO market_clusters (cluster_id, app_count, total_ratings, avg_rating, top_share, hhi, fragmentation, member_sum, computed_at, fragmented_at)
SELECT value->>0, value->>1, value->>2, value->>3, value->>4, value->>5, value->>6, value->>7, ?2, ?2 FROM json_each(?1) WHERE true
ON CONFLICT (cluster_id) DO UPDATE SET app_count = excluded.app_count, total_ratings = excluded.total_ratings,
  avg_rating = excluded.avg_rating, top_share = excluded.top_share, hhi = excluded.hhi, fragmentation = excluded.fragmentation,
  member_sum = excluded.member_sum, computed_at = excluded.computed_at, fragmented_at = excluded.fragmented_at
WHERE market_clusters.app_count IS NOT excluded.app_count OR market_clusters.total_ratings IS NOT excluded.total_ratings
  OR market_clusters.avg_rating IS NOT excluded.avg_rating OR market_clusters.top_share IS NOT excluded.top_share
  OR market_clusters.hhi IS NOT excluded.hhi OR market_clusters.fragmentation IS NOT excluded.fragmentation
  OR market_clusters.member_sum IS NOT excluded.member_sum`
	// fragmentationSQL stores the analysis ([id, HHI, fragmentation] each)
	// at ?2 on the clusters whose values differ (in no index).
	fragmentationSQL = `UPDATE market_clusters SET hhi = j.value->>1, fragmentation = j.value->>2, fragmented_at = ?2
FROM json_each(?1) j
WHERE market_clusters.cluster_id = j.value->>0
  AND (market_clusters.hhi IS NOT j.value->>1 OR market_clusters.fragmentation IS NOT j.value->>2)`
	// opportunityScoresSQL writes scores ([id, score, demand,
	// fragmentation, quality gap] each) that differ. computed_at moves only
	// when the score itself does: the keyword steering (worker/crawl)
	// re-values the keywords of the clusters scored since its cursor on
	// (computed_at, cluster_id), and a keyword's value and interval read
	// the score alone. A written row rewrites its idx_opportunity_scores_score
	// and idx_opportunity_scores_computed entries.
	opportunityScoresSQL = `INSERT INTO opportunity_scores (cluster_id, score, demand, fragmentation, quality_gap, computed_at)
SELECT value->>0, value->>1, value->>2, value->>3, value->>4, ?2 FROM json_each(?1) WHERE true
ON CONFLICT (cluster_id) DO UPDATE SET score = excluded.score, demand = excluded.demand,
  fragmentation = excluded.fragmentation, quality_gap = excluded.quality_gap,
  computed_at = CASE WHEN opportunity_scores.score IS NOT excluded.score THEN excluded.computed_at ELSE opportunity_scores.computed_at END
WHERE opportunity_scores.score IS NOT excluded.score OR opportunity_scores.demand IS NOT excluded.demand
  OR opportunity_scores.fragmentation IS NOT excluded.fragmentation OR opportunity_scores.quality_gap IS NOT excluded.quality_gap`
)

// driftSQL is one chunk of the clustering cron's check: the next ?2
// searched keywords past the cursor ?1 (crawl_keywords' primary key),
// each compared with its stored market by primary keys: it has drifted
// when it has MinClusterApps ranked apps or more and its cluster was not
// measured over exactly those apps (their count and the sum of their
// track ids), or its cluster or score is missing (a rankings-updated,
// clusters-ready or fragmentation-done message lost). The members are the
// rankings, so a rank that moved is no drift (the stats do not read
// ranks). Rows: each drifted keyword (drifted 1), then the chunk's last
// keyword and size (drifted 0; a NULL keyword for an empty chunk). CROSS
// JOIN keeps the batch first: joined freely, the planner walks every
// ranking.
var driftSQL = fmt.Sprintf(`WITH batch AS (SELECT keyword FROM crawl_keywords WHERE keyword > ?1 AND searched_at IS NOT NULL ORDER BY keyword LIMIT ?2),
per AS (SELECT r.keyword AS keyword, count(*) AS n, sum(r.track_id) AS ids
  FROM batch CROSS JOIN crawl_rankings r ON r.keyword = batch.keyword JOIN app_registry a ON a.track_id = r.track_id
  GROUP BY r.keyword)
SELECT per.keyword AS keyword, 1 AS drifted, 0 AS size FROM per LEFT JOIN market_clusters c ON c.cluster_id = per.keyword
WHERE per.n >= %d AND (c.app_count IS NOT per.n OR c.member_sum IS NOT per.ids
  OR NOT EXISTS (SELECT 1 FROM opportunity_scores o WHERE o.cluster_id = per.keyword))
UNION ALL
SELECT max(keyword), 0, count(*) FROM batch`, MinClusterApps)

// scoreFields are a market's scores as the API serves them (GET
// /v1/opportunities, GET /v1/clusters) and the analyst's brief shows them:
// one list, so the two can never disagree on a value or its scale.
const scoreFields = `'cluster_id', c.cluster_id, 'opportunity_score', o.score, 'demand', o.demand,
  'fragmentation', o.fragmentation, 'hhi', c.hhi, 'quality_gap', o.quality_gap, 'app_count', c.app_count,
  'total_ratings', c.total_ratings, 'avg_rating', c.avg_rating`

// marketJSON renders one market (a cluster, its score and its members:
// its keyword's rankings, a member's position its rank).
const marketJSON = `SELECT json_object(` + scoreFields + `, 'computed_at', o.computed_at,
  'members', (SELECT json_group_array(json_object('track_id', m.track_id, 'position', m.rank,
      'name', (SELECT name FROM app_registry WHERE track_id = m.track_id)))
    FROM crawl_rankings m WHERE m.keyword = o.cluster_id)) AS market`

// scoresSQL reads one cluster's scores by primary key; a cluster not scored
// yet has a null opportunity score.
const scoresSQL = `SELECT json_object(` + scoreFields + `) AS scores
FROM market_clusters c LEFT JOIN opportunity_scores o ON o.cluster_id = c.cluster_id WHERE c.cluster_id = ?`

// Scores is one market's scores exactly as the API serves them, on the
// API's scales.
type Scores struct {
	ClusterID string `json:"cluster_id"`
	// OpportunityScore is 0–100 (Cluster.Score); null while not scored.
	OpportunityScore *float64 `json:"opportunity_score"`
	// Demand is log10(1 + the members' total ratings): 0 to about 7.
	Demand *float64 `json:"demand"`
	// Fragmentation is 1 − HHI, 0–1: high = demand spread over many apps.
	Fragmentation *float64 `json:"fragmentation"`
	// HHI is the Herfindahl index of the members' rating shares, 0–1.
	HHI *float64 `json:"hhi"`
	// QualityGap is how far the weighted rating is under QualityBar, 0–1.
	QualityGap   *float64 `json:"quality_gap"`
	AppCount     int      `json:"app_count"`
	TotalRatings int64    `json:"total_ratings"`
	AvgRating    float64  `json:"avg_rating"`
}

// ReadScores reads one cluster's scores as the API serves them (found false
// for an unknown cluster).
func ReadScores(ctx context.Context, db *d1.DB, clusterID string) (Scores, bool, error) {
	var rows []struct {
		Scores string `json:"scores"`
	}
	if err := db.Query(ctx, &rows, scoresSQL, clusterID); err != nil || len(rows) == 0 {
		return Scores{}, false, err
	}
	var sc Scores
	if err := json.Unmarshal([]byte(rows[0].Scores), &sc); err != nil {
		return Scores{}, false, fmt.Errorf("markets: scores of %q: %w", clusterID, err)
	}
	return sc, true, nil
}

// opportunitiesSQL is a page of markets by opportunity score after the
// cursor (?1 the last score, ?2 its row's rowid; ?3 the page size): a
// range of idx_opportunity_scores_score, whose implicit rowid breaks ties,
// so no page reads more than its rows however deep it is.
const opportunitiesSQL = marketJSON + `, o.score AS k, o.rowid AS r
FROM opportunity_scores o JOIN market_clusters c ON c.cluster_id = o.cluster_id
WHERE o.score <= ?1 AND (o.score < ?1 OR o.rowid > ?2)
ORDER BY o.score DESC, o.rowid LIMIT ?3`

// clustersSQL is the same by size: a range of idx_market_clusters_size.
const clustersSQL = marketJSON + `, c.total_ratings AS k, c.rowid AS r
FROM market_clusters c JOIN opportunity_scores o ON o.cluster_id = c.cluster_id
WHERE c.total_ratings <= ?1 AND (c.total_ratings < ?1 OR c.rowid > ?2)
ORDER BY c.total_ratings DESC, c.rowid LIMIT ?3`

// HotQuery is a query of a cron or queue path with sample arguments.
type HotQuery struct {
	Name string
	SQL  string
	Args []any
}

// HotQueries are the markets' reads, and their writes (explained, not run).
func HotQueries() []d1.NamedQuery {
	kws := `["budget","chat"]`
	return []d1.NamedQuery{
		{Name: "score inputs", SQL: ScoreInputsSQL(3), Args: []any{1, 2, 3}},
		{Name: "opportunities, first page", SQL: opportunitiesSQL, Args: []any{d1.TopNumber, 0, 50}, Page: true},
		{Name: "opportunities, a page deep", SQL: opportunitiesSQL, Args: []any{50.0, 40000, 50}, Page: true},
		{Name: "clusters, first page", SQL: clustersSQL, Args: []any{d1.TopNumber, 0, 50}, Page: true},
		{Name: "clusters, a page deep", SQL: clustersSQL, Args: []any{250000, 40000, 50}, Page: true},
		{Name: "keyword rankings", SQL: keywordRankingsSQL, Args: []any{kws}},
		{Name: "stored clusters", SQL: storedClustersSQL, Args: []any{kws}},
		{Name: "cluster aggregates", SQL: clusterAggregatesSQL, Args: []any{kws}},
		{Name: "cluster member ratings", SQL: clusterMemberRatingsSQL, Args: []any{kws}},
		{Name: "cluster scores", SQL: scoresSQL, Args: []any{"budget"}},
		// A chunk of the cron's check at its size: the keywords past the
		// cursor by primary key, each one's rankings, apps and members by theirs.
		{Name: "cluster drift", SQL: driftSQL, Args: []any{"", ClusterCheckChunk}},
		{Name: "cluster rows written", SQL: clusterRowsSQL, Args: []any{`[["budget",3,12000,3.9,0.4,0.34,0.66,300000003]]`, "2026-01-01T00:00:00.000Z"}},
		{Name: "fragmentation written", SQL: fragmentationSQL, Args: []any{`[["budget",0.34,0.66]]`, "2026-01-01T00:00:00.000Z"}},
		{Name: "app scores written", SQL: registry.AppScoresSQL, Args: []any{`[[100000001,12.5,61.2]]`, "2026-01-01T00:00:00.000Z"}},
		{Name: "opportunity scores written", SQL: opportunityScoresSQL, Args: []any{`[["budget",40.1,4.1,0.66,0.1]]`, "2026-01-01T00:00:00.000Z"}},
	}
}

// ClusterCursor names the 6-hourly clustering's keyword cursor in sweep_cursors.
const ClusterCursor = "clustering"

// The clustering cron's bounds (ClusterBatchKeywords a run, in markets.go).
const (
	// ClusterCheckChunk is the keywords one drift read compares: by its
	// plan ~40 rows a keyword (its ~18 rankings and their apps, its
	// cluster and score; ~80 while the members were a table of their own).
	// The read walks its own batch twice (998 rows at 500 in
	// worker/queryplan_test.go's plan test), under that test's bound of
	// 1,000: a bigger chunk needs a read that walks it once.
	ClusterCheckChunk = 500
	// ClusterRepairMax bounds the drifted keywords one run re-clusters
	// (MaxReclusterKeywords at a time, five statements each): the run
	// stops after the chunk that reaches it (at most 1,499 repaired, ~130
	// queries with the checks), the cursor after that chunk.
	ClusterRepairMax = 1_000
)

// Markets runs the markets stage on D1 and the EVENTS queue: each method
// reads current state, computes, writes, and announces what it wrote. It
// implements Analyzer (what HandleEvent routes to).
type Markets struct {
	DB     *d1.DB
	Events events.Sender
}

type rankedRow struct {
	Keyword string  `json:"keyword"`
	TrackID int64   `json:"track_id"`
	Rank    int     `json:"rank"`
	Ratings int64   `json:"ratings"`
	Rating  float64 `json:"rating"`
}

func rankedApps(rows []rankedRow) []RankedApp {
	out := make([]RankedApp, 0, len(rows))
	for _, r := range rows {
		out = append(out, RankedApp{Keyword: r.Keyword, TrackID: r.TrackID, Rank: r.Rank, RatingCount: r.Ratings, Rating: r.Rating})
	}
	return out
}

func (m *Markets) exec(ctx context.Context, stmts []d1.Stmt) error {
	if len(stmts) == 0 {
		return nil
	}
	_, err := m.DB.Exec(ctx, stmts...)
	return err
}

func jsonArg(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// ScoreInputs implements Analyzer.
func (m *Markets) ScoreInputs(ctx context.Context, ids []int64) ([]ScoreInput, error) {
	var rows []struct {
		TrackID int64   `json:"track_id"`
		Avg     float64 `json:"avg"`
		Count   int64   `json:"count"`
		Updated string  `json:"updated"`
	}
	if err := m.DB.Query(ctx, &rows, ScoreInputsSQL(len(ids)), d1.Args(ids)...); err != nil {
		return nil, err
	}
	out := make([]ScoreInput, len(rows))
	for i, r := range rows {
		out[i] = ScoreInput{TrackID: r.TrackID, AverageRating: r.Avg, RatingCount: r.Count, CurrentVersionReleaseDate: r.Updated}
	}
	return out, nil
}

// SaveAppScores implements Analyzer: one statement for the apps
// (registry.AppScores: an app whose scores are unchanged is not written).
func (m *Markets) SaveAppScores(ctx context.Context, scores map[int64]AppScores, at time.Time) error {
	if len(scores) == 0 {
		return nil
	}
	ids := make([]int64, 0, len(scores))
	for id := range scores {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	rows := make([][]any, len(ids))
	for i, id := range ids {
		rows[i] = []any{id, scores[id].Demand, scores[id].Competitiveness}
	}
	return m.exec(ctx, []d1.Stmt{registry.AppScores(jsonArg(rows), d1.Time(at))})
}

// ClusterKeywords implements Analyzer: it re-clusters keywords from their
// rankings (at most MaxReclusterKeywords a call, the keywords of one
// rankings-updated message: only what the searches touched), writes what
// changed and returns the clusters that changed.
func (m *Markets) ClusterKeywords(ctx context.Context, keywords []string, now time.Time) ([]string, error) {
	if len(keywords) > MaxReclusterKeywords {
		return nil, fmt.Errorf("markets: %d keywords to re-cluster, at most %d a call", len(keywords), MaxReclusterKeywords)
	}
	d, err := m.diff(ctx, keywords)
	if err != nil {
		return nil, err
	}
	if err := m.exec(ctx, DiffStatements(d, now)); err != nil {
		return nil, err
	}
	return d.Changed, nil
}

// diff reads the keywords' rankings and their stored clusters (two reads)
// and compares them.
func (m *Markets) diff(ctx context.Context, keywords []string) (ClusterDiff, error) {
	arg := jsonArg(keywords)
	var rows []rankedRow
	if err := m.DB.Query(ctx, &rows, keywordRankingsSQL, arg); err != nil {
		return ClusterDiff{}, err
	}
	fresh := BuildClusters(rankedApps(rows))
	if len(fresh) == 0 {
		return ClusterDiff{}, nil
	}
	var stored []struct {
		ID            string   `json:"cluster_id"`
		Apps          int      `json:"app_count"`
		TotalRatings  int64    `json:"total_ratings"`
		AvgRating     *float64 `json:"avg_rating"`
		TopShare      *float64 `json:"top_share"`
		HHI           *float64 `json:"hhi"`
		Fragmentation *float64 `json:"fragmentation"`
		MemberSum     *int64   `json:"member_sum"`
	}
	if err := m.DB.Query(ctx, &stored, storedClustersSQL, jsonArg(clusterIDs(fresh))); err != nil {
		return ClusterDiff{}, err
	}
	byID := make(map[string]StoredCluster, len(stored))
	for _, s := range stored {
		byID[s.ID] = StoredCluster{Apps: s.Apps, TotalRatings: s.TotalRatings, AvgRating: s.AvgRating, TopShare: s.TopShare,
			HHI: s.HHI, Fragmentation: s.Fragmentation, MemberSum: s.MemberSum}
	}
	return DiffClusters(fresh, byID), nil
}

func clusterIDs(cs []Cluster) []string {
	ids := make([]string, len(cs))
	for i, c := range cs {
		ids[i] = c.ID
	}
	return ids
}

// ScoreClusters implements Analyzer: opportunity scores from stored
// clusters, written where they changed.
func (m *Markets) ScoreClusters(ctx context.Context, ids []string, now time.Time) error {
	var rows []struct {
		ID            string  `json:"cluster_id"`
		Apps          int     `json:"app_count"`
		TotalRatings  int64   `json:"total_ratings"`
		AvgRating     float64 `json:"avg_rating"`
		TopShare      float64 `json:"top_share"`
		HHI           float64 `json:"hhi"`
		Fragmentation float64 `json:"fragmentation"`
	}
	if err := m.DB.Query(ctx, &rows, clusterAggregatesSQL, jsonArg(ids)); err != nil {
		return err
	}
	cs := make([]Cluster, 0, len(rows))
	for _, r := range rows {
		c := Cluster{ID: r.ID, Apps: r.Apps, TotalRatings: r.TotalRatings, AvgRating: r.AvgRating, TopShare: r.TopShare, HHI: r.HHI, Fragmentation: r.Fragmentation}
		c.Score()
		cs = append(cs, c)
	}
	return m.exec(ctx, ScoreStatements(cs, now))
}

// AnalyzeFragmentation implements Analyzer: it measures the fragmentation
// of the clusters that exist (with members) from their members' current
// ratings, stores it where it changed, and returns their ids.
func (m *Markets) AnalyzeFragmentation(ctx context.Context, ids []string, now time.Time) ([]string, error) {
	var rows []struct {
		ClusterID string `json:"cluster_id"`
		Ratings   int64  `json:"ratings"`
	}
	if err := m.DB.Query(ctx, &rows, clusterMemberRatingsSQL, jsonArg(ids)); err != nil {
		return nil, err
	}
	members := map[string][]int64{}
	for _, r := range rows {
		members[r.ClusterID] = append(members[r.ClusterID], r.Ratings)
	}
	fs := AnalyzeFragmentation(members)
	if err := m.exec(ctx, FragmentationStatements(fs, now)); err != nil {
		return nil, err
	}
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.ClusterID
	}
	return out, nil
}

// Emit implements Analyzer.
func (m *Markets) Emit(ctx context.Context, ev events.Event) error {
	return events.Send(ctx, m.Events, ev)
}

// Cluster runs one run of the 6-hourly clustering: it checks the next
// ClusterBatchKeywords searched keywords past its cursor against their
// stored markets (ClusterCheckChunk at a time, driftSQL, reads only) and
// re-clusters the drifted ones, at most ClusterRepairMax, announcing them
// (clusters-ready) so they are analysed and scored. Every keyword is
// checked once a day; a keyword whose market matches its rankings writes
// nothing (its stats follow its ratings when it is searched again, on
// the rankings-updated event). The cursor wraps at the end.
func (m *Markets) Cluster(ctx context.Context, now time.Time) (string, error) {
	cur, err := d1.ReadCursor(ctx, m.DB, ClusterCursor)
	if err != nil {
		return "", err
	}
	from := cur.Text()
	next, checked := from, 0
	var repaired []string
	for checked < ClusterBatchKeywords && len(repaired) < ClusterRepairMax {
		var rows []struct {
			Keyword *string `json:"keyword"`
			Drifted int     `json:"drifted"`
			Size    int     `json:"size"`
		}
		limit := min(ClusterCheckChunk, ClusterBatchKeywords-checked)
		if err := m.DB.Query(ctx, &rows, driftSQL, next, limit); err != nil {
			return "", err
		}
		var drifted []string
		size, last := 0, ""
		for _, r := range rows {
			switch {
			case r.Drifted == 1 && r.Keyword != nil:
				drifted = append(drifted, *r.Keyword)
			case r.Drifted == 0:
				size = r.Size
				if r.Keyword != nil {
					last = *r.Keyword
				}
			}
		}
		for i := 0; i < len(drifted); i += MaxReclusterKeywords {
			chunk := drifted[i:min(i+MaxReclusterKeywords, len(drifted))]
			if _, err := m.ClusterKeywords(ctx, chunk, now); err != nil {
				return "", err
			}
		}
		repaired = append(repaired, drifted...)
		checked += size
		if size < limit {
			next = "" // the end: start over next run
			break
		}
		next = last
	}
	if err := m.exec(ctx, cur.Write(next, now)); err != nil {
		return "", err
	}
	// The consumer analyses and scores what was repaired (a missing score
	// included: the re-clustering itself may have written nothing).
	sort.Strings(repaired)
	if err := events.Send(ctx, m.Events, events.NewKeyed(events.ClustersReady, repaired, now)...); err != nil {
		return "", err
	}
	return fmt.Sprintf("%d keywords checked from %q, %d re-clustered", checked, from, len(repaired)), nil
}

// List reads a page of markets (a cluster, its score and members) by
// opportunity score or by size after cursor ("" from the top): the
// markets and the next page's cursor ("" at the end); a cursor it did not
// hand out is d1.ErrBadCursor.
func (m *Markets) List(ctx context.Context, byScore bool, limit int, cursor string) ([]json.RawMessage, string, error) {
	q := clustersSQL
	if byScore {
		q = opportunitiesSQL
	}
	k, r := d1.TopNumber, int64(0)
	if cursor != "" {
		if err := d1.DecodeCursor(cursor, &k, &r); err != nil {
			return nil, "", err
		}
	}
	var rows []struct {
		Market string  `json:"market"`
		K      float64 `json:"k"`
		R      int64   `json:"r"`
	}
	if err := m.DB.Query(ctx, &rows, q, k, r, limit); err != nil {
		return nil, "", err
	}
	out := make([]json.RawMessage, len(rows))
	for i, r := range rows {
		out[i] = json.RawMessage(r.Market)
	}
	next := ""
	if len(rows) == limit && limit > 0 {
		last := rows[len(rows)-1]
		next = d1.EncodeCursor(last.K, last.R)
	}
	return out, next, nil
}

// ScoreStatements writes the opportunity scores of clusters that changed.
func ScoreStatements(cs []Cluster, now time.Time) []d1.Stmt {
	if len(cs) == 0 {
		return nil
	}
	rows := make([][]any, len(cs))
	for i, c := range cs {
		rows[i] = []any{c.ID, c.OpportunityScore, c.Demand, c.Fragmentation, c.Quality}
	}
	return []d1.Stmt{{SQL: opportunityScoresSQL, Args: []any{jsonArg(rows), d1.Time(now)}}}
}

// DiffStatements writes a re-clustering's changes: one statement for the
// cluster rows that changed (their members are their keywords' rankings,
// written by the search). The cluster rows carry their fragmentation,
// measured from the same ratings, so the clusters-ready analysis that
// follows finds it current and writes nothing.
func DiffStatements(d ClusterDiff, now time.Time) []d1.Stmt {
	if len(d.Rows) == 0 {
		return nil
	}
	rows := make([][]any, len(d.Rows))
	for i, c := range d.Rows {
		rows[i] = []any{c.ID, c.Apps, c.TotalRatings, c.AvgRating, c.TopShare, c.HHI, c.Fragmentation, c.MemberSum}
	}
	return []d1.Stmt{{SQL: clusterRowsSQL, Args: []any{jsonArg(rows), d1.Time(now)}}}
}

// ClusterStatements writes clusters as new: each one's row.
func ClusterStatements(cs []Cluster, now time.Time) []d1.Stmt {
	return DiffStatements(DiffClusters(cs, nil), now)
}

// FragmentationStatements store the analysis on each cluster where it
// changed (replaying it writes nothing).
func FragmentationStatements(fs []ClusterFragmentation, now time.Time) []d1.Stmt {
	if len(fs) == 0 {
		return nil
	}
	rows := make([][]any, len(fs))
	for i, f := range fs {
		rows[i] = []any{f.ClusterID, f.HHI, f.Fragmentation}
	}
	return []d1.Stmt{{SQL: fragmentationSQL, Args: []any{jsonArg(rows), d1.Time(now)}}}
}
