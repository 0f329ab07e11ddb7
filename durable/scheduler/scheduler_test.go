package scheduler

import (
	"encoding/json"
	"fmt"
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
		s.Tasks["charts"].ConsecutiveRateLimited = c.prev
		ev := s.Finish("charts", c.r, t0)
		if got := time.UnixMilli(s.Tasks["charts"].NextRunAfter).Sub(t0); got != c.want {
			t.Errorf("%s: wait %s, want %s", c.name, got, c.want)
		}
		if ev[len(ev)-1]["event"] != "scheduler.task.backoff" {
			t.Errorf("%s: no backoff event: %v", c.name, ev)
		}
		// A refusal the backoff handles is a warning, not an operator's
		// error, and no failure the breaker counts.
		if ev[0]["level"] != "warn" || s.Tasks["charts"].ConsecutiveFailures != 0 {
			t.Errorf("%s: failed at level %v with %d consecutive failures, want warn and 0", c.name, ev[0]["level"], s.Tasks["charts"].ConsecutiveFailures)
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

// sweepOnly is a registry of one task without jitter, for runs driven by
// the virtual clock alone.
var sweepOnly = []Task{{Name: "sweep", Every: 15 * time.Minute}}

// A 429 storm longer than DefaultBreakerThreshold backoffs (hours at the
// doubling backoff) never opens the breaker: the task keeps backing off,
// and runs as soon as the storm is over and its current backoff has ended.
func TestRateLimitStormNeverOpensTheBreaker(t *testing.T) {
	s := ran(sweepOnly, t0)
	now := t0
	refusals := 2 * DefaultBreakerThreshold
	for i := 1; i <= refusals; i++ {
		now = s.NextAlarm(sweepOnly, now)
		if start, skipped := s.Due(sweepOnly, now); len(start) != 1 {
			t.Fatalf("refusal %d: not started at %s: %v", i, now, skipped)
		}
		done := now.Add(time.Second)
		s.Finish("sweep", Result{Error: "rate limited (HTTP 429)", RateLimited: true}, done)
		ts := s.Tasks["sweep"]
		if ts.Pause != nil {
			t.Fatalf("refusal %d paused the task: %+v", i, ts.Pause)
		}
		if got, want := time.UnixMilli(ts.NextRunAfter).Sub(done), min(MinBackoff<<(i-1), MaxBackoff); got != want {
			t.Fatalf("refusal %d: backoff %s, want %s", i, got, want)
		}
	}
	if storm := now.Sub(t0); storm < 4*time.Hour {
		t.Fatalf("the storm lasted only %s", storm)
	}
	if n := s.Tasks["sweep"].ConsecutiveFailures; n != 0 {
		t.Fatalf("the refusals counted as %d failures", n)
	}
	// The storm ends: the task runs when its current backoff ends.
	backoffEnd := time.UnixMilli(s.Tasks["sweep"].NextRunAfter)
	if got := s.NextAlarm(sweepOnly, now.Add(time.Second)); !got.Equal(backoffEnd) {
		t.Fatalf("next alarm %s, want the end of the backoff %s", got, backoffEnd)
	}
	if _, skipped := s.Due(sweepOnly, backoffEnd.Add(-time.Millisecond)); skipped["sweep"] != SkipBackoff {
		t.Fatalf("before the backoff ends: %v", skipped)
	}
	if start, skipped := s.Due(sweepOnly, backoffEnd); len(start) != 1 {
		t.Fatalf("not started when the backoff ended: %v", skipped)
	}
	s.Finish("sweep", Result{OK: true, Summary: "ok"}, backoffEnd.Add(time.Second))
	ts := s.Tasks["sweep"]
	if ts.LastOKAt != backoffEnd.Add(time.Second).UnixMilli() || ts.NextRunAfter != 0 || ts.ConsecutiveRateLimited != 0 || ts.Pause != nil {
		t.Fatalf("after the storm: %+v", ts)
	}
	if state, _ := ts.Breaker(backoffEnd); state != BreakerClosed {
		t.Fatalf("breaker %s", state)
	}
}

// Real failures open the breaker; it half-opens after the cool-off for
// exactly one trial run; a failed trial re-opens it for twice as long (up
// to MaxBreakerCoolOff), a successful one closes it. No operator needed.
func TestBreakerHalfOpensAfterCoolOffForOneTrial(t *testing.T) {
	s := ran(sweepOnly, t0)
	now := t0
	run := func(r Result) []Event {
		t.Helper()
		if start, skipped := s.Due(sweepOnly, now); len(start) != 1 {
			t.Fatalf("not started at %s: %v", now, skipped)
		}
		now = now.Add(time.Second)
		return s.Finish("sweep", r, now)
	}
	fail := Result{Error: "parse error"}
	var ev []Event
	for i := 0; i < DefaultBreakerThreshold; i++ {
		now = s.NextAlarm(sweepOnly, now)
		ev = run(fail)
	}
	ts := s.Tasks["sweep"]
	state, halfOpenAt := ts.Breaker(now)
	if state != BreakerOpen || halfOpenAt != now.Add(BreakerCoolOff).UnixMilli() || ts.Pause.By != PauseByBreaker {
		t.Fatalf("breaker %s half-opening at %d, want open until %s: %+v", state, halfOpenAt, now.Add(BreakerCoolOff), ts.Pause)
	}
	if last := ev[len(ev)-1]; last["event"] != "scheduler.task.circuit_open" || last["level"] != "critical" {
		t.Fatalf("opening events: %v", ev)
	}
	for want := 2; want <= 8; want++ {
		half := time.UnixMilli(halfOpenAt)
		// Open: nothing runs before the cool-off ends, slots or not.
		if _, skipped := s.Due(sweepOnly, half.Add(-time.Millisecond)); skipped["sweep"] != SkipBreakerOpen {
			t.Fatalf("opening %d: a run before the cool-off: %v", want-1, skipped)
		}
		if got := s.NextAlarm(sweepOnly, now); !got.Equal(half) {
			t.Fatalf("opening %d: next alarm %s, want the half-open time %s", want-1, got, half)
		}
		// Half-open: one trial, and no other while it runs.
		now = half
		if state, _ := ts.Breaker(now); state != BreakerHalfOpen {
			t.Fatalf("breaker %s at the end of the cool-off", state)
		}
		if start, _ := s.Due(sweepOnly, now); len(start) != 1 {
			t.Fatalf("no trial run at %s", now)
		}
		for _, later := range []time.Duration{time.Second, time.Minute, LeaseTimeout - time.Second} {
			s.RunNow("sweep", now.Add(later)) // even an operator's run-now waits for the trial
			if start, skipped := s.Due(sweepOnly, now.Add(later)); len(start) != 0 || skipped["sweep"] != SkipRunning {
				t.Fatalf("a second trial %s into the first: %v %v", later, start, skipped)
			}
		}
		// The trial fails: re-opened, the cool-off doubled (capped).
		now = now.Add(time.Minute)
		ev = s.Finish("sweep", fail, now)
		wantCoolOff := min(BreakerCoolOff<<(want-1), MaxBreakerCoolOff)
		state, halfOpenAt = ts.Breaker(now)
		if state != BreakerOpen || halfOpenAt != now.Add(wantCoolOff).UnixMilli() || ts.BreakerOpenings != want {
			t.Fatalf("failed trial %d: breaker %s half-opening in %s, want open for %s", want-1, state, time.UnixMilli(halfOpenAt).Sub(now), wantCoolOff)
		}
		if last := ev[len(ev)-1]; last["event"] != "scheduler.task.circuit_open" || last["level"] != "error" {
			t.Fatalf("a failed trial re-opens with an error: %v", ev)
		}
	}
	if got := time.UnixMilli(halfOpenAt).Sub(now); got != MaxBreakerCoolOff {
		t.Fatalf("the cool-off stopped at %s, short of its cap", got)
	}
	// The cause is gone: the next trial succeeds and closes the breaker.
	now = time.UnixMilli(halfOpenAt)
	ev = run(Result{OK: true})
	if state, _ := ts.Breaker(now); state != BreakerClosed || ts.Pause != nil || ts.ConsecutiveFailures != 0 || ts.BreakerOpenings != 0 {
		t.Fatalf("a successful trial must close the breaker: %s %+v", state, ts)
	}
	if ev[len(ev)-1]["event"] != "scheduler.task.circuit_closed" {
		t.Fatalf("closing events: %v", ev)
	}
	// Closed: the task is back on its cadence, and failures count from 0.
	now = s.NextAlarm(sweepOnly, now)
	if now.Sub(time.UnixMilli(halfOpenAt)) > 15*time.Minute {
		t.Fatalf("next run %s after the trial", now.Sub(time.UnixMilli(halfOpenAt)))
	}
	run(fail)
	if ts.Pause != nil || ts.ConsecutiveFailures != 1 {
		t.Fatalf("one failure after closing: %+v", ts)
	}
}

// An operator's pause (no until) outlasts any cool-off, a success does not
// lift it, and it is told apart from the breaker's; resume lifts either.
func TestOperatorPauseOutlastsTheBreaker(t *testing.T) {
	s := ran(sweepOnly, t0)
	s.PauseTask("sweep", "reindex", time.Time{}, t0)
	s.Finish("sweep", Result{OK: true}, t0.Add(time.Second)) // a run started before the pause
	for _, at := range []time.Duration{BreakerCoolOff, MaxBreakerCoolOff, 7 * 24 * time.Hour} {
		if _, skipped := s.Due(sweepOnly, t0.Add(at)); skipped["sweep"] != SkipPaused {
			t.Fatalf("%s after an operator's pause: %v", at, skipped)
		}
	}
	if state, _ := s.Tasks["sweep"].Breaker(t0); state != BreakerClosed || s.Tasks["sweep"].Pause.By != PauseByOperator {
		t.Fatalf("an operator's pause is no breaker: %s %+v", state, s.Tasks["sweep"].Pause)
	}
	if got := s.NextAlarm(sweepOnly, t0); !got.IsZero() {
		t.Fatalf("nothing to wake for: %s", got)
	}
	// An operator pausing an open breaker holds the task until resumed.
	s = ran(sweepOnly, t0)
	for i := 0; i < DefaultBreakerThreshold; i++ {
		s.Finish("sweep", Result{Error: "parse error"}, t0)
	}
	s.PauseTask("sweep", "investigating", time.Time{}, t0)
	if _, skipped := s.Due(sweepOnly, t0.Add(MaxBreakerCoolOff+time.Hour)); skipped["sweep"] != SkipPaused {
		t.Fatalf("the cool-off lifted an operator's pause: %v", skipped)
	}
	s.Resume("sweep")
	if ts := s.Tasks["sweep"]; ts.Pause != nil || ts.ConsecutiveFailures != 0 || ts.BreakerOpenings != 0 {
		t.Fatalf("resume did not reset: %+v", ts)
	}
}

// A breaker pause stored without an end half-opens a cool-off after it
// opened; an operator's pause stored without "by" stays until resumed.
func TestStoredEndlessBreakerPauseHalfOpens(t *testing.T) {
	opened := t0.Add(-2 * time.Hour)
	raw := fmt.Sprintf(`{"tasks":{"rating-sweep":{"next_due":%d,"consecutive_failures":6,"pause":{"reason":"circuit breaker: 6 consecutive failures; last: x","at":%d}},`+
		`"charts-refresh":{"next_due":%d,"pause":{"reason":"reindex","at":%d}}}}`, opened.UnixMilli(), opened.UnixMilli(), opened.UnixMilli(), opened.UnixMilli())
	s, corrupt := Load(Registry, raw, t0)
	if corrupt {
		t.Fatal("corrupt")
	}
	if state, at := s.Tasks["rating-sweep"].Breaker(t0); state != BreakerHalfOpen || at != opened.Add(BreakerCoolOff).UnixMilli() {
		t.Fatalf("stored breaker pause: %s at %d", state, at)
	}
	if state, _ := s.Tasks["charts-refresh"].Breaker(t0); state != BreakerClosed || !s.Tasks["charts-refresh"].Pause.active(t0.Add(365*24*time.Hour)) {
		t.Fatalf("stored operator pause: %s %+v", state, s.Tasks["charts-refresh"].Pause)
	}
	start, skipped := s.Due(Registry, t0)
	if !slices.Contains(start, "rating-sweep") || skipped["charts-refresh"] != SkipPaused {
		t.Fatalf("start %v skipped %v", start, skipped)
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
	d := Handle(Config{Tasks: Registry}, op, *st, b, now)
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

// The status shows each task's breaker, and when it half-opens; the tick
// says why an open one is skipped and which run is a trial.
func TestHandleShowsTheBreaker(t *testing.T) {
	st := ""
	firstRuns(t, &st, t0)
	for i := 0; i < DefaultBreakerThreshold; i++ {
		decide(t, &st, "finish", ResultMsg{Task: "rating-sweep", Error: "D1 down"}, t0)
	}
	breaker := func(now time.Time) map[string]any {
		t.Helper()
		d := decide(t, &st, "http", Request{Method: "GET", Path: "/status"}, now)
		b, _ := json.Marshal(d.Response.Body)
		var v struct {
			Tasks []map[string]any `json:"tasks"`
		}
		json.Unmarshal(b, &v)
		for _, task := range v.Tasks {
			if task["name"] == "rating-sweep" {
				return task
			}
		}
		t.Fatalf("no rating-sweep in %s", b)
		return nil
	}
	halfOpen := t0.Add(BreakerCoolOff)
	if got := breaker(t0); got["breaker"] != BreakerOpen || got["breaker_half_open_at"] != float64(halfOpen.UnixMilli()) ||
		got["pause"].(map[string]any)["by"] != PauseByBreaker || got["consecutive_failures"] != float64(DefaultBreakerThreshold) {
		t.Fatalf("open breaker: %v", got)
	}
	d := decide(t, &st, "tick", nil, halfOpen.Add(-time.Minute))
	if d.Events[0]["skipped"].(map[string]Skip)["rating-sweep"] != SkipBreakerOpen {
		t.Fatalf("tick while open: %v", d.Events)
	}
	if got := breaker(halfOpen); got["breaker"] != BreakerHalfOpen || got["breaker_half_open_at"] != float64(halfOpen.UnixMilli()) {
		t.Fatalf("half-open breaker: %v", got)
	}
	d = decide(t, &st, "tick", nil, halfOpen)
	if !slices.Contains(d.Run, "rating-sweep") || d.Events[0]["event"] != "scheduler.task.circuit_trial" || d.Events[0]["task"] != "rating-sweep" {
		t.Fatalf("trial tick: %v %v", d.Run, d.Events)
	}
	decide(t, &st, "finish", ResultMsg{Task: "rating-sweep", OK: true}, halfOpen.Add(time.Second))
	if got := breaker(halfOpen.Add(time.Second)); got["breaker"] != BreakerClosed || got["pause"] != nil || got["breaker_half_open_at"] != nil {
		t.Fatalf("closed breaker: %v", got)
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
	cfg.Tasks = Registry
	st := ""
	b, _ := json.Marshal(ResultMsg{Task: "rating-sweep", Error: "boom"})
	for i := 0; i < 2; i++ {
		d := Handle(cfg, "finish", st, b, t0)
		st = d.State
	}
	s, _ := Load(Registry, st, t0)
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
		d := Handle(Config{Tasks: Registry}, op, st, b, now)
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
	s, _ := Load(Registry, st, now)
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
		_, _, fe := ParseControl(Registry, "/pause", c.body, now)
		if fe == nil || fe.Field != c.field || fe.Error != c.msg {
			t.Errorf("%s: %+v; want field %q, %q", c.body, fe, c.field, c.msg)
		}
		if fe != nil && (strings.Contains(fe.Error, "Go ") || strings.Contains(fe.Error, "Control")) {
			t.Errorf("%s: a Go type in %q", c.body, fe.Error)
		}
	}
}
