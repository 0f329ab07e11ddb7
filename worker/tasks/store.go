package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"storecrawl/worker/reviews"
	"time"

	"storecrawl/worker/analyst"
	"storecrawl/worker/d1"
	"storecrawl/worker/history"
	"storecrawl/worker/upstream"
)

// sweepSQL reads enriched apps past the cursor (the rating sweep and the
// daily snapshots): idx_app_registry_enriched holds only enriched apps, so
// it reads the rows it returns; the snapshots' primary key serves the
// subqueries. An app with no snapshot yet has held its first count since
// values_at (its discovery for a row without one): migrations/0028
// writes no history for an app's first values, only for changes.
const sweepSQL = `SELECT r.track_id AS track_id, COALESCE(r.rating_count, 0) AS ratings, COALESCE(r.average_rating, 0) AS rating,
  (r.subtitle IS NOT NULL AND r.subtitle != '') AS has_subtitle, (r.rating_histogram IS NOT NULL) AS has_histogram,
  (r.description IS NOT NULL AND r.description != '') AS has_description,
  COALESCE((SELECT s.rating_count FROM app_snapshots s WHERE s.track_id = r.track_id ORDER BY s.taken_at DESC LIMIT 1), r.rating_count) AS prev_ratings,
  COALESCE((SELECT s.taken_at FROM app_snapshots s WHERE s.track_id = r.track_id ORDER BY s.taken_at DESC LIMIT 1),
    CASE WHEN r.rating_count IS NOT NULL THEN COALESCE(r.values_at, r.discovered_at) END) AS prev_at
FROM app_registry r
WHERE r.track_id > ? AND r.enrichment_source = 'itunes+store'
ORDER BY r.track_id LIMIT ?`

// snapshotTodaySQL is the daily snapshot's once-a-day check (inside its
// INSERT): app_snapshots' primary key, one row at most.
const snapshotTodaySQL = `SELECT 1 FROM app_snapshots WHERE track_id = ? AND taken_at >= ?`

// sweepCursorSQL reads a sweep's cursor by primary key.
const sweepCursorSQL = `SELECT cursor FROM sweep_cursors WHERE name = ?`

// HotQueries are the sweeps' reads.
func HotQueries() []d1.NamedQuery {
	return []d1.NamedQuery{
		{Name: "rating sweep", SQL: sweepSQL, Args: []any{0, 200}},
		{Name: "rating sweep velocities", SQL: sweepVelocitySQL, Args: []any{`[{"id":100000001,"v":1.5},{"id":100000002,"v":null}]`}},
		{Name: "sweep cursor", SQL: sweepCursorSQL, Args: []any{"rating-sweep"}},
		{Name: "daily snapshot check", SQL: snapshotTodaySQL, Args: []any{100000001, "2026-01-01T00:00:00.000Z"}},
	}
}

// KV stores values every user reads alike (KV under workerd).
type KV interface {
	Put(ctx context.Context, key, value string) error
}

// D1Store is the sweeps' side of D1.
type D1Store struct {
	DB *d1.DB
}

// SweepBatch reads up to n enriched apps past the named cursor, with each
// one's latest snapshot (counted in the caller's D1 cost).
func (s D1Store) SweepBatch(ctx context.Context, cursorName string, n int) (int64, []SweepRow, error) {
	var cur []struct {
		Cursor any `json:"cursor"` // a number for these sweeps (the table also keeps text cursors)
	}
	if err := s.DB.Query(ctx, &cur, sweepCursorSQL, cursorName); err != nil {
		return 0, nil, err
	}
	var from int64
	if len(cur) > 0 {
		if c, ok := cur[0].Cursor.(float64); ok {
			from = int64(c)
		}
	}
	var rows []struct {
		TrackID      int64   `json:"track_id"`
		Ratings      int64   `json:"ratings"`
		Rating       float64 `json:"rating"`
		HasSubtitle  int     `json:"has_subtitle"`
		HasHistogram int     `json:"has_histogram"`
		HasDesc      int     `json:"has_description"`
		PrevRatings  *int64  `json:"prev_ratings"`
		PrevAt       *string `json:"prev_at"`
	}
	if err := s.DB.Query(ctx, &rows, sweepSQL, from, n); err != nil {
		return 0, nil, err
	}
	out := make([]SweepRow, 0, len(rows))
	for _, r := range rows {
		row := SweepRow{TrackID: r.TrackID, RatingCount: r.Ratings, AverageRating: r.Rating,
			HasSubtitle: r.HasSubtitle != 0, HasHistogram: r.HasHistogram != 0, HasDesc: r.HasDesc != 0}
		if r.PrevRatings != nil && r.PrevAt != nil {
			row.PrevCount = *r.PrevRatings
			row.PrevAt, _ = d1.ParseTime(*r.PrevAt)
		}
		out = append(out, row)
	}
	return from, out, nil
}

// sweepRowJSON is one app of a sweep batch as the batch's statements read
// it with json_each: a whole batch is a few statements, not two per app,
// so it commits as one transaction.
type sweepRowJSON struct {
	ID       int64    `json:"id"`
	Count    int64    `json:"n"`
	Average  float64  `json:"r"`
	Velocity *float64 `json:"v"` // null: unknown
}

func sweepRowsJSON(rows []SweepRow) string {
	out := make([]sweepRowJSON, len(rows))
	for i, r := range rows {
		out[i] = sweepRowJSON{ID: r.TrackID, Count: r.RatingCount, Average: r.AverageRating}
		if !math.IsNaN(r.Velocity) && !math.IsInf(r.Velocity, 0) {
			v := r.Velocity
			out[i].Velocity = &v
		}
	}
	b, _ := json.Marshal(out)
	return string(b)
}

// sweepVelocitySQL writes a batch's velocities: each app of the batch
// (json_each, once) updates its row by primary key, so the cost is linear
// in the batch. A correlated subquery over json_each per updated row read
// the whole batch for each app: 20,900 rows read for 200 apps on D1.
const sweepVelocitySQL = `UPDATE app_registry SET rating_velocity = j.v
FROM (SELECT json_extract(value, '$.id') AS id, json_extract(value, '$.v') AS v FROM json_each(?1)) AS j
WHERE app_registry.track_id = j.id`

// SaveSweep writes the sweep's snapshots, velocities and the new cursor as
// one batch: the cursor moves only if every row was written.
func (s D1Store) SaveSweep(ctx context.Context, cursorName string, next int64, rows []SweepRow, at time.Time) error {
	batch := sweepRowsJSON(rows)
	stmts := []d1.Stmt{{
		SQL: `INSERT OR IGNORE INTO app_snapshots (track_id, taken_at, rating_count, average_rating)
SELECT json_extract(value, '$.id'), ?, json_extract(value, '$.n'), json_extract(value, '$.r') FROM json_each(?)`,
		Args: []any{d1.Time(at), batch},
	}, {
		SQL:  sweepVelocitySQL,
		Args: []any{batch},
	}, CursorStmt(cursorName, next, at)}
	_, err := s.DB.ExecAtomic(ctx, stmts...)
	return err
}

// SaveDailySnapshots writes the day's snapshots and the cursor.
func (s D1Store) SaveDailySnapshots(ctx context.Context, cursorName string, next int64, rows []SweepRow, at time.Time) error {
	_, err := s.DB.ExecAtomic(ctx, DailySnapshotStatements(cursorName, next, rows, at)...)
	return err
}

// Bindings is Deps (and the ledger-reconcile task's Reconciler, the
// facts-prune task's FactsPruner) over the Worker's clients: the upstream
// through the global limiter, KV and D1.
type Bindings struct {
	D1Store
	Get        func(ctx context.Context, url string) upstream.Response
	Values     KV
	Reconciler Reconciler
	Reparser   PageReparser
	// Failed requeues given-up items that gave up RetryFailedAfter ago or
	// earlier; RetryFailedAfter 0 turns the retry-failed task off.
	Failed interface {
		RetryFailed(ctx context.Context, class string, olderThan, now time.Time) (int, error)
	}
	RetryFailedAfter time.Duration
	// RetryFailedBatch is what one RetryFailed call requeues at most.
	RetryFailedBatch int
	Pruner           FactsPruner
	// Catalogue runs the living catalogue's tasks (nil: none bound).
	Catalogue CatalogueMaintainer
	// Reviews is where reviews-refresh stores; ReviewsGet fetches through
	// the reviews' global limit; Country is the storefront.
	Reviews    reviews.RefreshStore
	ReviewsGet func(ctx context.Context, url string) upstream.Response
	APIBase    string
	Country    string
	// Analyst writes the LLM briefs (analyst-run; nil: none bound).
	Analyst *analyst.Analyst
}

// RunAnalyst implements AnalystRunner.
func (p Bindings) RunAnalyst(ctx context.Context) analyst.RunResult {
	if p.Analyst == nil {
		return analyst.RunResult{Err: "no analyst bound"}
	}
	return p.Analyst.Run(ctx)
}

// RefreshReviews implements ReviewsRefresher.
func (p Bindings) RefreshReviews(ctx context.Context, now time.Time) reviews.RefreshResult {
	if p.Reviews == nil || p.ReviewsGet == nil {
		return reviews.RefreshResult{Err: "no reviews store bound"}
	}
	return reviews.Refresh(ctx, p.Reviews, p.ReviewsGet, p.APIBase, p.Country, now)
}

// RetryFailedBefore implements FailedRetrier.
func (p Bindings) RetryFailedBefore(ctx context.Context, now time.Time) (int, bool, error) {
	if p.Failed == nil || p.RetryFailedAfter <= 0 {
		return 0, false, nil
	}
	n, err := p.Failed.RetryFailed(ctx, "", now.Add(-p.RetryFailedAfter), now)
	return n, err == nil && n >= p.RetryFailedBatch, err
}

// PruneFacts implements FactsPruner.
func (p Bindings) PruneFacts(ctx context.Context) history.PruneResult {
	if p.Pruner == nil {
		return history.PruneResult{Error: "no facts pruner bound"}
	}
	return p.Pruner.PruneFacts(ctx)
}

// ReparseRun implements PageReparser.
func (p Bindings) ReparseRun(ctx context.Context) (string, error) {
	if p.Reparser == nil {
		return "", errors.New("no page reparser bound")
	}
	return p.Reparser.ReparseRun(ctx)
}

// Fetch implements Deps.
func (p Bindings) Fetch(ctx context.Context, url string) upstream.Response { return p.Get(ctx, url) }

// PutKV implements Deps.
func (p Bindings) PutKV(ctx context.Context, key, value string) error {
	return p.Values.Put(ctx, key, value)
}

// ReconcileRun implements Reconciler.
func (p Bindings) ReconcileRun(ctx context.Context) history.RunResult {
	if p.Reconciler == nil {
		return history.RunResult{Error: "no reconciler bound"}
	}
	return p.Reconciler.ReconcileRun(ctx)
}
