package tasks

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// memSweep is an in-memory catalogue of enriched apps with named cursors
// and per-day snapshots, like D1 under DailySnapshotStatements.
type memSweep struct {
	ids       []int64
	cursors   map[string]int64
	snapshots map[int64][]time.Time
	reads     int
	failAt    int // fail the n-th SaveDailySnapshots (1-based), 0 = never
	saves     int
}

func (m *memSweep) SweepBatch(_ context.Context, name string, n int) (int64, []SweepRow, error) {
	m.reads++
	cur := m.cursors[name]
	var out []SweepRow
	for _, id := range m.ids {
		if id > cur && len(out) < n {
			out = append(out, SweepRow{TrackID: id, RatingCount: id * 10, HasSubtitle: id%3 == 0, HasHistogram: true, HasDesc: true})
		}
	}
	return cur, out, nil
}

func (m *memSweep) SaveDailySnapshots(_ context.Context, name string, next int64, rows []SweepRow, at time.Time) error {
	m.saves++
	if m.saves == m.failAt {
		return errors.New("D1 unavailable")
	}
	for _, r := range rows {
		already := false
		for _, t := range m.snapshots[r.TrackID] {
			if !t.Before(DayStart(at)) {
				already = true
			}
		}
		if !already {
			m.snapshots[r.TrackID] = append(m.snapshots[r.TrackID], at)
		}
	}
	m.cursors[name] = next
	return nil
}

func newMemSweep(n int) *memSweep {
	m := &memSweep{cursors: map[string]int64{}, snapshots: map[int64][]time.Time{}}
	for i := 1; i <= n; i++ {
		m.ids = append(m.ids, int64(i))
	}
	return m
}

func TestRunDailyIsBoundedAndResumesFromItsCursor(t *testing.T) {
	day := time.Date(2026, 3, 1, 3, 0, 0, 0, time.UTC)
	total := DailySnapshotMaxBatches*SweepBatch + 150
	m := newMemSweep(total)
	m.cursors["rating-sweep"] = 42 // the scheduler's sweep has its own cursor
	res := RunDaily(context.Background(), m, func() time.Time { return day })
	if res.Apps != DailySnapshotMaxBatches*SweepBatch || res.Batches != DailySnapshotMaxBatches || res.Wrapped || res.Error != "" ||
		res.NextCursor != int64(DailySnapshotMaxBatches*SweepBatch) || m.reads != DailySnapshotMaxBatches {
		t.Fatalf("first run must stop at the bound: %+v reads %d", res, m.reads)
	}
	if m.cursors["rating-sweep"] != 42 {
		t.Fatal("the daily run must not move the rating sweep's cursor")
	}
	// Two apps in three lack a subtitle: a data-quality gap.
	if res.Coverage.Rows != res.Apps || res.Coverage.Subtitle >= MinSubtitleCoverage || len(res.Gaps) != 1 || res.Gaps[0] != "subtitle" {
		t.Fatalf("coverage %+v gaps %v", res.Coverage, res.Gaps)
	}
	// The next run (next day) finishes the catalogue from the cursor and wraps.
	next := day.Add(24 * time.Hour)
	res = RunDaily(context.Background(), m, func() time.Time { return next })
	if res.Apps != 150 || !res.Wrapped || res.NextCursor != 0 || res.FromCursor != int64(DailySnapshotMaxBatches*SweepBatch) {
		t.Fatalf("second run: %+v", res)
	}
	if len(m.snapshots) != total {
		t.Fatalf("every app snapshotted once: %d of %d", len(m.snapshots), total)
	}
	// After the wrap a rerun the same day starts over: app 1 gets its day-2
	// snapshot, the last app (snapshotted today already) no second one.
	res = RunDaily(context.Background(), m, func() time.Time { return next.Add(time.Hour) })
	if len(m.snapshots[1]) != 2 || len(m.snapshots[int64(total)]) != 1 || res.FromCursor != 0 {
		t.Fatalf("rerun on the same day: %v / %v", m.snapshots[1], m.snapshots[int64(total)])
	}
}

func TestRunDailyStopsAtAFailedBatchWithoutMovingTheCursor(t *testing.T) {
	m := newMemSweep(3 * SweepBatch)
	m.failAt = 2
	res := RunDaily(context.Background(), m, time.Now)
	if res.Apps != SweepBatch || res.Batches != 1 || !strings.Contains(res.Error, "D1 unavailable") || m.cursors[DailySnapshotCursor] != int64(SweepBatch) {
		t.Fatalf("%+v cursor %d", res, m.cursors[DailySnapshotCursor])
	}
}

func TestDailySnapshotStatementsAreOncePerDay(t *testing.T) {
	at := time.Date(2026, 3, 1, 3, 4, 5, 0, time.UTC)
	stmts := DailySnapshotStatements(DailySnapshotCursor, 99, []SweepRow{{TrackID: 7, RatingCount: 70, AverageRating: 4.5}}, at)
	if len(stmts) != 2 || !strings.Contains(stmts[0].SQL, "WHERE NOT EXISTS") || stmts[0].Args[2] != "2026-03-01T00:00:00.000Z" ||
		stmts[0].Args[0] != "2026-03-01T03:04:05.000Z" || strings.Count(stmts[0].SQL, "?") != len(stmts[0].Args) {
		t.Fatalf("%+v", stmts[0])
	}
	if c := stmts[1]; !strings.Contains(c.SQL, "sweep_cursors") || c.Args[0] != DailySnapshotCursor || c.Args[1] != int64(99) {
		t.Fatalf("%+v", c)
	}
	// A whole batch is still two statements: one transaction with its cursor.
	if n := len(DailySnapshotStatements(DailySnapshotCursor, 99, make([]SweepRow, SweepBatch), at)); n != 2 {
		t.Fatalf("%d statements for a batch of %d", n, SweepBatch)
	}
	if DayStart(time.Date(2026, 3, 1, 23, 59, 0, 0, time.FixedZone("x", -3600))) != time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC) {
		t.Fatal("days are UTC days")
	}
}
