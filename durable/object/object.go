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
	"errors"
	"io"
	"reflect"
	"strconv"
	"strings"

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
	// WaitMs, when set with Run on an HTTP call, asks the shim to perform
	// Run now and answer the call with the outcome's decision (a later op's
	// Response), if it comes within WaitMs; else the object's answer while
	// the work goes on. The work finishes either way.
	WaitMs int64 `json:"wait_ms,omitempty"`
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
	if o.WaitMs != 0 {
		d.WaitMs = o.WaitMs
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

// DecodeError turns an encoding/json decode error into a 400 body that
// names the field and the rule, never a Go type: a value of the wrong type
// is {"field": <its JSON name>, "error": "<field> must be a <kind>"}, an
// unknown field names itself, bad syntax (or a cut body) is "body: not
// valid JSON", anything else "body must be a JSON object".
func DecodeError(err error) *FieldError {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te) && te.Field != "":
		return &FieldError{Field: te.Field, Error: te.Field + " must be " + jsonKind(te.Type)}
	case errors.As(err, &se), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return &FieldError{Field: "body", Error: "body: not valid JSON"}
	}
	// encoding/json's only word for an unknown field (DisallowUnknownFields).
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		if f, uerr := strconv.Unquote(name); uerr == nil {
			return &FieldError{Field: f, Error: "unknown field " + strconv.Quote(f)}
		}
	}
	return &FieldError{Field: "body", Error: "body must be a JSON object"}
}

// jsonKind names what a Go type holds in JSON terms.
func jsonKind(t reflect.Type) string {
	if t == nil {
		return "a JSON value"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "a JSON value"
}
