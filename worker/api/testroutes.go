package api

import (
	"encoding/json"
	"net/http"

	"storecrawl/worker/logx"
)

// setFaults is the test-only POST /__test/faults:
// {"facts_fail_before_write": true|false}.
func (s *Server) setFaults(w http.ResponseWriter, r *http.Request) {
	var body struct {
		FailBeforeWrite *bool `json:"facts_fail_before_write"`
	}
	const msg = "body must be {\"facts_fail_before_write\": true|false}"
	if !decodeOptionalBody(w, r, &body, "facts_fail_before_write", msg) {
		return
	}
	if body.FailBeforeWrite == nil {
		writeError(w, http.StatusBadRequest, "facts_fail_before_write", msg)
		return
	}
	s.TestFaults.SetFailBeforeWrite(*body.FailBeforeWrite)
	logx.Event("test.faults", map[string]any{"facts_fail_before_write": *body.FailBeforeWrite})
	writeJSON(w, http.StatusOK, map[string]any{"facts_fail_before_write": *body.FailBeforeWrite})
}

// injectEvent is the test-only POST /__test/events: the body (a JSON
// object, not checked further: the queue consumer judges it) goes to the
// EVENTS queue as it is.
func (s *Server) injectEvent(w http.ResponseWriter, r *http.Request) {
	body, ok := readBody(w, r, MaxControlBody)
	if !ok {
		return
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(body, &obj) != nil {
		writeError(w, http.StatusBadRequest, "body", "body must be a JSON object")
		return
	}
	if err := s.TestEvents.Send(r.Context(), string(body)); err != nil {
		logx.Err("test.event_send_failed", err, nil)
		writeError(w, http.StatusBadGateway, "", "queue send failed")
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]any{"queued": true})
}
