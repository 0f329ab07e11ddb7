package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"storecrawl/worker/d1"
	"storecrawl/worker/logx"
	"storecrawl/worker/segments"
)

// Page sizes of the cursor-paged lists.
const (
	DefaultPageSize = 20
	MaxPageSize     = 100
)

// badCursorMsg is the 400 a cursor no page handed out gets.
const badCursorMsg = "cursor must be the next_cursor of a page before (absent for the first page)"

// offsetRetiredMsg is the 400 an offset gets: a list reads a range of an
// index from its cursor, and an offset would walk every row before it.
const offsetRetiredMsg = "offset is not supported: page with cursor, the next_cursor of the page before"

// isBadCursor reports whether a read refused its cursor.
func isBadCursor(err error) bool {
	return errors.Is(err, d1.ErrBadCursor) || errors.Is(err, segments.ErrBadCursor)
}

// pageParams reads a cursor-paged list's limit and cursor, naming the bad
// one (an offset names itself: the lists page only by cursor).
func pageParams(r *http.Request) (limit int, cursor, field, msg string) {
	q := r.URL.Query()
	if q.Has("offset") {
		return 0, "", "offset", offsetRetiredMsg
	}
	limit = DefaultPageSize
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxPageSize {
			return 0, "", "limit", fmt.Sprintf("limit must be an integer 1–%d", MaxPageSize)
		}
		limit = n
	}
	cursor = q.Get("cursor")
	if len(cursor) > d1.MaxCursorLen {
		return 0, "", "cursor", badCursorMsg
	}
	return limit, cursor, "", ""
}

// pagedList serves a cursor-paged list read by read: limit and cursor
// validated (400 naming the field); as JSON one page {items, limit,
// next_cursor} (null at the end), as CSV or NDJSON (?format=) the pages
// from the cursor on (export.go).
func pagedList(what string, read pageFunc) http.HandlerFunc {
	return pagedListWith(what, read, nil)
}

// pagedListWith is pagedList with more fields in the JSON page (the
// list's validated parameters).
func pagedListWith(what string, read pageFunc, fields map[string]any) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		format, ok := exportFormat(w, r)
		if !ok {
			return
		}
		limit, cursor, field, msg := pageParams(r)
		if field != "" {
			writeError(w, http.StatusBadRequest, field, msg)
			return
		}
		if format != formatJSON {
			if r.URL.Query().Get("limit") == "" {
				limit = MaxPageSize
			}
			exportPages(w, r, what, format, read, cursor, limit)
			return
		}
		items, next, err := read(r.Context(), cursor, limit)
		if !readOK(w, what, err) {
			return
		}
		body := map[string]any{"items": nonNil(items), "limit": limit, "next_cursor": cursorOrNull(next)}
		for k, v := range fields {
			body[k] = v
		}
		writeJSON(w, http.StatusOK, body)
	}
}

// readOK answers a page read's error: a refused cursor is a 400 naming
// cursor, anything else a logged 500.
func readOK(w http.ResponseWriter, what string, err error) bool {
	switch {
	case err == nil:
		return true
	case isBadCursor(err):
		writeError(w, http.StatusBadRequest, "cursor", badCursorMsg)
	default:
		logx.Err(what+".read_failed", err, nil)
		writeError(w, http.StatusInternalServerError, "", "read failed")
	}
	return false
}

func nonNil(items []json.RawMessage) []json.RawMessage {
	if items == nil {
		return []json.RawMessage{}
	}
	return items
}

// cursorOrNull is next_cursor as JSON: null after the last page.
func cursorOrNull(next string) any {
	if next == "" {
		return nil
	}
	return next
}

// onePage is the pageFunc of a list that is one bounded page (no cursor).
func onePage[T any](read func(ctx context.Context) ([]T, error)) pageFunc {
	return func(ctx context.Context, cursor string, _ int) ([]json.RawMessage, string, error) {
		if cursor != "" {
			return nil, "", d1.ErrBadCursor
		}
		xs, err := read(ctx)
		if err != nil {
			return nil, "", err
		}
		return rawItems(xs)
	}
}

// rawItems renders values as a page's items.
func rawItems[T any](xs []T) ([]json.RawMessage, string, error) {
	out := make([]json.RawMessage, 0, len(xs))
	for _, x := range xs {
		b, err := json.Marshal(x)
		if err != nil {
			return nil, "", err
		}
		out = append(out, b)
	}
	return out, "", nil
}
