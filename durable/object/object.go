// Package object is the protocol between the JS shim (shim/) and the Go code
// that decides for each Durable Object. The shim calls a Go export with the
// object's state and an operation; Go answers with a Decision the shim
// applies: persist the state, append the ledger facts in the same
// transaction, set the alarm, run the planned I/O, answer the HTTP call.
//
// Every Go export answers JSON: {"ok": value} on success, {"error": "..."}
// on failure (shim/go.mjs throws that error in one place). Envelope and
// Fail build both.
package object

import (
	"encoding/json"
	"reflect"

	"storecrawl/durable/ledger"
)

// Decision is what the shim must do after one call into a Go-decided
// object. Run is the object's own plan of work (the controller's run plan,
// the scheduler's task names); its outcome comes back as a later op.
type Decision[Run any] struct {
	// State, when set, is the new state to persist (one storage put).
	State string `json:"state,omitempty"`
	// AlarmAt, when set, replaces the work alarm.
	AlarmAt int64 `json:"alarm_at,omitempty"`
	// EnsureAlarmAt, when set, is used only if no work alarm is set: the
	// loop restarts itself after eviction or a lost alarm, without racing a
	// set one.
	EnsureAlarmAt int64 `json:"ensure_alarm_at,omitempty"`
	// AlarmBy, when set, brings the work alarm forward to this time if it
	// is unset or later.
	AlarmBy int64 `json:"alarm_by,omitempty"`
	// Run, when set, is the work to perform now.
	Run Run `json:"run,omitempty"`
	// Response answers an HTTP call.
	Response *Response `json:"response,omitempty"`
	// Events are log events (one JSON line each) describing what happened;
	// the Go export logs them and does not send them to the shim.
	Events []Event `json:"events,omitempty"`
	// Facts go to the object's ledger (durable/ledger), in the same storage
	// transaction as State: the counters and their history never disagree.
	Facts []ledger.Fact `json:"facts,omitempty"`
}

// Merge folds o into d: set fields of o win, events and facts add up.
func (d *Decision[Run]) Merge(o Decision[Run]) {
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
	if !reflect.ValueOf(&o.Run).Elem().IsZero() {
		d.Run = o.Run
	}
	if o.Response != nil {
		d.Response = o.Response
	}
	d.Events = append(d.Events, o.Events...)
	d.Facts = append(d.Facts, o.Facts...)
}

// Request is an HTTP call forwarded to an object.
type Request struct {
	Method string `json:"method"`
	Path   string `json:"path"`
	Body   string `json:"body"`
}

// Response is an HTTP answer: a status and a JSON body.
type Response struct {
	Status int `json:"status"`
	Body   any `json:"body"`
}

// FieldError is a 400 body naming the offending field.
type FieldError struct {
	Error string `json:"error"`
	Field string `json:"field"`
}

// ErrorResponse is an error answer naming the field.
func ErrorResponse(status int, field, msg string) *Response {
	return &Response{Status: status, Body: &FieldError{Error: msg, Field: field}}
}

// Event is one structured log line: "event" names it, the rest are fields.
type Event map[string]any

// Envelope is a Go export's success answer: {"ok": v}.
func Envelope(v any) string {
	b, err := json.Marshal(struct {
		OK any `json:"ok"`
	}{v})
	if err != nil {
		return Fail(err.Error())
	}
	return string(b)
}

// Fail is a Go export's failure answer: {"error": msg}.
func Fail(msg string) string {
	b, _ := json.Marshal(struct {
		Error string `json:"error"`
	}{msg})
	return string(b)
}
