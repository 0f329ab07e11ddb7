package enrichment

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"time"
)

// Loop timing.
const (
	// StartDelay is how soon the first tick runs after a start, reset or the
	// first use of a fresh controller.
	StartDelay = time.Second
	// RunTimeout is how long a run may stay unreported before it is treated
	// as abandoned (the isolate died mid-run). It is also the safety alarm
	// set before each run, so the loop continues even if the run never returns.
	RunTimeout = 3 * time.Minute
	// IdleInterval is the pause when there was no work: the queue refills
	// slowly (cron discovery), so polling fast would only cost D1 reads.
	IdleInterval = MaxInterval
)

// Decision is what the shim must do after one call into the controller.
type Decision struct {
	// State, when set, is the new state to persist (one storage put).
	State string `json:"state,omitempty"`
	// AlarmAt, when set, replaces the alarm.
	AlarmAt int64 `json:"alarm_at,omitempty"`
	// EnsureAlarmAt, when set, is used only if no alarm is set: the loop
	// restarts itself after eviction or a lost alarm, without racing a set one.
	EnsureAlarmAt int64 `json:"ensure_alarm_at,omitempty"`
	// AlarmBy, when set, brings the alarm forward to this time if it is
	// unset or later (a tune to a shorter interval takes effect now, not
	// after the old, longer interval).
	AlarmBy int64 `json:"alarm_by,omitempty"`
	// Run, when set, is the I/O to perform; its outcome comes back as "tick_done".
	Run *RunPlan `json:"run,omitempty"`
	// Response answers an HTTP call.
	Response *Response `json:"response,omitempty"`
	// Events are log events (one JSON line each) describing what happened.
	Events []Event `json:"events,omitempty"`
}

// Response is an HTTP answer: a status and a JSON body.
type Response struct {
	Status int `json:"status"`
	Body   any `json:"body"`
}

// Event is one structured log line.
type Event map[string]any

// Request is an HTTP call forwarded to the controller.
type Request struct {
	Method string `json:"method"`
	Path   string `json:"path"`
	Body   string `json:"body"`
}

// TickRequest carries alarm metadata.
type TickRequest struct {
	RetryCount int `json:"retry_count"`
}

// Handle runs one operation against the stored state at now. Ops:
// "load" (object constructed), "http" (arg: Request), "tick" (alarm fired;
// arg: TickRequest), "tick_done" (arg: RunOutcome).
func Handle(cfg Config, op, rawState string, arg []byte, now time.Time) Decision {
	s, corrupt := LoadState(rawState, now)
	var d Decision
	if corrupt {
		d.Events = append(d.Events, Event{"event": "enrichment.state_corrupt", "level": "error"})
		d.State = s.Encode(now)
	}
	switch op {
	case "load":
		d.merge(s.onLoad(now))
	case "http":
		var req Request
		if err := json.Unmarshal(arg, &req); err != nil {
			d.Response = errorResponse(400, "request", "malformed forwarded request")
			return d
		}
		d.merge(s.onHTTP(req, now))
	case "tick":
		var tr TickRequest
		_ = json.Unmarshal(arg, &tr) // metadata only; absent is fine
		d.merge(s.onTick(tr, now))
	case "tick_done":
		var o RunOutcome
		if err := json.Unmarshal(arg, &o); err != nil {
			o = RunOutcome{Error: "undecodable run outcome: " + err.Error()}
		}
		d.merge(s.onTickDone(o, now, cfg))
	default:
		d.Events = append(d.Events, Event{"event": "enrichment.unknown_op", "level": "error", "op": op})
		d.Response = errorResponse(500, "op", "unknown operation "+strconv.Quote(op))
	}
	return d
}

func (d *Decision) merge(o Decision) {
	if o.State != "" {
		d.State = o.State
	}
	if o.AlarmAt != 0 {
		d.AlarmAt = o.AlarmAt
	}
	if o.EnsureAlarmAt != 0 {
		d.EnsureAlarmAt = o.EnsureAlarmAt
	}
	if o.AlarmBy != 0 {
		d.AlarmBy = o.AlarmBy
	}
	if o.Run != nil {
		d.Run = o.Run
	}
	if o.Response != nil {
		d.Response = o.Response
	}
	d.Events = append(d.Events, o.Events...)
}

// ensure returns the self-start alarm for a running loop.
func (s State) ensure(now time.Time) int64 {
	if !s.Running {
		return 0
	}
	return now.Add(StartDelay).UnixMilli()
}

func (s State) onLoad(now time.Time) Decision {
	return Decision{State: s.Encode(now), EnsureAlarmAt: s.ensure(now)}
}

func (s State) onTick(tr TickRequest, now time.Time) Decision {
	ev := Event{"event": "enrichment.tick", "retry_count": tr.RetryCount}
	if !s.Running {
		// stop only flips the flag; this alarm sees it and does not re-arm.
		ev["action"] = "stopped"
		return Decision{Events: []Event{ev}}
	}
	if s.RunStartedAt != 0 {
		if now.Sub(time.UnixMilli(s.RunStartedAt)) < RunTimeout {
			ev["action"] = "run_in_flight"
			return Decision{AlarmAt: time.UnixMilli(s.RunStartedAt).Add(RunTimeout).UnixMilli(), Events: []Event{ev}}
		}
		ev["abandoned_run_started_at"] = s.RunStartedAt
		s.RunStartedAt = 0
	}
	if s.InCooldown(now) {
		// Wake exactly when the cooldown ends, or at the interval if sooner,
		// so status stays fresh and the chain of alarms is never broken.
		next := now.Add(s.Interval()).UnixMilli()
		if s.CooldownUntil < next {
			next = s.CooldownUntil
		}
		ev["action"] = "cooldown"
		ev["cooldown_remaining_s"] = (s.CooldownUntil - now.UnixMilli() + 999) / 1000
		return Decision{State: s.Encode(now), AlarmAt: next, Events: []Event{ev}}
	}
	s.RunStartedAt = now.UnixMilli()
	ev["action"] = "run"
	ev["batch_size"] = s.BatchSize
	return Decision{
		State:   s.Encode(now),
		AlarmAt: now.Add(RunTimeout).UnixMilli(), // safety net; tick_done replaces it
		Run: &RunPlan{
			TickAt:       now.UnixMilli(),
			BatchSize:    s.BatchSize,
			ChunkItems:   ChunkItems,
			ChunkPauseMs: ChunkPause.Milliseconds(),
		},
		Events: []Event{ev},
	}
}

func (s State) onTickDone(o RunOutcome, now time.Time, cfg Config) Decision {
	s.RunStartedAt = 0
	s.Totals.Ticks++
	byClass := s.Record(o, now)
	sum := &TickSummary{
		At: now.UnixMilli(), Picked: o.Picked, ByClass: byClass, DurationMs: o.DurationMs,
		BatchBefore: s.BatchSize, IntervalMsB: s.IntervalMs, Error: o.Error,
	}
	var next time.Duration
	var cooldownEvent Event
	switch {
	case o.Error != "":
		sum.Zone = "run_error"
		next = s.Interval()
	case o.Picked == 0:
		sum.Zone = "idle"
		next = IdleInterval
	default:
		s.LastTickAt = now.UnixMilli()
		rate, samples := s.SuccessRate(now) // before Adapt: a cooldown clears the window
		sum.Zone = string(s.Adapt(now, cfg))
		if sum.Zone == string(ZoneCritical) {
			cooldownEvent = Event{
				"event": "enrichment.cooldown", "level": "warn", "success_rate": round3(rate),
				"samples": samples, "cooldown_until": s.CooldownUntil, "cooldown_s": cfg.Cooldown.Seconds(),
			}
		}
		next = s.Interval()
	}
	if ra := retryAfter(o); ra > next {
		next = ra // the upstream told us when it will take requests again
	}
	if s.InCooldown(now) {
		// Wake when the cooldown ends (or earlier, at the interval).
		next = min(next, time.UnixMilli(s.CooldownUntil).Sub(now))
	}
	sum.BatchAfter, sum.IntervalMsA = s.BatchSize, s.IntervalMs
	s.LastTick = sum
	rate, samples := s.SuccessRate(now)
	ev := Event{
		"event": "enrichment.tick_done", "picked": o.Picked, "by_class": byClass,
		"zone": sum.Zone, "success_rate": round3(rate), "samples": samples,
		"batch_size": s.BatchSize, "interval_ms": s.IntervalMs, "duration_ms": o.DurationMs,
	}
	events := []Event{ev}
	if o.Error != "" {
		ev["level"] = "error"
		ev["error"] = o.Error
	}
	if cooldownEvent != nil {
		events = append(events, cooldownEvent)
	}
	d := Decision{State: s.Encode(now), Events: events}
	if s.Running { // a stop during the run is honoured here
		d.AlarmAt = now.Add(next).UnixMilli()
	}
	return d
}

func (s State) onHTTP(req Request, now time.Time) Decision {
	switch {
	case req.Method == "GET" && req.Path == "/status":
		return Decision{Response: &Response{Status: 200, Body: s.Status(now)}, EnsureAlarmAt: s.ensure(now)}
	case req.Method == "POST" && req.Path == "/start":
		s.Running = true
		s.CooldownUntil = 0
		return s.mutated(now, "start", now.Add(StartDelay).UnixMilli())
	case req.Method == "POST" && req.Path == "/stop":
		s.Running = false
		return s.mutated(now, "stop", 0)
	case req.Method == "POST" && req.Path == "/reset":
		s = DefaultState()
		return s.mutated(now, "reset", now.Add(StartDelay).UnixMilli())
	case req.Method == "POST" && req.Path == "/tune":
		t, ferr := ParseTune([]byte(req.Body))
		if ferr != nil {
			return Decision{Response: &Response{Status: 400, Body: ferr}}
		}
		if t.BatchSize != nil {
			s.BatchSize = *t.BatchSize
		}
		if t.IntervalMs != nil {
			s.IntervalMs = *t.IntervalMs
		}
		d := s.mutated(now, "tune", 0)
		if s.Running {
			d.AlarmBy = now.Add(s.Interval()).UnixMilli()
		}
		return d
	}
	return Decision{Response: errorResponse(404, "path", "no such controller route: "+req.Method+" "+req.Path)}
}

// mutated persists a control change and answers with the new status.
func (s State) mutated(now time.Time, action string, alarmAt int64) Decision {
	d := Decision{
		State:    s.Encode(now),
		AlarmAt:  alarmAt,
		Response: &Response{Status: 200, Body: s.Status(now)},
		Events: []Event{{
			"event": "enrichment.control", "action": action, "running": s.Running,
			"batch_size": s.BatchSize, "interval_ms": s.IntervalMs,
		}},
	}
	if alarmAt == 0 {
		d.EnsureAlarmAt = s.ensure(now)
	}
	return d
}

// Tune is a manual override of the adaptive parameters.
type Tune struct {
	BatchSize  *int   `json:"batch_size,omitempty"`
	IntervalMs *int64 `json:"interval_ms,omitempty"`
}

// FieldError is a 400 body naming the offending field.
type FieldError struct {
	Error string `json:"error"`
	Field string `json:"field"`
}

func errorResponse(status int, field, msg string) *Response {
	return &Response{Status: status, Body: &FieldError{Error: msg, Field: field}}
}

// ParseTune validates a tune body: a JSON object with batch_size and/or
// interval_ms, integers within the controller's bounds. Out-of-range values
// are rejected, not clamped, so the operator learns the bounds.
func ParseTune(body []byte) (Tune, *FieldError) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil || fields == nil {
		return Tune{}, &FieldError{Error: "body must be a JSON object", Field: "body"}
	}
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var t Tune
	for _, k := range keys {
		raw := fields[k]
		switch k {
		case "batch_size":
			v, ok := parseInt(raw)
			if !ok || v < MinBatch || v > MaxBatch {
				return Tune{}, &FieldError{Field: k, Error: fmt.Sprintf("batch_size must be an integer from %d to %d", MinBatch, MaxBatch)}
			}
			n := int(v)
			t.BatchSize = &n
		case "interval_ms":
			v, ok := parseInt(raw)
			lo, hi := MinInterval.Milliseconds(), MaxInterval.Milliseconds()
			if !ok || v < lo || v > hi {
				return Tune{}, &FieldError{Field: k, Error: fmt.Sprintf("interval_ms must be an integer from %d to %d", lo, hi)}
			}
			t.IntervalMs = &v
		default:
			return Tune{}, &FieldError{Field: k, Error: "unknown field " + strconv.Quote(k) + " (allowed: batch_size, interval_ms)"}
		}
	}
	if t.BatchSize == nil && t.IntervalMs == nil {
		return Tune{}, &FieldError{Field: "body", Error: "nothing to tune: give batch_size and/or interval_ms"}
	}
	return t, nil
}

func parseInt(raw json.RawMessage) (int64, bool) {
	var f float64
	if err := json.Unmarshal(raw, &f); err != nil {
		return 0, false
	}
	if f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, false
	}
	return int64(f), true
}

// Status is the operator's view at GET /v1/enrichment/status.
type Status struct {
	Running            bool         `json:"running"`
	InCooldown         bool         `json:"in_cooldown"`
	CooldownRemainingS int64        `json:"cooldown_remaining_s"`
	RunInFlight        bool         `json:"run_in_flight"`
	BatchSize          int          `json:"batch_size"`
	IntervalMs         int64        `json:"interval_ms"`
	Totals             Totals       `json:"totals"`
	Rolling            Rolling      `json:"rolling"`
	ProjectedPerHour   int64        `json:"projected_per_hour"`
	ProjectedPerDay    int64        `json:"projected_per_day"`
	LastTickAt         *string      `json:"last_tick_at"`
	LastTick           *TickSummary `json:"last_tick,omitempty"`
	Now                string       `json:"now"`
}

// Rolling describes the metrics window.
type Rolling struct {
	WindowS     int     `json:"window_s"`
	SuccessRate float64 `json:"success_rate"`
	// SampleSize is the number of upstream exchanges behind SuccessRate;
	// below MinSamples the controller does not adapt.
	SampleSize           int     `json:"sample_size"`
	Confidence           string  `json:"confidence"`
	Dispatched           int     `json:"dispatched"`
	Completed            int     `json:"completed"`
	Failed               int     `json:"failed"`
	RateLimited          int     `json:"rate_limited"`
	ItemErrors           int     `json:"item_errors"`
	CompletionsPerMinute float64 `json:"completions_per_minute"`
}

// Status reports the controller at now.
func (s State) Status(now time.Time) Status {
	rate, samples := s.SuccessRate(now)
	w := s.Window(now)
	cpm := s.completionsPerMinute(now, w)
	st := Status{
		Running:     s.Running,
		InCooldown:  s.InCooldown(now),
		RunInFlight: s.RunStartedAt != 0,
		BatchSize:   s.BatchSize,
		IntervalMs:  s.IntervalMs,
		Totals:      s.Totals,
		Rolling: Rolling{
			WindowS: MetricsWindowMinutes * 60, SuccessRate: round3(rate), SampleSize: samples,
			Confidence: confidence(samples), Dispatched: w.Dispatched, Completed: w.Completed,
			Failed: w.Failed, RateLimited: w.RateLimited, ItemErrors: w.ItemErrors,
			CompletionsPerMinute: round3(cpm),
		},
		LastTick: s.LastTick,
		Now:      now.UTC().Format(time.RFC3339Nano),
	}
	if st.InCooldown {
		st.CooldownRemainingS = (s.CooldownUntil - now.UnixMilli() + 999) / 1000
	} else {
		// A controller in cooldown completes nothing: project zero, not the past.
		st.ProjectedPerHour = int64(math.Round(cpm * 60))
		st.ProjectedPerDay = int64(math.Round(cpm * 60 * 24))
	}
	if s.LastTickAt != 0 {
		t := time.UnixMilli(s.LastTickAt).UTC().Format(time.RFC3339Nano)
		st.LastTickAt = &t
	}
	return st
}

// completionsPerMinute divides the window's completions by the minutes the
// window actually covers (at least one), so a controller that started two
// minutes ago is not under-reported by averaging over five.
func (s State) completionsPerMinute(now time.Time, w Bucket) float64 {
	if w.Completed == 0 {
		return 0
	}
	start := now.Add(-MetricsWindowMinutes * time.Minute).UnixMilli()
	oldest := now.UnixMilli()
	for _, b := range s.Metrics {
		if b.Minute >= start && b.Minute < oldest {
			oldest = b.Minute
		}
	}
	minutes := float64(now.UnixMilli()-oldest) / float64(time.Minute.Milliseconds())
	minutes = math.Max(1, math.Min(MetricsWindowMinutes, minutes))
	return float64(w.Completed) / minutes
}

func confidence(samples int) string {
	switch {
	case samples == 0:
		return "none"
	case samples < MinSamples:
		return "low"
	case samples < 20:
		return "medium"
	default:
		return "high"
	}
}

func round3(f float64) float64 { return math.Round(f*1000) / 1000 }
