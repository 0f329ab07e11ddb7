package reviews

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"storecrawl/worker/d1"
)

// UpsertStmt stores one review with its sentiment score, idempotently: the
// same review fetched again and edited replaces its row
// (migrations/0019_reviews.sql); fetched again unchanged, it writes
// nothing (D1 bills an update to the same values, and its entry in
// app_reviews_by_app), so fetched_at is when the stored text was fetched.
func UpsertStmt(r Review, score float64, fetchedAt time.Time) d1.Stmt {
	var reviewed any // NULL when the feed gave no date
	if !r.Date.IsZero() {
		reviewed = d1.Time(r.Date)
	}
	truncated := 0
	if r.Truncated {
		truncated = 1
	}
	return d1.Stmt{
		SQL: `INSERT INTO app_reviews (id, app_id, country, rating, title, body, truncated, version, author_hash, reviewed_at, sentiment, fetched_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (id) DO UPDATE SET app_id = excluded.app_id, country = excluded.country, rating = excluded.rating,
  title = excluded.title, body = excluded.body, truncated = excluded.truncated, version = excluded.version,
  author_hash = excluded.author_hash, reviewed_at = excluded.reviewed_at, sentiment = excluded.sentiment,
  fetched_at = excluded.fetched_at
WHERE app_reviews.app_id IS NOT excluded.app_id OR app_reviews.country IS NOT excluded.country
  OR app_reviews.rating IS NOT excluded.rating OR app_reviews.title IS NOT excluded.title OR app_reviews.body IS NOT excluded.body
  OR app_reviews.truncated IS NOT excluded.truncated OR app_reviews.version IS NOT excluded.version
  OR app_reviews.author_hash IS NOT excluded.author_hash OR app_reviews.reviewed_at IS NOT excluded.reviewed_at
  OR app_reviews.sentiment IS NOT excluded.sentiment`,
		Args: []any{r.ID, r.AppID, r.Country, r.Rating, r.Title, r.Body, truncated, r.Version, r.AuthorHash,
			reviewed, max(-1, min(1, score)), d1.Time(fetchedAt)},
	}
}

// KeptPerApp bounds an app's stored reviews: its newest KeptPerApp stay
// (app_reviews_by_app's order), the older go as new ones come. It is the
// most any reader takes of one app: the analyst's cluster read
// (MaxClusterReviews in worker/analyst, 1,000, which one app can fill)
// and its leader's (200); a cluster's themes (MaxThemeReviews, 10,000)
// read its members', 18 of which keep 18,000. Unbounded, the table would
// grow by every review the top clusters' apps get (up to a full page a
// daily fetch); bounded, it holds at most KeptPerApp for each app fetched.
// The year's bytes either way are in docs/scale.md, printed by go run
// ./cmd/bench -only-scale ("D1 storage by table").
const KeptPerApp = 1000

// pruneAppReviewsSQL deletes an app's reviews past its newest ?2 (?1 the
// app), walking its entries of app_reviews_by_app: nothing while it holds
// fewer. Each review deleted is its row and its index entry (the table is
// WITHOUT ROWID, keyed by id: migrations/0033).
const pruneAppReviewsSQL = `DELETE FROM app_reviews WHERE id IN (SELECT id FROM app_reviews WHERE app_id = ?1
ORDER BY reviewed_at DESC, id LIMIT -1 OFFSET ?2)`

// D1Store is RefreshStore and the API's review reads over D1.
type D1Store struct{ DB *d1.DB }

// dueAppsSQL: the members of the top clusters by opportunity score whose
// reviews are due, leaders (best rank) first; a market's members are its
// keyword's rankings (migrations/0034). CROSS JOIN fixes the join order:
// the top clusters first (RefreshClusters rows of
// idx_opportunity_scores_score), then each one's rankings by the primary
// key. Left to itself the planner (no statistics) walked every membership
// by their track-id index: 1.83M rows a run at 1.1M apps.
const dueAppsSQL = `SELECT m.track_id FROM (SELECT cluster_id FROM opportunity_scores ORDER BY score DESC LIMIT ?) o
CROSS JOIN crawl_rankings m ON m.keyword = o.cluster_id
LEFT JOIN review_fetches f ON f.app_id = m.track_id AND f.country = ?
WHERE f.fetched_at IS NULL OR f.fetched_at < ?
GROUP BY m.track_id ORDER BY MIN(m.rank), m.track_id LIMIT ?`

// DueApps implements RefreshStore.
func (s D1Store) DueApps(ctx context.Context, country string, clusters, n int, staleBefore time.Time) ([]int64, error) {
	var rows []struct {
		TrackID int64 `json:"track_id"`
	}
	if err := s.DB.Query(ctx, &rows, dueAppsSQL, clusters, country, d1.Time(staleBefore), n); err != nil {
		return nil, err
	}
	out := make([]int64, len(rows))
	for i, r := range rows {
		out[i] = r.TrackID
	}
	return out, nil
}

// SaveFetch implements RefreshStore: the reviews and the fetch commit
// together, so a failed save leaves the app due.
func (s D1Store) SaveFetch(ctx context.Context, appID int64, country string, rs []Review, at time.Time) error {
	// One batch holds at most d1.MaxBatch statements: the most recent
	// reviews (the feed's order), the app's oldest past KeptPerApp, and
	// the fetch.
	rs = rs[:min(len(rs), d1.MaxBatch-2)]
	stmts := make([]d1.Stmt, 0, len(rs)+2)
	for _, r := range rs {
		stmts = append(stmts, UpsertStmt(r, ScoreReview(r.Title, r.Body), at))
	}
	stmts = append(stmts, d1.Stmt{SQL: pruneAppReviewsSQL, Args: []any{appID, KeptPerApp}}, d1.Stmt{
		SQL:  `INSERT OR REPLACE INTO review_fetches (app_id, country, fetched_at, reviews) VALUES (?, ?, ?, ?)`,
		Args: []any{appID, country, d1.Time(at), len(rs)},
	})
	_, err := s.DB.ExecAtomic(ctx, stmts...)
	return err
}

// appReviewsSQL is a page of an app's reviews, most recent first, after
// the cursor: the dated ones (?2 the last reviewed_at, ?3 its id; NULL
// once they are done), then the undated ones by id (after ?4), each a
// range of app_reviews_by_app; ?5 is the page size.
const appReviewsSQL = `SELECT record, k, id FROM (SELECT ` + reviewJSON + ` AS record, reviewed_at AS k, id FROM app_reviews
  WHERE app_id = ?1 AND reviewed_at <= ?2 AND (reviewed_at < ?2 OR id > ?3) ORDER BY reviewed_at DESC, id LIMIT ?5)
UNION ALL
SELECT record, k, id FROM (SELECT ` + reviewJSON + ` AS record, NULL AS k, id FROM app_reviews
  WHERE app_id = ?1 AND reviewed_at IS NULL AND id > ?4 ORDER BY id LIMIT ?5)
LIMIT ?5`

const reviewJSON = `json_object('id', id, 'app_id', app_id, 'country', country, 'rating', rating, 'title', title,
  'body', body, 'truncated', truncated = 1, 'version', version, 'author_hash', author_hash, 'reviewed_at', reviewed_at,
  'sentiment', sentiment, 'fetched_at', fetched_at)`

// AppReviews is a page of an app's stored reviews after cursor ("" from
// the first), as JSON records, and the next page's cursor ("" at the
// end); a cursor it did not hand out is d1.ErrBadCursor.
func (s D1Store) AppReviews(ctx context.Context, appID int64, limit int, cursor string) ([]json.RawMessage, string, error) {
	at, id := any(d1.TopText), ""
	undatedAfter := ""
	if cursor != "" {
		var k *string
		if err := d1.DecodeCursor(cursor, &k, &id); err != nil {
			return nil, "", err
		}
		if k == nil { // among the undated: the dated are done
			at, undatedAfter = nil, id
		} else {
			at = *k
		}
	}
	var rows []struct {
		Record string  `json:"record"`
		K      *string `json:"k"`
		ID     string  `json:"id"`
	}
	if err := s.DB.Query(ctx, &rows, appReviewsSQL, appID, at, id, undatedAfter, limit); err != nil {
		return nil, "", err
	}
	out := make([]json.RawMessage, len(rows))
	for i, r := range rows {
		out[i] = json.RawMessage(r.Record)
	}
	next := ""
	if len(rows) == limit && limit > 0 {
		last := rows[len(rows)-1]
		next = d1.EncodeCursor(last.K, last.ID)
	}
	return out, next, nil
}

// clusterReviewsSQL: the reviews of a cluster's members, most recent
// first, and the members' names (excluded from the themes).
const (
	clusterExistsSQL  = `SELECT COUNT(*) AS n FROM market_clusters WHERE cluster_id = ?`
	clusterReviewsSQL = `SELECT r.id, r.app_id, r.country, r.rating, r.title, r.body, r.version, r.author_hash
FROM crawl_rankings m JOIN app_reviews r ON r.app_id = m.track_id
WHERE m.keyword = ? ORDER BY r.reviewed_at DESC, r.id LIMIT ?`
	clusterNamesSQL = `SELECT a.name, a.developer_name FROM crawl_rankings m JOIN app_registry a ON a.track_id = m.track_id
WHERE m.keyword = ?`
)

// ClusterThemes is a cluster's complaint themes from its members' stored
// reviews; found is false for an unknown cluster.
func (s D1Store) ClusterThemes(ctx context.Context, clusterID string) (themes []Theme, reviews int, found bool, err error) {
	var exists []struct {
		N int `json:"n"`
	}
	if err := s.DB.Query(ctx, &exists, clusterExistsSQL, clusterID); err != nil || len(exists) == 0 || exists[0].N == 0 {
		return nil, 0, false, err
	}
	var rs []Review
	if err := s.DB.Query(ctx, &rs, clusterReviewsSQL, clusterID, MaxThemeReviews); err != nil {
		return nil, 0, true, err
	}
	var names []struct {
		Name          string `json:"name"`
		DeveloperName string `json:"developer_name"`
	}
	if err := s.DB.Query(ctx, &names, clusterNamesSQL, clusterID); err != nil {
		return nil, 0, true, err
	}
	var exclude []string
	for _, n := range names {
		exclude = append(exclude, strings.Fields(strings.ToLower(n.Name+" "+n.DeveloperName))...)
	}
	return ComplaintThemes(ScoreAll(rs), ThemeOptions{Exclude: exclude}), len(rs), true, nil
}

// HotQueries are the reviews' reads: the refresh's pick and prune, and the API's.
func HotQueries() []d1.NamedQuery {
	return []d1.NamedQuery{
		{Name: "reviews due apps", SQL: dueAppsSQL, Args: []any{RefreshClusters, "us", "2026-01-01T00:00:00.000Z", RefreshAppsPerRun},
			Bounded: "the top RefreshClusters of idx_opportunity_scores_score in order, stopped by the subquery's LIMIT"},
		{Name: "app reviews, first page", SQL: appReviewsSQL, Args: []any{100000001, d1.TopText, "", "", 20}, Page: true},
		{Name: "app reviews, undated", SQL: appReviewsSQL, Args: []any{100000001, nil, "", "r5", 20}, Page: true},
		{Name: "app reviews past the kept", SQL: pruneAppReviewsSQL, Args: []any{100000001, KeptPerApp}},
		{Name: "cluster exists", SQL: clusterExistsSQL, Args: []any{"budget"}},
		{Name: "cluster reviews", SQL: clusterReviewsSQL, Args: []any{"budget", MaxThemeReviews}},
		{Name: "cluster names", SQL: clusterNamesSQL, Args: []any{"budget"}},
	}
}
