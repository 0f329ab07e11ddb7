package scheduler

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"storecrawl/durable/ledger"
	"storecrawl/durable/object"
	"storecrawl/internal/objects"
)

// The Go⇄JS protocol (durable/object); Run lists the tasks to start now,
// each in its own error boundary.
type (
	Decision   = object.Decision[[]string]
	Request    = object.Request
	Response   = object.Response
	FieldError = object.FieldError
	Event      = object.Event
)

// ResultMsg is a task's result as the shim passes it back.
type ResultMsg struct {
	Task        string `json:"task"`
	OK          bool   `json:"ok"`
	Summary     string `json:"summary,omitempty"`
	Error       string `json:"error,omitempty"`
	DurationMs  int64  `json:"duration_ms"`
	RateLimited bool   `json:"rate_limited,omitempty"`
	RetryAfterS int    `json:"retry_after_s,omitempty"`
	// Counters are what the run adds to the task's own lifetime counters
	// (e.g. the analyst's LLM spend); they ride on the run's ledger fact as
	// "<task>.<name>" (AddTaskCounters bounds them).
	Counters map[string]int64 `json:"counters,omitempty"`
	// Detail is a short note kept in the run's fact (e.g. the spend per
	// cluster and brief), cut to maxFactText.
	Detail string `json:"detail,omitempty"`
	// The run's D1 cost from D1's result metadata, and the subrequests it
	// made: kept as the task's last run's (GET /v1/scheduler/status), so
	// what a task costs at the catalogue's size is visible (cmd/bench -only-scale).
	D1RowsRead    int64 `json:"d1_rows_read,omitempty"`
	D1RowsWritten int64 `json:"d1_rows_written,omitempty"`
	D1Queries     int64 `json:"d1_queries,omitempty"`
	Subrequests   int   `json:"subrequests,omitempty"`
}

// Load decodes stored state (defaults for missing or corrupt) and syncs it
// with the registry, tasks. With no tasks it syncs nothing: a registry
// that failed to load never retires every task's record.
func Load(tasks []Task, raw string, now time.Time) (*State, bool) {
	s := &State{}
	corrupt := false
	if raw != "" {
		if err := json.Unmarshal([]byte(raw), s); err != nil {
			s, corrupt = &State{}, true
		}
	}
	s.registry = tasks
	if len(tasks) > 0 {
		s.Sync(tasks, now)
	}
	return s, corrupt
}

func (s *State) encode() string {
	b, err := json.Marshal(s)
	if err != nil {
		panic("scheduler: encode: " + err.Error())
	}
	return string(b)
}

// alarm returns the alarm decision fields for the state at now.
func (s *State) alarm(d *Decision, now time.Time) {
	if t := s.NextAlarm(s.registry, now); !t.IsZero() {
		d.AlarmAt = t.UnixMilli()
	}
}

// Config holds deploy-time settings (Worker vars).
type Config struct {
	// Tasks are the registry: every periodic task, as the features declare
	// them (worker.PeriodicTasks).
	Tasks []Task
	// BreakerThreshold: consecutive real failures that open a task's
	// breaker (0 = default).
	BreakerThreshold int
}

// MaxBreakerThreshold bounds a configured threshold.
const MaxBreakerThreshold = 1000

// NewConfig validates a breaker threshold from a var (0 = default).
func NewConfig(threshold int) (Config, error) {
	if threshold < 0 || threshold > MaxBreakerThreshold {
		return Config{}, fmt.Errorf("breaker threshold %d outside [1, %d]", threshold, MaxBreakerThreshold)
	}
	return Config{BreakerThreshold: threshold}, nil
}

// Handle runs one operation. Ops: "load", "tick" (alarm fired), "finish"
// (arg: ResultMsg; its Response is the run's answer to a waiting caller),
// "rearm" (after the tick's tasks, or a waited run), "http" (arg: Request),
// "run_timeout" (arg: {"task"}: a waited run outlasted RunWaitTimeout).
func Handle(cfg Config, op, raw string, arg []byte, now time.Time) (d Decision) {
	s, corrupt := Load(cfg.Tasks, raw, now)
	if len(cfg.Tasks) == 0 {
		d.Events = append(d.Events, Event{"event": "scheduler.no_tasks", "level": "error"})
	}
	s.BreakerThreshold = DefaultBreakerThreshold
	if cfg.BreakerThreshold > 0 {
		s.BreakerThreshold = cfg.BreakerThreshold
	}
	if corrupt {
		d.Events = append(d.Events, Event{"event": "scheduler.state_corrupt", "level": "error"})
	}
	before := s.Counters()
	if s.LedgerSince == 0 {
		// The ledger starts here: a baseline fact carries the counters so far.
		s.LedgerSince = now.UnixMilli()
		d.Facts = append(d.Facts, ledger.New(objects.SourceScheduler, "scheduler.baseline", now, before, nil))
	}
	defer func() {
		if delta := ledger.Diff(s.Counters(), before); len(delta) > 0 {
			kind, data := "scheduler.adjust", map[string]any{"op": op}
			if op == "finish" {
				var r ResultMsg
				json.Unmarshal(arg, &r)
				kind = "scheduler.task_run"
				data = map[string]any{"task": r.Task, "ok": r.OK, "duration_ms": r.DurationMs,
					"summary": ledger.Truncate(r.Summary, maxFactText), "error": ledger.Truncate(r.Error, maxFactText), "rate_limited": r.RateLimited}
				if r.Detail != "" {
					data["detail"] = ledger.Truncate(r.Detail, maxFactText)
				}
			}
			d.Facts = append(d.Facts, ledger.New(objects.SourceScheduler, kind, now, delta, data))
			d.State = s.encode()
		}
	}()
	switch op {
	case "load":
		// A new instance of the object: runs the old one had in flight died
		// with it, so their leases must not hold the tasks back.
		for name, ts := range s.Tasks {
			if ts.LeaseUntil != 0 {
				ts.LeaseUntil = 0
				d.Events = append(d.Events, Event{"event": "scheduler.task.abandoned", "level": "warn", "task": name})
			}
		}
		// Every wake checks an alarm is set when something is due.
		if t := s.NextAlarm(s.registry, now); !t.IsZero() {
			d.EnsureAlarmAt = t.UnixMilli()
		}
	case "tick":
		var info struct {
			RetryCount int `json:"retry_count"`
		}
		json.Unmarshal(arg, &info)
		start, skipped := s.Due(s.registry, now)
		d.Run = start
		for _, name := range start {
			if state, at := s.Tasks[name].Breaker(now); state == BreakerHalfOpen {
				d.Events = append(d.Events, Event{"event": "scheduler.task.circuit_trial", "task": name, "half_open_at": at})
			}
		}
		ev := Event{"event": "scheduler.tick", "start": start, "retry_count": info.RetryCount}
		if info.RetryCount > 0 {
			ev["runtime_retry"] = true // the runtime retried a failed alarm
		}
		if len(skipped) > 0 {
			ev["skipped"] = skipped
		}
		d.Events = append(d.Events, ev)
		s.alarm(&d, now) // a safety alarm while the tasks run; rearm replaces it
	case "finish":
		var r ResultMsg
		if err := json.Unmarshal(arg, &r); err != nil {
			r = ResultMsg{Error: "undecodable result"}
		}
		d.Events = append(d.Events, s.Finish(r.Task, Result{
			OK: r.OK, Summary: r.Summary, Error: r.Error, Duration: time.Duration(r.DurationMs) * time.Millisecond,
			RateLimited: r.RateLimited, RetryAfter: time.Duration(r.RetryAfterS) * time.Second,
		}, now)...)
		d.Events = append(d.Events, s.AddTaskCounters(r.Task, r.Counters)...)
		if ts := s.Tasks[r.Task]; ts != nil {
			ts.LastD1RowsRead, ts.LastD1RowsWritten, ts.LastD1Queries, ts.LastSubrequests = r.D1RowsRead, r.D1RowsWritten, r.D1Queries, r.Subrequests
		}
		d.Response = s.runAnswer(r)
	case "rearm":
		s.alarm(&d, now)
	case "run_timeout":
		var w struct {
			Task string `json:"task"`
		}
		json.Unmarshal(arg, &w)
		d.Events = append(d.Events, Event{"event": "scheduler.run_wait_timeout", "task": w.Task, "wait_ms": RunWaitTimeout.Milliseconds()})
		d.Response = s.runState(202, w.Task, now, "", "")
	case "http":
		var req Request
		if err := json.Unmarshal(arg, &req); err != nil {
			d.Response = &Response{Status: 400, Body: FieldError{Error: "malformed forwarded request", Field: "request"}}
			return d
		}
		if req.Method == "POST" && req.Path == "/ledger/repair" {
			var delta map[string]int64
			d.Response, delta = s.repairLedger(req.Body, now, &d)
			for k, v := range delta {
				before[k] -= v // the repair brings the counters back to their facts: no fact carries it
			}
		} else {
			d.Response = s.http(req, now, &d)
		}
		if t := s.NextAlarm(s.registry, now); !t.IsZero() {
			d.EnsureAlarmAt = t.UnixMilli()
		}
	default:
		d.Response = &Response{Status: 500, Body: FieldError{Error: "unknown op " + strconv.Quote(op), Field: "op"}}
	}
	d.State = s.encode()
	return d
}

// maxFactText bounds a summary or error kept in a ledger fact.
const maxFactText = 300

// Counters are the scheduler's lifetime counters as the ledger sums them:
// runs and failures per task (retired tasks included).
func (s *State) Counters() map[string]int64 {
	out := map[string]int64{}
	for k, v := range s.Retired {
		out[k] += v
	}
	for name, ts := range s.Tasks {
		out[runsCounter(name)] += ts.Runs
		out[failuresCounter(name)] += ts.Failures
	}
	for k, v := range s.TaskCounters {
		out[k] += v
	}
	return out
}

// repairLedger is POST /ledger/repair: reconciliation found the counters
// off their facts, which are the truth (durable/ledger.Repair). delta is
// what the counters lost (nil when nothing was repaired).
func (s *State) repairLedger(body string, now time.Time, d *Decision) (*Response, map[string]int64) {
	rep, field, msg := ledger.ParseRepair([]byte(body))
	if field != "" {
		return &Response{Status: 400, Body: FieldError{Error: msg, Field: field}}, nil
	}
	repaired, unknown := rep.Apply(s.Counters())
	if unknown != "" {
		return &Response{Status: 409, Body: FieldError{Error: "the scheduler keeps no counter " + strconv.Quote(unknown), Field: "delta"}}, nil
	}
	for k, v := range repaired {
		s.setCounter(k, v)
	}
	f := rep.Fact(objects.SourceScheduler, now)
	d.Facts = append(d.Facts, f)
	return &Response{Status: 200, Body: f}, rep.Delta
}

// setCounter moves counter k (as Counters names it) to v: the difference
// goes to the task's runs or failures, else to its reported counter, else
// to the retired tasks' counters.
func (s *State) setCounter(k string, v int64) {
	d := v - s.Counters()[k]
	for name, ts := range s.Tasks {
		switch k {
		case runsCounter(name):
			ts.Runs += d
			return
		case failuresCounter(name):
			ts.Failures += d
			return
		}
	}
	if _, ok := s.TaskCounters[k]; ok {
		s.TaskCounters[k] += d
		return
	}
	if s.Retired == nil {
		s.Retired = map[string]int64{}
	}
	s.Retired[k] += d
}

// Bounds of the task-reported counters.
const (
	// MaxTaskCounters caps the distinct task counters kept (state size).
	MaxTaskCounters = 32
	// maxTaskCounterName caps a counter's name as a task reports it.
	maxTaskCounterName = 48
)

// AddTaskCounters adds a registered task's reported counters (positive
// deltas; zeros are skipped, names of 1..maxTaskCounterName bytes) to its lifetime counters
// as "<task>.<name>"; anything else is refused with an event, never kept.
func (s *State) AddTaskCounters(task string, deltas map[string]int64) []Event {
	if len(deltas) == 0 {
		return nil
	}
	if _, ok := s.Tasks[task]; !ok {
		return []Event{{"event": "scheduler.task_counters_refused", "level": "warn", "task": task, "reason": "unknown task"}}
	}
	var ev []Event
	names := make([]string, 0, len(deltas))
	for k := range deltas {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		v, key := deltas[k], task+"."+k
		_, known := s.TaskCounters[key]
		switch {
		case v == 0:
		case v < 0 || k == "" || len(k) > maxTaskCounterName || strings.HasPrefix(k, "_") || strings.ContainsAny(k, " ."):
			ev = append(ev, Event{"event": "scheduler.task_counters_refused", "level": "warn", "task": task, "counter": ledger.Truncate(k, maxTaskCounterName), "reason": "bad name or delta"})
		case !known && len(s.TaskCounters) >= MaxTaskCounters:
			ev = append(ev, Event{"event": "scheduler.task_counters_refused", "level": "warn", "task": task, "counter": k, "reason": "too many counters"})
		default:
			if s.TaskCounters == nil {
				s.TaskCounters = map[string]int64{}
			}
			s.TaskCounters[key] += v
		}
	}
	return ev
}

func runsCounter(task string) string     { return "runs." + task }
func failuresCounter(task string) string { return "failures." + task }

// Control is a pause/resume/run-now body.
type Control struct {
	Task   string `json:"task"`
	Reason string `json:"reason"`
	Until  string `json:"until"` // RFC 3339; empty = until resumed
	// Wait (run only, one task): run it now and answer with its result,
	// or its state after RunWaitTimeout.
	Wait bool `json:"wait"`
}

// TaskAll names every task in a run request ({"task": "all"}).
const TaskAll = "all"

// ParseControl validates a control body against the registry tasks (nil:
// task names are not checked, as by a caller that does not know them; the
// scheduler checks them); task "" means the whole scheduler
// (pause/resume only). /run (alias /run-now) needs a task, or "all";
// "wait": true is for /run of one task.
func ParseControl(tasks []Task, path, body string, now time.Time) (Control, time.Time, *FieldError) {
	var c Control
	if body != "" {
		dec := json.NewDecoder(strings.NewReader(body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&c); err != nil {
			fe := object.DecodeError(err)
			if fe.Field == "body" && fe.Error != "body: not valid JSON" {
				fe.Error = "body must be a JSON object with task, reason, until, wait"
			}
			return c, time.Time{}, fe
		}
	}
	isRun := path == "/run" || path == "/run-now"
	if len(tasks) > 0 && c.Task != "" && !known(tasks, c.Task) && !(isRun && c.Task == TaskAll) {
		return c, time.Time{}, &FieldError{Error: fmt.Sprintf("unknown task %q (have: %v, or %q to run every task)", c.Task, names(tasks), TaskAll), Field: "task"}
	}
	if isRun && c.Task == "" {
		return c, time.Time{}, &FieldError{Error: `run needs a task (or "all")`, Field: "task"}
	}
	if c.Wait && !isRun {
		return c, time.Time{}, &FieldError{Error: "wait is for run only", Field: "wait"}
	}
	if c.Wait && c.Task == TaskAll {
		return c, time.Time{}, &FieldError{Error: `wait runs one task, not "all"`, Field: "wait"}
	}
	var until time.Time
	if c.Until != "" {
		t, err := time.Parse(time.RFC3339, c.Until)
		if err != nil || !t.After(now) {
			return c, time.Time{}, &FieldError{Error: "until must be a future RFC 3339 time", Field: "until"}
		}
		until = t
	}
	if len(c.Reason) > 500 {
		return c, time.Time{}, &FieldError{Error: "reason is at most 500 characters", Field: "reason"}
	}
	return c, until, nil
}

func (s *State) http(req Request, now time.Time, d *Decision) *Response {
	switch {
	case req.Method == "GET" && req.Path == "/status":
		return &Response{Status: 200, Body: s.Status(now)}
	case req.Method == "GET" && req.Path == "/ledger":
		// The counters the ledger's facts sum to (reconciliation).
		return &Response{Status: 200, Body: map[string]any{"source": objects.SourceScheduler, "counters": s.Counters()}}
	case req.Method == "POST" && (req.Path == "/pause" || req.Path == "/resume" || req.Path == "/run" || req.Path == "/run-now"):
		c, until, fe := ParseControl(s.registry, req.Path, req.Body, now)
		if fe != nil {
			return &Response{Status: 400, Body: fe}
		}
		switch req.Path {
		case "/pause":
			reason := c.Reason
			if reason == "" {
				reason = "paused by operator"
			}
			s.PauseTask(c.Task, reason, until, now)
		case "/resume":
			s.Resume(c.Task)
		case "/run", "/run-now":
			if c.Wait {
				return s.runWait(c.Task, now, d)
			}
			if c.Task == TaskAll {
				for _, t := range s.registry {
					s.RunNow(t.Name, now)
				}
			} else {
				s.RunNow(c.Task, now)
			}
			d.AlarmAt = now.Add(MinRearm).UnixMilli()
		}
		d.Events = append(d.Events, Event{"event": "scheduler.control", "action": req.Path[1:], "task": c.Task, "reason": c.Reason})
		return &Response{Status: 200, Body: s.Status(now)}
	}
	return &Response{Status: 404, Body: FieldError{Error: "no such scheduler route: " + req.Method + " " + req.Path, Field: "path"}}
}

// TaskStatus is one task for operators.
type TaskStatus struct {
	Name    string `json:"name"`
	EveryS  int64  `json:"every_s"`
	NextDue string `json:"next_due"`
	// Breaker is BreakerClosed, BreakerOpen or BreakerHalfOpen;
	// BreakerHalfOpenAt (unix ms) is when an open breaker half-opens, or
	// when a half-open one did.
	Breaker           string `json:"breaker"`
	BreakerHalfOpenAt int64  `json:"breaker_half_open_at,omitempty"`
	*TaskState
}

// StatusView is GET /v1/scheduler/status.
type StatusView struct {
	Pause *Pause       `json:"pause,omitempty"`
	Tasks []TaskStatus `json:"tasks"`
	Now   string       `json:"now"`
}

// Status reports every task.
func (s *State) Status(now time.Time) StatusView {
	v := StatusView{Pause: s.Pause, Now: now.UTC().Format(time.RFC3339)}
	for _, t := range s.registry {
		ts := s.Tasks[t.Name]
		breaker, halfOpenAt := ts.Breaker(now)
		v.Tasks = append(v.Tasks, TaskStatus{Name: t.Name, EveryS: int64(t.Every.Seconds()),
			NextDue: time.UnixMilli(ts.NextDue).UTC().Format(time.RFC3339), Breaker: breaker, BreakerHalfOpenAt: halfOpenAt, TaskState: ts})
	}
	return v
}

func known(tasks []Task, name string) bool {
	for _, t := range tasks {
		if t.Name == name {
			return true
		}
	}
	return false
}

func names(tasks []Task) []string {
	var out []string
	for _, t := range tasks {
		out = append(out, t.Name)
	}
	sort.Strings(out)
	return out
}
