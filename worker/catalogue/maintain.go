package catalogue

import (
	"context"
	"fmt"
	"math"
	"time"

	"storecrawl/worker/d1"
)

// D1Store is the catalogue's side of D1.
type D1Store struct {
	DB *d1.DB
}

// Stale marking (the catalogue-stale task): an app the upstream has not
// shown for the stale age (no chart, no search, no enrichment) is marked
// stale_at, never deleted; seeing it again clears the mark (Observe).
const (
	// DefaultStaleAfter: three of the long tail's refresh intervals; an app
	// still listed is looked up at least monthly once enriched, and seen in
	// charts or searches if it ranks anywhere.
	DefaultStaleAfter = 90 * 24 * time.Hour
	// StaleBatchApps bounds one UPDATE: a range of apps by primary key.
	StaleBatchApps = 2000
	// StaleMaxBatches bounds one run: 20,000 apps, so an hourly task passes
	// over a 100,000-app catalogue five times a day at about 20,000 row
	// reads a run.
	StaleMaxBatches = 10
	staleCursorName = "catalogue-stale"
)

// batchEndSQL is the last track id of the next n apps past a cursor (a
// primary-key range read of n rows) and how many there are.
const batchEndSQL = `SELECT COALESCE(max(track_id), 0) AS last, count(*) AS n FROM
  (SELECT track_id FROM app_registry WHERE track_id > ? ORDER BY track_id LIMIT ?)`

// markStaleSQL marks the unseen apps of a track-id range.
const markStaleSQL = `UPDATE app_registry SET stale_at = ?1
WHERE track_id > ?2 AND track_id <= ?3 AND stale_at IS NULL
  AND max(COALESCE(last_seen_at, ''), COALESCE(enriched_at, ''), discovered_at) < ?4`

// BatchEnd implements MaintainStore.
func (s D1Store) BatchEnd(ctx context.Context, after int64, n int) (last int64, count int, err error) {
	var rows []struct {
		Last int64 `json:"last"`
		N    int   `json:"n"`
	}
	if err := s.DB.Query(ctx, &rows, batchEndSQL, after, n); err != nil || len(rows) == 0 {
		return 0, 0, err
	}
	return rows[0].Last, rows[0].N, nil
}

// MarkStale implements MaintainStore: it marks and moves the cursor in one
// atomic batch.
func (s D1Store) MarkStale(ctx context.Context, after, last int64, seenBefore, now time.Time, next int64) (int64, error) {
	return s.DB.ExecAtomic(ctx,
		d1.Stmt{SQL: markStaleSQL + ` RETURNING 1 AS marked`, Args: []any{d1.Time(now), after, last, d1.Time(seenBefore)}},
		cursorStmt(staleCursorName, next, now))
}

func cursorStmt(name string, cursor int64, at time.Time) d1.Stmt {
	return d1.Stmt{
		SQL:  `INSERT INTO sweep_cursors (name, cursor, updated_at) VALUES (?,?,?) ON CONFLICT (name) DO UPDATE SET cursor = excluded.cursor, updated_at = excluded.updated_at`,
		Args: []any{name, cursor, d1.Time(at)},
	}
}

// StaleCursor reads the stale marking's cursor.
func (s D1Store) StaleCursor(ctx context.Context) (int64, error) {
	return s.intCursor(ctx, staleCursorName)
}

// StaleStore is what stale marking needs of D1.
type StaleStore interface {
	StaleCursor(ctx context.Context) (int64, error)
	BatchEnd(ctx context.Context, after int64, n int) (last int64, count int, err error)
	MarkStale(ctx context.Context, after, last int64, seenBefore, now time.Time, next int64) (int64, error)
}

// RangeResult is what a cursor walk over the catalogue did.
type RangeResult struct {
	Apps    int    `json:"apps"`    // apps walked
	Changed int64  `json:"changed"` // rows marked or deleted
	From    int64  `json:"from"`
	Next    int64  `json:"next"` // 0: wrapped, the next run starts over
	Error   string `json:"error,omitempty"`
}

// MarkStale walks the catalogue from its cursor in batches of
// StaleBatchApps (at most StaleMaxBatches) and marks the apps not seen for
// staleAfter. A failed batch ends the run; its cursor was not moved.
func MarkStale(ctx context.Context, st StaleStore, staleAfter time.Duration, now time.Time) RangeResult {
	var r RangeResult
	if staleAfter <= 0 {
		staleAfter = DefaultStaleAfter
	}
	cursor, err := st.StaleCursor(ctx)
	if err != nil {
		r.Error = "cursor: " + err.Error()
		return r
	}
	r.From, r.Next = cursor, cursor
	for b := 0; b < StaleMaxBatches; b++ {
		last, n, err := st.BatchEnd(ctx, cursor, StaleBatchApps)
		if err != nil {
			r.Error = "range: " + err.Error()
			return r
		}
		next := last
		if n < StaleBatchApps {
			next = 0 // the end of the catalogue: wrap
		}
		// A stored sighting is up to SightingGranularity older than the
		// app's last one: the cutoff allows for it, so an app seen within
		// staleAfter is never marked (one unseen is marked at most a
		// granularity late).
		marked, err := st.MarkStale(ctx, cursor, max(last, cursor), now.Add(-staleAfter-SightingGranularity), now, next)
		if err != nil {
			r.Error = "mark: " + err.Error()
			return r
		}
		r.Apps += n
		r.Changed += marked
		cursor, r.Next = next, next
		if next == 0 {
			break
		}
	}
	return r
}

// Summary is a task's one line.
func (r RangeResult) Summary(verb string) string {
	return fmt.Sprintf("%s %d rows over %d apps from cursor %d, next %d", verb, r.Changed, r.Apps, r.From, r.Next)
}

// History retention: the history-prune task deletes rows older than
// these, app by app in cursor batches.
var (
	// RatingHistoryRetention keeps a year and a month of rating
	// observations: year-over-year comparisons and every velocity window.
	RatingHistoryRetention = 400 * 24 * time.Hour
	// ChangeHistoryRetention keeps two years of version and price changes:
	// a few rows per app a year, so age costs little.
	ChangeHistoryRetention = 730 * 24 * time.Hour
	// RankHistoryRetention keeps 90 days of keyword and chart ranks: the
	// largest tables (a row per app, keyword and day), and rank trends older
	// than a quarter say little about a market today.
	RankHistoryRetention = 90 * 24 * time.Hour
)

// Prune bounds.
const (
	// PruneBatchApps bounds one batch: its DELETEs read the history rows of
	// this many apps (by primary key prefix).
	PruneBatchApps = 500
	// PruneMaxBatches bounds one run: 5,000 apps; at the hourly cadence
	// the whole 100,000-app catalogue every 20 hours, so nothing outlives
	// its retention by more than a day.
	PruneMaxBatches = 10
	pruneCursorName = "history-prune"
)

// historyTables are the pruned tables with the column holding a row's
// time and its retention.
var historyTables = []struct {
	table, column string
	retention     *time.Duration
	// format turns the cutoff into the column's layout.
	format func(time.Time) string
}{
	{"app_snapshots", "taken_at", &RatingHistoryRetention, d1.Time},
	{"app_version_history", "seen_at", &ChangeHistoryRetention, d1.Time},
	{"app_price_history", "seen_at", &ChangeHistoryRetention, d1.Time},
	{"chart_position_history", "seen_at", &RankHistoryRetention, d1.Time},
}

// pruneRankChangesSQL prunes keyword_rank_history (?1, ?2 the apps' range,
// ?3 the retention's first day). Its rows are changes whose rank holds
// until the keyword's next row for the app (migrations/0026), so a row
// older than the retention goes only when a later row before the cutoff
// replaced it, or when it says the app left (nothing to carry): the row in
// effect when the retention's window opens stays, for AppHistory to carry
// in. The EXISTS reads the app's rows by primary key prefix.
const pruneRankChangesSQL = `DELETE FROM keyword_rank_history AS h WHERE track_id > ?1 AND track_id <= ?2 AND day < ?3
  AND (rank IS NULL OR EXISTS (SELECT 1 FROM keyword_rank_history n
    WHERE n.track_id = h.track_id AND n.day > h.day AND n.day < ?3 AND n.keyword = h.keyword))
RETURNING 1 AS pruned`

// PruneRange implements PruneStore: it deletes the history of apps in
// (after, last] older than each table's retention and moves the cursor,
// in one atomic batch.
func (s D1Store) PruneRange(ctx context.Context, after, last int64, now time.Time, next int64) (int64, error) {
	stmts := make([]d1.Stmt, 0, len(historyTables)+2)
	for _, t := range historyTables {
		stmts = append(stmts, d1.Stmt{
			SQL:  `DELETE FROM ` + t.table + ` WHERE track_id > ? AND track_id <= ? AND ` + t.column + ` < ? RETURNING 1 AS pruned`,
			Args: []any{after, last, t.format(now.Add(-*t.retention))},
		})
	}
	stmts = append(stmts, d1.Stmt{SQL: pruneRankChangesSQL, Args: []any{after, last, Day(now.Add(-RankHistoryRetention))}})
	stmts = append(stmts, cursorStmt(pruneCursorName, next, now))
	return s.DB.ExecAtomic(ctx, stmts...)
}

// PruneCursor reads the prune's cursor.
func (s D1Store) PruneCursor(ctx context.Context) (int64, error) {
	return s.intCursor(ctx, pruneCursorName)
}

// PruneStore is what pruning needs of D1.
type PruneStore interface {
	PruneCursor(ctx context.Context) (int64, error)
	BatchEnd(ctx context.Context, after int64, n int) (last int64, count int, err error)
	PruneRange(ctx context.Context, after, last int64, now time.Time, next int64) (int64, error)
}

// PruneHistory walks the catalogue from its cursor in batches of
// PruneBatchApps (at most PruneMaxBatches) and deletes each app's history
// past its retention. Deletes are idempotent: a failed batch ends the run
// with the cursor unmoved, and the next run repeats it.
func PruneHistory(ctx context.Context, st PruneStore, now time.Time) RangeResult {
	var r RangeResult
	cursor, err := st.PruneCursor(ctx)
	if err != nil {
		r.Error = "cursor: " + err.Error()
		return r
	}
	r.From, r.Next = cursor, cursor
	for b := 0; b < PruneMaxBatches; b++ {
		last, n, err := st.BatchEnd(ctx, cursor, PruneBatchApps)
		if err != nil {
			r.Error = "range: " + err.Error()
			return r
		}
		next := last
		if n < PruneBatchApps {
			next = 0
			// The last batch reaches past the last app: history of ids
			// above it (none should exist) goes too.
			last = math.MaxInt64
		}
		deleted, err := st.PruneRange(ctx, cursor, last, now, next)
		if err != nil {
			r.Error = "prune: " + err.Error()
			return r
		}
		r.Apps += n
		r.Changed += deleted
		cursor, r.Next = next, next
		if next == 0 {
			break
		}
	}
	return r
}
