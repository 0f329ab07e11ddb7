//go:build unix

package main

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// The enrichment-rate benchmark: the EnrichmentController against the
// simulator at its default limits (cmd/upstream-sim: 600 requests a minute,
// burst 20), on a queue of apps never looked up.
const (
	// enrichRateApps is the queue: more than the window can drain at the
	// simulator's limit (600 requests a minute), so it never runs dry.
	enrichRateApps = 5000
	// enrichRateWarmup lets the pacing learn the simulator's capacity
	// before the window opens (its first refusals are part of learning).
	enrichRateWarmup = 30 * time.Second
	// enrichRateWindow is the measured window.
	enrichRateWindow = 2 * time.Minute
)

// simRoute is one route of the simulator's GET /__stats by_route.
type simRoute struct {
	Served  int64 `json:"served"`
	Refused int64 `json:"refused"`
	Dropped int64 `json:"dropped"`
}

// requests is every request of the route that reached the simulator.
func (r simRoute) requests() int64 { return r.Served + r.Refused + r.Dropped }

// benchEnrichmentRate prints upstream requests per enriched app, from the
// simulator's own counters (lookup and page routes: the two hosts of the
// real upstream, itunes.apple.com and apps.apple.com), next to apps
// enriched per hour, with the simulator at its default limits.
func benchEnrichmentRate(root string) {
	persist, _ := os.MkdirTemp("", "bench-enrichrate-")
	defer os.RemoveAll(persist)
	wranglerLocal(root, persist, "d1", "migrations", "apply", "DB", "--local")
	seedLocalDB(root, persist, enrichRateApps)

	simBase, stopSim := startSimWith(root, enrichRateApps) // the simulator's default limits
	defer stopSim()
	base, stop := startWranglerWith(root, filepath.Join(root, "wrangler.jsonc"), persist,
		"--test-scheduled", "--var", "UPSTREAM_API_BASE:"+simBase, "--var", "UPSTREAM_STORE_BASE:"+simBase, "--var", "UPSTREAM_HINTS_BASE:"+simBase,
		"--var", "ADMIN_TOKEN:"+benchAdminToken)
	defer stop()

	var sim struct {
		Config struct {
			RatePerMin int `json:"rate_per_min"`
			Burst      int `json:"burst"`
		} `json:"config"`
	}
	getJSON(simBase+"/__stats", &sim)
	cfg := sim.Config
	control(base, "start", "")
	// Above the simulator's limit: the pacing learns it from the refusals.
	control(base, "tune", fmt.Sprintf(`{"rate_per_min": %d}`, 2*cfg.RatePerMin))
	time.Sleep(enrichRateWarmup)

	// The window opens and closes with no run in flight, so the requests
	// the simulator counts are exactly those of the apps the totals count.
	control(base, "stop", "")
	waitIdle(base)
	resp, err := http.Post(simBase+"/__stats/reset", "application/json", bytes.NewReader(nil))
	if err != nil {
		fail("reset simulator stats: %v", err)
	}
	resp.Body.Close()
	before := enrichStatus(base)
	start := time.Now()
	control(base, "start", "")
	time.Sleep(enrichRateWindow)
	control(base, "stop", "")
	waitIdle(base)
	elapsed := time.Since(start)
	after := enrichStatus(base)
	var stats struct {
		ByRoute map[string]simRoute `json:"by_route"`
	}
	getJSON(simBase+"/__stats", &stats)
	var pace struct {
		PacingDetail map[string]any `json:"pacing_detail"`
		LastPlan     map[string]any `json:"last_plan"`
		LastTick     map[string]any `json:"last_tick"`
	}
	getJSON(base+"/v1/enrichment/status", &pace)

	apps := after.Totals.Completed - before.Totals.Completed
	if apps == 0 {
		fail("no app enriched in %s: %+v", elapsed, after)
	}
	lookup, page := stats.ByRoute["lookup"], stats.ByRoute["page"]
	total := lookup.requests() + page.requests()
	perApp := func(n int64) float64 { return float64(n) / float64(apps) }
	fmt.Printf("\nEnrichment against the simulator at its default limits (%d requests/min, burst %d), %d never-looked-up apps queued,\n",
		cfg.RatePerMin, cfg.Burst, enrichRateApps)
	fmt.Printf("%s of runs after a %s warm-up, no run in flight at either end; requests from the simulator's /__stats\n(served + refused + dropped), apps from the controller's totals\n",
		enrichRateWindow, enrichRateWarmup)
	fmt.Printf("%-28s %8s %8s %8s %8s\n", "", "lookup", "page", "total", "refused")
	fmt.Printf("%-28s %8d %8d %8d %8d\n", "upstream requests", lookup.requests(), page.requests(), total, lookup.Refused+page.Refused)
	fmt.Printf("%-28s %8.3f %8.3f %8.3f   (goal total ≤ 1.1)\n", "requests per enriched app", perApp(lookup.requests()), perApp(page.requests()), perApp(total))
	fmt.Printf("%-28s %8d in %s = %.0f apps per hour\n", "apps enriched", apps, elapsed.Round(time.Second), float64(apps)/elapsed.Hours())
	fmt.Printf("%-28s rate %v/min, ceiling %v/min, phase %v; last plan %v items (chunks of %v); last tick %v requests in %v ms\n", "pacing at the end",
		pace.PacingDetail["rate_per_min"], pace.PacingDetail["ceiling_per_min"], pace.PacingDetail["phase"],
		pace.LastPlan["items"], pace.LastPlan["chunk_items"], pace.LastTick["requests"], pace.LastTick["duration_ms"])
}

// waitIdle waits until the controller has no run in flight.
func waitIdle(base string) {
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		var st struct {
			RunInFlight bool `json:"run_in_flight"`
		}
		getJSON(base+"/v1/enrichment/status", &st)
		if !st.RunInFlight {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	fail("the controller's run did not finish in 90 s")
}
