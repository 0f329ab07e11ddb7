package catalogue

import (
	"context"
	"fmt"
	"math"
	"time"

	"storecrawl/worker/d1"
	"storecrawl/worker/registry"
)

// D1Store is the catalogue's side of D1.
type D1Store struct {
	DB *d1.DB
}

// The catalogue-stale and history-prune tasks walk the catalogue by
// primary key from a cursor in ranges of apps (BatchEnd then the range's
// statement), each within a day at 1.1M apps. Their work is idempotent (a
// marked app is not marked again, a deleted row is gone), so the cursor is
// saved once a run, where the last whole range ended, and only when it
// moved (d1.Cursor): a run that fails part way repeats reads, not writes.

// Stale marking (the catalogue-stale task): an app the upstream has not
// shown for the stale age (no chart, no search, no enrichment) is marked
// stale_at, never deleted; seeing it again clears the mark (Observe).
const (
	// DefaultStaleAfter: three of the long tail's refresh intervals; an app
	// still listed is looked up at least monthly once enriched, and seen in
	// charts or searches if it ranks anywhere.
	DefaultStaleAfter = 90 * 24 * time.Hour
	// StaleBatchApps bounds one UPDATE: a range of apps by primary key
	// (about 2 rows read an app: the range's end, then the range).
	StaleBatchApps = 5000
	// StaleMaxBatches bounds one run: 60,000 apps, so the hourly task walks
	// 1.44M apps a day, a 1.1M-app catalogue in 0.76 days, at about
	// 120,000 rows read and 26 D1 queries a run; it writes the apps it
	// marks and the cursor's one row.
	StaleMaxBatches = 12
	staleCursorName = "catalogue-stale"
)

// batchEndSQL is the last track id of the next n apps past a cursor (a
// primary-key range read of n rows) and how many there are.
const batchEndSQL = `SELECT COALESCE(max(track_id), 0) AS last, count(*) AS n FROM
  (SELECT track_id FROM app_registry WHERE track_id > ? ORDER BY track_id LIMIT ?)`

// BatchEnd implements RangeStore.
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

// ReadCursor implements RangeStore.
func (s D1Store) ReadCursor(ctx context.Context, name string) (d1.Cursor, error) {
	return d1.ReadCursor(ctx, s.DB, name)
}

// SaveCursor implements RangeStore.
func (s D1Store) SaveCursor(ctx context.Context, c d1.Cursor, to int64, at time.Time) (d1.Cursor, error) {
	return c.Save(ctx, s.DB, to, at)
}

// MarkStale implements StaleStore.
func (s D1Store) MarkStale(ctx context.Context, after, last int64, seenBefore, now time.Time) (int64, error) {
	return s.DB.Exec(ctx, registry.MarkStale(after, last, d1.Time(seenBefore), d1.Time(now)))
}

// RangeStore is what a walk over the catalogue's ranges needs of D1.
type RangeStore interface {
	ReadCursor(ctx context.Context, name string) (d1.Cursor, error)
	BatchEnd(ctx context.Context, after int64, n int) (last int64, count int, err error)
	SaveCursor(ctx context.Context, c d1.Cursor, to int64, at time.Time) (d1.Cursor, error)
}

// StaleStore is what stale marking needs of D1.
type StaleStore interface {
	RangeStore
	MarkStale(ctx context.Context, after, last int64, seenBefore, now time.Time) (int64, error)
}

// RangeResult is what a cursor walk over the catalogue did.
type RangeResult struct {
	Apps    int    `json:"apps"`    // apps walked
	Changed int64  `json:"changed"` // rows marked or deleted
	From    int64  `json:"from"`
	Next    int64  `json:"next"` // 0: wrapped, the next run starts over
	Error   string `json:"error,omitempty"`
}

// walkRanges walks up to maxBatches ranges of batchApps apps from the
// named cursor, calling do on each range (after, last], and saves the
// cursor once, where the last whole range ended. The range that reaches
// the end of the catalogue ends at endLast (its last app, or beyond) and
// wraps the cursor to 0.
func walkRanges(ctx context.Context, st RangeStore, name string, batchApps, maxBatches int, endLast func(last int64) int64, now time.Time,
	do func(after, last int64) (int64, error)) RangeResult {
	var r RangeResult
	cur, err := st.ReadCursor(ctx, name)
	if err != nil {
		r.Error = "cursor: " + err.Error()
		return r
	}
	cursor := cur.Int()
	r.From, r.Next = cursor, cursor
	for b := 0; b < maxBatches; b++ {
		last, n, err := st.BatchEnd(ctx, cursor, batchApps)
		if err != nil {
			r.Error = "range: " + err.Error()
			break
		}
		next := last
		if n < batchApps {
			next, last = 0, endLast(max(last, cursor)) // the end of the catalogue: wrap
		}
		changed, err := do(cursor, last)
		if err != nil {
			r.Error = err.Error()
			break
		}
		r.Apps += n
		r.Changed += changed
		cursor, r.Next = next, next
		if next == 0 {
			break
		}
	}
	if _, err := st.SaveCursor(ctx, cur, r.Next, now); err != nil && r.Error == "" {
		r.Error = "cursor: " + err.Error()
	}
	return r
}

// MarkStale walks the catalogue from its cursor in batches of
// StaleBatchApps (at most StaleMaxBatches) and marks the apps not seen for
// staleAfter.
func MarkStale(ctx context.Context, st StaleStore, staleAfter time.Duration, now time.Time) RangeResult {
	if staleAfter <= 0 {
		staleAfter = DefaultStaleAfter
	}
	return walkRanges(ctx, st, staleCursorName, StaleBatchApps, StaleMaxBatches, func(last int64) int64 { return last }, now,
		func(after, last int64) (int64, error) {
			// A stored sighting is up to SightingGranularity older than the
			// app's last one: the cutoff allows for it, so an app seen within
			// staleAfter is never marked (one unseen is marked at most a
			// granularity late).
			n, err := st.MarkStale(ctx, after, last, now.Add(-staleAfter-SightingGranularity), now)
			if err != nil {
				return 0, fmt.Errorf("mark: %w", err)
			}
			return n, nil
		})
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
	// this many apps (by primary key prefix), five statements in one D1
	// batch.
	PruneBatchApps = 2500
	// PruneMaxBatches bounds one run: 60,000 apps, so the hourly task walks
	// 1.44M apps a day, a 1.1M-app catalogue in 0.76 days (nothing outlives
	// its retention by more than a day), in about 146 D1 statements a run.
	PruneMaxBatches = 24
	pruneCursorName = "history-prune"
)

// historyTables are the pruned tables with the column holding a row's
// time and its retention.
var historyTables = []struct {
	table, column string
	retention     *time.Duration
	// format turns the cutoff into the column's layout (Millis for the
	// compact tables of migrations/0035).
	format func(time.Time) any
	// keepLatest keeps each app's newest row however old: a change series
	// whose newest row is the value the app still has (and since when).
	// The history triggers write a row only on change, so an app unchanged
	// past the retention would otherwise lose its only row, and the rating
	// sweep would copy it back the next day.
	keepLatest bool
}{
	{"app_snapshots", "taken_at", &RatingHistoryRetention, millisArg, true},
	{"app_version_history", "seen_at", &ChangeHistoryRetention, millisArg, true},
	{"app_price_history", "seen_at", &ChangeHistoryRetention, millisArg, true},
	{"chart_position_history", "seen_at", &RankHistoryRetention, timeArg, false},
}

func millisArg(t time.Time) any { return Millis(t) }
func timeArg(t time.Time) any   { return d1.Time(t) }

// pruneSQL is one table's DELETE over a range of apps (?1, ?2] before ?3;
// a change series keeps each app's newest row (its max by primary key:
// one seek, only for the rows already past the cutoff).
func pruneSQL(table, column string, keepLatest bool) string {
	q := `DELETE FROM ` + table + ` WHERE track_id > ?1 AND track_id <= ?2 AND ` + column + ` < ?3`
	if keepLatest {
		q += ` AND ` + column + ` < (SELECT max(k.` + column + `) FROM ` + table + ` k WHERE k.track_id = ` + table + `.track_id)`
	}
	return q
}

// pruneRankChangesSQL prunes keyword_rank_history (?1, ?2 the apps' range,
// ?3 the retention's first day, Day). Its rows are changes whose rank holds
// until the keyword's next row for the app (migrations/0026), so a row
// older than the retention goes only when a later row before the cutoff
// replaced it, or when it says the app left (nothing to carry): the row in
// effect when the retention's window opens stays, for AppHistory to carry
// in. The EXISTS reads the app's rows by primary key prefix.
const pruneRankChangesSQL = `DELETE FROM keyword_rank_history AS h WHERE track_id > ?1 AND track_id <= ?2 AND day < ?3
  AND (rank IS NULL OR EXISTS (SELECT 1 FROM keyword_rank_history n
    WHERE n.track_id = h.track_id AND n.day > h.day AND n.day < ?3 AND n.keyword_id = h.keyword_id))
RETURNING 1 AS pruned`

// PruneRange implements PruneStore: it deletes the history of apps in
// (after, last] older than each table's retention, in one D1 batch.
func (s D1Store) PruneRange(ctx context.Context, after, last int64, now time.Time) (int64, error) {
	stmts := make([]d1.Stmt, 0, len(historyTables)+1)
	for _, t := range historyTables {
		stmts = append(stmts, d1.Stmt{
			SQL:  pruneSQL(t.table, t.column, t.keepLatest) + ` RETURNING 1 AS pruned`,
			Args: []any{after, last, t.format(now.Add(-*t.retention))},
		})
	}
	stmts = append(stmts, d1.Stmt{SQL: pruneRankChangesSQL, Args: []any{after, last, Day(now.Add(-RankHistoryRetention))}})
	return s.DB.Exec(ctx, stmts...)
}

// PruneStore is what pruning needs of D1.
type PruneStore interface {
	RangeStore
	PruneRange(ctx context.Context, after, last int64, now time.Time) (int64, error)
}

// PruneHistory walks the catalogue from its cursor in batches of
// PruneBatchApps (at most PruneMaxBatches) and deletes each app's history
// past its retention.
func PruneHistory(ctx context.Context, st PruneStore, now time.Time) RangeResult {
	// The last batch reaches past the last app: history of ids above it
	// (none should exist) goes too.
	return walkRanges(ctx, st, pruneCursorName, PruneBatchApps, PruneMaxBatches, func(int64) int64 { return math.MaxInt64 }, now,
		func(after, last int64) (int64, error) {
			n, err := st.PruneRange(ctx, after, last, now)
			if err != nil {
				return 0, fmt.Errorf("prune: %w", err)
			}
			return n, nil
		})
}

// maintainHotQueries are the walks' statements (the range's end, each
// range's write and the cursor).
func maintainHotQueries() []d1.NamedQuery {
	ts := "2026-01-01T00:00:00.000Z"
	qs := []d1.NamedQuery{
		{Name: "catalogue stale mark", SQL: registry.MarkStaleSQL, Args: []any{ts, 0, 100005000, ts}},
		d1.CursorHotQuery(staleCursorName),
	}
	for _, t := range historyTables {
		qs = append(qs, d1.NamedQuery{Name: "history prune " + t.table, SQL: pruneSQL(t.table, t.column, t.keepLatest),
			Args: []any{0, 100002500, t.format(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))}})
	}
	return qs
}
