//go:build !js

package registry

import (
	"context"
	"testing"

	"storecrawl/worker/d1"
	"storecrawl/worker/d1/d1test"
)

// TestWritesAgainWriteNothing: each statement made change-only writes its
// row the first time and nothing when the same values come again
// (d1test.TotalChanges: rows, triggers' included).
func TestWritesAgainWriteNothing(t *testing.T) {
	db, drv := d1test.New(t)
	ctx := context.Background()
	const now, later = "2026-11-25T12:00:00.000Z", "2026-11-26T12:00:00.000Z"
	drv.Exec(t, `INSERT INTO app_registry (track_id, name, rating_count) VALUES (1, 'queued', 10)`)
	drv.Exec(t, `INSERT INTO app_registry (track_id, name, rating_count, enrichment_source, enriched_at, refresh_tier)
VALUES (2, 'enriched', 10, ?, ?, 'cold')`, SourceEnriched, now)
	for _, c := range []struct {
		name  string
		stmt  d1.Stmt
		first int64 // rows the first run writes
	}{
		{"requeue", Requeue(1, 1, "timeout", "lookup: timeout", ""), 1},
		{"requeue keeping its page", Requeue(1, 2, "store_error", "d1 save: busy", "store-pages/batches/k.gz#0+10"), 1},
		{"requeue, its page kept", Requeue(1, 2, "store_error", "d1 save: busy", ""), 0},
		{"defer", Defer(1, 1, "upstream", "lookup: 503", later), 1},
		{"postpone refresh", PostponeRefresh(2, later), 1},
		{"retry refreshes", RetryRefreshes(`[{"id":2,"at":"` + now + `"}]`), 1},
		{"page unparsed", PageUnparsed(2, 2, now), 1},
		{"tiers", Tiers(`[{"id":2,"tier":"hot","v7":1.5,"v30":null}]`), 1},
		{"ranking fill mark", MarkFilled(`[2]`, now), 1},
		{"app scores", AppScores(`[[2,12.5,61.2]]`, now), 1},
	} {
		for run, want := range []int64{c.first, 0} {
			before := drv.TotalChanges(t)
			if _, err := db.Exec(ctx, c.stmt); err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			if got := drv.TotalChanges(t) - before; got != want {
				t.Errorf("%s, run %d: %d rows written, want %d", c.name, run+1, got, want)
			}
		}
	}
	// A filled app's mark stands: a later fill of it writes nothing.
	before := drv.TotalChanges(t)
	if _, err := db.Exec(ctx, MarkFilled(`[2]`, later)); err != nil {
		t.Fatal(err)
	}
	if got := drv.TotalChanges(t) - before; got != 0 {
		t.Errorf("a filled app marked again: %d rows written", got)
	}
}
