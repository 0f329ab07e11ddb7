//go:build !js

package ledgerdb

import (
	"encoding/json"
	"testing"
	"time"

	"storecrawl/durable/controller"
	"storecrawl/durable/ledger"
	"storecrawl/worker/d1/d1test"
)

// The controller's facts of a minute of ticks, stored as the consumer
// stores them: one fact (its row, its minute, its counters' totals), where
// a fact a tick wrote each of those for every tick. Counted natively
// (total_changes(): rows and trigger rows; the facts' two index entries
// a fact come on top in D1's bill).
func TestAMinuteOfTicksWritesOneFactsRows(t *testing.T) {
	cfg := controller.DefaultConfig()
	state, now := "", t0.Add(time.Second)
	var facts []ledger.Fact
	decide := func(op string, arg any) {
		b, _ := json.Marshal(arg)
		d := controller.Handle(cfg, op, state, b, now)
		if d.State != "" {
			state = d.State
		}
		facts = append(facts, d.Facts...)
	}
	decide("load", nil)
	facts = nil // the baseline
	const ticksAMinute = 6
	for range ticksAMinute + 1 { // a minute's ticks, and the next minute's first, which closes it
		decide("tick", controller.TickRequest{})
		res := []controller.ItemResult{{TrackID: 1, Class: controller.ClassOK}, {TrackID: 2, Class: controller.ClassOK}}
		var reqs []controller.RequestOutcome
		for i := range res {
			reqs = append(reqs, controller.RequestOutcome{Item: i, Class: controller.ClassOK, Remaining: -1})
		}
		decide("tick_done", controller.RunOutcome{Picked: 2, Results: res, Requests: reqs, DurationMs: 500})
		now = now.Add(10 * time.Second)
	}
	if len(facts) != 1 || facts[0].Counters["ticks"] != ticksAMinute {
		t.Fatalf("a minute of ticks: %d facts %+v, want one of %d ticks", len(facts), facts, ticksAMinute)
	}
	minute := facts[0]
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
