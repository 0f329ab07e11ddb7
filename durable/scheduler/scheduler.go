// Package scheduler is the decision logic of the SchedulerDO: one alarm
// that runs every periodic task of the system. Each task has a cadence
// anchored to the epoch (runs do not drift by their own duration) with an
// optional jitter that only delays; the alarm runs the tasks that are due,
// each in its own error boundary, and re-arms at the earliest next due time.
//
// The failure policy lives here too: upstream rate-limit signals (429,
// Retry-After, a remaining budget of 0) push one task's next run out; a
// task that keeps failing is paused by a circuit breaker and needs an
// explicit resume; a task already running is never started twice (a lease
// with a hung-run timeout); missed runs collapse into one.
//
// State in, state out; the clock is passed in.
package scheduler

import (
	"hash/fnv"
	"time"
)

// Task is a registry entry: a fixed name and its cadence.
type Task struct {
	Name string
	// Every is the interval; runs are due at multiples of it since the epoch.
	Every time.Duration
	// Jitter delays each run by a stable pseudo-random amount below it
	// (never early), so tasks sharing a cadence do not fire together.
	Jitter time.Duration
}

// Policy bounds.
const (
	// DefaultBreakerThreshold: consecutive failures that pause a task.
	DefaultBreakerThreshold = 6
	// MinBackoff and MaxBackoff bound the wait after a rate-limit signal
	// without its own time, doubling per consecutive failure; MaxBackoff
	// also caps any Retry-After, so the state can never get stuck.
	MinBackoff = 30 * time.Second
	MaxBackoff = time.Hour
	// LeaseTimeout: a run that has not finished by then is considered hung,
	// and the task may start again.
	LeaseTimeout = 10 * time.Minute
	// MinRearm: an overdue task re-arms the alarm this soon, never "now"
	// (setting an alarm to the present inside alarm() is known to misbehave).
	MinRearm = time.Millisecond
)

// Pause is a stop with a reason and an optional end.
type Pause struct {
	Reason string `json:"reason"`
	At     int64  `json:"at"`              // unix ms
	Until  int64  `json:"until,omitempty"` // unix ms; 0 = until resumed
}

func (p *Pause) active(now time.Time) bool {
	return p != nil && (p.Until == 0 || now.UnixMilli() < p.Until)
}

// TaskState is one task's record.
type TaskState struct {
	NextDue             int64  `json:"next_due"`       // unix ms of the next slot (with jitter)
	NextRunAfter        int64  `json:"next_run_after"` // unix ms: upstream asked us to wait
	LastRunAt           int64  `json:"last_run_at"`
	LastOKAt            int64  `json:"last_ok_at"`
	LastDurationMs      int64  `json:"last_duration_ms"`
	LastError           string `json:"last_error,omitempty"`
	LastSummary         string `json:"last_summary,omitempty"`
	Runs                int64  `json:"runs"`
	Failures            int64  `json:"failures"` // lifetime failed runs
	ConsecutiveFailures int    `json:"consecutive_failures"`
	LeaseUntil          int64  `json:"lease_until,omitempty"` // unix ms: a run is in progress
	SkippedStarts       int64  `json:"skipped_starts"`
	MissedCount         int64  `json:"missed_count"` // slots collapsed into a single run
	Pause               *Pause `json:"pause,omitempty"`
	// The last run's D1 rows and subrequests (ResultMsg).
	LastD1RowsRead    int64 `json:"last_d1_rows_read,omitempty"`
	LastD1RowsWritten int64 `json:"last_d1_rows_written,omitempty"`
	LastD1Queries     int64 `json:"last_d1_queries,omitempty"`
	LastSubrequests   int   `json:"last_subrequests,omitempty"`
}

// State is the whole scheduler, persisted as one JSON value.
type State struct {
	Tasks            map[string]*TaskState `json:"tasks"`
	Pause            *Pause                `json:"pause,omitempty"` // global
	BreakerThreshold int                   `json:"breaker_threshold"`
	// LedgerSince is when the scheduler's ledger began (unix ms).
	LedgerSince int64 `json:"ledger_since,omitempty"`
	// Retired keeps the counters of tasks dropped from the registry, so the
	// lifetime counters (and the facts that sum to them) never shrink.
	Retired map[string]int64 `json:"retired,omitempty"`
	// TaskCounters are what tasks reported of their own work
	// ("<task>.<name>", e.g. the analyst's LLM spend), lifetime totals.
	TaskCounters map[string]int64 `json:"task_counters,omitempty"`
}

// New returns a state with every registered task scheduled from now.
func New(tasks []Task, now time.Time) *State {
	s := &State{Tasks: map[string]*TaskState{}, BreakerThreshold: DefaultBreakerThreshold}
	s.Sync(tasks, now)
	return s
}

// Sync adds tasks new to the registry and drops removed ones (after a deploy).
func (s *State) Sync(tasks []Task, now time.Time) {
	if s.Tasks == nil {
		s.Tasks = map[string]*TaskState{}
	}
	if s.BreakerThreshold <= 0 {
		s.BreakerThreshold = DefaultBreakerThreshold
	}
	known := map[string]bool{}
	for _, t := range tasks {
		known[t.Name] = true
		if _, ok := s.Tasks[t.Name]; !ok {
			// A task that never ran is due at once: after a fresh deploy the
			// charts, sweeps and checks start with the first wake (the cron
			// wakes the scheduler), not up to an hour later.
			s.Tasks[t.Name] = &TaskState{NextDue: now.UnixMilli()}
		}
	}
	for name, ts := range s.Tasks {
		if !known[name] {
			if s.Retired == nil {
				s.Retired = map[string]int64{}
			}
			s.Retired[runsCounter(name)] += ts.Runs
			s.Retired[failuresCounter(name)] += ts.Failures
			delete(s.Tasks, name)
		}
	}
}

// NextSlot is the first due time strictly after t: the next multiple of
// Every since the epoch, plus the task's jitter for that slot.
func NextSlot(t Task, after time.Time) time.Time {
	every := t.Every.Milliseconds()
	if every <= 0 {
		every = 1
	}
	ms := after.UnixMilli()
	slot := (ms/every + 1) * every
	return time.UnixMilli(slot + jitterFor(t, slot))
}

// jitterFor is a stable delay in [0, Jitter) for one slot of one task.
func jitterFor(t Task, slot int64) int64 {
	j := t.Jitter.Milliseconds()
	if j <= 0 {
		return 0
	}
	h := fnv.New64a()
	h.Write([]byte(t.Name))
	var b [8]byte
	for i := range b {
		b[i] = byte(slot >> (8 * i))
	}
	h.Write(b[:])
	return int64(h.Sum64() % uint64(j))
}

// Skip says why a due task was not started.
type Skip string

const (
	SkipPaused      Skip = "paused"
	SkipGlobalPause Skip = "global_pause"
	SkipBackoff     Skip = "backoff"
	SkipRunning     Skip = "running"
)

// Due returns the tasks to start at now, and why others that are due are
// skipped. Starting a task takes its lease. A task still running is not
// started twice; its skipped start is counted.
func (s *State) Due(tasks []Task, now time.Time) (start []string, skipped map[string]Skip) {
	skipped = map[string]Skip{}
	ms := now.UnixMilli()
	for _, t := range tasks {
		ts := s.Tasks[t.Name]
		if ts == nil || ts.NextDue > ms {
			continue
		}
		switch {
		case s.Pause.active(now):
			skipped[t.Name] = SkipGlobalPause
		case ts.Pause.active(now):
			skipped[t.Name] = SkipPaused
		case ts.NextRunAfter > ms:
			skipped[t.Name] = SkipBackoff
		case ts.LeaseUntil > ms:
			skipped[t.Name] = SkipRunning
			ts.SkippedStarts++
		default:
			start = append(start, t.Name)
			s.begin(t, ts, now)
		}
	}
	return start, skipped
}

// begin takes the lease and moves the task to its next slot, collapsing
// every slot missed while it was asleep, paused or backing off into this run.
func (s *State) begin(t Task, ts *TaskState, now time.Time) {
	ts.LeaseUntil = now.Add(LeaseTimeout).UnixMilli()
	next := NextSlot(t, now)
	if every := t.Every.Milliseconds(); every > 0 && ts.NextDue > 0 {
		missed := (now.UnixMilli() - ts.NextDue) / every
		if missed > 0 {
			ts.MissedCount += missed
		}
	}
	ts.NextDue = next.UnixMilli()
}

// RunNow makes a task due immediately (its lease still prevents overlap).
func (s *State) RunNow(name string, now time.Time) bool {
	ts, ok := s.Tasks[name]
	if !ok {
		return false
	}
	ts.NextDue = now.UnixMilli()
	ts.NextRunAfter = 0
	return true
}

// Result is what one run of a task reports.
type Result struct {
	OK          bool
	Summary     string
	Error       string
	Duration    time.Duration
	RateLimited bool          // a 429, or a remaining budget of 0
	RetryAfter  time.Duration // the upstream's own wait, if it gave one
}

// Finish records a run and applies the failure policy.
func (s *State) Finish(name string, r Result, now time.Time) []Event {
	ts, ok := s.Tasks[name]
	if !ok {
		return nil
	}
	ms := now.UnixMilli()
	ts.LeaseUntil = 0
	ts.Runs++
	ts.LastRunAt = ms
	ts.LastDurationMs = r.Duration.Milliseconds()
	if r.OK {
		ts.ConsecutiveFailures = 0
		ts.LastOKAt = ms
		ts.LastError = ""
		ts.LastSummary = r.Summary
		ts.NextRunAfter = 0
		ev := []Event{{"event": "scheduler.task.ok", "task": name, "duration_ms": ts.LastDurationMs, "summary": r.Summary}}
		if r.RetryAfter > 0 {
			// Served, but the budget is spent (remaining = 0): wait for its reset.
			wait := min(r.RetryAfter, MaxBackoff)
			ts.NextRunAfter = now.Add(wait).UnixMilli()
			ev = append(ev, Event{"event": "scheduler.task.backoff", "level": "warn", "task": name, "wait_ms": wait.Milliseconds()})
		}
		return ev
	}
	ts.ConsecutiveFailures++
	ts.Failures++
	ts.LastError = r.Error
	// A refusal the backoff handles is a warning; an operator acts on the
	// circuit breaker if refusals persist.
	level := "error"
	if r.RateLimited {
		level = "warn"
	}
	events := []Event{{"event": "scheduler.task.failed", "level": level, "task": name, "error": r.Error,
		"consecutive_failures": ts.ConsecutiveFailures, "duration_ms": ts.LastDurationMs, "rate_limited": r.RateLimited}}
	if r.RateLimited || r.RetryAfter > 0 {
		wait := r.RetryAfter
		if wait <= 0 {
			wait = MinBackoff << min(ts.ConsecutiveFailures-1, 16)
		}
		wait = min(wait, MaxBackoff)
		ts.NextRunAfter = now.Add(wait).UnixMilli()
		events = append(events, Event{"event": "scheduler.task.backoff", "level": "warn", "task": name, "wait_ms": wait.Milliseconds()})
	}
	if ts.ConsecutiveFailures >= s.BreakerThreshold && !ts.Pause.active(now) {
		ts.Pause = &Pause{Reason: "circuit breaker: " + itoa(ts.ConsecutiveFailures) + " consecutive failures; last: " + r.Error, At: ms}
		events = append(events, Event{"event": "scheduler.task.circuit_open", "level": "critical", "task": name,
			"consecutive_failures": ts.ConsecutiveFailures})
	}
	return events
}

// PauseTask pauses one task ("" pauses the whole scheduler).
func (s *State) PauseTask(name, reason string, until time.Time, now time.Time) bool {
	p := &Pause{Reason: reason, At: now.UnixMilli()}
	if !until.IsZero() {
		p.Until = until.UnixMilli()
	}
	if name == "" {
		s.Pause = p
		return true
	}
	ts, ok := s.Tasks[name]
	if ok {
		ts.Pause = p
	}
	return ok
}

// Resume clears a pause, the backoff and the failure count ("" = global),
// so a paused or backing-off task can never stay stuck.
func (s *State) Resume(name string) bool {
	if name == "" {
		s.Pause = nil
		return true
	}
	ts, ok := s.Tasks[name]
	if ok {
		ts.Pause, ts.NextRunAfter, ts.ConsecutiveFailures = nil, 0, 0
	}
	return ok
}

// NextAlarm is the earliest time anything can become due: each task's
// next slot, pushed past its backoff, pause end or running lease; never
// earlier than now + MinRearm. zero means nothing is scheduled (every task
// paused until resumed).
func (s *State) NextAlarm(tasks []Task, now time.Time) time.Time {
	best := int64(0)
	for _, t := range tasks {
		ts := s.Tasks[t.Name]
		if ts == nil {
			continue
		}
		at := ts.NextDue
		if ts.Pause.active(now) {
			if ts.Pause.Until == 0 {
				continue
			}
			at = max(at, ts.Pause.Until)
		}
		at = max(at, ts.NextRunAfter)
		if ts.LeaseUntil > now.UnixMilli() {
			at = max(at, ts.LeaseUntil)
		}
		if best == 0 || at < best {
			best = at
		}
	}
	if s.Pause.active(now) && s.Pause.Until != 0 && best != 0 {
		best = max(best, s.Pause.Until)
	} else if s.Pause.active(now) {
		return time.Time{}
	}
	if best == 0 {
		return time.Time{}
	}
	return time.UnixMilli(max(best, now.Add(MinRearm).UnixMilli()))
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for n > 0 {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
	}
	return string(b)
}
