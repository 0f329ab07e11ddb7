package catalogue

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"storecrawl/worker/d1"
	"storecrawl/worker/refresh"
	"storecrawl/worker/registry"
)

// GET /v1/apps/{id}/history bounds.
const (
	// DefaultHistoryDays: a quarter, the rank history's whole retention.
	DefaultHistoryDays = 90
	// MaxHistoryDays: the longest retention (version and price changes).
	MaxHistoryDays = 730
	// DefaultHistoryLimit and MaxHistoryLimit bound each series' rows: a
	// year of daily rank rows for a few keywords fits the largest answer.
	DefaultHistoryLimit = 100
	MaxHistoryLimit     = 1000
)

// HistoryQuery is a validated history request.
type HistoryQuery struct {
	TrackID int64
	Days    int
	Limit   int
}

// ParseHistoryQuery validates the path id and the query's days and limit;
// a bad one is named in field with a message (400).
func ParseHistoryQuery(id string, get func(string) string) (q HistoryQuery, field, msg string) {
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil || n <= 0 {
		return q, "id", "id must be a positive integer track id"
	}
	q = HistoryQuery{TrackID: n, Days: DefaultHistoryDays, Limit: DefaultHistoryLimit}
	for _, p := range []struct {
		name     string
		min, max int
		dst      *int
	}{{"days", 1, MaxHistoryDays, &q.Days}, {"limit", 1, MaxHistoryLimit, &q.Limit}} {
		raw := get(p.name)
		if raw == "" {
			continue
		}
		v, err := strconv.Atoi(raw)
		if err != nil || v < p.min || v > p.max {
			return q, p.name, fmt.Sprintf("%s must be an integer in [%d, %d]", p.name, p.min, p.max)
		}
		*p.dst = v
	}
	return q, "", ""
}

// appHistorySQL builds the answer in SQLite: the app's current values and
// each series newest first, each read by its table's primary key prefix
// (track_id, then time). A series with no row (for ratings: no
// observation) holds the app's first values, since values_at (its
// discovery for a row without one; migrations/0028 writes history on
// change only): that point comes from the app's row. ?1 the app, ?2 the
// since time (Millis), ?3 the since day (Day), ?4 the limit per series. No row: no such
// app. keyword_rank_history holds changes (migrations/0026): a row's rank
// holds from its day until the keyword's next row for the app (rank null:
// it left the results), so the keyword ranks are the changes in the window
// and, for each keyword, the row in effect when the window opens (its last
// row before, dated when it took effect; none if that row says it left).
// That second read is the app's rows before the window, which the prune
// bounds to the one in effect a keyword past RankHistoryRetention. An
// app's rank for a keyword is its ranking row's until it changes
// (migrations/0034: its first change writes it first): a ranking whose
// series has no row at or after its seen_at (and does not just repeat the
// series' last rank) is a row of its own, on seen_at's day, read by
// idx_crawl_rankings_track, in the window or in effect when it opens.
// Rank rows name their keyword by id (migrations/0035): each reads its
// text by crawl_keywords' primary key. A version row keeps no notes
// (migrations/0055): the current version's are the app's row's, older
// versions' are null (those written before keep theirs).
const appHistorySQL = `SELECT json_object(
  'track_id', r.track_id, 'name', r.name,
  'current', json_object('rating_count', r.rating_count, 'average_rating', r.average_rating, 'version', r.version,
    'price', r.price, 'currency', r.currency, 'rating_velocity_7d', r.rating_velocity_7d,
    'rating_velocity_30d', r.rating_velocity_30d, 'refresh_tier', r.refresh_tier, 'next_refresh_at', NULL,
    'enriched_at', r.enriched_at, 'last_seen_at', r.last_seen_at, 'stale_at', r.stale_at),
  'ratings', (SELECT json_group_array(json_object('at', strftime('%Y-%m-%dT%H:%M:%fZ', taken_at / 1000.0, 'unixepoch'),
      'rating_count', rating_count, 'average_rating', average_rating, 'source', ` + ratingSourceSQL + `))
    FROM (SELECT taken_at, rating_count, average_rating, source FROM app_snapshots WHERE track_id = ?1 AND taken_at >= ?2
      UNION ALL SELECT CAST(round((julianday(COALESCE(r.values_at, r.discovered_at)) - 2440587.5) * 86400000) AS INTEGER) AS at,
        r.rating_count, r.average_rating, 1
      WHERE r.rating_count IS NOT NULL AND at >= ?2
        AND NOT EXISTS (SELECT 1 FROM app_snapshots WHERE track_id = ?1 AND source IS NOT NULL)
      ORDER BY taken_at DESC LIMIT ?4)),
  'versions', (SELECT json_group_array(json_object('at', strftime('%Y-%m-%dT%H:%M:%fZ', seen_at / 1000.0, 'unixepoch'),
      'version', version, 'release_date', CASE WHEN typeof(release_date) = 'integer'
        THEN strftime('%Y-%m-%dT%H:%M:%SZ', release_date, 'unixepoch') ELSE release_date END,
      'release_notes', COALESCE(release_notes, CASE WHEN version = r.version THEN r.release_notes END)))
    FROM (SELECT seen_at, version, release_date, release_notes FROM app_version_history WHERE track_id = ?1 AND seen_at >= ?2
      UNION ALL SELECT CAST(round((julianday(COALESCE(r.values_at, r.discovered_at)) - 2440587.5) * 86400000) AS INTEGER) AS at,
        r.version, r.current_version_release_date, r.release_notes
      WHERE r.version IS NOT NULL AND r.version <> '' AND at >= ?2
        AND NOT EXISTS (SELECT 1 FROM app_version_history WHERE track_id = ?1)
      ORDER BY seen_at DESC LIMIT ?4)),
  'prices', (SELECT json_group_array(json_object('at', strftime('%Y-%m-%dT%H:%M:%fZ', seen_at / 1000.0, 'unixepoch'), 'price', price, 'currency', currency))
    FROM (SELECT seen_at, price, currency FROM app_price_history WHERE track_id = ?1 AND seen_at >= ?2
      UNION ALL SELECT CAST(round((julianday(COALESCE(r.values_at, r.discovered_at)) - 2440587.5) * 86400000) AS INTEGER) AS at,
        r.price, r.currency
      WHERE r.price IS NOT NULL AND at >= ?2
        AND NOT EXISTS (SELECT 1 FROM app_price_history WHERE track_id = ?1)
      ORDER BY seen_at DESC LIMIT ?4)),
  'keyword_ranks', (SELECT json_group_array(json_object('day', date(day * 86400, 'unixepoch'), 'keyword', keyword, 'rank', rank))
    FROM (SELECT day, c.keyword, rank FROM keyword_rank_history CROSS JOIN crawl_keywords c ON c.id = keyword_id
        WHERE track_id = ?1 AND day >= ?3
      UNION ALL
      SELECT day, keyword, rank FROM (SELECT max(day) AS day, c.keyword, rank FROM keyword_rank_history
          CROSS JOIN crawl_keywords c ON c.id = keyword_id
        WHERE track_id = ?1 AND day < ?3 GROUP BY keyword_id) WHERE rank IS NOT NULL
      UNION ALL
      SELECT k.day, k.keyword, k.rank FROM (SELECT CAST(julianday(substr(seen_at, 1, 10)) - 2440587.5 AS INTEGER) AS day, keyword, rank
          FROM crawl_rankings WHERE track_id = ?1) k
        LEFT JOIN crawl_keywords c ON c.keyword = k.keyword
        LEFT JOIN (SELECT keyword_id, max(day) AS day, rank FROM keyword_rank_history WHERE track_id = ?1 GROUP BY keyword_id) l
          ON l.keyword_id = c.id
        WHERE l.keyword_id IS NULL OR (l.day < k.day AND l.rank IS NOT k.rank)
      ORDER BY day DESC, keyword LIMIT ?4)),
  'chart_ranks', (SELECT json_group_array(json_object('at', seen_at, 'country', country, 'collection', collection, 'genre_id', genre_id, 'rank', rank))
    FROM (SELECT * FROM chart_position_history WHERE track_id = ?1 AND seen_at >= ?2 ORDER BY seen_at DESC LIMIT ?4))
) AS record, COALESCE(r.refresh_tier, '') AS tier, r.refresh_retry_at AS retry_at
FROM app_registry r WHERE r.track_id = ?1`

// AppHistory reads an app's history as JSON (false when there is no such
// app). Its current.next_refresh_at is computed, not stored: when its
// tier's round reaches its slot on the clock (refresh.NextLook), or its
// place on the retry list when sooner; null for an app with no tier.
func (s D1Store) AppHistory(ctx context.Context, q HistoryQuery, now time.Time) (json.RawMessage, bool, error) {
	since := now.Add(-time.Duration(q.Days) * 24 * time.Hour)
	var rows []struct {
		Record  string  `json:"record"`
		Tier    string  `json:"tier"`
		RetryAt *string `json:"retry_at"`
	}
	if err := s.DB.Query(ctx, &rows, appHistorySQL, q.TrackID, Millis(since), Day(since), q.Limit); err != nil || len(rows) == 0 {
		return nil, false, err
	}
	r := rows[0]
	if r.Tier == "" {
		return json.RawMessage(r.Record), true, nil
	}
	next := refresh.NextLook(r.Tier, refresh.Slot(q.TrackID), now)
	if r.RetryAt != nil {
		if at, err := d1.ParseTime(*r.RetryAt); err == nil && at.Before(next) {
			next = at
		}
	}
	rec, err := withCurrent(json.RawMessage(r.Record), "next_refresh_at", d1.Time(next))
	return rec, true, err
}

// withCurrent sets one field of a record's "current" object.
func withCurrent(rec json.RawMessage, key string, v any) (json.RawMessage, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(rec, &top); err != nil {
		return nil, err
	}
	var cur map[string]any
	if err := json.Unmarshal(top["current"], &cur); err != nil {
		return nil, err
	}
	cur[key] = v
	b, err := json.Marshal(cur)
	if err != nil {
		return nil, err
	}
	top["current"] = b
	return json.Marshal(top)
}

// HotQueries are the catalogue's reads.
func HotQueries() []d1.NamedQuery {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tiers := registry.Tiers(`[{"id":100000001,"tier":"hot","v7":1.5,"v30":null}]`)
	return append([]d1.NamedQuery{
		{Name: "app history", SQL: appHistorySQL, Args: []any{100000001, Millis(t0), Day(t0), 100}},
		{Name: "catalogue sweep", SQL: sweepCursorSQL(), Args: []any{modifier(7 * 24 * time.Hour), modifier(30 * 24 * time.Hour), 0, SweepBatchApps}},
		{Name: "catalogue sweep untiered", SQL: sweepUntieredSQL(), Args: []any{modifier(7 * 24 * time.Hour), modifier(30 * 24 * time.Hour), SweepBatchApps},
			Bounded: "the head of idx_app_registry_untiered in track order, stopped by the LIMIT (SweepBatchApps); the sweep tiers each app it reads, so it leaves the index"},
		d1.CursorHotQuery(sweepCursorName),
		{Name: "catalogue batch end", SQL: batchEndSQL, Args: []any{0, StaleBatchApps}},
		// Writes (explained, not run): a search's rank changes, their prune.
		{Name: "keyword rank changes", SQL: rankChangesSQL, Args: []any{"budget", Day(t0), RankPairs([]int64{100000001, 100000002})}},
		{Name: "rank changes prune", SQL: pruneRankChangesSQL, Args: []any{100000000, 100000500, Day(t0)}},
		// The sweep's write (explained, not run): the planned apps by primary key.
		{Name: "catalogue sweep tiers", SQL: tiers.SQL, Args: tiers.Args},
	}, maintainHotQueries()...)
}
