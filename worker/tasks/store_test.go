//go:build !js

package tasks

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"storecrawl/worker/catalogue"
	"storecrawl/worker/d1/d1test"
)

// seedEnriched adds n enriched apps (track ids 1..n) with ratings.
func seedEnriched(t *testing.T, drv *d1test.Driver, n int) {
	for i := 1; i <= n; i++ {
		drv.Exec(t, `INSERT INTO app_registry (track_id, name, rating_count, average_rating, subtitle, description, enrichment_source, enriched_at, discovered_at)
VALUES (?, 'app', ?, 4.5, 'sub', 'desc', 'itunes+store', '2026-11-01T00:00:00.000Z', '2026-10-01T00:00:00.000Z')`, i, i*100)
	}
}

func TestRatingSweepAgainstD1(t *testing.T) {
	db, drv := d1test.New(t)
	seedEnriched(t, drv, SweepBatch+5)
	// App 1 had 40 ratings a day ago: its velocity is 60 a day.
	drv.Exec(t, `INSERT INTO app_snapshots (track_id, taken_at, rating_count, average_rating) VALUES (1, '2026-11-22T12:00:00.000Z', 40, 4.5)`)
	// App 2 has no snapshot at all: its count is the one it was inserted
	// with, held since its discovery (an insert writes no history). App 3
	// has no count.
	drv.Exec(t, `DELETE FROM app_snapshots WHERE track_id = 2`)
	drv.Exec(t, `UPDATE app_registry SET rating_count = NULL WHERE track_id = 3`)
	drv.Exec(t, `DELETE FROM app_snapshots WHERE track_id = 3`)
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	values := mapKV{}
	deps := Bindings{D1Store: D1Store{DB: db}, Values: values}
	res := RunTask(context.Background(), "rating-sweep", deps, "", func() time.Time { return now })
	if !res.OK {
		t.Fatalf("sweep: %+v", res)
	}
	if v := drv.Rows(t, `SELECT rating_velocity FROM app_registry WHERE track_id = 1`)[0]["rating_velocity"]; v != float64(60) {
		t.Fatalf("velocity: %v", v)
	}
	if v := drv.Rows(t, `SELECT rating_velocity FROM app_registry WHERE track_id = 2`)[0]["rating_velocity"]; v != float64(0) {
		t.Fatalf("unchanged since its discovery: %v", v)
	}
	if v := drv.Rows(t, `SELECT rating_velocity FROM app_registry WHERE track_id = 3`)[0]["rating_velocity"]; v != nil {
		t.Fatalf("no count, no velocity: %v", v)
	}
	if values["quality:latest"] == "" {
		t.Fatal("the histogram gap must be recorded in KV")
	}
	if n := drv.Int(t, `SELECT cursor FROM sweep_cursors WHERE name = 'rating-sweep'`); n != SweepBatch {
		t.Fatalf("cursor after a full batch: %d", n)
	}
	if n := drv.Int(t, `SELECT COUNT(*) FROM app_snapshots WHERE taken_at = ?`, "2026-11-23T12:00:00.000Z"); n != SweepBatch {
		t.Fatalf("snapshots: %d", n)
	}
	// The short last batch wraps the cursor.
	if res := RunTask(context.Background(), "rating-sweep", deps, "", func() time.Time { return now.Add(time.Minute) }); !res.OK {
		t.Fatalf("second sweep: %+v", res)
	}
	if n := drv.Int(t, `SELECT cursor FROM sweep_cursors WHERE name = 'rating-sweep'`); n != 0 {
		t.Fatalf("cursor must wrap: %d", n)
	}
	// D1 down: the task fails and the cursor does not move.
	drv.FailNext.Store(1)
	if res := RunTask(context.Background(), "rating-sweep", deps, "", func() time.Time { return now }); res.OK {
		t.Fatal("a failed read must fail the task")
	}
}

func TestDailySnapshotsAgainstD1(t *testing.T) {
	db, drv := d1test.New(t)
	seedEnriched(t, drv, SweepBatch*DailySnapshotMaxBatches+10)
	store := D1Store{DB: db}
	day := time.Date(2026, 11, 23, 3, 0, 0, 0, time.UTC)
	res := RunDaily(context.Background(), store, func() time.Time { return day })
	if res.Error != "" || res.Apps != SweepBatch*DailySnapshotMaxBatches || res.Wrapped {
		t.Fatalf("first run is bounded: %+v", res)
	}
	// The daily copies (source NULL); each seeded app also has the
	// observation its insert recorded (migration 0018).
	if n := drv.Int(t, `SELECT COUNT(*) FROM app_snapshots WHERE source IS NULL`); n != int64(res.Apps) {
		t.Fatalf("snapshots: %d", n)
	}
	// The next run resumes from the cursor and wraps at the end.
	res = RunDaily(context.Background(), store, func() time.Time { return day.Add(time.Hour) })
	if res.Apps != 10 || !res.Wrapped {
		t.Fatalf("second run: %+v", res)
	}
	// A rerun the same day writes nothing new.
	RunDaily(context.Background(), store, func() time.Time { return day.Add(2 * time.Hour) })
	if n := drv.Int(t, `SELECT COUNT(*) FROM app_snapshots WHERE source IS NULL`); n != SweepBatch*DailySnapshotMaxBatches+10 {
		t.Fatalf("once per app per day: %d", n)
	}
	// A failed write keeps the cursor where it was.
	before := drv.Int(t, `SELECT cursor FROM sweep_cursors WHERE name = ?`, DailySnapshotCursor)
	drv.FailNext.Store(1)
	res = RunDaily(context.Background(), store, func() time.Time { return day.Add(24 * time.Hour) })
	if res.Error == "" {
		t.Fatalf("want an error: %+v", res)
	}
	if after := drv.Int(t, `SELECT cursor FROM sweep_cursors WHERE name = ?`, DailySnapshotCursor); after != before {
		t.Fatalf("cursor moved on failure: %d → %d", before, after)
	}
}

type mapKV map[string]string

func (m mapKV) Put(_ context.Context, k, v string) error { m[k] = v; return nil }

// TestCatalogueTasksAgainstD1: the three catalogue tasks run on D1 through
// RunTask, each reporting what it did; unbound, each fails on its own.
func TestCatalogueTasksAgainstD1(t *testing.T) {
	db, drv := d1test.New(t)
	seedEnriched(t, drv, 3)
	drv.Exec(t, `UPDATE app_registry SET last_seen_at = '2026-01-01T00:00:00.000Z', discovered_at = '2026-01-01T00:00:00.000Z', updated_at = NULL`)
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	deps := Bindings{D1Store: D1Store{DB: db}, Catalogue: Catalogue{Store: catalogue.D1Store{DB: db}, StaleAfter: 90 * 24 * time.Hour, Now: func() time.Time { return now }}}
	for task, want := range map[string]string{
		"catalogue-sweep": "scheduled 3 new",
		// Enriched 2026-11-01, so seen then: not stale after 90 days.
		"catalogue-stale": "marked stale 0 rows over 3 apps",
		"history-prune":   "pruned 0 rows over 3 apps",
	} {
		res := RunTask(context.Background(), task, deps, "", func() time.Time { return now })
		if !res.OK || !strings.HasPrefix(res.Summary, want) {
			t.Errorf("%s: %+v", task, res)
		}
	}
	if n := drv.Int(t, `SELECT COUNT(*) FROM app_registry WHERE next_refresh_at IS NOT NULL AND refresh_tier IS NOT NULL`); n != 3 {
		t.Fatalf("scheduled apps: %d", n)
	}
	for _, task := range []string{"catalogue-sweep", "catalogue-stale", "history-prune"} {
		if res := RunTask(context.Background(), task, Bindings{}, "", time.Now); res.OK || res.Error != errNoCatalogue {
			t.Errorf("unbound %s: %+v", task, res)
		}
	}
}

// TestSweepVelocitiesLinearInTheBatch: the velocity update of a batch of n
// apps writes n rows and its work is n times a constant (VM steps per app
// flat from 50 to 800 apps; it walks no table). The correlated form it
// replaced read the whole batch for every app: quadratic.
func TestSweepVelocitiesLinearInTheBatch(t *testing.T) {
	_, drv := d1test.New(t)
	const most = 800
	seedEnriched(t, drv, most)
	perApp := map[int]float64{}
	for _, n := range []int{50, 200, most} {
		rows := make([]SweepRow, n)
		for i := range rows {
			rows[i] = SweepRow{TrackID: int64(i + 1), Velocity: float64(n + i)}
		}
		rows[n-1].Velocity = math.NaN() // unknown: written as NULL
		w := drv.Measure(t, sweepVelocitySQL, sweepRowsJSON(rows))
		if w.Changes != int64(n) || w.Walked != 0 {
			t.Fatalf("batch of %d: %+v, want %d rows written, none walked", n, w, n)
		}
		perApp[n] = float64(w.VMSteps) / float64(n)
		t.Logf("batch of %d: %d VM steps (%.1f an app), %d rows written", n, w.VMSteps, perApp[n], w.Changes)
		if v := drv.Rows(t, `SELECT rating_velocity FROM app_registry WHERE track_id = 1`)[0]["rating_velocity"]; v != float64(n) {
			t.Fatalf("batch of %d: app 1's velocity %v", n, v)
		}
		if v := drv.Rows(t, `SELECT rating_velocity FROM app_registry WHERE track_id = ?`, n)[0]["rating_velocity"]; v != nil {
			t.Fatalf("batch of %d: an unknown velocity is NULL, got %v", n, v)
		}
	}
	// Linear: the work an app does not grow with the batch (10 % slack
	// for the statement's fixed steps spread over fewer apps).
	if perApp[most] > perApp[50]*1.1 {
		t.Errorf("VM steps an app: %.1f at 50 apps, %.1f at %d: grows with the batch", perApp[50], perApp[most], most)
	}
}
