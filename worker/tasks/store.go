package tasks

import (
	"context"
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
  COALESCE(sum(subtitle IS NOT NULL AND subtitle != ''), 0) AS subtitle,
  COALESCE(sum(rating_histogram IS NOT NULL), 0) AS histogram,
  COALESCE(sum(description IS NOT NULL AND description != ''), 0) AS description,
  COALESCE(sum(unsnapshotted), 0) AS unsnapshotted
FROM (SELECT r.track_id, r.subtitle, r.rating_histogram, r.description,
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

// HotQueries are the passes' statements.
func HotQueries() []d1.NamedQuery {
	return []d1.NamedQuery{
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
