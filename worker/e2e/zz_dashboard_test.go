//go:build integration

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"storecrawl/internal/devstack"
)

// chromiumPath is Debian's chromium, installed by `make chromium`.
const chromiumPath = "/usr/bin/chromium"

// browserTimeout bounds the whole browser script. Its own steps time out
// after 90 s each (dashboard.mjs --timeout), but a hung launch or fetch
// must fail this test, not hold the suite.
const browserTimeout = 8 * time.Minute

// dashboardHistoryMinutes is how many minutes of history the dashboard
// test seeds before it starts: enough points for the charts, a cooldown and
// capacity steps to mark.
const dashboardHistoryMinutes = 12

// dashboardHistorySQL is a crawl target's history as the ledger leaves it in
// D1 (fact_minutes, migration 0014): minutes of calm work up to a capacity
// estimate, a 403 storm into a cooldown (capacity cut, refusals), and the
// recovery after it, ending before now's minute. Seeded instead of lived:
// the replication of live ticks into these rows is
// TestLedgerReplicatesExactlyOnce's.
func dashboardHistorySQL(now time.Time) string {
	var b strings.Builder
	first := now.Truncate(time.Minute).Add(-dashboardHistoryMinutes * time.Minute)
	for i := range dashboardHistoryMinutes {
		minute := first.Add(time.Duration(i) * time.Minute).UnixMilli()
		completed, refusals, capacity, cooldowns := 40, 0, 120.0+20*float64(i), "[]"
		switch {
		case i == 6: // the storm: refusals, a cooldown, the estimate cut
			completed, refusals, capacity, cooldowns = 4, 12, 30, fmt.Sprintf("[%d]", minute+20_000)
		case i > 6: // the recovery climbs back
			capacity = 60 + 30*float64(i-6)
		}
		fmt.Fprintf(&b, `INSERT INTO fact_minutes (source, minute, ticks, dispatched, completed, failed, rate_limited, item_errors,
  capacity, capacity_at, cooldown_ats, lookup_requests, page_requests, lookup_refusals, page_refusals)
VALUES ('controller:main', %d, 12, %d, %d, 0, %d, 0, %g, %d, '%s', 1, %d, 0, %d);
`, minute, completed+refusals, completed, refusals, capacity, minute+50_000, cooldowns, completed+refusals, refusals)
	}
	return b.String()
}

// TestDashboardInBrowser seeds minutes of history (calm enrichment, a 403
// storm into a cooldown, recovery), gives a live stack some calm work,
// scheduler runs and the daily data-quality check, then runs
// worker/e2e/browser/dashboard.mjs: headless Chromium loads /v1/dashboard,
// waits for chart points, checks the data-quality panel against the API,
// stops and starts the controller and pauses/resumes a task from the page,
// and saves screenshots in this test's output folder (.test-output/TestDashboardInBrowser/dashboard.png).
func TestDashboardInBrowser(t *testing.T) {
	t.Parallel()
	node := browserNode(t)
	dir := outputDir(t)
	s := startSim(t, dir, "-apps", "2000", "-rate-per-min", "6000", "-burst", "100")
	persist := filepath.Join(dir, "state")
	prepareDB(t, persist, dir, 2000)
	seedSQL(t, persist, dashboardHistorySQL(time.Now()))
	// Limiter facts every few seconds, so the limiters' last 6 h show too.
	w := &worker{persist: persist, simBase: s.base, dir: dir, vars: []string{"LIMITER_TALLY_S:" + itoa(testTallyS), "LEDGER_CONFIRM_AFTER_S:" + itoa(testConfirmS)}, owner: t}
	w.start(t, "wrangler-1.log")

	// --- live activity: calm work and scheduler runs.
	activityStart := time.Now()
	getStatus(t, w) // first use starts the controller
	if code := doJSON(t, "POST", w.base+"/v1/enrichment/tune", adminToken, `{"rate_per_min": 300}`, nil); code != 200 {
		t.Fatalf("tune: %d", code)
	}
	var st status
	eventually(t, 90*time.Second, "calm completions", func() (bool, string) {
		st = getStatus(t, w)
		return st.Totals.Completed >= 40, jsonString(st)
	})
	ctl := w.base + "/v1/scheduler/"
	doJSON(t, "POST", ctl+"run-now", adminToken, `{"task":"charts-refresh"}`, nil)
	doJSON(t, "POST", ctl+"run-now", adminToken, `{"task":"rating-sweep"}`, nil)
	// The daily data-quality check, so the page has its panel's rows to show.
	if daily := fireCron(t, w, "0 3 * * *"); daily.Daily == nil || daily.Daily.Quality.Apps < 1 {
		t.Fatalf("daily check: %s", jsonString(daily))
	}
	t.Logf("activity: %s, %d completed", time.Since(activityStart).Round(time.Second), st.Totals.Completed)

	// --- the browser test.
	// The history holds the seeded minutes, cooldown included, and the
	// limiters' live minutes once their first tally closes.
	var hist struct {
		Points []struct {
			Completed int64 `json:"completed"`
		} `json:"points"`
		Cooldowns []int64 `json:"cooldowns"`
		Limiters  []any   `json:"limiters"`
	}
	eventually(t, 90*time.Second, "the activity in /v1/history", func() (bool, string) {
		hist.Points, hist.Cooldowns, hist.Limiters = nil, nil, nil
		code := doJSON(t, "GET", w.base+"/v1/history?target=main", "", nil, &hist)
		return code == 200 && len(hist.Points) >= 3 && len(hist.Cooldowns) >= 1 && len(hist.Limiters) > 0, jsonString(hist)
	})
	started := time.Now()
	out, err := devstack.RunBounded(node, []string{filepath.Join(root, "worker", "e2e", "browser", "dashboard.mjs"),
		"--base", w.base, "--token", adminToken, "--out", dir, "--chromium", chromiumPath}, root, toolEnv(), browserTimeout)
	os.WriteFile(filepath.Join(dir, "browser.log"), out, 0o644)
	if err != nil {
		t.Fatalf("browser test failed (%v) after %s; screenshots and log in %s:\n%s", err, time.Since(started).Round(time.Second), dir, out)
	}
	t.Logf("browser test passed in %s:\n%s", time.Since(started).Round(time.Second), strings.TrimSpace(string(out)))
	if fi, err := os.Stat(filepath.Join(dir, "dashboard.png")); err != nil || fi.Size() < 10_000 {
		t.Fatalf("screenshot missing or empty: %v", err)
	}
	if st := getStatus(t, w); !st.Running {
		t.Fatalf("the browser test left the controller stopped: %+v", st)
	}
}

// browserNode answers the node that runs the browser scripts, after
// checking what they need is installed: Debian's Chromium and
// playwright-core. The browser tests are not optional.
func browserNode(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Fatalf("%s missing: run `make chromium` (installs Debian's chromium); the browser test is not optional", chromiumPath)
	}
	if _, err := os.Stat(filepath.Join(root, "node_modules", "playwright-core")); err != nil {
		t.Fatalf("playwright-core missing: run `make install` (npm install): %v", err)
	}
	return filepath.Join(root, "node_modules", ".bin", "node")
}
