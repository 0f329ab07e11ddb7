package api

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"storecrawl/worker/guard"
)

// CostGuard is the cost guard's decision (guard.Guard).
type CostGuard interface {
	Status(ctx context.Context, now time.Time) guard.Status
}

// enrichmentStatus is the EnrichmentController's status, with the cost
// guard's decision as cost_guard: {state, stage, throttled, excess_usd,
// projection}, and the settings in force as settings. The controller's
// answer is relayed unchanged when it is not a 200 JSON object.
func (s *Server) enrichmentStatus(w http.ResponseWriter, r *http.Request) {
	status, body, err := s.Controller.CallController(r.Context(), http.MethodGet, "/status", nil)
	var st map[string]json.RawMessage
	if err != nil || status != http.StatusOK || (s.CostGuard == nil && s.Settings == nil) || json.Unmarshal(body, &st) != nil || st == nil {
		relay(w, status, body, err, "enrichment.controller_call_failed", "/status")
		return
	}
	if s.CostGuard != nil {
		st["cost_guard"], _ = json.Marshal(s.CostGuard.Status(r.Context(), time.Now()))
	}
	if s.Settings != nil {
		st["settings"], _ = json.Marshal(s.Settings())
	}
	writeJSON(w, http.StatusOK, st)
}
