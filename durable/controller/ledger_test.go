package controller

import (
	"encoding/json"
	"testing"
	"time"

	"storecrawl/durable/ledger"
)

// The controller's facts always sum to its counters: a baseline when the
// ledger starts, a fact per minute of ticks with their exact deltas (the
// open minute's left out of the ledger's report), and a reset fact after
// the open minute's.
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
	// The facts sum to the counters the ledger reports: the totals less
	// the open minute's ticks.
	want := s.ledgerCounters()
	got := sum()
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("counter %s: facts sum %d, ledger counters %d (facts %d)", k, got[k], v, len(facts))
		}
	}
	open := s.OpenMinute
	if s.Totals.Ticks != 9+5 || open == nil || len(facts) >= 6 || want["ticks"]+open.Counters["ticks"] != 9+5 {
		t.Fatalf("ticks %d, facts %d, open minute %+v", s.Totals.Ticks, len(facts), open)
	}
	if open.Kind != "controller.tick" || open.Counters["rate_limited"] != open.Counters["ticks"] || open.Data["batch"] == nil {
		t.Fatalf("open minute's fact %+v", open)
	}
	apply(decide(t, &st, "http", httpReq("POST", "/reset", ""), now))
	for k, v := range sum() {
		if v != 0 {
			t.Fatalf("after reset the facts sum to %s=%d, want 0", k, v)
		}
	}
}

// A minute of ticks is one fact: 60 ticks 10 s apart append about ten,
// each summing its minute's ticks; a stop closes the open minute, so the
// facts then sum to the totals themselves.
func TestTicksOfAMinuteAreOneFact(t *testing.T) {
	st := ""
	var facts []ledger.Fact
	apply := func(d Decision) { facts = append(facts, d.Facts...) }
	apply(decide(t, &st, "load", nil, t0))
	now := t0.Add(time.Second)
	for range 60 {
		apply(decide(t, &st, "tick", TickRequest{}, now))
		res, reqs := okResults(2)
		apply(decide(t, &st, "tick_done", RunOutcome{Picked: 2, Results: res, Requests: reqs, DurationMs: 500}, now.Add(time.Second)))
		now = now.Add(10 * time.Second)
	}
	ticks := 0
	for _, f := range facts {
		if f.Kind == "controller.tick" {
			ticks++
			if f.Counters["ticks"] < 1 || f.Counters["ticks"] > 6 || f.Counters["completed"] != 2*f.Counters["ticks"] {
				t.Fatalf("a minute's fact %+v", f)
			}
		}
	}
	if ticks < 9 || ticks > 11 {
		t.Fatalf("60 ticks over ten minutes: %d tick facts, want about ten", ticks)
	}
	apply(decide(t, &st, "http", httpReq("POST", "/stop", ""), now))
	var s State
	json.Unmarshal([]byte(st), &s)
	var cs []map[string]int64
	for _, f := range facts {
		cs = append(cs, f.Counters)
	}
	sum := ledger.SumCounters(cs)
	for k, v := range s.Totals.Counters() {
		if sum[k] != v {
			t.Fatalf("stopped: counter %s facts sum %d, totals %d", k, sum[k], v)
		}
	}
	if s.OpenMinute != nil {
		t.Fatalf("stopped with an open minute: %+v", s.OpenMinute)
	}
}

// The minute closes with its last tick: a tick whose next alarm falls in
// a later minute (here the queue is empty, so the controller waits) sends
// its minute's fact at once, not at the next tick.
func TestAMinuteClosesWhenTheNextTickIsLater(t *testing.T) {
	st := ""
	apply := func(d Decision) []ledger.Fact { return d.Facts }
	apply(decide(t, &st, "load", nil, t0))
	now := t0.Add(time.Second)
	apply(decide(t, &st, "tick", TickRequest{}, now))
	d := decide(t, &st, "tick_done", RunOutcome{Picked: 0, DurationMs: 50}, now.Add(time.Second))
	if d.AlarmAt == 0 || factMinute(d.AlarmAt) == factMinute(now.Add(time.Second).UnixMilli()) {
		t.Fatalf("the idle controller's next tick is within the minute (alarm %d), want it later", d.AlarmAt)
	}
	ticks := 0
	for _, f := range d.Facts {
		if f.Kind == "controller.tick" {
			ticks++
		}
	}
	var s State
	json.Unmarshal([]byte(st), &s)
	if ticks != 1 || s.OpenMinute != nil {
		t.Fatalf("an idle tick with its next in a later minute: %d tick facts, open minute %+v", ticks, s.OpenMinute)
	}
}
