package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"storecrawl/worker/logx"
)

// Pagination bounds of the market listings.
const (
	DefaultPageSize = 20
	MaxPageSize     = 100
	MaxOffset       = 10_000
)

// pageParams reads limit/offset, naming the bad one.
func pageParams(r *http.Request) (limit, offset int, field string) {
	limit, offset = DefaultPageSize, 0
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxPageSize {
			return 0, 0, "limit"
		}
		limit = n
	}
	if v := r.URL.Query().Get("offset"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > MaxOffset {
			return 0, 0, "offset"
		}
		offset = n
	}
	return limit, offset, ""
}

// pagedList serves one page of a list read by read: limit/offset validated
// (400 naming the field), {items, limit, offset, next_offset} answered.
func pagedList(what string, read func(ctx context.Context, limit, offset int) ([]json.RawMessage, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		limit, offset, field := pageParams(r)
		if field != "" {
			writeError(w, http.StatusBadRequest, field, fmt.Sprintf("%s must be an integer (limit 1–%d, offset 0–%d)", field, MaxPageSize, MaxOffset))
			return
		}
		items, err := read(r.Context(), limit, offset)
		if err != nil {
			logx.Err(what+".read_failed", err, nil)
			writeError(w, http.StatusInternalServerError, "", "read failed")
			return
		}
		if items == nil {
			items = []json.RawMessage{}
		}
		next := any(nil)
		if len(items) == limit {
			next = offset + limit
		}
		writeJSON(w, http.StatusOK, map[string]any{"items": items, "limit": limit, "offset": offset, "next_offset": next})
	}
}
