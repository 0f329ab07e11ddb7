package api

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"storecrawl/worker/appstore"
	"storecrawl/worker/logx"
	"storecrawl/worker/reviews"
	"storecrawl/worker/tasks"
)

// clusterThemes serves a cluster's complaint themes from its members'
// stored reviews.
func (s *Server) clusterThemes(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if id == "" || len(id) > MaxClusterIDLen {
		writeError(w, http.StatusBadRequest, "id", fmt.Sprintf("id must be a cluster id (its keyword) of 1–%d characters", MaxClusterIDLen))
		return
	}
	themes, n, found, err := s.Reviews.ClusterThemes(r.Context(), id)
	switch {
	case err != nil:
		logx.Err("themes.read_failed", err, map[string]any{"cluster_id": id})
		writeError(w, http.StatusInternalServerError, "", "read failed")
	case !found:
		writeError(w, http.StatusNotFound, "id", "no cluster with that id")
	default:
		if themes == nil {
			themes = []reviews.Theme{}
		}
		writeJSON(w, http.StatusOK, map[string]any{"cluster_id": id, "reviews": n, "themes": themes})
	}
}

// MaxClusterIDLen bounds a cluster id in a path: a cluster is a keyword.
const MaxClusterIDLen = 200

// chart serves a top chart straight from KV: the upstream is never called
// on a user's request path.
func (s *Server) chart(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	country, collection, category := q.Get("country"), q.Get("collection"), q.Get("category")
	if category == "" {
		category = "all"
	}
	for _, c := range []struct {
		field, value string
		allowed      []string
	}{{"country", country, tasks.ChartCountries}, {"collection", collection, appstore.ChartCollections}, {"category", category, tasks.ChartCategories}} {
		if !contains(c.allowed, c.value) {
			writeError(w, http.StatusBadRequest, c.field, fmt.Sprintf("%s must be one of %v", c.field, c.allowed))
			return
		}
	}
	v, err := s.Charts.Get(r.Context(), tasks.ChartKey(country, collection, category))
	switch {
	case err != nil:
		logx.Err("charts.read_failed", err, nil)
		writeError(w, http.StatusInternalServerError, "", "read failed")
	case v == "":
		writeError(w, http.StatusNotFound, "", "chart not fetched yet; the charts-refresh task fills it every ~5 min")
	default:
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "public, max-age=60")
		io.WriteString(w, v)
	}
}

// markets serves /v1/clusters (by size) and /v1/opportunities (by score).
func (s *Server) markets(byScore bool) http.HandlerFunc {
	return pagedList("markets", func(ctx context.Context, cursor string, limit int) ([]json.RawMessage, string, error) {
		return s.Markets.List(ctx, byScore, limit, cursor)
	})
}
