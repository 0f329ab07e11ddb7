package api

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"time"

	"storecrawl/durable/controller"
	"storecrawl/worker/ledgerdb"
	"storecrawl/worker/logx"
)

// The pulse is what the dashboard shows of the crawl's progress, decided
// here (not in the page's script) so it is tested natively: the measured
// completions a minute next to the plan, the one projection per day (the
// controller status's, with its basis), and whether the crawl has stalled.

// StallAfter: no app completed for this long, while apps wait to be
// enriched and the controller is running, is a stall. Ten one-minute
// history buckets: longer than any cooldown the pacing takes (a few
// minutes) plus the ledger's replication lag, so a hold is not an alarm.
const StallAfter = 10 * time.Minute

// LiftDriftPause says how to lift a markup-drift pause of store pages.
const LiftDriftPause = "POST /v1/enrichment/resume-pages (or POST /v1/enrichment/start) with the admin token"

// PulseInput is what the pulse is decided from: the controller's status,
// the target's history (one-minute buckets) and the apps waiting.
type PulseInput struct {
	Status  controller.Status
	History ledgerdb.History
	// Pending is the apps not enriched yet (pipeline counts' apps_pending).
	Pending int64
	Now     time.Time
}

// Pulse is GET /v1/enrichment/pulse.
type Pulse struct {
	// CompletionsPerMin is measured: the controller status's
	// rolling.completions_per_minute, apps completed in its window of
	// WindowMin minutes ÷ WindowMin.
	CompletionsPerMin float64 `json:"completions_per_min"`
	WindowMin         int     `json:"window_min"`
	// ProjectedPerDay and ProjectionBasis are the status's, the one
	// projection: CompletionsPerMin × 1,440, 0 during a cooldown.
	ProjectedPerDay int64  `json:"projected_per_day"`
	ProjectionBasis string `json:"projection_basis"`
	// Plan is what the controller plans now, PlannedPerMin its items a
	// minute if every planned item completed: shown beside the measured
	// figure, never instead of it.
	Plan          string  `json:"plan"`
	PlannedPerMin float64 `json:"planned_per_min"`
	// LastCompletionAt is the end of the newest history minute with a
	// completion (null when none in the history's window).
	LastCompletionAt       *string `json:"last_completion_at"`
	MinutesSinceCompletion *int64  `json:"minutes_since_completion"`
	Pending                int64   `json:"pending"`
	Running                bool    `json:"running"`
	PagesPaused            bool    `json:"pages_paused"`
	// LiftDriftPause is how to lift the drift pause (only while pages are paused).
	LiftDriftPause string `json:"lift_drift_pause,omitempty"`
	Stalled        bool   `json:"stalled"`
	StallAfterMin  int    `json:"stall_after_min"`
	StallReason    string `json:"stall_reason,omitempty"`
}

// DecidePulse decides the pulse from its input.
func DecidePulse(in PulseInput) Pulse {
	st, h := in.Status, in.History
	p := Pulse{
		CompletionsPerMin: st.Rolling.CompletionsPerMinute,
		WindowMin:         st.Rolling.WindowS / 60,
		ProjectedPerDay:   st.ProjectedPerDay,
		ProjectionBasis:   st.ProjectionBasis,
		Pending:           in.Pending,
		Running:           st.Running,
		PagesPaused:       st.ParserHealth.PagesPaused,
		StallAfterMin:     int(StallAfter / time.Minute),
	}
	// The pace under every algorithm: the next tick's items and the
	// interval the controller puts after it.
	p.Plan = fmt.Sprintf("%d items every %s s", st.BatchSize, trimFloat(float64(st.IntervalMs)/1000))
	if st.IntervalMs > 0 {
		p.PlannedPerMin = math.Round(10*float64(st.BatchSize)*60000/float64(st.IntervalMs)) / 10
	}
	if p.PagesPaused {
		p.LiftDriftPause = LiftDriftPause
	}
	bucket := h.BucketS * 1000
	for i := len(h.Points) - 1; i >= 0; i-- {
		if h.Points[i].Completed > 0 {
			end := time.UnixMilli(h.Points[i].T + bucket).UTC()
			at := end.Format(time.RFC3339)
			mins := int64(max(0, in.Now.Sub(end)) / time.Minute)
			p.LastCompletionAt, p.MinutesSinceCompletion = &at, &mins
			break
		}
	}
	// The controller's own window is not behind the ledger's replication:
	// a completion there is progress whatever the history says yet.
	if st.Rolling.Completed > 0 || !st.Running || in.Pending <= 0 {
		return p
	}
	quiet := in.Now.Sub(time.UnixMilli(h.Since))
	if p.MinutesSinceCompletion != nil {
		quiet = time.Duration(*p.MinutesSinceCompletion) * time.Minute
	}
	if quiet < StallAfter {
		return p
	}
	p.Stalled = true
	since := fmt.Sprintf("for %d min", int64(quiet/time.Minute))
	if p.MinutesSinceCompletion == nil {
		since = fmt.Sprintf("in the last %s", trimFloat(quiet.Hours())+" h")
	}
	p.StallReason = fmt.Sprintf("no app completed %s while %d apps wait and the controller is running", since, in.Pending)
	switch {
	case p.PagesPaused:
		p.StallReason += "; store pages are paused (markup drift): " + LiftDriftPause
	case st.InCooldown:
		p.StallReason += fmt.Sprintf("; in cooldown, %d s left", st.CooldownRemainingS)
	}
	return p
}

func trimFloat(f float64) string { return fmt.Sprintf("%g", math.Round(f*10)/10) }

// pulse serves GET /v1/enrichment/pulse: the controller's status, the
// history (the same query and isolate cache as GET /v1/history, so the
// dashboard's two reads cost one) and the pipeline counts, decided by
// DecidePulse.
func (s *Server) pulse(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	q, field, msg := ledgerdb.ParseHistoryQuery(r.URL.Query().Get, now)
	if field != "" {
		writeError(w, http.StatusBadRequest, field, msg)
		return
	}
	code, body, err := s.Controller.CallController(r.Context(), http.MethodGet, "/status", nil)
	var st controller.Status
	if err == nil && code == http.StatusOK {
		err = json.Unmarshal(body, &st)
	} else if err == nil {
		err = fmt.Errorf("controller status: HTTP %d", code)
	}
	if err != nil {
		logx.Err("enrichment.pulse_status_failed", err, nil)
		writeError(w, http.StatusBadGateway, "", "durable object unavailable")
		return
	}
	h, err := s.Ledger.History(r.Context(), q)
	if err != nil {
		logx.Err("enrichment.pulse_history_failed", err, nil)
		writeError(w, http.StatusInternalServerError, "", "read failed")
		return
	}
	counts, err := s.Ledger.PipelineCounts(r.Context())
	if err != nil {
		logx.Err("enrichment.pulse_counts_failed", err, nil)
		writeError(w, http.StatusInternalServerError, "", "read failed")
		return
	}
	writeJSON(w, http.StatusOK, DecidePulse(PulseInput{Status: st, History: h, Pending: counts["apps_pending"], Now: now}))
}
