package scheduler

import (
	"encoding/json"
	"testing"
	"time"
)

// POST /run with "wait": true starts the task under its lease at once, the
// run's "finish" answers with its result and cost, and the run is recorded
// like any alarm-driven one.
func TestRunWaitAnswersWithTheResult(t *testing.T) {
	st := ""
	firstRuns(t, &st, t0)
	now := t0.Add(time.Minute) // charts-refresh is not due before t0+5m
	d := decide(t, &st, "http", Request{Method: "POST", Path: "/run", Body: `{"task":"charts-refresh","wait":true}`}, now)
	if len(d.Run) != 1 || d.Run[0] != "charts-refresh" || d.WaitMs != RunWaitTimeout.Milliseconds() {
		t.Fatalf("wait must run the task now, bounded by RunWaitTimeout: run %v wait_ms %d", d.Run, d.WaitMs)
	}
	s, _ := Load(Registry, st, now)
	if s.Tasks["charts-refresh"].LeaseUntil <= now.UnixMilli() {
		t.Fatal("the waited run must hold the task's lease")
	}
	// The alarm does not start it a second time while it runs.
	if d := decide(t, &st, "tick", nil, NextSlot(Registry[0], now)); contains(d.Run, "charts-refresh") {
		t.Fatalf("a tick started the task the waited run holds: %v", d.Run)
	}
	d = decide(t, &st, "finish", ResultMsg{Task: "charts-refresh", OK: true, Summary: "12 charts", DurationMs: 840,
		D1RowsRead: 31, D1RowsWritten: 4, D1Queries: 5, Subrequests: 12}, now.Add(time.Second))
	if d.Response == nil || d.Response.Status != 200 {
		t.Fatalf("finish must answer the waiting caller: %+v", d.Response)
	}
	a := d.Response.Body.(RunAnswer)
	if want := (RunAnswer{Task: "charts-refresh", OK: true, Summary: "12 charts", DurationMs: 840, D1RowsRead: 31, D1RowsWritten: 4, D1Queries: 5, Subrequests: 12}); a != want {
		t.Fatalf("answer %+v, want %+v", a, want)
	}
	b, _ := json.Marshal(a)
	var keys map[string]any
	json.Unmarshal(b, &keys)
	for _, k := range []string{"ok", "summary", "d1_rows_read", "d1_rows_written", "duration_ms", "task"} {
		if _, ok := keys[k]; !ok {
			t.Errorf("answer lacks %q: %s", k, b)
		}
	}
	s, _ = Load(Registry, st, now)
	if ts := s.Tasks["charts-refresh"]; ts.Runs != 2 || ts.LeaseUntil != 0 || ts.LastSummary != "12 charts" || ts.LastD1RowsRead != 31 {
		t.Fatalf("the waited run is not recorded: %+v", ts)
	}

	// A failed run answers ok:false with its error.
	decide(t, &st, "http", Request{Method: "POST", Path: "/run", Body: `{"task":"rating-sweep","wait":true}`}, now.Add(2*time.Second))
	d = decide(t, &st, "finish", ResultMsg{Task: "rating-sweep", Error: "D1 down", DurationMs: 7, D1Queries: 1}, now.Add(3*time.Second))
	if a := d.Response.Body.(RunAnswer); a.OK || a.Error != "D1 down" || a.Task != "rating-sweep" || a.DurationMs != 7 {
		t.Fatalf("failed run answer: %+v", a)
	}
}

// A waited run past RunWaitTimeout answers 202 with the task's state: still
// running, under its lease; the run then finishes as usual.
func TestRunWaitTimeoutAnswersTheState(t *testing.T) {
	st := ""
	firstRuns(t, &st, t0)
	decide(t, &st, "http", Request{Method: "POST", Path: "/run", Body: `{"task":"rating-sweep","wait":true}`}, t0.Add(time.Second))
	d := decide(t, &st, "run_timeout", map[string]string{"task": "rating-sweep"}, t0.Add(time.Second+RunWaitTimeout))
	if d.Response == nil || d.Response.Status != 202 {
		t.Fatalf("timeout: %+v", d.Response)
	}
	v := d.Response.Body.(RunState)
	if v.Task != "rating-sweep" || !v.Running || v.State.TaskState == nil || v.State.LeaseUntil == 0 || v.State.Runs != 1 {
		t.Fatalf("timeout state: %+v", v)
	}
	d = decide(t, &st, "finish", ResultMsg{Task: "rating-sweep", OK: true, Summary: "late"}, t0.Add(time.Minute))
	s, _ := Load(Registry, st, t0.Add(time.Minute))
	if ts := s.Tasks["rating-sweep"]; ts.Runs != 2 || ts.LeaseUntil != 0 || ts.LastSummary != "late" {
		t.Fatalf("the run past the wait is not recorded: %+v", ts)
	}
}

// A task already running (alarm-driven or waited) is not started twice:
// 409 with its state, nothing changed. A paused task is not started either.
func TestRunWaitRefusesARunningOrPausedTask(t *testing.T) {
	st := ""
	firstRuns(t, &st, t0)
	due := NextSlot(Registry[0], t0)
	if d := decide(t, &st, "tick", nil, due); !contains(d.Run, "charts-refresh") {
		t.Fatalf("tick: %v", d.Run)
	}
	for _, path := range []string{"/run", "/run-now"} {
		before := st
		d := decide(t, &st, "http", Request{Method: "POST", Path: path, Body: `{"task":"charts-refresh","wait":true}`}, due.Add(time.Second))
		if d.Response.Status != 409 || len(d.Run) != 0 || d.WaitMs != 0 {
			t.Fatalf("a leased task was started again: %+v run %v", d.Response, d.Run)
		}
		if v := d.Response.Body.(RunState); !v.Running || v.Reason != SkipRunning || v.State.TaskState == nil {
			t.Fatalf("409 body: %+v", v)
		}
		if st != before {
			t.Fatal("a refused run changed state")
		}
	}
	// A second waiting caller while a waited run holds the lease.
	decide(t, &st, "http", Request{Method: "POST", Path: "/run", Body: `{"task":"facts-prune","wait":true}`}, due.Add(2*time.Second))
	if d := decide(t, &st, "http", Request{Method: "POST", Path: "/run", Body: `{"task":"facts-prune","wait":true}`}, due.Add(3*time.Second)); d.Response.Status != 409 || len(d.Run) != 0 {
		t.Fatalf("two waited runs of one task: %+v", d.Response)
	}
	decide(t, &st, "http", Request{Method: "POST", Path: "/pause", Body: `{"task":"history-prune"}`}, due.Add(4*time.Second))
	d := decide(t, &st, "http", Request{Method: "POST", Path: "/run", Body: `{"task":"history-prune","wait":true}`}, due.Add(5*time.Second))
	if d.Response.Status != 409 || len(d.Run) != 0 || d.Response.Body.(RunState).Reason != SkipPaused {
		t.Fatalf("a paused task was started: %+v", d.Response)
	}
}

// Bad wait bodies are refused naming the field; wait:false is today's run.
func TestRunWaitValidation(t *testing.T) {
	st := ""
	firstRuns(t, &st, t0)
	for _, c := range []struct{ path, body, field string }{
		{"/run", `{"task":"charts-refresh","wait":"yes"}`, "wait"},
		{"/run", `{"task":"charts-refresh","wait":1}`, "wait"},
		{"/run", `{"task":"all","wait":true}`, "wait"},
		{"/pause", `{"task":"charts-refresh","wait":true}`, "wait"},
		{"/run", `{"task":"nope","wait":true}`, "task"},
		{"/run", `{"wait":true}`, "task"},
	} {
		before := st
		d := decide(t, &st, "http", Request{Method: "POST", Path: c.path, Body: c.body}, t0)
		if d.Response.Status != 400 || d.Response.Body.(*FieldError).Field != c.field || len(d.Run) != 0 {
			t.Errorf("%s %s: %+v", c.path, c.body, d.Response)
		}
		if st != before {
			t.Errorf("%s %s: a rejected call changed state", c.path, c.body)
		}
	}
	d := decide(t, &st, "http", Request{Method: "POST", Path: "/run", Body: `{"task":"charts-refresh","wait":false}`}, t0)
	if d.Response.Status != 200 || len(d.Run) != 0 || d.WaitMs != 0 || d.AlarmAt != t0.Add(MinRearm).UnixMilli() {
		t.Fatalf("wait:false must only make the task due: %+v", d)
	}
	if _, ok := d.Response.Body.(StatusView); !ok {
		t.Fatalf("wait:false answers the status: %T", d.Response.Body)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
