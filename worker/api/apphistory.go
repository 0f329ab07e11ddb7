package api

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"storecrawl/worker/catalogue"
	"storecrawl/worker/logx"
)

// AppHistoryReader reads an app's history (worker/catalogue.D1Store).
type AppHistoryReader interface {
	// AppHistory returns the history as JSON (false when there is no such app).
	AppHistory(ctx context.Context, q catalogue.HistoryQuery, now time.Time) (json.RawMessage, bool, error)
}

// appHistory serves GET /v1/apps/{id}/history?days=&limit=: the app's
// current values, rating observations, version and price changes, keyword
// and chart ranks, each newest first.
func (s *Server) appHistory(w http.ResponseWriter, r *http.Request) {
	q, field, msg := catalogue.ParseHistoryQuery(r.PathValue("id"), r.URL.Query().Get)
	if field != "" {
		writeError(w, http.StatusBadRequest, field, msg)
		return
	}
	if s.AppHistory == nil {
		writeError(w, http.StatusServiceUnavailable, "", "history is not available")
		return
	}
	rec, found, err := s.AppHistory.AppHistory(r.Context(), q, time.Now())
	switch {
	case err != nil:
		logx.Err("apps.history_read_failed", err, map[string]any{"track_id": q.TrackID})
		writeError(w, http.StatusInternalServerError, "", "read failed")
	case !found:
		writeError(w, http.StatusNotFound, "id", "no app with that id")
	default:
		w.Header().Set("Content-Type", "application/json")
		w.Write(rec)
	}
}
