package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"storecrawl/worker/logx"
)

// Pagination bounds of the offset-paged listings.
const (
	DefaultPageSize = 20
	MaxPageSize     = 100
	MaxOffset       = 10_000
)

// pageParams reads limit and the start of an offset list: offset, or
// cursor (the next_cursor of the page before, which wins), naming the bad one.
func pageParams(r *http.Request) (limit, offset int, field string) {
	limit, offset = DefaultPageSize, 0
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxPageSize {
			return 0, 0, "limit"
		}
		limit = n
	}
	for _, f := range []string{"offset", "cursor"} {
		if v := r.URL.Query().Get(f); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 || n > MaxOffset {
				return 0, 0, f
			}
			offset = n
		}
	}
	return limit, offset, ""
}

// pagedList serves an offset-paged list read by read: limit and offset (or
// cursor) validated (400 naming the field); as JSON one page {items, limit,
// offset, next_offset, next_cursor}, as CSV or NDJSON (?format=) the pages
// from there on (export.go).
func pagedList(what string, read func(ctx context.Context, limit, offset int) ([]json.RawMessage, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		format, ok := exportFormat(w, r)
		if !ok {
			return
		}
		limit, offset, field := pageParams(r)
		if field != "" {
			writeError(w, http.StatusBadRequest, field, fmt.Sprintf("%s must be an integer (limit 1–%d, offset and cursor 0–%d)", field, MaxPageSize, MaxOffset))
			return
		}
		page := func(ctx context.Context, cursor string, limit int) ([]json.RawMessage, string, error) {
			off, _ := strconv.Atoi(cursor)
			items, err := read(ctx, limit, off)
			next := ""
			if len(items) == limit && off+limit <= MaxOffset {
				next = strconv.Itoa(off + limit)
			}
			return items, next, err
		}
		if format != formatJSON {
			if r.URL.Query().Get("limit") == "" {
				limit = MaxPageSize
			}
			exportPages(w, r, what, format, page, strconv.Itoa(offset), limit)
			return
		}
		items, next, err := page(r.Context(), strconv.Itoa(offset), limit)
		if err != nil {
			logx.Err(what+".read_failed", err, nil)
			writeError(w, http.StatusInternalServerError, "", "read failed")
			return
		}
		if items == nil {
			items = []json.RawMessage{}
		}
		nextOffset, nextCursor := any(nil), any(nil)
		if next != "" {
			nextOffset, _ = strconv.Atoi(next)
			nextCursor = next
		}
		writeJSON(w, http.StatusOK, map[string]any{"items": items, "limit": limit, "offset": offset, "next_offset": nextOffset, "next_cursor": nextCursor})
	}
}
