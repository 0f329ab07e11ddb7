package scheduler

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"storecrawl/durable/ledger"
)

var t0 = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

var registry = []Task{
	{Name: "charts", Every: 5 * time.Minute, Jitter: 20 * time.Second},
	{Name: "sweep", Every: 15 * time.Minute},
}

func TestNextSlotIsEpochAnchoredAndJitterOnlyDelays(t *testing.T) {
	sweep := registry[1]
	for _, after := range []time.Time{t0, t0.Add(time.Second), t0.Add(14*time.Minute + 59*time.Second)} {
		if got := NextSlot(sweep, after); !got.Equal(t0.Add(15 * time.Minute)) {
			t.Fatalf("after %s: %s", after, got)
		}
	}
	// A run that took 3 minutes does not push the cadence.
	if got := NextSlot(sweep, t0.Add(15*time.Minute+3*time.Minute)); !got.Equal(t0.Add(30 * time.Minute)) {
		t.Fatalf("drifted: %s", got)
	}
	charts := registry[0]
	seen := map[time.Duration]bool{}
	for i := 0; i < 50; i++ {
		slot := t0.Add(time.Duration(i+1) * 5 * time.Minute)
		got := NextSlot(charts, slot.Add(-time.Millisecond))
		d := got.Sub(slot)
		if d < 0 || d >= charts.Jitter {
			t.Fatalf("jitter %s outside [0, %s)", d, charts.Jitter)
		}
		if again := NextSlot(charts, slot.Add(-time.Millisecond)); !again.Equal(got) {
			t.Fatal("jitter must be stable for a slot")
		}
		seen[d] = true
	}
	if len(seen) < 10 {
		t.Fatalf("jitter barely varies: %d distinct values", len(seen))
	}
}

// ran is a state whose tasks have had their first run at now: each is
// next due at its next slot.
func ran(reg []Task, now time.Time) *State {
	s := New(reg, now)
	for _, task := range reg {
		s.Tasks[task.Name].NextDue = NextSlot(task, now).UnixMilli()
	}
	return s
}

// A fresh scheduler (a new deploy) runs every task at its first wake, then
// each on its cadence.
func TestFreshSchedulerRunsEveryTaskAtOnce(t *testing.T) {
	s := New(registry, t0)
	start, _ := s.Due(registry, t0)
	if len(start) != len(registry) {
		t.Fatalf("a fresh deploy must run every task at once: %v", start)
	}
	for _, name := range start {
		s.Finish(name, Result{OK: true}, t0.Add(time.Second))
	}
	if again, _ := s.Due(registry, t0.Add(2*time.Second)); len(again) != 0 {
		t.Fatalf("then each waits for its slot: %v", again)
	}
	if next := time.UnixMilli(s.Tasks["sweep"].NextDue); !next.Equal(t0.Add(15 * time.Minute)) {
		t.Fatalf("next sweep %s", next)
	}
	// A task added to the registry by a later deploy runs at once too.
	s.Sync(append(registry, Task{Name: "new", Every: time.Hour}), t0.Add(time.Minute))
	if start, _ := s.Due(append(registry, Task{Name: "new", Every: time.Hour}), t0.Add(time.Minute)); len(start) != 1 || start[0] != "new" {
		t.Fatalf("a new task: %v", start)
	}
}

func TestDueRunsEachOnceAndCollapsesMissedSlots(t *testing.T) {
	s := ran(registry, t0)
	if start, _ := s.Due(registry, t0); len(start) != 0 {
		t.Fatalf("nothing is due at start: %v", start)
	}
	// Asleep for an hour: the sweep missed 3 slots after its first; one run.
	later := t0.Add(time.Hour + time.Minute)
	start, _ := s.Due(registry, later)
	if len(start) != 2 {
		t.Fatalf("both tasks due: %v", start)
	}
	if ms := s.Tasks["sweep"].MissedCount; ms != 3 {
		t.Fatalf("sweep missed %d slots, want 3 collapsed", ms)
	}
	if again, skipped := s.Due(registry, later); len(again) != 0 || len(skipped) != 0 {
		t.Fatalf("started twice: %v %v", again, skipped)
	}
	if next := time.UnixMilli(s.Tasks["sweep"].NextDue); !next.Equal(t0.Add(75 * time.Minute)) {
		t.Fatalf("next sweep %s", next)
	}
}

func TestLeasePreventsOverlapUntilHung(t *testing.T) {
	s := ran(registry, t0)
	now := t0.Add(15 * time.Minute)
	s.Due(registry, now)
	s.RunNow("sweep", now.Add(time.Second))
	start, skipped := s.Due(registry, now.Add(time.Second))
	if len(start) != 0 || skipped["sweep"] != SkipRunning || s.Tasks["sweep"].SkippedStarts != 1 {
		t.Fatalf("a running task started again: %v %v", start, skipped)
	}
	// A hung run releases its lease after LeaseTimeout.
	if start, _ := s.Due(registry, now.Add(LeaseTimeout+time.Second)); len(start) == 0 {
		t.Fatal("hung lease never released")
	}
}

func TestBackoffFromEachSignalAndNeverStuck(t *testing.T) {
	cases := []struct {
		name string
		r    Result
		prev int
		want time.Duration
	}{
		{"Retry-After", Result{Error: "429", RateLimited: true, RetryAfter: 90 * time.Second}, 0, 90 * time.Second},
		{"429 without a time: min backoff", Result{Error: "429", RateLimited: true}, 0, MinBackoff},
		{"remaining=0, third in a row: doubled twice", Result{Error: "remaining 0", RateLimited: true}, 2, 4 * MinBackoff},
		{"huge Retry-After capped", Result{Error: "429", RetryAfter: 48 * time.Hour}, 0, MaxBackoff},
		{"many failures capped", Result{Error: "429", RateLimited: true}, 40, MaxBackoff},
	}
	for _, c := range cases {
		s := New(registry, t0)
		s.BreakerThreshold = 1000
		s.Tasks["charts"].ConsecutiveFailures = c.prev
		ev := s.Finish("charts", c.r, t0)
		if got := time.UnixMilli(s.Tasks["charts"].NextRunAfter).Sub(t0); got != c.want {
			t.Errorf("%s: wait %s, want %s", c.name, got, c.want)
		}
		if ev[len(ev)-1]["event"] != "scheduler.task.backoff" {
			t.Errorf("%s: no backoff event: %v", c.name, ev)
		}
		// A refusal the backoff handles is a warning, not an operator's error.
		if want := map[bool]string{true: "warn", false: "error"}[c.r.RateLimited]; ev[0]["level"] != want {
			t.Errorf("%s: failed at level %v, want %s", c.name, ev[0]["level"], want)
		}
	}
	// The backing-off task is skipped; the other keeps its cadence.
	s := New(registry, t0)
	s.Finish("charts", Result{Error: "429", RetryAfter: time.Hour}, t0)
	start, skipped := s.Due(registry, t0.Add(15*time.Minute))
	if skipped["charts"] != SkipBackoff || len(start) != 1 || start[0] != "sweep" {
		t.Fatalf("start %v skipped %v", start, skipped)
	}
	s.Resume("charts")
	if start, _ := s.Due(registry, t0.Add(16*time.Minute)); len(start) != 1 || start[0] != "charts" {
		t.Fatalf("resume must clear the backoff: %v", start)
	}
}

func TestCircuitBreakerPausesAfterConsecutiveFailures(t *testing.T) {
	s := New(registry, t0)
	var ev []Event
	for i := 0; i < DefaultBreakerThreshold; i++ {
		ev = s.Finish("sweep", Result{Error: "parse error"}, t0)
	}
	ts := s.Tasks["sweep"]
	if ts.Pause == nil || !strings.Contains(ts.Pause.Reason, "circuit breaker") || ev[len(ev)-1]["level"] != "critical" {
		t.Fatalf("breaker did not open: %+v %v", ts.Pause, ev)
	}
	if _, skipped := s.Due(registry, t0.Add(24*time.Hour)); skipped["sweep"] != SkipPaused {
		t.Fatalf("paused task ran: %v", skipped)
	}
	s.Finish("sweep", Result{OK: true}, t0) // a success alone does not resume
	if s.Tasks["sweep"].Pause == nil {
		t.Fatal("the breaker needs an explicit resume")
	}
	s.Resume("sweep")
	if s.Tasks["sweep"].Pause != nil || s.Tasks["sweep"].ConsecutiveFailures != 0 {
		t.Fatal("resume did not reset")
	}
}

func TestPausesAndNextAlarm(t *testing.T) {
	s := ran(registry, t0)
	first := s.NextAlarm(registry, t0)
	if first.Before(t0.Add(5*time.Minute)) || first.After(t0.Add(5*time.Minute+20*time.Second)) {
		t.Fatalf("first alarm %s", first)
	}
	s.PauseTask("charts", "maintenance", time.Time{}, t0)
	if got := s.NextAlarm(registry, t0); !got.Equal(t0.Add(15 * time.Minute)) {
		t.Fatalf("with charts paused the alarm is the sweep's: %s", got)
	}
	s.PauseTask("", "deploy", t0.Add(20*time.Minute), t0)
	if got := s.NextAlarm(registry, t0); !got.Equal(t0.Add(20 * time.Minute)) {
		t.Fatalf("global pause until: %s", got)
	}
	if _, skipped := s.Due(registry, t0.Add(16*time.Minute)); skipped["sweep"] != SkipGlobalPause {
		t.Fatalf("global pause ignored: %v", skipped)
	}
	s.Resume("")
	// Overdue: the alarm is re-armed a moment ahead, never in the past.
	if got := s.NextAlarm(registry, t0.Add(time.Hour)); !got.Equal(t0.Add(time.Hour + MinRearm)) {
		t.Fatalf("overdue alarm %s", got)
	}
	s.PauseTask("sweep", "x", time.Time{}, t0)
	if got := s.NextAlarm(registry, t0); !got.IsZero() {
		t.Fatalf("everything paused: %s", got)
	}
}

func TestSyncFollowsTheRegistry(t *testing.T) {
	s := New(registry[:1], t0)
	s.Sync(registry[1:], t0)
	if _, ok := s.Tasks["charts"]; ok || s.Tasks["sweep"] == nil {
		t.Fatalf("sync: %v", s.Tasks)
	}
}

func decide(t *testing.T, st *string, op string, arg any, now time.Time) Decision {
	t.Helper()
	b, _ := json.Marshal(arg)
	d := Handle(Config{}, op, *st, b, now)
	if d.State != "" {
		*st = d.State
	}
	return d
}

// firstRuns loads a fresh scheduler at now and lets the first wake's runs
// (every task) finish.
func firstRuns(t *testing.T, st *string, now time.Time) {
	t.Helper()
	d := decide(t, st, "load", nil, now)
	if d.EnsureAlarmAt == 0 || d.EnsureAlarmAt > now.Add(MinRearm).UnixMilli() {
		t.Fatalf("a fresh scheduler's first alarm must be now: %+v", d)
	}
	d = decide(t, st, "tick", nil, now)
	if len(d.Run) != len(Registry) {
		t.Fatalf("the first wake runs every task: %v", d.Run)
	}
	for _, name := range d.Run {
		decide(t, st, "finish", ResultMsg{Task: name, OK: true}, now)
	}
}

func TestHandleAlarmCycle(t *testing.T) {
	st := ""
	firstRuns(t, &st, t0)
	due := NextSlot(Registry[0], t0)
	d := decide(t, &st, "tick", map[string]int{"retry_count": 0}, due)
	if len(d.Run) != 1 || d.Run[0] != "charts-refresh" || d.AlarmAt <= due.UnixMilli() {
		t.Fatalf("tick: %+v", d)
	}
	d = decide(t, &st, "finish", ResultMsg{Task: "charts-refresh", Error: "429", RateLimited: true, RetryAfterS: 600}, due)
	if len(d.Events) < 2 || d.Events[1]["event"] != "scheduler.task.backoff" {
		t.Fatalf("finish events: %v", d.Events)
	}
	d = decide(t, &st, "rearm", nil, due)
	if d.AlarmAt <= due.UnixMilli() {
		t.Fatalf("rearm: %+v", d)
	}
}

func TestHandleControl(t *testing.T) {
	st := ""
	firstRuns(t, &st, t0)
	bad := []struct{ path, body, field string }{
		{"/pause", `{"task":"nope"}`, "task"},
		{"/pause", `{"task":"rating-sweep","until":"yesterday"}`, "until"},
		{"/pause", `{"task":"rating-sweep","extra":1}`, "extra"}, // the unknown field names itself
		{"/run-now", `{}`, "task"},
		{"/run", `{}`, "task"},
		{"/pause", `{"task":"all"}`, "task"}, // "all" is for run only
	}
	for _, c := range bad {
		before := st
		d := decide(t, &st, "http", Request{Method: "POST", Path: c.path, Body: c.body}, t0)
		if d.Response.Status != 400 || d.Response.Body.(*FieldError).Field != c.field {
			t.Errorf("%s %s: %+v", c.path, c.body, d.Response)
		}
		if before != "" && st != before {
			t.Errorf("%s %s: a rejected call changed state", c.path, c.body)
		}
	}
	d := decide(t, &st, "http", Request{Method: "POST", Path: "/pause", Body: `{"task":"rating-sweep","reason":"backfill"}`}, t0)
	v := d.Response.Body.(StatusView)
	if v.Tasks[1].Pause == nil || v.Tasks[1].Pause.Reason != "backfill" {
		t.Fatalf("pause: %+v", v.Tasks[1])
	}
	d = decide(t, &st, "http", Request{Method: "POST", Path: "/run-now", Body: `{"task":"charts-refresh"}`}, t0)
	if d.AlarmAt != t0.Add(MinRearm).UnixMilli() {
		t.Fatalf("run-now must arm the alarm now: %+v", d)
	}
	d = decide(t, &st, "tick", nil, t0.Add(time.Second))
	if len(d.Run) != 1 || d.Run[0] != "charts-refresh" {
		t.Fatalf("run-now task not started: %v", d.Run)
	}
	for _, name := range d.Run {
		decide(t, &st, "finish", ResultMsg{Task: name, OK: true}, t0.Add(2*time.Second))
	}
	// /run is the name; {"task": "all"} runs every task.
	d = decide(t, &st, "http", Request{Method: "POST", Path: "/run", Body: `{"task":"all"}`}, t0.Add(3*time.Second))
	if d.Response.Status != 200 {
		t.Fatalf("run all: %+v", d.Response)
	}
	d = decide(t, &st, "tick", nil, t0.Add(4*time.Second))
	// Every task but rating-sweep, which an operator paused above.
	if len(d.Run) != len(Registry)-1 || slices.Contains(d.Run, "rating-sweep") {
		t.Fatalf("run all started %v, want every unpaused task of %d", d.Run, len(Registry))
	}
}

func TestBreakerThresholdIsConfigurable(t *testing.T) {
	cfg, err := NewConfig(2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewConfig(-1); err == nil {
		t.Fatal("negative threshold accepted")
	}
	st := ""
	b, _ := json.Marshal(ResultMsg{Task: "rating-sweep", Error: "boom"})
	for i := 0; i < 2; i++ {
		d := Handle(cfg, "finish", st, b, t0)
		st = d.State
	}
	s, _ := Load(st, t0)
	if s.Tasks["rating-sweep"].Pause == nil {
		t.Fatal("a threshold of 2 must open the breaker after 2 failures")
	}
}

func TestLoadReleasesLeasesOfADeadInstance(t *testing.T) {
	st := ""
	due := NextSlot(Registry[0], t0)
	firstRuns(t, &st, t0)
	if d := decide(t, &st, "tick", nil, due); len(d.Run) != 1 {
		t.Fatalf("tick: %+v", d)
	}
	d := decide(t, &st, "load", nil, due.Add(time.Second))
	if len(d.Events) == 0 || d.Events[0]["event"] != "scheduler.task.abandoned" {
		t.Fatalf("load must release the dead run's lease: %+v", d.Events)
	}
	decide(t, &st, "http", Request{Method: "POST", Path: "/run-now", Body: `{"task":"charts-refresh"}`}, due.Add(2*time.Second))
	if d := decide(t, &st, "tick", nil, due.Add(3*time.Second)); len(d.Run) != 1 {
		t.Fatalf("the task must be startable again: %+v", d)
	}
}

// The scheduler's facts always sum to its counters: a baseline, one fact
// per finished run, and nothing for calls that change no counter.
func TestSchedulerFactsSumToCounters(t *testing.T) {
	now := time.UnixMilli(1_800_000_000_000)
	var facts []ledger.Fact
	st := ""
	step := func(op string, arg any) {
		b, _ := json.Marshal(arg)
		d := Handle(Config{}, op, st, b, now)
		st = d.State
		facts = append(facts, d.Facts...)
	}
	step("load", nil)
	if len(facts) != 1 || facts[0].Kind != "scheduler.baseline" {
		t.Fatalf("baseline: %+v", facts)
	}
	step("tick", nil)
	step("finish", ResultMsg{Task: "charts-refresh", OK: true, Summary: "10 charts", DurationMs: 30})
	step("finish", ResultMsg{Task: "rating-sweep", OK: false, Error: "D1 down", DurationMs: 5})
	step("rearm", nil)
	step("http", Request{Method: "GET", Path: "/status"})
	if len(facts) != 3 {
		t.Fatalf("want baseline + 2 runs, got %d: %+v", len(facts), facts)
	}
	run := facts[2]
	if run.Kind != "scheduler.task_run" || run.Counters["runs.rating-sweep"] != 1 || run.Counters["failures.rating-sweep"] != 1 || run.Data["error"] != "D1 down" {
		t.Fatalf("run fact %+v", run)
	}
	s, _ := Load(st, now)
	var cs []map[string]int64
	for _, f := range facts {
		cs = append(cs, f.Counters)
	}
	sum := ledger.SumCounters(cs)
	for k, v := range s.Counters() {
		if sum[k] != v {
			t.Fatalf("%s: facts %d, counters %d", k, sum[k], v)
		}
	}
	// A task dropped from the registry keeps its counters (retired).
	s.Tasks["gone"] = &TaskState{Runs: 4, Failures: 1}
	before := s.Counters()
	s.Sync(Registry, now)
	if after := s.Counters(); after["runs.gone"] != 4 || len(ledger.Diff(after, before)) != 0 {
		t.Fatalf("retired counters lost: %v", after)
	}
}

// TestControlDecodeErrorsNameTheField: a control body's 400 names the
// field and the rule, never a Go type (it read `json: cannot unmarshal
// number into Go struct field Control.task of type string`).
func TestControlDecodeErrorsNameTheField(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	for _, c := range []struct{ body, field, msg string }{
		{`{"task": 5}`, "task", "task must be a string"},
		{`{"reason": ["x"]}`, "reason", "reason must be a string"},
		{`{"until": true}`, "until", "until must be a string"},
		{`{"task": `, "body", "body: not valid JSON"},
		{`{task}`, "body", "body: not valid JSON"},
		{`[1]`, "body", "body must be a JSON object with task, reason, until, wait"},
		{`{"now": true}`, "now", `unknown field "now"`},
	} {
		_, _, fe := ParseControl("/pause", c.body, now)
		if fe == nil || fe.Field != c.field || fe.Error != c.msg {
			t.Errorf("%s: %+v; want field %q, %q", c.body, fe, c.field, c.msg)
		}
		if fe != nil && (strings.Contains(fe.Error, "Go ") || strings.Contains(fe.Error, "Control")) {
			t.Errorf("%s: a Go type in %q", c.body, fe.Error)
		}
	}
}
