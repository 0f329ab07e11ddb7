package markets

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"storecrawl/worker/d1"
	"storecrawl/worker/events"
)

// The markets' SQL: reads by primary key or cursor, never a scan.

// ScoreInputsSQL reads the demand-scoring inputs of n apps by primary key.
func ScoreInputsSQL(n int) string {
	return `SELECT track_id, COALESCE(average_rating, 0) AS avg, COALESCE(rating_count, 0) AS count, COALESCE(current_version_release_date, '') AS updated
FROM app_registry WHERE track_id IN (` + d1.Placeholders(n) + `)`
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
WHERE k.keyword IN (` + d1.Placeholders(n) + `)`
}

// clusterAggregatesSQL reads n stored clusters by primary key. A cluster
// whose fragmentation is not analysed yet falls back to 1 − the leader's share.
func clusterAggregatesSQL(n int) string {
	return `SELECT cluster_id, app_count, total_ratings, COALESCE(avg_rating, 0) AS avg_rating, COALESCE(top_share, 1) AS top_share,
  COALESCE(hhi, 1) AS hhi, COALESCE(fragmentation, 1 - COALESCE(top_share, 1)) AS fragmentation
FROM market_clusters WHERE cluster_id IN (` + d1.Placeholders(n) + `)`
}

// clusterMemberRatingsSQL reads the member apps' rating counts of n
// clusters (market_cluster_members' primary key, then app_registry's).
func clusterMemberRatingsSQL(n int) string {
	return `SELECT m.cluster_id AS cluster_id, COALESCE(a.rating_count, 0) AS ratings
FROM market_cluster_members m JOIN app_registry a ON a.track_id = m.track_id
WHERE m.cluster_id IN (` + d1.Placeholders(n) + `)`
}

// scoreFields are a market's scores as the API serves them (GET
// /v1/opportunities, GET /v1/clusters) and the analyst's brief shows them:
// one list, so the two can never disagree on a value or its scale.
const scoreFields = `'cluster_id', c.cluster_id, 'opportunity_score', o.score, 'demand', o.demand,
  'fragmentation', o.fragmentation, 'hhi', c.hhi, 'quality_gap', o.quality_gap, 'app_count', c.app_count,
  'total_ratings', c.total_ratings, 'avg_rating', c.avg_rating`

// marketJSON renders one market (a cluster, its score and its members).
const marketJSON = `SELECT json_object(` + scoreFields + `, 'computed_at', o.computed_at,
  'members', (SELECT json_group_array(json_object('track_id', m.track_id, 'position', m.position,
      'name', (SELECT name FROM app_registry WHERE track_id = m.track_id)))
    FROM market_cluster_members m WHERE m.cluster_id = o.cluster_id)) AS market
FROM opportunity_scores o JOIN market_clusters c ON c.cluster_id = o.cluster_id`

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

// HotQueries are the markets' reads.
func HotQueries() []d1.NamedQuery {
	return []d1.NamedQuery{
		{Name: "score inputs", SQL: ScoreInputsSQL(3), Args: []any{1, 2, 3}},
		{Name: "cluster batch", SQL: clusterBatchSQL, Args: []any{"", 200}},
		{Name: "opportunities", SQL: opportunitiesSQL, Args: []any{20, 0}, Bounded: "an API page: OFFSET at most api.MaxOffset (10,000) plus the LIMIT, whatever the table holds"},
		{Name: "clusters", SQL: clustersSQL, Args: []any{20, 0}, Bounded: "an API page: OFFSET at most api.MaxOffset (10,000) plus the LIMIT, whatever the table holds"},
		{Name: "keyword rankings", SQL: keywordRankingsSQL(2), Args: []any{"budget", "chat"}},
		{Name: "cluster aggregates", SQL: clusterAggregatesSQL(2), Args: []any{"budget", "chat"}},
		{Name: "cluster member ratings", SQL: clusterMemberRatingsSQL(2), Args: []any{"budget", "chat"}},
		{Name: "cluster scores", SQL: scoresSQL, Args: []any{"budget"}},
	}
}

// ClusterCursor names the 6-hourly clustering's keyword cursor in sweep_cursors.
const ClusterCursor = "clustering"

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
	_, err := m.DB.Exec(ctx, stmts...)
	return err
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

// SaveAppScores implements Analyzer.
func (m *Markets) SaveAppScores(ctx context.Context, scores map[int64]AppScores, at time.Time) error {
	stmts := make([]d1.Stmt, 0, len(scores))
	now := d1.Time(at)
	for id, s := range scores {
		stmts = append(stmts, d1.Stmt{
			SQL:  `UPDATE app_registry SET demand_score = ?, competitiveness_score = ?, analyzed_at = ? WHERE track_id = ?`,
			Args: []any{s.Demand, s.Competitiveness, now, id},
		})
	}
	return m.exec(ctx, stmts)
}

// ClusterKeywords implements Analyzer: it rebuilds the clusters of keywords
// from their rankings.
func (m *Markets) ClusterKeywords(ctx context.Context, keywords []string, now time.Time) ([]string, error) {
	var rows []rankedRow
	if err := m.DB.Query(ctx, &rows, keywordRankingsSQL(len(keywords)), d1.Args(keywords)...); err != nil {
		return nil, err
	}
	clusters := BuildClusters(rankedApps(rows))
	if err := m.exec(ctx, ClusterStatements(clusters, now)); err != nil {
		return nil, err
	}
	return clusterIDs(clusters), nil
}

func clusterIDs(cs []Cluster) []string {
	ids := make([]string, len(cs))
	for i, c := range cs {
		ids[i] = c.ID
	}
	return ids
}

// ScoreClusters implements Analyzer: opportunity scores from stored clusters.
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
	if err := m.DB.Query(ctx, &rows, clusterAggregatesSQL(len(ids)), d1.Args(ids)...); err != nil {
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

// AnalyzeFragmentation implements Analyzer: it measures and stores the
// fragmentation of the clusters that exist (with members), returning their ids.
func (m *Markets) AnalyzeFragmentation(ctx context.Context, ids []string, now time.Time) ([]string, error) {
	var rows []struct {
		ClusterID string `json:"cluster_id"`
		Ratings   int64  `json:"ratings"`
	}
	if err := m.DB.Query(ctx, &rows, clusterMemberRatingsSQL(len(ids)), d1.Args(ids)...); err != nil {
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

// Cluster runs one batch of the 6-hourly clustering: the next
// ClusterBatchKeywords searched keywords past the cursor, scored and
// written, then announced (clusters-ready); the cursor wraps at the end.
func (m *Markets) Cluster(ctx context.Context, now time.Time) (string, error) {
	cur, err := d1.ReadCursor(ctx, m.DB, ClusterCursor)
	if err != nil {
		return "", err
	}
	from := cur.Text()
	var rows []rankedRow
	if err := m.DB.Query(ctx, &rows, clusterBatchSQL, from, ClusterBatchKeywords); err != nil {
		return "", err
	}
	ranked := rankedApps(rows)
	keywords := map[string]bool{}
	last := from
	for _, a := range ranked {
		keywords[a.Keyword] = true
		if a.Keyword > last {
			last = a.Keyword
		}
	}
	clusters := BuildClusters(ranked)
	next := last
	if len(keywords) < ClusterBatchKeywords {
		next = "" // the end: start over next time
	}
	stmts := append(ClusterStatements(clusters, now), cur.Write(next, now)...)
	if err := m.exec(ctx, stmts); err != nil {
		return "", err
	}
	// The consumer analyses and scores what was written.
	if err := events.Send(ctx, m.Events, events.NewKeyed(events.ClustersReady, clusterIDs(clusters), now)...); err != nil {
		return "", err
	}
	return fmt.Sprintf("%d keywords from %q, %d clusters", len(keywords), from, len(clusters)), nil
}

// List lists markets (a cluster, its score and members) by opportunity
// score or by size.
func (m *Markets) List(ctx context.Context, byScore bool, limit, offset int) ([]json.RawMessage, error) {
	q := clustersSQL
	if byScore {
		q = opportunitiesSQL
	}
	var rows []struct {
		Market string `json:"market"`
	}
	if err := m.DB.Query(ctx, &rows, q, limit, offset); err != nil {
		return nil, err
	}
	out := make([]json.RawMessage, len(rows))
	for i, r := range rows {
		out[i] = json.RawMessage(r.Market)
	}
	return out, nil
}

// ScoreStatements writes the opportunity scores of clusters.
func ScoreStatements(cs []Cluster, now time.Time) []d1.Stmt {
	ts := d1.Time(now)
	stmts := make([]d1.Stmt, 0, len(cs))
	for _, c := range cs {
		stmts = append(stmts, d1.Stmt{SQL: `INSERT INTO opportunity_scores (cluster_id, score, demand, fragmentation, quality_gap, computed_at) VALUES (?,?,?,?,?,?)
ON CONFLICT (cluster_id) DO UPDATE SET score = excluded.score, demand = excluded.demand, fragmentation = excluded.fragmentation, quality_gap = excluded.quality_gap, computed_at = excluded.computed_at`,
			Args: []any{c.ID, c.OpportunityScore, c.Demand, c.Fragmentation, c.Quality, ts}})
	}
	return stmts
}

// ClusterStatements replaces each cluster and its members; fragmentation
// and scores follow from the clusters-ready event. The stored fragmentation
// is cleared (not yet analysed): it described the old members.
func ClusterStatements(cs []Cluster, now time.Time) []d1.Stmt {
	ts := d1.Time(now)
	var stmts []d1.Stmt
	for _, c := range cs {
		stmts = append(stmts,
			d1.Stmt{SQL: `INSERT INTO market_clusters (cluster_id, app_count, total_ratings, avg_rating, top_share, computed_at) VALUES (?,?,?,?,?,?)
ON CONFLICT (cluster_id) DO UPDATE SET app_count = excluded.app_count, total_ratings = excluded.total_ratings, avg_rating = excluded.avg_rating, top_share = excluded.top_share, computed_at = excluded.computed_at,
  hhi = NULL, fragmentation = NULL, fragmented_at = NULL`,
				Args: []any{c.ID, c.Apps, c.TotalRatings, c.AvgRating, c.TopShare, ts}},
			d1.Stmt{SQL: `DELETE FROM market_cluster_members WHERE cluster_id = ?`, Args: []any{c.ID}},
		)
		for i, id := range c.Members {
			stmts = append(stmts, d1.Stmt{SQL: `INSERT OR IGNORE INTO market_cluster_members (cluster_id, track_id, position) VALUES (?,?,?)`, Args: []any{c.ID, id, i + 1}})
		}
	}
	return stmts
}

// FragmentationStatements store the analysis on each cluster (an update by
// primary key: replaying it writes the same values).
func FragmentationStatements(fs []ClusterFragmentation, now time.Time) []d1.Stmt {
	ts := d1.Time(now)
	stmts := make([]d1.Stmt, 0, len(fs))
	for _, f := range fs {
		stmts = append(stmts, d1.Stmt{
			SQL:  `UPDATE market_clusters SET hhi = ?, fragmentation = ?, fragmented_at = ? WHERE cluster_id = ?`,
			Args: []any{f.HHI, f.Fragmentation, ts, f.ClusterID},
		})
	}
	return stmts
}
