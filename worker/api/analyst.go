package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"storecrawl/worker/analyst"
	"storecrawl/worker/logx"
)

// AnalystService is the LLM analyst (worker/analyst.Analyst).
type AnalystService interface {
	Brief(ctx context.Context, clusterID string) (analyst.BriefView, bool, error)
	Request(ctx context.Context, clusterID string) (b analyst.BriefRow, found, created bool, err error)
	Status(ctx context.Context) (analyst.Status, error)
	// Evaluation is a segment's newest evaluation (a done one first):
	// found false when it has none, analyst.ErrNoSegment for an unknown one.
	Evaluation(ctx context.Context, segmentID int64) (analyst.EvaluationView, bool, error)
}

// mountAnalyst adds the analyst's routes.
func (s *Server) mountAnalyst(mux *routeMux) {
	mux.HandleFunc("GET /v1/opportunities/{id}/brief", s.requireRead(s.opportunityBrief))
	mux.HandleFunc("GET /v1/segments/{id}/evaluation", s.requireRead(s.segmentEvaluation))
	mux.HandleFunc("GET /v1/analyst/status", s.analystStatus)
	mux.HandleFunc("POST /v1/analyst/run", s.requireAdmin(s.analystRun))
}

func (s *Server) analystAvailable(w http.ResponseWriter) bool {
	if s.Analyst == nil {
		writeError(w, http.StatusServiceUnavailable, "", "the analyst is not available")
		return false
	}
	return true
}

// opportunityBrief serves a cluster's newest brief (a done one first) with
// the input and prompt it came from and its calls' cost.
func (s *Server) opportunityBrief(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if id == "" || len(id) > MaxClusterIDLen {
		writeError(w, http.StatusBadRequest, "id", fmt.Sprintf("id must be a cluster id (its keyword) of 1–%d characters", MaxClusterIDLen))
		return
	}
	if !s.analystAvailable(w) {
		return
	}
	v, found, err := s.Analyst.Brief(r.Context(), id)
	switch {
	case err != nil:
		logx.Err("analyst.brief_read_failed", err, map[string]any{"cluster_id": id})
		writeError(w, http.StatusInternalServerError, "", "read failed")
	case !found:
		writeError(w, http.StatusNotFound, "id", "no brief for that cluster (POST /v1/analyst/run asks for one)")
	default:
		writeJSON(w, http.StatusOK, v)
	}
}

// segmentEvaluation serves a segment's newest evaluation (a done one
// first): its state, each step with its output, exact input, prompt hash,
// tokens and cost, and the total cost.
func (s *Server) segmentEvaluation(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id < 1 {
		writeError(w, http.StatusBadRequest, "id", "id must be a positive integer segment id")
		return
	}
	if !s.analystAvailable(w) {
		return
	}
	v, found, err := s.Analyst.Evaluation(r.Context(), id)
	switch {
	case errors.Is(err, analyst.ErrNoSegment):
		writeError(w, http.StatusNotFound, "id", "no segment with that id")
	case err != nil:
		logx.Err("analyst.evaluation_read_failed", err, map[string]any{"segment_id": id})
		writeError(w, http.StatusInternalServerError, "", "read failed")
	case !found:
		writeError(w, http.StatusNotFound, "id", "no evaluation of that segment yet: the top segments by opportunity are evaluated by the analyst-run task")
	default:
		writeJSON(w, http.StatusOK, v)
	}
}

// analystStatus serves the analyst's state, today's spend against the cap
// and the top opportunities with their briefs' headlines.
func (s *Server) analystStatus(w http.ResponseWriter, r *http.Request) {
	if !s.analystAvailable(w) {
		return
	}
	st, err := s.Analyst.Status(r.Context())
	if err != nil {
		logx.Err("analyst.status_read_failed", err, nil)
		writeError(w, http.StatusInternalServerError, "", "read failed")
		return
	}
	writeJSON(w, http.StatusOK, st)
}

// ParseAnalystRun validates a POST /v1/analyst/run body,
// {"cluster_id": "<keyword>"}: the cluster id, or the field at fault.
func ParseAnalystRun(b []byte) (clusterID, field, msg string) {
	var body map[string]json.RawMessage
	if err := json.Unmarshal(b, &body); err != nil || body == nil {
		return "", "body", `body must be a JSON object {"cluster_id": "<cluster id>"}`
	}
	keys := make([]string, 0, len(body))
	for k := range body {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if k != "cluster_id" {
			return "", k, "unknown field " + k + `: the body is {"cluster_id": "<cluster id>"}`
		}
	}
	raw, ok := body["cluster_id"]
	if !ok {
		return "", "cluster_id", "cluster_id is required"
	}
	if err := json.Unmarshal(raw, &clusterID); err != nil || strings.TrimSpace(clusterID) == "" || len(clusterID) > MaxClusterIDLen {
		return "", "cluster_id", fmt.Sprintf("cluster_id must be a cluster id (its keyword) of 1–%d characters", MaxClusterIDLen)
	}
	return clusterID, "", ""
}

// analystRun queues a brief for a cluster and has the scheduler run the
// analyst at once: 202 with the brief (its open one, if it has one).
func (s *Server) analystRun(w http.ResponseWriter, r *http.Request) {
	b, ok := readBody(w, r, MaxControlBody)
	if !ok {
		return
	}
	id, field, msg := ParseAnalystRun(b)
	if field != "" {
		writeError(w, http.StatusBadRequest, field, msg)
		return
	}
	if !s.analystAvailable(w) {
		return
	}
	brief, found, created, err := s.Analyst.Request(r.Context(), id)
	switch {
	case errors.Is(err, analyst.ErrTooManyOpen):
		writeError(w, http.StatusTooManyRequests, "", err.Error())
		return
	case err != nil:
		logx.Err("analyst.request_failed", err, map[string]any{"cluster_id": id})
		writeError(w, http.StatusServiceUnavailable, "", "could not queue the brief")
		return
	case !found:
		writeError(w, http.StatusNotFound, "cluster_id", "no cluster with that id")
		return
	}
	// The brief is recorded: the periodic task would take it anyway, so a
	// failed kick is logged, not the request's failure.
	if s.Scheduler != nil {
		if _, _, err := s.Scheduler.CallScheduler(r.Context(), "POST", "/run-now", []byte(`{"task":"analyst-run"}`)); err != nil {
			logx.Err("analyst.kick_failed", err, nil)
		}
	}
	logx.Event("analyst.brief_requested", map[string]any{"cluster_id": id, "brief_id": brief.BriefID, "created": created})
	writeJSON(w, http.StatusAccepted, map[string]any{"brief_id": brief.BriefID, "cluster_id": brief.ClusterID, "state": brief.State, "created": created})
}
