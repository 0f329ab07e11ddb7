//go:build integration

package e2e

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// outageApps is the queue of the outage test: enough that the outage
// catches many items in flight, few enough to drain in a minute or two.
const outageApps = 150

// outageLength is how long every upstream connection is dropped.
const outageLength = 45 * time.Second

// TestUpstreamOutageFailsNoItem drops every upstream connection for a
// while as the controller runs (before, such an outage
// left its items 'failed' for good). The items in flight are deferred, not
// failed; once the upstream is back the whole queue drains, and the only
// items given up are those the upstream itself cannot serve (the
// simulator's broken pages, a parse error).
func TestUpstreamOutageFailsNoItem(t *testing.T) {
	t.Parallel()
	dir := outputDir(t)
	s := startSim(t, dir, "-apps", fmt.Sprint(outageApps), "-rate-per-min", "6000", "-burst", "100")
	persist := filepath.Join(dir, "state")
	prepareDB(t, persist, dir, outageApps)
	// An idle controller polls every testIdleS seconds: when every item
	// left is deferred (waiting out its retry), a tick finds no work, and
	// the deferred items are retried at the next poll, not two minutes on.
	w := &worker{persist: persist, simBase: s.base, dir: dir, owner: t, vars: []string{"ENRICHMENT_IDLE_S:" + itoa(testIdleS)}}
	w.start(t, "wrangler-1.log")
	// Pages at 300/min, not probe's 60/min start: the queue drains in
	// seconds once the upstream is back (the pace is not what this test checks).
	if code := doJSON(t, "POST", w.base+"/v1/enrichment/tune", adminToken, `{"rate_per_min": 300}`, nil); code != 200 {
		t.Fatalf("tune: %d", code)
	}

	var st status
	eventually(t, 60*time.Second, "first completions", func() (bool, string) {
		st = getStatus(t, w)
		return st.Totals.Completed >= 5, jsonString(st)
	})
	s.setConfig(t, map[string]any{"outage_pct": 100})
	outageStart := time.Now()
	var deferred float64
	eventually(t, 90*time.Second, "items deferred by the outage", func() (bool, string) {
		var raw map[string]any
		doJSON(t, "GET", w.base+"/v1/enrichment/status", "", nil, &raw)
		totals, _ := raw["totals"].(map[string]any)
		deferred, _ = totals["deferred"].(float64)
		return deferred >= 10, jsonString(totals)
	})
	// The outage lasts as long as the one measured in the issue (45 s, when
	// 42 apps ended 'failed'): more ticks fail meanwhile.
	time.Sleep(time.Until(outageStart.Add(outageLength)))
	s.setConfig(t, map[string]any{"outage_pct": 0})

	eventually(t, 5*time.Minute, "the queue drained after the outage", func() (bool, string) {
		rows := d1Rows(t, persist, `SELECT COUNT(*) AS queued FROM app_registry WHERE enriched_at IS NULL`)
		return rows[0]["queued"] == 0.0, jsonString(rows)
	})
	rows := d1Rows(t, persist, `SELECT track_id, enrich_error_class, enrich_error FROM app_registry
WHERE enrichment_source = 'failed' AND enrich_error_class <> 'parse_error'`)
	if len(rows) != 0 {
		t.Fatalf("the outage failed items for good: %v", rows)
	}
	enriched := d1Rows(t, persist, `SELECT COUNT(*) AS n FROM app_registry WHERE enrichment_source = 'itunes+store'`)[0]["n"].(float64)
	if enriched < outageApps*9/10 {
		t.Fatalf("only %v of %d apps enriched after the outage", enriched, outageApps)
	}
	stats := s.stats(t)
	t.Logf("outage: %v items deferred, %v enriched of %d; simulator %v", deferred, enriched, outageApps, jsonString(stats["by_route"]))
}
