//go:build !js

package worker

import (
	"context"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"storecrawl/worker/module"
)

// TestPeriodicTasksAreDeclaredOnce: every task has one unique name, a
// cadence, a jitter below it, a doc and a run; docs/scheduler.md's table
// lists exactly the declared tasks with their cadences.
func TestPeriodicTasksAreDeclaredOnce(t *testing.T) {
	t.Parallel()
	declared := map[string]module.Task{}
	for _, task := range DeclaredTasks() {
		if _, dup := declared[task.Name]; dup {
			t.Errorf("task %s declared twice", task.Name)
		}
		declared[task.Name] = task
		if task.Every <= 0 || task.Jitter < 0 || task.Jitter >= task.Every || task.Doc == "" || task.Run == nil {
			t.Errorf("task %s: every %v, jitter %v, doc %q, run set %v", task.Name, task.Every, task.Jitter, task.Doc, task.Run != nil)
		}
	}
	doc, err := os.ReadFile("../docs/scheduler.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `([a-z-]+)` \\| (\\d+) (min|h) \\|")
	documented := map[string]bool{}
	for _, m := range row.FindAllStringSubmatch(string(doc), -1) {
		documented[m[1]] = true
		task, ok := declared[m[1]]
		if !ok {
			t.Errorf("docs/scheduler.md lists %s, which no feature declares", m[1])
			continue
		}
		every := map[string]time.Duration{"min": time.Minute, "h": time.Hour}[m[3]]
		if n, _ := strconv.Atoi(m[2]); time.Duration(n)*every != task.Every {
			t.Errorf("docs/scheduler.md: %s every %s %s, declared every %v", m[1], m[2], m[3], task.Every)
		}
	}
	for name := range declared {
		if !documented[name] {
			t.Errorf("%s is not in docs/scheduler.md's task table", name)
		}
	}
}

// TestRunPeriodicIsolatesAndMeasures: a run's failure, panic or unknown
// name is its result; its duration is measured on the clock it is given.
func TestRunPeriodicIsolatesAndMeasures(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { at = at.Add(time.Second); return at }
	ts := []module.Task{
		{Name: "ok", Run: func(context.Context, func() time.Time) module.Result { return module.Result{OK: true, Summary: "done"} }},
		{Name: "boom", Run: func(context.Context, func() time.Time) module.Result { panic("bug") }},
		{Name: "refused", Run: func(context.Context, func() time.Time) module.Result {
			return module.Result{RateLimited: true, RetryAfterS: 60, Error: "429"}
		}},
	}
	if r := RunPeriodic(context.Background(), ts, "ok", clock); !r.OK || r.Summary != "done" || r.Task != "ok" || r.DurationMs != 1000 {
		t.Fatalf("%+v", r)
	}
	if r := RunPeriodic(context.Background(), ts, "boom", clock); r.OK || !strings.Contains(r.Error, "panic: bug") {
		t.Fatalf("%+v", r)
	}
	if r := RunPeriodic(context.Background(), ts, "refused", clock); r.OK || !r.RateLimited || r.RetryAfterS != 60 {
		t.Fatalf("%+v", r)
	}
	if r := RunPeriodic(context.Background(), ts, "nope", clock); r.OK || r.Error != "no such task" {
		t.Fatalf("%+v", r)
	}
}

// TestSchedulerRegistryIsTheDeclaredTasks: the SchedulerDO schedules what
// the features declare, in their order and cadences.
func TestSchedulerRegistryIsTheDeclaredTasks(t *testing.T) {
	t.Parallel()
	ts := DeclaredTasks()
	reg := SchedulerRegistry(ts)
	if len(reg) != len(ts) || len(reg) < 11 {
		t.Fatalf("%d tasks in the registry, %d declared", len(reg), len(ts))
	}
	for i := range ts {
		if reg[i].Name != ts[i].Name || reg[i].Every != ts[i].Every || reg[i].Jitter != ts[i].Jitter {
			t.Errorf("%d: %+v, declared %s every %v jitter %v", i, reg[i], ts[i].Name, ts[i].Every, ts[i].Jitter)
		}
	}
}
