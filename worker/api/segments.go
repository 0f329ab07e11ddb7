package api

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"

	"storecrawl/worker/logx"
	"storecrawl/worker/segments"
)

// SegmentSorts are GET /v1/segments' orders.
var SegmentSorts = []string{"opportunity", "trend", "demand"}

// MaxCursorLen bounds a cursor parameter.
const MaxCursorLen = 200

// segmentList serves GET /v1/segments?sort=&limit=&cursor=: live
// segments by opportunity (the default), trend or demand, cursor-paged.
func (s *Server) segmentList(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	sort := q.Get("sort")
	if sort == "" {
		sort = "opportunity"
	}
	if !slices.Contains(SegmentSorts, sort) {
		writeError(w, http.StatusBadRequest, "sort", fmt.Sprintf("sort must be one of %v", SegmentSorts))
		return
	}
	limit := DefaultPageSize
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxPageSize {
			writeError(w, http.StatusBadRequest, "limit", fmt.Sprintf("limit must be an integer 1–%d", MaxPageSize))
			return
		}
		limit = n
	}
	cursor := q.Get("cursor")
	if len(cursor) > MaxCursorLen {
		writeError(w, http.StatusBadRequest, "cursor", "cursor must be one a previous page handed out")
		return
	}
	if s.Segments == nil {
		writeError(w, http.StatusServiceUnavailable, "", "segments not configured")
		return
	}
	items, next, err := s.Segments.List(r.Context(), sort, limit, cursor)
	switch {
	case errors.Is(err, segments.ErrBadCursor):
		writeError(w, http.StatusBadRequest, "cursor", "cursor must be one a previous page handed out")
		return
	case err != nil:
		logx.Err("segments.read_failed", err, nil)
		writeError(w, http.StatusInternalServerError, "", "read failed")
		return
	}
	body := map[string]any{"items": items, "sort": sort, "limit": limit, "next_cursor": nil}
	if items == nil {
		body["items"] = []any{}
	}
	if next != "" {
		body["next_cursor"] = next
	}
	writeJSON(w, http.StatusOK, body)
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
