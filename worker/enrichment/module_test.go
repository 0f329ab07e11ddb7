//go:build !js

package enrichment

import (
	"context"
	"strings"
	"testing"
	"time"

	"storecrawl/durable/controller"
	"storecrawl/worker/d1/d1test"
	"storecrawl/worker/module"
)

// task is one of enrichment's Tasks by name.
func task(t *testing.T, tasks []module.Task, name string) module.Task {
	t.Helper()
	for _, tk := range tasks {
		if tk.Name == name {
			return tk
		}
	}
	t.Fatalf("no task %q", name)
	return module.Task{}
}

type recordingRetrier struct {
	olderThan []time.Time
	n         int
}

func (r *recordingRetrier) RetryFailed(_ context.Context, class string, olderThan, now time.Time) (int, error) {
	r.olderThan = append(r.olderThan, olderThan)
	return r.n, nil
}

func TestRetryFailedTaskRequeuesOldGiveUps(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	at := func() time.Time { return now }
	f := &recordingRetrier{n: RetryFailedBatch}
	res := task(t, Tasks(nil, f, 24*time.Hour), "retry-failed").RunIsolated(context.Background(), at)
	if !res.OK || !strings.Contains(res.Summary, "requeued 500") || !strings.Contains(res.Summary, "more remain") {
		t.Fatalf("%+v", res)
	}
	if len(f.olderThan) != 1 || !f.olderThan[0].Equal(now.Add(-24*time.Hour)) {
		t.Fatalf("must requeue only items that gave up a day ago or earlier: %v", f.olderThan)
	}
	if res := task(t, Tasks(nil, f, 0), "retry-failed").RunIsolated(context.Background(), at); !res.OK || len(f.olderThan) != 1 {
		t.Fatalf("0 turns the task off: %+v %v", res, f.olderThan)
	}
}

// TestHourlyRetryFailedRequeuesAsFailedBefore: the hourly retry-failed
// task puts back apps given up on pages that never parse the same way the
// operator's POST /v1/enrichment/retry-failed does, so the controller's
// pick marks them as failed before (PriorParseError): they weigh little in
// the drift breaker and cannot stall the crawl (the run's side is
// TestRetriedBrokenAppsDoNotTripTheRun; live, worker/e2e
// TestRetryFailedDoesNotStallTheCrawl). Apps given up less than the
// retry age ago stay out.
func TestHourlyRetryFailedRequeuesAsFailedBefore(t *testing.T) {
	db, drv := d1test.New(t)
	store := D1Store{DB: db}
	ctx := context.Background()
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	give := func(id int64, at time.Time) {
		drv.Exec(t, `INSERT INTO app_registry (track_id) VALUES (?)`, id)
		if err := store.GiveUp(ctx, id, controller.MaxItemAttempts, controller.ClassParseError, "no parser read the page", "", at); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []int64{97, 194, 291} {
		give(id, now.Add(-25*time.Hour))
	}
	give(388, now.Add(-time.Hour))
	res := task(t, Tasks(nil, store, 24*time.Hour), "retry-failed").RunIsolated(ctx, func() time.Time { return now })
	if !res.OK || res.Summary != "requeued 3 given-up items" {
		t.Fatalf("hourly task: %+v", res)
	}
	items, err := store.PickQueued(ctx, 10, false, now)
	if err != nil || len(items) != 3 {
		t.Fatalf("queued again: %+v %v", items, err)
	}
	for _, it := range items {
		if !it.PriorParseError || it.Attempts != 0 || it.TrackID == 388 {
			t.Fatalf("requeued app %d: prior parse error %v, attempts %d (want marked, fresh attempts, and 388 still given up)", it.TrackID, it.PriorParseError, it.Attempts)
		}
	}
}
