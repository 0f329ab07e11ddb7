//go:build !js

package ledgerdb

import (
	"testing"

	"storecrawl/durable/ledger"
	"storecrawl/worker/d1"
	"storecrawl/worker/d1/d1test"
)

// A writer's check finds the facts D1 has; one the queue lost (R2 and D1
// down through all the dead-letter retries) is not found, so the writer
// sends it again. The check reads one row per fact D1 has.
func TestFactsPresentFindsWhatD1Has(t *testing.T) {
	db, _ := d1test.New(t)
	facts := ticks(150)
	store(t, db, facts[:120]...) // the last 30 never reached D1
	ids := make([]string, len(facts))
	for i, f := range facts {
		ids[i] = f.ID
	}
	cctx, cost := d1.WithCost(ctx)
	present, err := D1Store{DB: db}.FactsPresent(cctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	confirmed, resend := ledger.Confirm(ids, present)
	if len(confirmed) != 120 || len(resend) != 30 || resend[0] != facts[120].ID {
		t.Fatalf("confirmed %d, resend %d", len(confirmed), len(resend))
	}
	// Two queries (150 ids in batches of 100), 120 rows: one per fact found.
	if v := cost.View(); v.Queries != 2 || v.RowsRead != 120 || v.RowsWritten != 0 {
		t.Fatalf("D1 cost of the check: %+v", v)
	}
}
