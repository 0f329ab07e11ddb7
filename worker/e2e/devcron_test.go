//go:build integration

package e2e

import (
	"encoding/json"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sc "storecrawl/worker"
)

// devStackWithin bounds how long a fresh dev stack may take, from /health,
// to show discovery, every scheduler task run and scored opportunities.
const devStackWithin = 10 * time.Minute

// firstTickWithin bounds the controller's first tick after /health: the
// driver's first */5 fire wakes it, and its first tick is due a second later.
const firstTickWithin = 2 * time.Minute

// devCronSpeedup is the test's DEV_CRON_SPEEDUP: a */5 cron every 30 s.
const devCronSpeedup = "10"

// TestDevStackShowsThePipelineWithTheCronDriver starts a stack as make dev
// does (the simulators as it runs them, its 2000 seeded apps, wrangler dev
// --test-scheduled, and cmd/dev-cron beside them) and takes no manual step:
// the driver's first fires alone must bring a crawl cycle's run to
// /v1/system/cron, every scheduler task's first run and scored
// opportunities. Nothing reads the scheduler or the controller before the
// cron run is recorded, so it is the driver's fire that wakes them.
func TestDevStackShowsThePipelineWithTheCronDriver(t *testing.T) {
	t.Parallel()
	dir := outputDir(t)
	s := startSim(t, dir, "-apps", "2000", "-current-markup-pct", "50")
	llm := startSimulator(t, dir, "llm-sim")
	persist := filepath.Join(dir, "state")
	prepareDB(t, persist, dir, 2000)
	w := &worker{persist: persist, simBase: s.base, dir: dir, vars: []string{"LLM_BASE_URL:" + llm.base + "/v1"}, owner: t}
	w.start(t, "wrangler-1.log")
	healthy := time.Now()
	deadline := healthy.Add(devStackWithin)
	driver, cronLog := startDevCron(t, w, filepath.Join(dir, "dev-cron.log"))
	since := func() string { return time.Since(healthy).Round(time.Second).String() }

	const crawlCycle = "*/5 * * * *"
	eventually(t, time.Until(deadline), "a */5 run in /v1/system/cron", func() (bool, string) {
		var runs map[string]cronRunView
		doJSON(t, "GET", w.base+"/v1/system/cron", "", nil, &runs)
		r, ok := runs[crawlCycle]
		return ok && r.RanAt != "" && r.Crawl != nil, jsonString(runs)
	})
	t.Logf("*/5 run recorded %s after /health", since())

	eventually(t, time.Until(deadline), "every scheduler task run at least once", func() (bool, string) {
		st := schedStatus(t, w)
		for _, task := range sc.DeclaredTasks() {
			if st[task.Name].Runs < 1 {
				return false, jsonString(st)
			}
		}
		return len(st) == len(sc.DeclaredTasks()), jsonString(st)
	})
	t.Logf("every scheduler task ran %s after /health", since())

	eventually(t, time.Until(deadline), "scored opportunities", func() (bool, string) {
		var page struct {
			Items []market `json:"items"`
		}
		code := doJSON(t, "GET", w.base+"/v1/opportunities?limit=5", "", nil, &page)
		return code == 200 && len(page.Items) > 0, jsonString(page)
	})
	t.Logf("opportunities %s after /health", since())

	// The driver fired each cron once at /health, with one JSON line a
	// fire, and goes on: the */5 fires again on its sped-up schedule.
	eventually(t, time.Until(deadline), "a scheduled */5 fire after the first", func() (bool, string) {
		fires := driverFires(t, cronLog.String())
		return len(fires[crawlCycle]) >= 2, cronLog.String()
	})
	fires := driverFires(t, cronLog.String())
	for _, expr := range []string{crawlCycle, "0 */6 * * *", "0 3 * * *"} {
		f := fires[expr]
		if len(f) == 0 || f[0]["first"] != true || f[0]["status"] != 200.0 || f[0]["duration_ms"] == nil {
			t.Fatalf("cron %q: fires %v; driver log:\n%s", expr, f, cronLog.String())
		}
	}
	if f := fires[crawlCycle]; f[1]["first"] == true || f[1]["status"] != 200.0 {
		t.Fatalf("second */5 fire: %v", f[1])
	}
	// The controller's first tick came with the first */5 fire's wake.
	first, ok := firstEventAt(w.log.String(), "enrichment.tick")
	if !ok || first.Sub(healthy) > firstTickWithin {
		t.Fatalf("first enrichment tick at %s (found %v), /health at %s: want within %s", first, ok, healthy, firstTickWithin)
	}
	t.Logf("first enrichment tick %s after /health", first.Sub(healthy).Round(time.Second))
	t.Logf("driver: %d */5 fires; whole check %s after /health", len(fires[crawlCycle]), since())

	// make dev stopped while the controller runs a tick, then started
	// again: the dead run's safety alarm (enrichment.RunTimeout after it
	// began) is the only wake the new runtime has of its own, so without
	// a call to the controller its first tick waits minutes, with nothing
	// on screen. The driver's first */5 fire is that call: the new
	// instance finds the run abandoned and resumes at once.
	s.setConfig(t, map[string]any{"latency_ms": slowUpstreamMS}) // a run that lasts
	eventually(t, time.Until(deadline), "a run in flight", func() (bool, string) {
		var st struct {
			RunInFlight bool `json:"run_in_flight"`
		}
		doJSON(t, "GET", w.base+"/v1/enrichment/status", "", nil, &st)
		return st.RunInFlight, jsonString(st)
	})
	stopGroup(driver)
	w.restart(t, "wrangler-2.log")
	restarted := time.Now()
	startDevCron(t, w, filepath.Join(dir, "dev-cron-2.log"))
	var tick time.Time
	eventually(t, resumeWithin+10*time.Second, "the first tick after the restart", func() (bool, string) {
		var ok bool
		tick, ok = firstEventAt(w.log.String(), "enrichment.tick")
		return ok, ""
	})
	if _, ok := firstEventAt(w.log.String(), "enrichment.run_abandoned"); !ok {
		t.Fatalf("the restart found no run in flight: %s", tail(w.log.String(), 2000))
	}
	if took := tick.Sub(restarted); took > resumeWithin {
		t.Fatalf("first tick %s after the restart's /health: want within %s", took.Round(time.Second), resumeWithin)
	}
	t.Logf("after a restart mid-run: first tick %s after /health", tick.Sub(restarted).Round(time.Second))
}

// slowUpstreamMS is the simulator's latency while the test waits for a
// run in flight to stop the stack in: each request takes seconds, so the
// run is still going when wrangler dev stops.
const slowUpstreamMS = 3000

// resumeWithin bounds the controller's first tick after a restart with the
// driver: well inside enrichment.RunTimeout (3 minutes), the dead run's
// safety alarm.
const resumeWithin = time.Minute

// startDevCron starts cmd/dev-cron against w as make dev does, sped up
// DEV_CRON_SPEEDUP=devCronSpeedup times, its log in logPath.
func startDevCron(t *testing.T, w *worker, logPath string) (*exec.Cmd, *syncBuffer) {
	t.Helper()
	u, err := url.Parse(w.base)
	if err != nil {
		t.Fatal(err)
	}
	driver := exec.Command(binaries["dev-cron"], "-port", u.Port(), "-config", filepath.Join(root, "wrangler.jsonc"))
	driver.Env = append(os.Environ(), "DEV_CRON_SPEEDUP="+devCronSpeedup)
	return driver, startProcess(t, driver, logPath)
}

// driverFires is dev-cron's fire events by cron, in order.
func driverFires(t *testing.T, log string) map[string][]map[string]any {
	t.Helper()
	out := map[string][]map[string]any{}
	for _, line := range strings.Split(log, "\n") {
		var ev map[string]any
		if json.Unmarshal([]byte(line), &ev) != nil || ev["event"] != "dev_cron.fire" {
			continue
		}
		expr, _ := ev["cron"].(string)
		out[expr] = append(out[expr], ev)
	}
	return out
}

// firstEventAt is the ts of the first log line with the given event.
func firstEventAt(log, event string) (time.Time, bool) {
	for _, line := range strings.Split(log, "\n") {
		i := strings.Index(line, "{")
		if i < 0 || !strings.Contains(line, `"event":"`+event+`"`) {
			continue
		}
		var ev struct{ TS time.Time }
		if json.Unmarshal([]byte(line[i:]), &ev) == nil && !ev.TS.IsZero() {
			return ev.TS, true
		}
	}
	return time.Time{}, false
}
