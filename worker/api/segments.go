package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"

	"storecrawl/worker/logx"
)

// SegmentSorts are GET /v1/segments' orders.
var SegmentSorts = []string{"opportunity", "trend", "demand"}

// segmentList serves GET /v1/segments?sort=&limit=&cursor=: live
// segments by opportunity (the default), trend or demand, cursor-paged,
// or exported from the cursor on (?format=csv|ndjson).
func (s *Server) segmentList(w http.ResponseWriter, r *http.Request) {
	sort := r.URL.Query().Get("sort")
	if sort == "" {
		sort = "opportunity"
	}
	if !slices.Contains(SegmentSorts, sort) {
		writeError(w, http.StatusBadRequest, "sort", fmt.Sprintf("sort must be one of %v", SegmentSorts))
		return
	}
	if s.Segments == nil {
		writeError(w, http.StatusServiceUnavailable, "", "segments not configured")
		return
	}
	pagedListWith("segments", func(ctx context.Context, cursor string, limit int) ([]json.RawMessage, string, error) {
		return s.Segments.List(ctx, sort, limit, cursor)
	}, map[string]any{"sort": sort})(w, r)
}

// segment serves GET /v1/segments/{id}: keywords, apps, scores,
// snapshots, relations and lineage.
func (s *Server) segment(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id < 1 {
		writeError(w, http.StatusBadRequest, "id", "id must be a positive integer segment id")
		return
	}
	if s.Segments == nil {
		writeError(w, http.StatusServiceUnavailable, "", "segments not configured")
		return
	}
	seg, found, err := s.Segments.Get(r.Context(), id)
	switch {
	case err != nil:
		logx.Err("segments.read_failed", err, map[string]any{"segment_id": id})
		writeError(w, http.StatusInternalServerError, "", "read failed")
	case !found:
		writeError(w, http.StatusNotFound, "id", "no segment with that id")
	default:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		w.Write(seg)
	}
}
