//go:build !js

package tasks

import (
	"context"
	"testing"
	"time"

	controller "storecrawl/durable/enrichment"
	"storecrawl/worker/d1/d1test"
	"storecrawl/worker/enrichment"
)

// TestHourlyRetryFailedRequeuesAsFailedBefore: the hourly retry-failed
// task puts back apps given up on pages that never parse the same way the
// operator's POST /v1/enrichment/retry-failed does, so the controller's
// pick marks them as failed before (PriorParseError): they weigh little in
// the drift breaker and cannot stall the crawl (the run's side is
// worker/enrichment TestRetriedBrokenAppsDoNotTripTheRun; live,
// worker/e2e TestRetryFailedDoesNotStallTheCrawl). Apps given up less
// than RetryFailedAfter ago stay out.
func TestHourlyRetryFailedRequeuesAsFailedBefore(t *testing.T) {
	db, drv := d1test.New(t)
	store := enrichment.D1Store{DB: db}
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
	p := Bindings{Failed: store, RetryFailedAfter: 24 * time.Hour, RetryFailedBatch: enrichment.RetryFailedBatch}
	n, more, err := p.RetryFailedBefore(ctx, now)
	if err != nil || n != 3 || more {
		t.Fatalf("hourly task: %d requeued, more %v, %v", n, more, err)
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
