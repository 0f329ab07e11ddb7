package tasks

import (
	"context"
	"fmt"
	"time"

	"storecrawl/worker/d1"
	"storecrawl/worker/logx"
)

// The daily cron (CronDaily, off-peak): a rating snapshot of every enriched
// app once a day, and the data-quality check over the apps it read. It
// reuses the rating sweep's read (SweepBatch: enriched apps past a cursor
// kept in D1, with each one's latest snapshot) and its coverage measure
// (CoverageOf), under its own cursor.

// Daily run bounds.
const (
	// DailySnapshotCursor names the daily run's cursor in sweep_cursors.
	DailySnapshotCursor = "daily-snapshot"
	// DailySnapshotMaxBatches bounds one run's D1 cost: at most this many
	// batches of SweepBatch apps (2,000 apps: about 2,000 rows read and at
	// most 2,000 written). A larger catalogue is finished by the next runs
	// from the cursor, so one run never grows with the catalogue.
	DailySnapshotMaxBatches = 10
)

// DailyDeps is what the daily run needs from D1.
type DailyDeps interface {
	// SweepBatch reads up to n enriched apps past the named cursor.
	SweepBatch(ctx context.Context, cursorName string, n int) (cursor int64, rows []SweepRow, err error)
	// SaveDailySnapshots writes the day's snapshots and the new cursor in one batch.
	SaveDailySnapshots(ctx context.Context, cursorName string, next int64, rows []SweepRow, at time.Time) error
}

// DailyResult is what one daily run did.
type DailyResult struct {
	Apps       int      `json:"apps"`
	Batches    int      `json:"batches"`
	FromCursor int64    `json:"from_cursor"`
	NextCursor int64    `json:"next_cursor"`
	Wrapped    bool     `json:"wrapped"` // reached the end of the catalogue: the next run starts over
	Coverage   Coverage `json:"coverage"`
	Gaps       []string `json:"gaps,omitempty"`
	Error      string   `json:"error,omitempty"`
}

// RunDaily snapshots enriched apps in cursor batches (at most
// DailySnapshotMaxBatches, stopping at the end of the catalogue) and logs
// one pipeline.data_quality event for the apps read. A failed batch ends
// the run; its cursor was not advanced, so the next run retries it.
func RunDaily(ctx context.Context, deps DailyDeps, now func() time.Time) DailyResult {
	var res DailyResult
	var all []SweepRow
	for b := 0; b < DailySnapshotMaxBatches; b++ {
		cursor, rows, err := deps.SweepBatch(ctx, DailySnapshotCursor, SweepBatch)
		if err != nil {
			res.Error = "read: " + err.Error()
			break
		}
		if b == 0 {
			res.FromCursor = cursor
		}
		next := int64(0) // a short batch is the end: wrap
		if len(rows) == SweepBatch {
			next = rows[len(rows)-1].TrackID
		}
		if err := deps.SaveDailySnapshots(ctx, DailySnapshotCursor, next, rows, now()); err != nil {
			res.Error = "write: " + err.Error()
			break
		}
		res.Batches++
		res.Apps += len(rows)
		res.NextCursor = next
		all = append(all, rows...)
		if next == 0 {
			res.Wrapped = true
			break
		}
	}
	res.Coverage = CoverageOf(all)
	res.Gaps = res.Coverage.Gaps()
	fields := map[string]any{"coverage": res.Coverage, "gaps": res.Gaps, "from_cursor": res.FromCursor, "next_cursor": res.NextCursor}
	if len(res.Gaps) > 0 {
		fields["level"] = logx.Warn
	}
	logx.Event("pipeline.data_quality", fields)
	return res
}

// Summary is the one-line result of the run for /v1/system/cron.
func (r DailyResult) Summary() string {
	return fmt.Sprintf("%d apps snapshotted in %d batches from cursor %d, next %d, gaps %v", r.Apps, r.Batches, r.FromCursor, r.NextCursor, r.Gaps)
}

// DayStart is the UTC midnight that begins t's day.
func DayStart(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// DailySnapshotStatements write one snapshot per app per UTC day: an app
// that already has one that day (from an earlier run or the rating sweep)
// is left alone, so a rerun writes nothing. Then the cursor.
func DailySnapshotStatements(cursorName string, next int64, rows []SweepRow, at time.Time) []d1.Stmt {
	return []d1.Stmt{{
		SQL: `INSERT INTO app_snapshots (track_id, taken_at, rating_count, average_rating)
SELECT json_extract(j.value, '$.id'), ?, json_extract(j.value, '$.n'), json_extract(j.value, '$.r') FROM json_each(?) AS j
WHERE NOT EXISTS (SELECT 1 FROM app_snapshots s WHERE s.track_id = json_extract(j.value, '$.id') AND s.taken_at >= ?)`,
		Args: []any{d1.Time(at), sweepRowsJSON(rows), d1.Time(DayStart(at))},
	}, CursorStmt(cursorName, next, at)}
}

// CursorStmt upserts a named cursor in sweep_cursors.
func CursorStmt(name string, cursor any, at time.Time) d1.Stmt {
	return d1.Stmt{
		SQL:  `INSERT INTO sweep_cursors (name, cursor, updated_at) VALUES (?,?,?) ON CONFLICT (name) DO UPDATE SET cursor = excluded.cursor, updated_at = excluded.updated_at`,
		Args: []any{name, cursor, d1.Time(at)},
	}
}
