//go:build !js

package tasks

import (
	"context"
	"strings"
	"testing"
	"time"

	"storecrawl/worker/catalogue"
	"storecrawl/worker/d1"
	"storecrawl/worker/d1/d1test"
)

// seedEnriched adds n enriched apps (track ids 1..n) with ratings.
func seedEnriched(t *testing.T, drv *d1test.Driver, n int) {
	for i := 1; i <= n; i++ {
		drv.Exec(t, `INSERT INTO app_registry (track_id, name, rating_count, average_rating, subtitle, description, enrichment_source, enriched_at, discovered_at)
VALUES (?, 'app', ?, 4.5, 'sub', 'desc', 'itunes+store', '2026-11-01T00:00:00.000Z', '2026-10-01T00:00:00.000Z')`, i, i*100)
	}
}

// seedMany adds n enriched apps (track ids 1..n) in one statement; as on
// D1, an insert writes no history (its first values are in its row).
func seedMany(t *testing.T, drv *d1test.Driver, n int) {
	drv.Exec(t, `INSERT INTO app_registry (track_id, name, rating_count, average_rating, subtitle, description, enrichment_source, enriched_at)
WITH RECURSIVE i(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM i WHERE n < ?)
SELECT n, 'app', n * 100, 4.5, 'sub', 'desc', 'itunes+store', '2026-11-01T00:00:00.000Z' FROM i`, n)
}

// The rating sweep over D1: a run walks RatingSweepBatchApps ×
// RatingSweepMaxBatches apps and writes a snapshot only for an app whose
// stored ratings no snapshot holds, plus the cursor's one row a run; a pass
// over unchanged apps writes the cursor alone (none when it ends where it
// began).
func TestRatingSweepAgainstD1(t *testing.T) {
	db, drv := d1test.New(t)
	perRun := RatingSweepBatchApps * RatingSweepMaxBatches
	seedMany(t, drv, perRun+5)
	// App 2's latest snapshot is out of step with its row (a write that
	// went around the history triggers): its stored ratings are copied.
	// App 3's ratings changed, which its trigger recorded (the first
	// values when it knows since when, then the change): nothing to copy. Every other app has no
	// snapshot, its first values held in its row: nothing to copy.
	drv.Exec(t, `INSERT INTO app_snapshots (track_id, taken_at, rating_count, average_rating, source) VALUES (2, ?, 150, 4.5, 1)`,
		time.Date(2026, 11, 10, 0, 0, 0, 0, time.UTC).UnixMilli())
	drv.Exec(t, `UPDATE app_registry SET rating_count = 301, updated_at = '2026-11-20T00:00:00.000Z' WHERE track_id = 3`)
	if n := drv.Int(t, `SELECT rating_count FROM app_snapshots WHERE track_id = 3 ORDER BY taken_at DESC LIMIT 1`); n != 301 {
		t.Fatalf("the trigger records the change: app 3's latest snapshot holds %d", n)
	}
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	values := mapKV{}
	deps := Platform{D1Store: D1Store{DB: db}, Values: values, Reserve: func(ctx context.Context, _ int) context.Context { return ctx }}
	run := func(at time.Time) (string, int64, int64) {
		t.Helper()
		before := drv.TotalChanges(t)
		ctx, cost := d1.WithCost(context.Background())
		res := runTaskCtx(t, ctx, "rating-sweep", deps, nil, func() time.Time { return at })
		if !res.OK {
			t.Fatalf("sweep: %+v", res)
		}
		return res.Summary, drv.TotalChanges(t) - before, cost.Queries.Load()
	}
	sum, written, queries := run(now)
	t.Logf("run 1: %s: %d rows written, %d queries", sum, written, queries)
	// App 2's copy and the cursor: 2 rows; the cursor read, a read a batch, one copy, the cursor write.
	if written != 2 || queries != int64(1+RatingSweepMaxBatches+1+1) || !strings.Contains(sum, "1 snapshots") {
		t.Fatalf("run 1 wrote %d rows in %d queries: %s", written, queries, sum)
	}
	if got := drv.Rows(t, `SELECT rating_count, taken_at, source FROM app_snapshots WHERE track_id = 2 ORDER BY taken_at DESC LIMIT 1`); len(got) != 1 || got[0]["rating_count"] != float64(200) ||
		got[0]["taken_at"] != float64(now.UnixMilli()) || got[0]["source"] != nil {
		t.Fatalf("app 2's copy: %v", got)
	}
	if len(values) != 0 {
		t.Fatalf("the sweep writes nothing to KV: %v", values)
	}
	if n := drv.Int(t, `SELECT cursor FROM sweep_cursors WHERE name = ?`, RatingSweepCursor); n != int64(perRun) {
		t.Fatalf("cursor after a full run: %d", n)
	}
	// The short last batch wraps: the cursor's row only.
	if sum, written, _ = run(now.Add(15 * time.Minute)); written != 1 || !strings.HasPrefix(sum, "5 apps") {
		t.Fatalf("run 2 wrote %d rows: %s", written, sum)
	}
	if n := drv.Int(t, `SELECT cursor FROM sweep_cursors WHERE name = ?`, RatingSweepCursor); n != 0 {
		t.Fatalf("cursor must wrap: %d", n)
	}
	// A pass over the unchanged apps: the cursor's row, nothing else.
	if sum, written, _ = run(now.Add(30 * time.Minute)); written != 1 || !strings.Contains(sum, " 0 snapshots") {
		t.Fatalf("a run over unchanged apps wrote %d rows: %s", written, sum)
	}
	// D1 down: the task fails and the cursor does not move.
	drv.FailNext.Store(1)
	if res := runTask(t, "rating-sweep", deps, "", func() time.Time { return now }); res.OK {
		t.Fatal("a failed read must fail the task")
	}
}

type mapKV map[string]string

func (m mapKV) Put(_ context.Context, k, v string) error { m[k] = v; return nil }

// TestCatalogueTasksAgainstD1: the three catalogue tasks run on D1 through
// Tasks, each reporting what it did; unbound, each fails on its own.
func TestCatalogueTasksAgainstD1(t *testing.T) {
	db, drv := d1test.New(t)
	seedEnriched(t, drv, 3)
	drv.Exec(t, `UPDATE app_registry SET last_seen_at = '2026-01-01T00:00:00.000Z', discovered_at = '2026-01-01T00:00:00.000Z', updated_at = NULL`)
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	deps := Platform{D1Store: D1Store{DB: db}}
	maintainer := Catalogue{Store: catalogue.D1Store{DB: db}, StaleAfter: 90 * 24 * time.Hour, Now: func() time.Time { return now }}
	for task, want := range map[string]string{
		"catalogue-sweep": "scheduled 3 new",
		// Enriched 2026-11-01, so seen then: not stale after 90 days.
		"catalogue-stale": "marked stale 0 rows over 3 apps",
		"history-prune":   "pruned 0 rows over 3 apps",
	} {
		res := runTaskCtx(t, context.Background(), task, deps, maintainer, func() time.Time { return now })
		if !res.OK || !strings.HasPrefix(res.Summary, want) {
			t.Errorf("%s: %+v", task, res)
		}
	}
	if n := drv.Int(t, `SELECT COUNT(*) FROM app_registry WHERE refresh_tier IS NOT NULL`); n != 3 {
		t.Fatalf("scheduled apps: %d", n)
	}
	for _, task := range []string{"catalogue-sweep", "catalogue-stale", "history-prune"} {
		if res := runTaskCtx(t, context.Background(), task, Platform{}, nil, time.Now); res.OK || res.Error != errNoCatalogue {
			t.Errorf("unbound %s: %+v", task, res)
		}
	}
}
