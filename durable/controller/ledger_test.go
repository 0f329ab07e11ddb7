package controller

import (
	"encoding/json"
	"testing"
	"time"

	"storecrawl/durable/ledger"
)

// The controller's facts always sum to its counters: a baseline when the
// ledger starts, a fact per tick with the exact deltas, and a reset fact.
func TestFactsSumToTotals(t *testing.T) {
	// A controller from before the ledger: counters, but no LedgerSince.
	old := DefaultState()
	old.Totals = Totals{Dispatched: 40, Completed: 30, Failed: 5, Ticks: 9}
	st := old.Encode(t0)
	var facts []ledger.Fact
	apply := func(d Decision) {
		for _, f := range d.Facts {
			if err := f.Validate(); err != nil {
				t.Fatalf("invalid fact %+v: %v", f, err)
			}
			if f.Source != "controller:main" {
				t.Fatalf("source %q", f.Source)
			}
		}
		facts = append(facts, d.Facts...)
	}
	apply(decide(t, &st, "load", nil, t0))
	if len(facts) != 1 || facts[0].Kind != "controller.baseline" || facts[0].Counters["completed"] != 30 {
		t.Fatalf("baseline: %+v", facts)
	}
	apply(decide(t, &st, "load", nil, t0.Add(time.Second))) // a second load: no second baseline
	now := t0.Add(2 * time.Second)
	for i := 0; i < 5; i++ {
		apply(decide(t, &st, "tick", TickRequest{}, now))
		res, reqs := okResults(3)
		res[0].Class = ClassRateLimit
		apply(decide(t, &st, "tick_done", RunOutcome{Picked: 3, Results: res, Requests: reqs, DurationMs: 900}, now.Add(time.Second)))
		now = now.Add(10 * time.Second)
	}
	sum := func() map[string]int64 {
		var cs []map[string]int64
		for _, f := range facts {
			cs = append(cs, f.Counters)
		}
		return ledger.SumCounters(cs)
	}
	var s State
	json.Unmarshal([]byte(st), &s)
	want := s.Totals.Counters()
	got := sum()
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("counter %s: facts sum %d, totals %d (facts %d)", k, got[k], v, len(facts))
		}
	}
	if s.Totals.Ticks != 9+5 || len(facts) != 6 {
		t.Fatalf("ticks %d, facts %d", s.Totals.Ticks, len(facts))
	}
	tick := facts[len(facts)-1]
	if tick.Kind != "controller.tick" || tick.Counters["ticks"] != 1 || tick.Counters["rate_limited"] != 1 || tick.Data["batch"] == nil {
		t.Fatalf("tick fact %+v", tick)
	}
	apply(decide(t, &st, "http", httpReq("POST", "/reset", ""), now))
	for k, v := range sum() {
		if v != 0 {
			t.Fatalf("after reset the facts sum to %s=%d, want 0", k, v)
		}
	}
}
