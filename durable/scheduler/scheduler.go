// Package scheduler is the decision logic of the SchedulerDO: one alarm
// that runs every periodic task of the system. Each task has a cadence
// anchored to the epoch (runs do not drift by their own duration) with an
// optional jitter that only delays; the alarm runs the tasks that are due,
// each in its own error boundary, and re-arms at the earliest next due time.
//
// The failure policy lives here too: upstream rate-limit signals (429,
// Retry-After, a remaining budget of 0) push one task's next run out, and
// never count as failures of the task; a task that keeps failing for real
// is paused by a circuit breaker, which half-opens after a cool-off for one
// trial run (success closes it, failure re-opens it for longer), so it
// recovers without an operator once the cause is gone; an operator's pause
// lasts until resumed; a task already running is never started twice (a
// lease with a hung-run timeout); missed runs collapse into one.
//
// State in, state out; the clock is passed in.
package scheduler

import (
	"hash/fnv"
	"strings"
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
	// DefaultBreakerThreshold: consecutive real failures (rate-limit
	// refusals not counted) that open a task's circuit breaker.
	DefaultBreakerThreshold = 6
	// BreakerCoolOff: an opened breaker pauses its task this long, then
	// half-opens for one trial run; each consecutive opening (a failed
	// trial) doubles it, up to MaxBreakerCoolOff. A task whose cause is gone
	// is back within hours without an operator; one still broken costs one
	// run per MaxBreakerCoolOff.
	BreakerCoolOff    = 30 * time.Minute
	MaxBreakerCoolOff = 4 * time.Hour
	// MinBackoff and MaxBackoff bound the wait after a rate-limit signal
	// without its own time, doubling per consecutive refusal; MaxBackoff
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
	// By is PauseByOperator or PauseByBreaker (whose Until is when the
	// breaker half-opens; it is never 0).
	By string `json:"by,omitempty"`
}

// Who paused a task.
const (
	PauseByOperator = "operator"
	PauseByBreaker  = "breaker"
)

// breakerPausePrefix starts every breaker pause's reason.
const breakerPausePrefix = "circuit breaker: "

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
	Failures            int64  `json:"failures"`              // lifetime failed runs, refusals included
	ConsecutiveFailures int    `json:"consecutive_failures"`  // real failures since the last success (what the breaker counts)
	LeaseUntil          int64  `json:"lease_until,omitempty"` // unix ms: a run is in progress
	SkippedStarts       int64  `json:"skipped_starts"`
	MissedCount         int64  `json:"missed_count"` // slots collapsed into a single run
	Pause               *Pause `json:"pause,omitempty"`
	// ConsecutiveRateLimited: refusals by the upstream's rate limit in a
	// row; the backoff doubles with it, and the breaker never counts it.
	ConsecutiveRateLimited int `json:"consecutive_rate_limited,omitempty"`
	// BreakerOpenings: breaker openings since the last success; the
	// cool-off doubles with it.
	BreakerOpenings int `json:"breaker_openings,omitempty"`
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
	// registry is the tasks Load synced the state with.
	registry []Task
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
		if p := ts.Pause; p != nil && p.By == "" && p.Until == 0 && strings.HasPrefix(p.Reason, breakerPausePrefix) {
			// A breaker pause stored without an end: it half-opens a
			// cool-off after it opened, like any other.
			p.By, p.Until = PauseByBreaker, p.At+BreakerCoolOff.Milliseconds()
			ts.BreakerOpenings = max(ts.BreakerOpenings, 1)
		}
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
	SkipBreakerOpen Skip = "breaker_open"
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
		case ts.Pause.active(now) && ts.Pause.By == PauseByBreaker:
			skipped[t.Name] = SkipBreakerOpen
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

// Breaker states (TaskState.Breaker).
const (
	BreakerClosed = "closed"
	// BreakerOpen: the task is paused until the cool-off ends.
	BreakerOpen = "open"
	// BreakerHalfOpen: the cool-off has ended; the next run is the trial
	// (its lease keeps it the only one), and its result closes or
	// re-opens the breaker.
	BreakerHalfOpen = "half_open"
)

// Breaker is the task's breaker state at now, and when it half-opens (or
// half-opened; 0 when closed).
func (ts *TaskState) Breaker(now time.Time) (string, int64) {
	p := ts.Pause
	switch {
	case p == nil || p.By != PauseByBreaker:
		return BreakerClosed, 0
	case p.active(now):
		return BreakerOpen, p.Until
	default:
		return BreakerHalfOpen, p.Until
	}
}

// breakerCoolOff is the pause of the n-th consecutive opening (n ≥ 1).
func breakerCoolOff(n int) time.Duration {
	return min(BreakerCoolOff<<min(max(n-1, 0), 16), MaxBreakerCoolOff)
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
		ts.ConsecutiveFailures, ts.ConsecutiveRateLimited, ts.BreakerOpenings = 0, 0, 0
		ts.LastOKAt = ms
		ts.LastError = ""
		ts.LastSummary = r.Summary
		ts.NextRunAfter = 0
		ev := []Event{{"event": "scheduler.task.ok", "task": name, "duration_ms": ts.LastDurationMs, "summary": r.Summary}}
		if ts.Pause != nil && ts.Pause.By == PauseByBreaker {
			// The trial succeeded: the cause is gone. An operator's pause stays.
			ts.Pause = nil
			ev = append(ev, Event{"event": "scheduler.task.circuit_closed", "task": name})
		}
		if r.RetryAfter > 0 {
			// Served, but the budget is spent (remaining = 0): wait for its reset.
			wait := min(r.RetryAfter, MaxBackoff)
			ts.NextRunAfter = now.Add(wait).UnixMilli()
			ev = append(ev, Event{"event": "scheduler.task.backoff", "level": "warn", "task": name, "wait_ms": wait.Milliseconds()})
		}
		return ev
	}
	ts.Failures++
	ts.LastError = r.Error
	if r.RateLimited || r.RetryAfter > 0 {
		// Refused by the upstream's rate limit: the backoff handles it, so it
		// is a warning and never counts toward the breaker; the task runs
		// again as soon as the upstream's budget is back.
		ts.ConsecutiveRateLimited++
		wait := r.RetryAfter
		if wait <= 0 {
			wait = MinBackoff << min(ts.ConsecutiveRateLimited-1, 16)
		}
		wait = min(wait, MaxBackoff)
		ts.NextRunAfter = now.Add(wait).UnixMilli()
		return []Event{
			{"event": "scheduler.task.failed", "level": "warn", "task": name, "error": r.Error, "consecutive_failures": ts.ConsecutiveFailures,
				"consecutive_rate_limited": ts.ConsecutiveRateLimited, "duration_ms": ts.LastDurationMs, "rate_limited": true},
			{"event": "scheduler.task.backoff", "level": "warn", "task": name, "wait_ms": wait.Milliseconds()},
		}
	}
	ts.ConsecutiveFailures++
	ts.ConsecutiveRateLimited = 0
	events := []Event{{"event": "scheduler.task.failed", "level": "error", "task": name, "error": r.Error,
		"consecutive_failures": ts.ConsecutiveFailures, "duration_ms": ts.LastDurationMs, "rate_limited": false}}
	if ts.ConsecutiveFailures >= s.BreakerThreshold && !ts.Pause.active(now) {
		// Open (or, after a failed trial, re-open) the breaker; an active
		// operator's pause is left as it is.
		ts.BreakerOpenings++
		coolOff := breakerCoolOff(ts.BreakerOpenings)
		ts.Pause = &Pause{Reason: breakerPausePrefix + itoa(ts.ConsecutiveFailures) + " consecutive failures; last: " + r.Error,
			At: ms, Until: now.Add(coolOff).UnixMilli(), By: PauseByBreaker}
		// The first opening is what an operator must see; a failed trial
		// says the cause is still there.
		level := "critical"
		if ts.BreakerOpenings > 1 {
			level = "error"
		}
		events = append(events, Event{"event": "scheduler.task.circuit_open", "level": level, "task": name,
			"consecutive_failures": ts.ConsecutiveFailures, "openings": ts.BreakerOpenings,
			"cool_off_ms": coolOff.Milliseconds(), "half_open_at": ts.Pause.Until})
	}
	return events
}

// PauseTask pauses one task ("" pauses the whole scheduler).
func (s *State) PauseTask(name, reason string, until time.Time, now time.Time) bool {
	p := &Pause{Reason: reason, At: now.UnixMilli(), By: PauseByOperator}
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

// Resume clears a pause (the operator's or the breaker's), the backoff and
// the failure counts ("" = global), so a paused or backing-off task can
// never stay stuck.
func (s *State) Resume(name string) bool {
	if name == "" {
		s.Pause = nil
		return true
	}
	ts, ok := s.Tasks[name]
	if ok {
		ts.Pause, ts.NextRunAfter, ts.ConsecutiveFailures, ts.ConsecutiveRateLimited, ts.BreakerOpenings = nil, 0, 0, 0, 0
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
