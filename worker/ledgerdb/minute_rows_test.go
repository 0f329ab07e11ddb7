//go:build !js

package ledgerdb

import (
	"testing"
	"time"

	"storecrawl/durable/ledger"
	"storecrawl/worker/d1/d1test"
)

// The controller's facts of a minute of ticks, stored as the consumer
// stores them: one fact (its row, its minute, its counters' totals), where
// a fact a tick wrote each of those for every tick. Counted natively
// (total_changes(): rows and trigger rows; the facts' two index entries
// a fact come on top in D1's bill).
func TestAMinuteOfTicksWritesOneFactsRows(t *testing.T) {
	// A minute's controller.tick fact, as the controller closes it
	// (durable/controller's ledger tests): its ticks' counters summed.
	const ticksAMinute = 6
	minute := ledger.New("enrichment-controller", "controller.tick", t0.Add(50*time.Second),
		map[string]int64{"ticks": ticksAMinute, "dispatched": 12, "completed": 12, "lookup_requests": 6, "page_requests": 12},
		map[string]any{"batch_size": 2})
	// The same minute as a fact a tick: each tick's share of its counters.
	var perTick []ledger.Fact
	for i := range ticksAMinute {
		c := map[string]int64{}
		for k, v := range minute.Counters {
			c[k] = v / ticksAMinute
		}
		perTick = append(perTick, ledger.New(minute.Source, minute.Kind, t0.Add(time.Duration(i)*10*time.Second), c, minute.Data))
	}
	rows := func(fs []ledger.Fact) int64 {
		db, drv := d1test.New(t)
		before := drv.TotalChanges(t)
		store(t, db, fs...)
		return drv.TotalChanges(t) - before
	}
	one, six := rows([]ledger.Fact{minute}), rows(perTick)
	t.Logf("a minute of %d ticks: %d rows as one fact, %d as a fact a tick", ticksAMinute, one, six)
	if one*ticksAMinute != six || one < 3 {
		t.Fatalf("rows: %d for the minute's fact, %d for a fact a tick", one, six)
	}
}
