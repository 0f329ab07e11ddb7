package scheduler

import "time"

// RunWaitTimeout bounds how long POST /run with "wait": true holds the
// caller before answering 202 with the task's state (the run goes on under
// its lease and is recorded as any other). It stays under the 30 s most
// HTTP clients and proxies give a request, and far under the LeaseTimeout
// and the 15 min an alarm-driven run may take: a long task still runs to
// its end, the caller just stops waiting.
const RunWaitTimeout = 25 * time.Second

// StartNow starts a task at once for a caller that waits for its result.
// It takes the same lease as a start from Due (a task never runs twice at
// once) and overrides the backoff as RunNow does, but not a pause. A task
// that cannot start is left as it was, with the reason.
func (s *State) StartNow(tasks []Task, name string, now time.Time) (Skip, bool) {
	ts := s.Tasks[name]
	var task *Task
	for i := range tasks {
		if tasks[i].Name == name {
			task = &tasks[i]
		}
	}
	if ts == nil || task == nil {
		return "", false
	}
	switch {
	case s.Pause.active(now):
		return SkipGlobalPause, false
	case ts.Pause.active(now):
		return SkipPaused, false
	case ts.LeaseUntil > now.UnixMilli():
		return SkipRunning, false
	}
	ts.NextRunAfter = 0
	s.begin(*task, ts, now)
	return "", true
}

// RunAnswer is the answer to POST /run with "wait": true once the run has
// finished: its outcome and what it cost (the counters the run records).
type RunAnswer struct {
	Task          string `json:"task"`
	OK            bool   `json:"ok"`
	Summary       string `json:"summary"`
	Error         string `json:"error,omitempty"`
	DurationMs    int64  `json:"duration_ms"`
	D1RowsRead    int64  `json:"d1_rows_read"`
	D1RowsWritten int64  `json:"d1_rows_written"`
	D1Queries     int64  `json:"d1_queries"`
	Subrequests   int    `json:"subrequests"`
}

// RunState is the answer to POST /run with "wait": true when the run has
// not finished within RunWaitTimeout (202) or cannot start (409): the
// task's current record, as GET /status shows it.
type RunState struct {
	Task    string     `json:"task"`
	Running bool       `json:"running"`
	Error   string     `json:"error,omitempty"`
	Reason  Skip       `json:"reason,omitempty"`
	State   TaskStatus `json:"state"`
}

// runAnswer is a finished run's answer, from the result as recorded.
func (s *State) runAnswer(r ResultMsg) *Response {
	a := RunAnswer{Task: r.Task, OK: r.OK, Summary: r.Summary, Error: r.Error, DurationMs: r.DurationMs}
	if ts := s.Tasks[r.Task]; ts != nil {
		a.DurationMs = ts.LastDurationMs
		a.D1RowsRead, a.D1RowsWritten, a.D1Queries, a.Subrequests = ts.LastD1RowsRead, ts.LastD1RowsWritten, ts.LastD1Queries, ts.LastSubrequests
	}
	if a.OK {
		a.Error = ""
	} else if a.Error == "" {
		a.Error = "failed without an error message"
	}
	return &Response{Status: 200, Body: a}
}

// runState is a task's state as a RunState answer with the given status.
func (s *State) runState(status int, name string, now time.Time, why Skip, msg string) *Response {
	v := RunState{Task: name, Error: msg, Reason: why}
	for _, t := range s.registry {
		if t.Name == name {
			ts := s.Tasks[name]
			v.Running = ts.LeaseUntil > now.UnixMilli()
			v.State = TaskStatus{Name: t.Name, EveryS: int64(t.Every.Seconds()),
				NextDue: time.UnixMilli(ts.NextDue).UTC().Format(time.RFC3339), TaskState: ts}
		}
	}
	return &Response{Status: status, Body: v}
}

// runWait starts the task for a waiting caller: the decision runs it now and
// waits RunWaitTimeout for its "finish" (whose Response is the answer);
// past that, "run_timeout" answers. A task that cannot start answers 409
// with its state and changes nothing.
func (s *State) runWait(task string, now time.Time, d *Decision) *Response {
	why, ok := s.StartNow(s.registry, task, now)
	if !ok {
		msg := map[Skip]string{SkipRunning: "task is already running", SkipPaused: "task is paused", SkipGlobalPause: "scheduler is paused"}[why]
		d.Events = append(d.Events, Event{"event": "scheduler.run_refused", "task": task, "reason": string(why)})
		return s.runState(409, task, now, why, msg)
	}
	d.Run = []string{task}
	d.WaitMs = RunWaitTimeout.Milliseconds()
	d.Events = append(d.Events, Event{"event": "scheduler.control", "action": "run", "task": task, "wait": true})
	// The answer if the shim cannot wait: the run is under way.
	return s.runState(202, task, now, "", "")
}
