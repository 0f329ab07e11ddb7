//go:build integration

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// chromiumPath is Debian's chromium, installed by `make chromium`.
const chromiumPath = "/usr/bin/chromium"

// TestDashboardInBrowser gives a stack a few minutes of activity (calm
// enrichment, a 403 storm into a cooldown, recovery, scheduler runs), then
// runs worker/e2e/browser/dashboard.mjs: headless Chromium loads
// /v1/dashboard, waits for chart points, stops and starts the controller and
// pauses/resumes a task from the page, and saves screenshots in this test's
// output folder (.test-output/TestDashboardInBrowser/dashboard.png).
func TestDashboardInBrowser(t *testing.T) {
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Fatalf("%s missing: run `make chromium` (installs Debian's chromium); the browser test is not optional", chromiumPath)
	}
	node := filepath.Join(root, "node_modules", ".bin", "node")
	if _, err := os.Stat(filepath.Join(root, "node_modules", "playwright-core")); err != nil {
		t.Fatalf("playwright-core missing: run `make install` (npm install): %v", err)
	}
	dir := outputDir(t)
	s := startSim(t, dir, "-apps", "2000", "-rate-per-min", "6000", "-burst", "100")
	persist := filepath.Join(dir, "state")
	prepareDB(t, persist, dir, 2000)
	w := &worker{persist: persist, simBase: s.base, dir: dir, vars: []string{"ENRICHMENT_COOLDOWN_S:" + itoa(testCooldownS)}, owner: t}
	w.start(t, "wrangler-1.log")

	// --- activity: calm work, a cooldown, recovery.
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
	time.Sleep(75 * time.Second) // more minute buckets of calm work
	s.setConfig(t, map[string]any{"rate_per_min": 2, "burst": 1, "on_exceed": 403, "block_s": 60})
	eventually(t, 90*time.Second, "a cooldown", func() (bool, string) {
		st = getStatus(t, w)
		return st.Totals.Cooldowns >= 1, jsonString(st)
	})
	s.setConfig(t, map[string]any{"rate_per_min": 6000, "burst": 100, "on_exceed": 429})
	before := st.Totals.Completed
	eventually(t, 2*time.Minute, "recovery after the cooldown", func() (bool, string) {
		st = getStatus(t, w)
		return !st.InCooldown && st.Totals.Completed >= before+10, jsonString(st)
	})
	doJSON(t, "POST", ctl+"run-now", adminToken, `{"task":"rating-sweep"}`, nil)
	time.Sleep(20 * time.Second) // work after the recovery
	t.Logf("activity: %s, %d completed, %d cooldowns", time.Since(activityStart).Round(time.Second), st.Totals.Completed, st.Totals.Cooldowns)

	// --- the browser test.
	// The ledger replicates the ticks to D1 through the queue: wait until
	// the history holds the activity, cooldown included.
	var hist struct {
		Points []struct {
			Completed int64 `json:"completed"`
		} `json:"points"`
		Cooldowns []int64 `json:"cooldowns"`
	}
	eventually(t, 90*time.Second, "the activity in /v1/history", func() (bool, string) {
		hist.Points, hist.Cooldowns = nil, nil
		code := doJSON(t, "GET", w.base+"/v1/history?target=main", "", nil, &hist)
		return code == 200 && len(hist.Points) >= 3 && len(hist.Cooldowns) >= 1, jsonString(hist)
	})
	cmd := exec.Command(node, filepath.Join(root, "worker", "e2e", "browser", "dashboard.mjs"),
		"--base", w.base, "--token", adminToken, "--out", dir, "--chromium", chromiumPath)
	cmd.Dir = root
	cmd.Env = toolEnv()
	started := time.Now()
	out, err := cmd.CombinedOutput()
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
