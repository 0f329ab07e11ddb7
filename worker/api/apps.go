package api

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"

	"storecrawl/worker/logx"
)

func (s *Server) app(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		writeError(w, http.StatusBadRequest, "id", "id must be a positive integer track id")
		return
	}
	rec, found, err := s.Apps.App(r.Context(), id)
	switch {
	case err != nil:
		logx.Err("apps.read_failed", err, map[string]any{"track_id": id})
		writeError(w, http.StatusInternalServerError, "", "read failed")
	case !found:
		writeError(w, http.StatusNotFound, "id", "no app with that id")
	default:
		w.Header().Set("Content-Type", "application/json")
		w.Write(rec)
	}
}

// appReviews serves one page of an app's stored reviews, most recent first.
func (s *Server) appReviews(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		writeError(w, http.StatusBadRequest, "id", "id must be a positive integer track id")
		return
	}
	pagedList("reviews", func(ctx context.Context, cursor string, limit int) ([]json.RawMessage, string, error) {
		return s.Reviews.AppReviews(ctx, id, limit, cursor)
	})(w, r)
}
