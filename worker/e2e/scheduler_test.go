//go:build integration

package e2e

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"storecrawl/durable/scheduler"
	sc "storecrawl/worker"
)

type schedTask struct {
	Name                string `json:"name"`
	NextDue             string `json:"next_due"`
	NextRunAfter        int64  `json:"next_run_after"`
	Runs                int64  `json:"runs"`
	ConsecutiveFailures int    `json:"consecutive_failures"`
	LastSummary         string `json:"last_summary"`
	LastError           string `json:"last_error"`
	Pause               *struct {
		Reason string `json:"reason"`
	} `json:"pause"`
	ConsecutiveRateLimited int    `json:"consecutive_rate_limited"`
	Breaker                string `json:"breaker"`
}

func schedStatus(t *testing.T, w *worker) map[string]schedTask {
	t.Helper()
	var st struct {
		Tasks []schedTask `json:"tasks"`
	}
	if code := doJSON(t, "GET", w.base+"/v1/scheduler/status", "", nil, &st); code != 200 {
		t.Fatalf("scheduler status: %d", code)
	}
	out := map[string]schedTask{}
	for _, task := range st.Tasks {
		out[task.Name] = task
	}
	return out
}

// TestSchedulerTasksAndFailurePolicy drives the SchedulerDO through the real
// Worker: both tasks run and write KV/D1, a 429 with Retry-After backs off
// one task while the other keeps running, the control calls are guarded,
// and the schedule survives a restart.
func TestSchedulerTasksAndFailurePolicy(t *testing.T) {
	t.Parallel()
	dir := outputDir(t)
	s := startSim(t, dir, "-apps", "300", "-rate-per-min", "6000", "-burst", "100")
	persist := filepath.Join(dir, "state")
	prepareDB(t, persist, dir, 40)
	w := startWorker(t, dir, persist, s.base)
	ctl := w.base + "/v1/scheduler/"

	getStatus(t, w) // first use starts the EnrichmentController, which enriches the seeded apps
	st := schedStatus(t, w)
	if len(st) != len(sc.DeclaredTasks()) || st["retry-failed"].NextDue == "" || st["charts-refresh"].NextDue == "" || st["ledger-reconcile"].NextDue == "" || st["page-reparse"].NextDue == "" ||
		st["facts-prune"].NextDue == "" {
		t.Fatalf("status: %+v", st)
	}
	var out map[string]any
	if code := doJSON(t, "POST", ctl+"run-now", "", `{"task":"charts-refresh"}`, &out); code != 401 {
		t.Fatalf("unauthenticated run-now: %d", code)
	}
	if code := doJSON(t, "POST", ctl+"run-now", adminToken, `{"task":"nope"}`, &out); code != 400 || out["field"] != "task" {
		t.Fatalf("bad task: %d %v", code, out)
	}

	// charts-refresh fills KV; users read it from KV.
	doJSON(t, "POST", ctl+"run-now", adminToken, `{"task":"charts-refresh"}`, nil)
	var chart struct {
		Items []map[string]any `json:"items"`
	}
	eventually(t, 30*time.Second, "chart in KV", func() (bool, string) {
		chart.Items = nil
		code := doJSON(t, "GET", w.base+"/v1/charts?country=us&collection=topfreeapplications&category=all", "", nil, &chart)
		return code == 200 && len(chart.Items) > 0, jsonString(chart)
	})
	if code := doJSON(t, "GET", w.base+"/v1/charts?country=xx&collection=topfreeapplications", "", nil, &out); code != 400 || out["field"] != "country" {
		t.Fatalf("bad chart params: %d %v", code, out)
	}

	// rating-sweep reads D1 past its cursor (the controller enriches the seeded apps meanwhile).
	eventually(t, 60*time.Second, "apps enriched", func() (bool, string) {
		var app map[string]any
		doJSON(t, "GET", w.base+"/v1/apps/100000010", "", nil, &app)
		return app["enriched_at"] != nil, jsonString(app)
	})
	// The first wake ran every task once already; this run sees the apps.
	firstSweeps := schedStatus(t, w)["rating-sweep"].Runs
	doJSON(t, "POST", ctl+"run-now", adminToken, `{"task":"rating-sweep"}`, nil)
	eventually(t, 30*time.Second, "sweep ran", func() (bool, string) {
		st = schedStatus(t, w)
		return st["rating-sweep"].Runs > firstSweeps, jsonString(st["rating-sweep"])
	})
	if sw := st["rating-sweep"]; !strings.Contains(sw.LastSummary, "apps from cursor") || strings.HasPrefix(sw.LastSummary, "0 apps") {
		t.Fatalf("sweep summary: %+v", sw)
	}

	// facts-prune runs its deletes on D1 (no fact is 30 days old yet).
	doJSON(t, "POST", ctl+"run-now", adminToken, `{"task":"facts-prune"}`, nil)
	eventually(t, 30*time.Second, "facts-prune ran", func() (bool, string) {
		st = schedStatus(t, w)
		return st["facts-prune"].Runs >= 1, jsonString(st["facts-prune"])
	})
	if p := st["facts-prune"]; p.ConsecutiveFailures != 0 || !strings.HasPrefix(p.LastSummary, "pruned 0 facts and 0 rollup minutes") {
		t.Fatalf("facts-prune: %+v", p)
	}

	// The upstream turns to 429 with Retry-After: charts backs off, the sweep keeps going.
	s.setConfig(t, map[string]any{"rate_per_min": 1, "burst": 1, "on_exceed": 429, "retry_after_s": 600})
	runsBefore := schedStatus(t, w)["charts-refresh"].Runs
	doJSON(t, "POST", ctl+"run-now", adminToken, `{"task":"charts-refresh"}`, nil)
	eventually(t, 30*time.Second, "charts backs off", func() (bool, string) {
		st = schedStatus(t, w)
		c := st["charts-refresh"]
		// Retry-After 600 is held at the 300 s cap (UPSTREAM_MAX_HOLD_S). A
		// refusal is no failure the breaker counts.
		return c.Runs > runsBefore && c.ConsecutiveRateLimited >= 1 && c.ConsecutiveFailures == 0 && c.Breaker == scheduler.BreakerClosed &&
			c.NextRunAfter > time.Now().Add(4*time.Minute).UnixMilli() &&
			c.NextRunAfter <= time.Now().Add(5*time.Minute).UnixMilli(), jsonString(c)
	})
	if !strings.Contains(w.log.String(), `"event":"upstream.hold_capped"`) {
		t.Fatal("the capped Retry-After is not logged")
	}
	sweepRuns := st["rating-sweep"].Runs
	doJSON(t, "POST", ctl+"run-now", adminToken, `{"task":"rating-sweep"}`, nil)
	eventually(t, 30*time.Second, "sweep still runs", func() (bool, string) {
		st = schedStatus(t, w)
		return st["rating-sweep"].Runs > sweepRuns && st["rating-sweep"].ConsecutiveFailures == 0, jsonString(st["rating-sweep"])
	})
	if !strings.Contains(w.log.String(), `"event":"scheduler.task.backoff"`) {
		t.Fatal("backoff not logged")
	}

	// Pause and resume, with a reason.
	doJSON(t, "POST", ctl+"pause", adminToken, `{"task":"rating-sweep","reason":"reindex"}`, nil)
	if p := schedStatus(t, w)["rating-sweep"].Pause; p == nil || p.Reason != "reindex" {
		t.Fatalf("pause: %+v", p)
	}
	doJSON(t, "POST", ctl+"resume", adminToken, `{"task":"charts-refresh"}`, nil)
	if c := schedStatus(t, w)["charts-refresh"]; c.NextRunAfter != 0 || c.ConsecutiveFailures != 0 || c.ConsecutiveRateLimited != 0 {
		t.Fatalf("resume must clear the backoff: %+v", c)
	}

	// The schedule survives a restart.
	before := schedStatus(t, w)
	w.restart(t, "wrangler-2.log")
	after := schedStatus(t, w)
	if after["charts-refresh"].Runs != before["charts-refresh"].Runs || after["rating-sweep"].Pause == nil {
		t.Fatalf("scheduler state lost: %+v → %+v", before, after)
	}
}

// TestCronAloneStartsEveryTask deploys fresh state and fires only the
// 5-minute cron: no /v1/scheduler route and no
// dashboard is called before every task has run. The first status call
// must find each task run already, by the cron's wake alone (a status call
// that created the scheduler would find no runs yet).
func TestCronAloneStartsEveryTask(t *testing.T) {
	t.Parallel()
	dir := outputDir(t)
	s := startSim(t, dir, "-apps", "100", "-rate-per-min", "6000", "-burst", "100")
	persist := filepath.Join(dir, "state")
	prepareDB(t, persist, dir, 20)
	w := startWorker(t, dir, persist, s.base)

	req := w.base + "/__scheduled?cron=" + strings.ReplaceAll("*/5 * * * *", " ", "+")
	if code := doJSON(t, "GET", req, "", nil, nil); code != 200 {
		t.Fatalf("scheduled: %d", code)
	}
	// The charts land in KV (read without touching the scheduler): the
	// first wake's runs have started.
	eventually(t, 60*time.Second, "charts in KV from the cron's wake", func() (bool, string) {
		var chart struct {
			Items []map[string]any `json:"items"`
		}
		code := doJSON(t, "GET", w.base+"/v1/charts?country=us&collection=topfreeapplications&category=all", "", nil, &chart)
		return code == 200 && len(chart.Items) > 0, jsonString(chart)
	})
	eventually(t, 60*time.Second, "every task ran", func() (bool, string) {
		st := schedStatus(t, w)
		for _, task := range sc.DeclaredTasks() {
			if st[task.Name].Runs < 1 {
				return false, jsonString(st)
			}
		}
		return len(st) == len(sc.DeclaredTasks()), jsonString(st)
	})
}
