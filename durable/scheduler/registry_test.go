package scheduler

import (
	"testing"
	"time"
)

// Registry is the tests' task list: the product's cadences (the features
// declare theirs in worker.PeriodicTasks), charts-refresh first.
var Registry = []Task{
	{Name: "charts-refresh", Every: 5 * time.Minute, Jitter: 30 * time.Second},
	{Name: "rating-sweep", Every: 15 * time.Minute, Jitter: time.Minute},
	{Name: "ledger-reconcile", Every: 15 * time.Minute, Jitter: 2 * time.Minute},
	{Name: "page-reparse", Every: 10 * time.Minute, Jitter: 30 * time.Second},
	{Name: "retry-failed", Every: time.Hour, Jitter: 2 * time.Minute},
	{Name: "facts-prune", Every: time.Hour, Jitter: 5 * time.Minute},
	{Name: "reviews-refresh", Every: 10 * time.Minute, Jitter: time.Minute},
	{Name: "catalogue-sweep", Every: 15 * time.Minute, Jitter: time.Minute},
	{Name: "catalogue-stale", Every: time.Hour, Jitter: 5 * time.Minute},
	{Name: "history-prune", Every: time.Hour, Jitter: 5 * time.Minute},
	{Name: "analyst-run", Every: 10 * time.Minute, Jitter: time.Minute},
}

// A scheduler handed no registry (a wiring bug) says so and retires no
// task's record: the next decision with the registry finds them all.
func TestNoRegistryRetiresNothing(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	st := Handle(Config{Tasks: Registry}, "tick", "", nil, now).State
	d := Handle(Config{}, "tick", st, nil, now.Add(time.Minute))
	found := false
	for _, e := range d.Events {
		found = found || (e["event"] == "scheduler.no_tasks" && e["level"] == "error")
	}
	if !found {
		t.Fatalf("no error event: %v", d.Events)
	}
	if d.State != "" {
		st = d.State
	}
	s, _ := Load(Registry, st, now.Add(2*time.Minute))
	if len(s.Tasks) != len(Registry) || len(s.Retired) != 0 {
		t.Fatalf("%d tasks, %d retired", len(s.Tasks), len(s.Retired))
	}
}
