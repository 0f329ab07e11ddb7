package tasks

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"storecrawl/worker/d1"
	"storecrawl/worker/ratelimit"
	"storecrawl/worker/upstream"
)

// latestMatchesSQL is true when an app r's stored rating count and
// average are what its history holds: its latest snapshot (by
// app_snapshots' primary key, one row) has them, or it has no snapshot at
// all (its first values are held in its row since values_at:
// migrations/0028 writes history on change only, the first change writing
// the old values too). The history triggers record every change as an
// observation, so this is nearly every app, and the pass writes nothing
// for it.
const latestMatchesSQL = `(NOT EXISTS (SELECT 1 FROM app_snapshots s0 WHERE s0.track_id = r.track_id)
  OR EXISTS (SELECT 1 FROM (SELECT s.rating_count, s.average_rating FROM app_snapshots s
    WHERE s.track_id = r.track_id ORDER BY s.taken_at DESC LIMIT 1) l
  WHERE l.rating_count IS r.rating_count AND l.average_rating IS r.average_rating))`

// passBatchSQL sums a pass's next ?2 enriched apps past the cursor ?1:
// idx_app_registry_enriched holds only enriched apps, so it reads the rows
// it counts (and one snapshot an app, by primary key); one row returned.
const passBatchSQL = `SELECT count(*) AS apps, COALESCE(max(track_id), 0) AS last,
  COALESCE(sum(unsnapshotted), 0) AS unsnapshotted
FROM (SELECT r.track_id,
    (r.rating_count IS NOT NULL AND NOT ` + latestMatchesSQL + `) AS unsnapshotted
  FROM app_registry r WHERE r.track_id > ?1 AND r.enrichment_source = 'itunes+store' ORDER BY r.track_id LIMIT ?2)`

// snapshotUnsnapshottedSQL copies the stored ratings of the enriched apps
// in (?2, ?3] that no snapshot holds (source NULL: a copy, not an
// observation, so velocity ignores it), at ?1 (milliseconds since the
// epoch: the table's compact time, migrations/0035). Rows written: one an app
// it copies (the table is WITHOUT ROWID, keyed by (track_id, taken_at):
// no other index entry).
const snapshotUnsnapshottedSQL = `INSERT OR IGNORE INTO app_snapshots (track_id, taken_at, rating_count, average_rating)
SELECT r.track_id, ?1, r.rating_count, r.average_rating FROM app_registry r
WHERE r.track_id > ?2 AND r.track_id <= ?3 AND r.enrichment_source = 'itunes+store' AND r.rating_count IS NOT NULL
  AND NOT ` + latestMatchesSQL

// qualityBoundsSQL is the lowest and highest enriched track ids: one
// entry each of idx_app_registry_enriched.
const qualityBoundsSQL = `SELECT
  COALESCE((SELECT track_id FROM app_registry WHERE enrichment_source = 'itunes+store' ORDER BY track_id LIMIT 1), 0) AS lo,
  COALESCE((SELECT track_id FROM app_registry WHERE enrichment_source = 'itunes+store' ORDER BY track_id DESC LIMIT 1), 0) AS hi`

// qualityCounts are what fills each checked field, as the lookup and the
// page store it: an empty text, an empty JSON list, a developer id of 0
// and a histogram of zeros are missing. screenshots is artwork_url, the
// store imagery storecrawl keeps (it stores no screenshot URLs);
// histogram is counted among the rated apps only. Names are QualitySums'.
var qualityCounts = [][2]string{
	{"apps", "count(*)"},
	{"content_rating", "sum(content_rating IS NOT NULL AND content_rating != '')"},
	{"description", "sum(description IS NOT NULL AND length(description) > " + strconv.Itoa(MinDescriptionLen) + ")"},
	{"developer", "sum(developer_id IS NOT NULL AND developer_id > 0)"},
	{"languages", "sum(languages IS NOT NULL AND languages NOT IN ('', '[]'))"},
	{"screenshots", "sum(artwork_url IS NOT NULL AND artwork_url != '')"},
	{"similar", "sum(similar_app_ids IS NOT NULL AND similar_app_ids NOT IN ('', '[]'))"},
	{"rated", "sum(rating_count IS NOT NULL AND rating_count > 0)"},
	{"histogram", "sum(rating_count IS NOT NULL AND rating_count > 0 AND rating_histogram IS NOT NULL AND rating_histogram NOT IN ('', '[]', '[0,0,0,0,0]'))"},
}

// qualitySampleSQL sums the check's windows in one statement: ?1 is a
// JSON list of [lo, hi) pairs, and each window's counts are one
// correlated read of its first ?2 enriched apps in [lo, hi), a range of
// idx_app_registry_enriched (so it reads the rows it counts), kept as a
// JSON object and summed; one row returned. c is MATERIALIZED: inlined,
// each window would be read again for every sum. No compound SELECT: D1
// allows very few terms in one.
var qualitySampleSQL = func() string {
	var obj, sums []string
	for _, c := range qualityCounts {
		obj = append(obj, fmt.Sprintf("'%s', COALESCE(%s, 0)", c[0], c[1]))
		sums = append(sums, fmt.Sprintf("COALESCE(sum(json_extract(c, '$.%[1]s')), 0) AS %[1]s", c[0]))
	}
	return `WITH w AS (SELECT json_extract(value, '$[0]') AS lo, json_extract(value, '$[1]') AS hi FROM json_each(?1)),
  c AS MATERIALIZED (SELECT (SELECT json_object(` + strings.Join(obj, ",\n      ") + `)
    FROM (SELECT content_rating, description, developer_id, languages, artwork_url, similar_app_ids, rating_count, rating_histogram
      FROM app_registry WHERE track_id >= w.lo AND track_id < w.hi AND enrichment_source = 'itunes+store'
      ORDER BY track_id LIMIT ?2)) AS c FROM w)
SELECT ` + strings.Join(sums, ",\n  ") + `
FROM c`
}()

// qualitySampleArgs are qualitySampleSQL's arguments: bounds as windows.
func qualitySampleArgs(bounds []int64, perWindow int) []any {
	pairs := make([][2]int64, 0, len(bounds))
	for k := 1; k < len(bounds); k++ {
		pairs = append(pairs, [2]int64{bounds[k-1], bounds[k]})
	}
	b, _ := json.Marshal(pairs) // integers always encode
	return []any{string(b), perWindow}
}

// HotQueries are the passes' statements and the daily check's.
func HotQueries() []d1.NamedQuery {
	return []d1.NamedQuery{
		{Name: "quality bounds", SQL: qualityBoundsSQL, Bounded: "the first and the last entry of idx_app_registry_enriched: LIMIT 1 each"},
		{Name: "quality sample", SQL: qualitySampleSQL,
			Args: qualitySampleArgs(SampleBounds(100000001, 100100000, 0.5, QualityWindows), QualityWindowApps)},
		{Name: "pass batch", SQL: passBatchSQL, Args: []any{0, RatingSweepBatchApps}},
		{Name: "pass snapshots", SQL: snapshotUnsnapshottedSQL, Args: []any{int64(1767225600000), 0, 100002000}},
		d1.CursorHotQuery(RatingSweepCursor),
	}
}

// KV stores values every user reads alike (KV under workerd).
type KV interface {
	Put(ctx context.Context, key, value string) error
}

// D1Store is the passes' side of D1.
type D1Store struct {
	DB *d1.DB
}

// ReadCursor implements PassStore.
func (s D1Store) ReadCursor(ctx context.Context, name string) (d1.Cursor, error) {
	return d1.ReadCursor(ctx, s.DB, name)
}

// SaveCursor implements PassStore.
func (s D1Store) SaveCursor(ctx context.Context, c d1.Cursor, to int64, at time.Time) (d1.Cursor, error) {
	return c.Save(ctx, s.DB, to, at)
}

// PassBatch implements PassStore.
func (s D1Store) PassBatch(ctx context.Context, after int64, n int) (PassBatch, error) {
	var rows []PassBatch
	if err := s.DB.Query(ctx, &rows, passBatchSQL, after, n); err != nil || len(rows) == 0 {
		return PassBatch{}, err
	}
	return rows[0], nil
}

// QualityBounds implements QualityStore.
func (s D1Store) QualityBounds(ctx context.Context) (int64, int64, error) {
	var rows []struct {
		Lo int64 `json:"lo"`
		Hi int64 `json:"hi"`
	}
	if err := s.DB.Query(ctx, &rows, qualityBoundsSQL); err != nil || len(rows) == 0 {
		return 0, 0, err
	}
	return rows[0].Lo, rows[0].Hi, nil
}

// QualitySample implements QualityStore.
func (s D1Store) QualitySample(ctx context.Context, bounds []int64, perWindow int) (QualitySums, error) {
	var rows []QualitySums
	if err := s.DB.Query(ctx, &rows, qualitySampleSQL, qualitySampleArgs(bounds, perWindow)...); err != nil || len(rows) == 0 {
		return QualitySums{}, err
	}
	return rows[0], nil
}

// SnapshotUnsnapshotted implements PassStore.
func (s D1Store) SnapshotUnsnapshotted(ctx context.Context, after, last int64, at time.Time) (int64, error) {
	return s.DB.Exec(ctx, d1.Stmt{SQL: snapshotUnsnapshottedSQL + ` RETURNING 1 AS copied`, Args: []any{at.UnixMilli(), after, last}})
}

// Platform is Deps over the Worker's clients: the upstream through the
// global limiter (Get; Reserve admits a run's calls in one acquire), KV
// and D1.
type Platform struct {
	D1Store
	Get     func(ctx context.Context, url string) upstream.Response
	Reserve func(ctx context.Context, n int) context.Context
	Values  KV
}

// Fetch implements Deps.
func (p Platform) Fetch(ctx context.Context, url string) upstream.Response { return p.Get(ctx, url) }

// ReserveFetches implements Deps.
func (p Platform) ReserveFetches(ctx context.Context, n int) context.Context {
	return ratelimit.Reserved(ratelimit.WithReserver(ctx, p.Reserve), n)
}

// PutKV implements Deps.
func (p Platform) PutKV(ctx context.Context, key, value string) error {
	return p.Values.Put(ctx, key, value)
}
