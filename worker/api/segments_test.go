//go:build !js

package api

import (
	"strings"
	"testing"

	"storecrawl/worker/d1"
	"storecrawl/worker/d1/d1test"
	"storecrawl/worker/segments"
)

func TestSegmentRoutes(t *testing.T) {
	db, drv := d1test.New(t)
	for id, opp := range map[int]float64{1: 40, 2: 55, 3: 10} {
		drv.Exec(t, `INSERT INTO segments (id, name, keyword_count, app_count, total_ratings, avg_rating, demand, hhi, fragmentation, quality_gap,
  opportunity, apps, created_at, updated_at) VALUES (?, 'budget planner', 3, 2, 100, 4.1, 2, 0.5, 0.5, 0.1, ?, '[]', '2026-11-01T00:00:00.000Z', '2026-11-01T00:00:00.000Z')`, id, opp)
		drv.Exec(t, `INSERT INTO segment_keywords (keyword, segment_id, top_sum) VALUES (?, ?, 1)`, "kw"+string(rune('a'+id)), id)
	}
	s := NewServer(&Server{Segments: segments.Store{DB: db}, Cron: noCron{}, AdminToken: func() string { return "secret" }})
	code, out := call(t, s, "GET", "/v1/segments?limit=2", "", "")
	items, _ := out["items"].([]any)
	if code != 200 || len(items) != 2 || items[0].(map[string]any)["id"] != 2.0 || out["next_cursor"] == nil {
		t.Fatalf("%d %v", code, out)
	}
	code, out = call(t, s, "GET", "/v1/segments?limit=2&cursor="+out["next_cursor"].(string), "", "")
	if items, _ := out["items"].([]any); code != 200 || len(items) != 1 || items[0].(map[string]any)["id"] != 3.0 || out["next_cursor"] != nil {
		t.Fatalf("%d %v", code, out)
	}
	for q, field := range map[string]string{"sort=size": "sort", "limit=0": "limit", "limit=x": "limit", "limit=101": "limit", "cursor=%21%21": "cursor", "cursor=" + strings.Repeat("a", d1.MaxCursorLen+1): "cursor"} {
		if code, out := call(t, s, "GET", "/v1/segments?"+q, "", ""); code != 400 || out["field"] != field {
			t.Errorf("%s: %d %v", q, code, out)
		}
	}
	// Exported: every live segment from the top, or from a cursor on.
	if code, ct, body := exportGet(s, "/v1/segments?format=ndjson&limit=1"); code != 200 || ct != "application/x-ndjson" ||
		strings.Count(body, "\n") != 3 || !strings.HasPrefix(body, `{"id":2,`) {
		t.Errorf("segments ndjson: %d %s %q", code, ct, body)
	}
	if code, _, body := exportGet(s, "/v1/segments?format=csv&sort=opportunity", "Accept", "text/csv"); code != 200 || strings.Count(body, "\n") != 4 || !strings.HasPrefix(body, "id,name,keyword_count") {
		t.Errorf("segments csv: %d %q", code, body)
	}
	for _, sort := range SegmentSorts {
		if code, _ := call(t, s, "GET", "/v1/segments?sort="+sort, "", ""); code != 200 {
			t.Errorf("sort=%s: %d", sort, code)
		}
	}
	code, out = call(t, s, "GET", "/v1/segments/2", "", "")
	if code != 200 || out["name"] != "budget planner" || len(out["keywords"].([]any)) != 1 || out["lineage"] == nil || out["snapshots"] == nil {
		t.Fatalf("%d %v", code, out)
	}
	if code, out := call(t, s, "GET", "/v1/segments/99", "", ""); code != 404 || out["field"] != "id" {
		t.Fatalf("%d %v", code, out)
	}
	for _, bad := range []string{"x", "0", "-1"} {
		if code, out := call(t, s, "GET", "/v1/segments/"+bad, "", ""); code != 400 || out["field"] != "id" {
			t.Fatalf("%s: %d %v", bad, code, out)
		}
	}
}
