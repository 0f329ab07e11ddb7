package api

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"storecrawl/worker/logx"
)

// The list routes' formats: JSON (one page), or an export of the pages
// from the cursor on, as CSV or NDJSON (?format=csv|ndjson, or Accept:
// text/csv | application/x-ndjson).
const (
	formatJSON   = "json"
	formatCSV    = "csv"
	formatNDJSON = "ndjson"
)

// ExportMaxRows bounds one export response: it reads pages until the list
// ends or this many rows are out, then ends with the cursor that resumes it
// (a Worker invocation has a bounded number of D1 queries and CPU time).
const ExportMaxRows = 5_000

// nextCursorKey names the resume line an export ends with when the list
// goes on: NDJSON {"next_cursor": "..."}, CSV a row "#next_cursor,<cursor>".
const nextCursorKey = "next_cursor"

// exportFormat reads the requested format, answering the 400 naming
// `format` for an unknown one.
func exportFormat(w http.ResponseWriter, r *http.Request) (string, bool) {
	f := r.URL.Query().Get("format")
	if f == "" {
		accept := r.Header.Get("Accept")
		switch {
		case strings.Contains(accept, "text/csv"):
			f = formatCSV
		case strings.Contains(accept, "application/x-ndjson"):
			f = formatNDJSON
		default:
			f = formatJSON
		}
	}
	switch f {
	case formatJSON, formatCSV, formatNDJSON:
		return f, true
	}
	writeError(w, http.StatusBadRequest, "format", "format must be json, csv or ndjson")
	return "", false
}

// pageFunc reads the page of a list that starts at cursor: its items and
// the cursor of the next ("" after the last).
type pageFunc func(ctx context.Context, cursor string, limit int) ([]json.RawMessage, string, error)

// exportPages writes a list from cursor on in format, page by page as each
// is read, until the list ends or ExportMaxRows are out; then, when more
// remain, the resume line with the cursor to pass back (?cursor=). CSV's
// columns are the first item's keys; an object or array value is its JSON.
// A read failing mid-way ends the body with an error line (the status is
// already out).
func exportPages(w http.ResponseWriter, r *http.Request, what, format string, read pageFunc, cursor string, limit int) {
	h := w.Header()
	if format == formatCSV {
		h.Set("Content-Type", "text/csv; charset=utf-8")
		h.Set("Content-Disposition", `attachment; filename="`+what+`.csv"`)
	} else {
		h.Set("Content-Type", "application/x-ndjson")
	}
	h.Set("Cache-Control", "no-store")
	var cols []string
	cw := csv.NewWriter(w)
	started := false
	for rows := 0; ; {
		items, next, err := read(r.Context(), cursor, min(limit, ExportMaxRows-rows))
		if err != nil {
			if !started {
				readOK(w, what, err)
				return
			}
			logx.Err(what+".export_read_failed", err, map[string]any{"cursor": cursor})
			if format == formatCSV {
				cw.Write([]string{"#error", "read failed; resume with cursor", cursor})
				cw.Flush()
			} else {
				json.NewEncoder(w).Encode(map[string]string{"error": "read failed; resume with next_cursor", nextCursorKey: cursor})
			}
			return
		}
		if !started {
			w.WriteHeader(http.StatusOK)
			started = true
		}
		for _, it := range items {
			if format == formatNDJSON {
				w.Write(compactLine(it))
				continue
			}
			if cols == nil {
				cols = objectKeys(it)
				cw.Write(cols)
			}
			cw.Write(csvRow(it, cols))
		}
		cw.Flush()
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		rows += len(items)
		cursor = next
		if next == "" || len(items) == 0 {
			return
		}
		if rows >= ExportMaxRows {
			if format == formatCSV {
				cw.Write([]string{"#" + nextCursorKey, next})
				cw.Flush()
			} else {
				json.NewEncoder(w).Encode(map[string]string{nextCursorKey: next})
			}
			return
		}
	}
}

func compactLine(it json.RawMessage) []byte {
	var b bytes.Buffer
	if json.Compact(&b, it) != nil {
		b.Reset()
		b.Write(it)
	}
	b.WriteByte('\n')
	return b.Bytes()
}

// objectKeys are a JSON object's keys in their order.
func objectKeys(it json.RawMessage) []string {
	dec := json.NewDecoder(bytes.NewReader(it))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return []string{"value"}
	}
	var keys []string
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			break
		}
		keys = append(keys, fmt.Sprint(t))
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			break
		}
	}
	return keys
}

// csvRow is an item's values under cols: strings as they are, numbers and
// booleans as JSON writes them, null empty, objects and arrays as JSON.
func csvRow(it json.RawMessage, cols []string) []string {
	var m map[string]json.RawMessage
	if json.Unmarshal(it, &m) != nil {
		return []string{string(it)}
	}
	row := make([]string, len(cols))
	for i, c := range cols {
		v := bytes.TrimSpace(m[c])
		switch {
		case len(v) == 0 || string(v) == "null":
		case v[0] == '"':
			var s string
			json.Unmarshal(v, &s)
			row[i] = s
		default:
			var b bytes.Buffer
			if json.Compact(&b, v) == nil {
				row[i] = b.String()
			} else {
				row[i] = string(v)
			}
		}
	}
	return row
}
