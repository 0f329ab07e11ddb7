package scheduler

import (
	"testing"
	"time"
)

// A task's reported counters (the analyst's LLM spend) ride on its run's
// ledger fact as deltas of "<task>.<name>" and add to the lifetime
// counters the reconciler compares; bad ones are refused, not kept.
func TestTaskCountersRideOnTheRunFact(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var st string
	decide(t, &st, "load", nil, t0)
	res := ResultMsg{Task: "analyst-run", OK: true, Summary: "1 done",
		Counters: map[string]int64{"llm_cost_micro_usd": 642, "llm_calls": 4, "_hidden": 1, "bad.name": 2, "neg": -3, "zero": 0},
		Detail:   "budget/ad8fe3a5 642"}
	d := decide(t, &st, "finish", res, t0.Add(time.Second))
	var fact map[string]int64
	var detail any
	for _, f := range d.Facts {
		if f.Kind == "scheduler.task_run" {
			fact, detail = f.Counters, f.Data["detail"]
		}
	}
	if fact["analyst-run.llm_cost_micro_usd"] != 642 || fact["analyst-run.llm_calls"] != 4 || len(fact) != 3 || detail != "budget/ad8fe3a5 642" {
		t.Fatalf("run fact counters %v detail %v (events %v)", fact, detail, d.Events)
	}
	refused := 0
	for _, e := range d.Events {
		if e["event"] == "scheduler.task_counters_refused" {
			refused++
		}
	}
	if refused != 3 {
		t.Fatalf("%d refusals, want 3: %v", refused, d.Events)
	}
	d = decide(t, &st, "finish", ResultMsg{Task: "analyst-run", OK: true, Counters: map[string]int64{"llm_cost_micro_usd": 8}}, t0.Add(2*time.Second))
	s, _ := Load(Registry, st, t0)
	if c := s.Counters(); c["analyst-run.llm_cost_micro_usd"] != 650 || c["analyst-run.llm_calls"] != 4 {
		t.Fatalf("lifetime counters %v", c)
	}
	if _, ok := s.TaskCounters["nope.x"]; ok || len(s.AddTaskCounters("nope", map[string]int64{"x": 1})) != 1 {
		t.Fatal("an unknown task's counters must be refused")
	}
}
