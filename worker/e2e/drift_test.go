//go:build integration

package e2e

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// parserHealth is parser_health in GET /v1/enrichment/status.
type parserHealth struct {
	Status      string  `json:"status"`
	PagesPaused bool    `json:"pages_paused"`
	Share       float64 `json:"unparsed_share"`
	Samples     int     `json:"samples"`
}

func getParserHealth(t *testing.T, w *worker) parserHealth {
	t.Helper()
	var st struct {
		ParserHealth parserHealth `json:"parser_health"`
	}
	if code := doJSON(t, "GET", w.base+"/v1/enrichment/status", "", nil, &st); code != 200 {
		t.Fatalf("status: HTTP %d", code)
	}
	return st.ParserHealth
}

// served is how many requests of a route the simulator answered.
func served(t *testing.T, s *sim, route string) float64 {
	t.Helper()
	routes, _ := s.stats(t)["by_route"].(map[string]any)
	r, _ := routes[route].(map[string]any)
	n, _ := r["served"].(float64)
	return n
}

// TestParserDriftIsAnIncident runs the crawl against the simulator serving
// both real markups (half the apps each), then
// switches every store page to a markup no parser knows: parser_health
// turns red, store-page traffic stops (but for rare probes), lookups go
// on, and no item is marked failed. Switched back, a probe parses, pages
// resume, and a reparse from R2 leaves every record complete.
func TestParserDriftIsAnIncident(t *testing.T) {
	t.Parallel()
	const apps = 120
	dir := outputDir(t)
	s := startSim(t, dir, "-apps", fmt.Sprint(apps), "-rate-per-min", "6000", "-burst", "100")
	persist := filepath.Join(dir, "state")
	prepareDB(t, persist, dir, apps)
	w := &worker{persist: persist, simBase: s.base, dir: dir, owner: t,
		vars: []string{"ENRICHMENT_COOLDOWN_S:" + itoa(testCooldownS), "ENRICHMENT_PARSER_PROBE_S:8"}}
	// Both real markups, half the apps each (stable by id).
	s.setConfig(t, map[string]any{"current_markup_pct": 50})
	w.start(t, "wrangler-1.log")
	doJSON(t, "POST", w.base+"/v1/enrichment/tune", adminToken, `{"rate_per_min": 120}`, nil)

	eventually(t, 90*time.Second, "healthy pages first", func() (bool, string) {
		h := getParserHealth(t, w)
		return h.Status == "green" && h.Samples >= 10, jsonString(h)
	})

	s.setConfig(t, map[string]any{"current_markup_pct": 0, "unknown_markup_pct": 100})
	eventually(t, 90*time.Second, "parser_health red", func() (bool, string) {
		h := getParserHealth(t, w)
		return h.Status == "red" && h.PagesPaused, jsonString(h)
	})
	// Paused: over 20 s at most a few probe pages (one every 8 s) reach
	// the store host, while lookups go on.
	pagesBefore, lookupsBefore := served(t, s, "page"), served(t, s, "lookup")
	time.Sleep(20 * time.Second)
	if probes := served(t, s, "page") - pagesBefore; probes > 4 {
		t.Fatalf("%v store pages fetched while paused", probes)
	}
	if served(t, s, "lookup") == lookupsBefore {
		t.Fatal("lookups must go on while pages are paused")
	}
	failed := d1Rows(t, persist, `SELECT COUNT(*) AS n FROM app_registry WHERE enrichment_source = 'failed'`)
	if failed[0]["n"] != 0.0 {
		t.Fatalf("drift marked items failed: %v", failed)
	}
	lookupOnly := d1Rows(t, persist, `SELECT COUNT(*) AS n FROM app_registry WHERE enrichment_source = 'itunes' AND enriched_at IS NULL`)
	if lookupOnly[0]["n"].(float64) < 1 {
		t.Fatalf("looked-up apps wait queued as lookup-only records: %v", lookupOnly)
	}

	// The markup comes back: a probe parses, pages resume, the queue drains.
	s.setConfig(t, map[string]any{"current_markup_pct": 50, "unknown_markup_pct": 0})
	eventually(t, 60*time.Second, "pages resumed", func() (bool, string) {
		h := getParserHealth(t, w)
		return !h.PagesPaused, jsonString(h)
	})
	eventually(t, 180*time.Second, "queue drained", func() (bool, string) {
		rows := d1Rows(t, persist, `SELECT COUNT(*) AS n FROM app_registry WHERE enriched_at IS NULL`)
		return rows[0]["n"] == 0.0, jsonString(rows)
	})
	// Stored pages of the drift window are re-read: none stays unparsed.
	var job map[string]any
	if code := doJSON(t, "POST", w.base+"/v1/enrichment/reparse", adminToken, `{"scope":"failed"}`, &job); code != 202 {
		t.Fatalf("reparse: %d %v", code, job)
	}
	eventually(t, 60*time.Second, "reparse finished", func() (bool, string) {
		job = nil
		doJSON(t, "GET", w.base+"/v1/enrichment/reparse", "", nil, &job)
		return job["finished_at"] != nil, jsonString(job)
	})
	// The pages it read are byte ranges of their ticks' batch objects
	// (worker/pagebatch): a range that came back wrong would count missing.
	// The simulator's broken page (100000097) is one of them.
	if job["pages"].(float64) < 1 || job["missing"] != 0.0 {
		t.Fatalf("reparse read no stored page, or found some missing: %v", job)
	}
	rows := d1Rows(t, persist, `SELECT
  SUM(page_format = 'legacy') AS legacy, SUM(page_format = 'current') AS current,
  SUM(enrichment_source = 'failed') AS failed,
  SUM(enrichment_source = 'itunes+store' AND page_status = 'parsed' AND rating_histogram IS NOT NULL) AS complete,
  SUM(enrichment_source = 'not_found') AS not_found,
  SUM(COALESCE(page_status, '') = 'unparsed' AND enrichment_source NOT IN ('not_found', 'failed')) AS unparsed
FROM app_registry`)
	r := rows[0]
	// The simulator's broken pages (every 97th id) are the only real failures.
	if r["unparsed"] != 0.0 || r["complete"].(float64) < apps-3 || r["failed"].(float64) > 2 ||
		r["legacy"].(float64) < apps/4 || r["current"].(float64) < apps/4 {
		t.Fatalf("records after drift and reparse: %v (job %v)", r, job)
	}
}
