package api

import (
	"net/http"
	"strings"
	"time"

	pages "storecrawl/worker/enrichment"
	"storecrawl/worker/logx"
)

// startReparse starts a re-parse of stored pages, {"scope": "all" |
// "failed" | "incomplete"} (default "failed"), and has the scheduler run
// its first batches at once. No upstream request is made.
func (s *Server) startReparse(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Scope string `json:"scope"`
	}
	if !decodeOptionalBody(w, r, &body, "scope", "body must be {\"scope\": \"all\"|\"failed\"|\"incomplete\"}") {
		return
	}
	if body.Scope == "" {
		body.Scope = pages.ReparseFailed
	}
	if !contains(pages.ReparseScopes, body.Scope) {
		writeError(w, http.StatusBadRequest, "scope", "scope must be one of "+strings.Join(pages.ReparseScopes, ", "))
		return
	}
	job, err := s.Reparse.StartReparse(r.Context(), body.Scope)
	if err != nil {
		logx.Err("enrichment.reparse_start_failed", err, nil)
		writeError(w, http.StatusServiceUnavailable, "", "could not record the reparse job")
		return
	}
	// The job is recorded: the periodic task would pick it up anyway, so a
	// failed kick is logged, not the request's failure.
	if _, _, err := s.Scheduler.CallScheduler(r.Context(), "POST", "/run-now", []byte(`{"task":"page-reparse"}`)); err != nil {
		logx.Err("enrichment.reparse_kick_failed", err, nil)
	}
	logx.Event("enrichment.reparse_started", map[string]any{"scope": body.Scope})
	writeJSON(w, http.StatusAccepted, job)
}

// RetryableClasses are the give-up classes retry-failed takes as a filter:
// the item-level ones, and those older versions gave up on.
var RetryableClasses = []string{"parse_error", "store_error", "server_error", "timeout"}

// everyGiveUp is the retry time an operator's call requeues up to: every
// given-up item, whatever its wait (registry.GiveUpExtraWaitDays).
var everyGiveUp = time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)

// retryFailed puts given-up items back in the enrichment queue: all of
// them, or one class ({"class": "parse_error"}), the earliest retry time
// first, at most a batch per call ("more" says when another call is
// needed).
func (s *Server) retryFailed(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Class string `json:"class"`
	}
	if !decodeOptionalBody(w, r, &body, "class", "body must be {} or {\"class\": \""+strings.Join(RetryableClasses, "\"|\"")+"\"}") {
		return
	}
	if body.Class != "" && !contains(RetryableClasses, body.Class) {
		writeError(w, http.StatusBadRequest, "class", "class must be one of "+strings.Join(RetryableClasses, ", "))
		return
	}
	now := time.Now()
	n, err := s.Failed.RetryFailed(r.Context(), body.Class, everyGiveUp, now)
	if err != nil {
		logx.Err("enrichment.retry_failed_failed", err, map[string]any{"class": body.Class})
		writeError(w, http.StatusServiceUnavailable, "", "could not requeue the failed items")
		return
	}
	logx.Event("enrichment.retry_failed", map[string]any{"class": body.Class, "requeued": n})
	writeJSON(w, http.StatusOK, map[string]any{"requeued": n, "class": body.Class, "more": n >= s.RetryFailedBatch})
}

// reparseStatus serves the newest reparse job (null when none ever ran).
func (s *Server) reparseStatus(w http.ResponseWriter, r *http.Request) {
	job, err := s.Reparse.ReparseStatus(r.Context())
	if err != nil {
		logx.Err("enrichment.reparse_status_failed", err, nil)
		writeError(w, http.StatusServiceUnavailable, "", "reparse status unavailable")
		return
	}
	writeJSON(w, http.StatusOK, job)
}
