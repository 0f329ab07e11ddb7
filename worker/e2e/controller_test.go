//go:build integration

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sc "storecrawl/worker"
	"storecrawl/worker/pagebatch"
)

// status is the subset of GET /v1/enrichment/status the tests read.
type status struct {
	Running            bool  `json:"running"`
	RunInFlight        bool  `json:"run_in_flight"`
	InCooldown         bool  `json:"in_cooldown"`
	CooldownRemainingS int64 `json:"cooldown_remaining_s"`
	BatchSize          int   `json:"batch_size"`
	IntervalMs         int64 `json:"interval_ms"`
	Totals             struct {
		Dispatched  int64 `json:"dispatched"`
		Completed   int64 `json:"completed"`
		Failed      int64 `json:"failed"`
		RateLimited int64 `json:"rate_limited"`
		Ticks       int64 `json:"ticks"`
		Cooldowns   int64 `json:"cooldowns"`
	} `json:"totals"`
	Rolling struct {
		SuccessRate float64 `json:"success_rate"`
		SampleSize  int     `json:"sample_size"`
	} `json:"rolling"`
	Pacing                 string         `json:"pacing"`
	CapacityEstimatePerMin float64        `json:"capacity_estimate_per_min"`
	PacingDetail           map[string]any `json:"pacing_detail"`
	ProjectedPerDay        int64          `json:"projected_per_day"`
}

func getStatus(t *testing.T, w *worker) status {
	t.Helper()
	var st status
	if code := doJSON(t, "GET", w.base+"/v1/enrichment/status", "", nil, &st); code != 200 {
		t.Fatalf("status: HTTP %d", code)
	}
	return st
}

const testCooldownS = 15

// simRequests is every request of a route that reached the simulator.
func simRequests(t *testing.T, s *sim, route string) float64 {
	t.Helper()
	routes, _ := s.stats(t)["by_route"].(map[string]any)
	r, _ := routes[route].(map[string]any)
	n := 0.0
	for _, k := range []string{"served", "refused", "dropped"} {
		v, _ := r[k].(float64)
		n += v
	}
	return n
}

// TestControllerEndToEnd drives one stack through the controller's life:
// self-start, enrichment into D1/R2 and the queue, rejected control calls,
// a hostile upstream (back-off, cooldown), recovery, stop/start, a restart
// of wrangler dev, and the cron trigger.
func TestControllerEndToEnd(t *testing.T) {
	t.Parallel()
	dir := outputDir(t)
	s := startSim(t, dir, "-apps", "3000", "-rate-per-min", "6000", "-burst", "100")
	persist := filepath.Join(dir, "state")
	prepareDB(t, persist, dir, 3000)
	w := &worker{persist: persist, simBase: s.base, dir: dir, vars: []string{"ENRICHMENT_COOLDOWN_S:" + itoa(testCooldownS)}, owner: t}
	w.start(t, "wrangler-1.log")

	// --- self-start: the first use creates the object, which arms its own alarm.
	st := getStatus(t, w)
	if !st.Running {
		t.Fatalf("controller not running on first use: %+v", st)
	}
	eventually(t, 60*time.Second, "first completions", func() (bool, string) {
		st = getStatus(t, w)
		return st.Totals.Completed >= 5, jsonString(st)
	})
	if st.Pacing != "probe" {
		t.Fatalf("default pacing: %q", st.Pacing)
	}
	// Check tune works (and speed the test up).
	var tuned status
	if code := doJSON(t, "POST", w.base+"/v1/enrichment/tune", adminToken, `{"rate_per_min": 300}`, &tuned); code != 200 || tuned.PacingDetail["rate_per_min"] != 300.0 {
		t.Fatalf("tune: %d %+v", code, tuned)
	}

	t.Run("enriched into D1, R2 and the queue consumer", func(t *testing.T) {
		var app map[string]any
		eventually(t, 60*time.Second, "app 100000001 analyzed by the queue consumer", func() (bool, string) {
			app = nil
			doJSON(t, "GET", w.base+"/v1/apps/100000001", "", nil, &app)
			return app["enriched_at"] != nil && app["analyzed_at"] != nil, jsonString(app)
		})
		if app["enrichment_source"] != "itunes+store" || app["subtitle"] == nil || app["name"] == nil || app["demand_score"] == nil {
			t.Fatalf("enriched record incomplete: %v", app)
		}
		if c, ok := app["competitiveness_score"].(float64); !ok || c <= 0 || c > 100 {
			t.Fatalf("competitiveness_score %v, want a score in (0, 100]", app["competitiveness_score"])
		}
		// Every upstream call went through the global limiter of its host:
		// lookups (in batches) the API host's, pages the store host's, each
		// taken from a lease that buys several ticks' worth in one acquire
		// (ratelimit.Lease), so the store host saw fewer acquires than pages.
		for _, key := range []string{"upstream-catalogue", "upstream-store-pages"} {
			var lim map[string]any
			if code := doJSON(t, "GET", w.base+"/v1/limiter/status?namespace=internal&key="+key, "", nil, &lim); code != 200 {
				t.Fatalf("limiter status %s: %d %v", key, code, lim)
			}
			acquires := lim["counters"].(map[string]any)["allowed"].(float64)
			if acquires < 1 {
				t.Fatalf("enrichment did not acquire through the OmniLimiter %s: %v", key, lim)
			}
			if pages := simRequests(t, s, "page"); key == "upstream-store-pages" && acquires >= pages {
				t.Fatalf("pages not leased: %v acquires of %s for %v pages", acquires, key, pages)
			}
		}
		hist, _ := app["rating_histogram"].([]any)
		if len(hist) != 5 {
			t.Fatalf("rating histogram: %v", app["rating_histogram"])
		}
		// Lookups go in batches: one lookup request serves many
		// apps, so the upstream sees about one request per app, its page.
		// (make bench measures requests per enriched app with no run in flight.)
		lookups, pages := simRequests(t, s, "lookup"), simRequests(t, s, "page")
		t.Logf("upstream requests so far: %v lookups for %v pages", lookups, pages)
		if lookups == 0 || 2*lookups > pages {
			t.Fatalf("lookups are not batched: %v lookup requests for %v pages", lookups, pages)
		}
		// The page is a member of its tick's batch object: its bytes at
		// the reference's offset (worker/pagebatch).
		key, _ := app["html_r2_key"].(string)
		ref, err := pagebatch.ParseRef(key)
		if err != nil || ref.Whole || !strings.HasPrefix(ref.Key, pagebatch.Prefix) {
			t.Fatalf("html_r2_key %q: %+v %v", key, ref, err)
		}
		out := filepath.Join(dir, "pages.gz")
		wrangler(t, persist, "r2", "object", "get", "storecrawl-html/"+ref.Key, "--local", "--file", out)
		obj, err := os.ReadFile(out)
		if err != nil || int64(len(obj)) < ref.Offset+ref.Length {
			t.Fatalf("R2 object %s: %v (%d bytes)", ref.Key, err, len(obj))
		}
		html, err := pagebatch.Read(ref, obj[ref.Offset:ref.Offset+ref.Length])
		if err != nil || !strings.Contains(string(html), "product-header") {
			t.Fatalf("page %s: %v (%d bytes)", key, err, len(html))
		}
		var st struct {
			Totals struct {
				PagePuts     int64 `json:"page_puts"`
				PageRequests int64 `json:"page_requests"`
				Ticks        int64 `json:"ticks"`
			} `json:"totals"`
		}
		doJSON(t, "GET", w.base+"/v1/enrichment/status", "", nil, &st)
		t.Logf("R2 puts of pages: %d for %d pages in %d ticks", st.Totals.PagePuts, st.Totals.PageRequests, st.Totals.Ticks)
		if st.Totals.PagePuts == 0 || st.Totals.PagePuts > st.Totals.Ticks {
			t.Fatalf("a tick's pages go in one put: %d puts in %d ticks", st.Totals.PagePuts, st.Totals.Ticks)
		}
	})

	t.Run("bad control calls are rejected and change nothing", func(t *testing.T) {
		before := getStatus(t, w)
		var body map[string]any
		for _, c := range []struct {
			path, token, body string
			code              int
			field             string
		}{
			{"/v1/enrichment/stop", "", "", 401, "authorization"},
			{"/v1/enrichment/reset", "wrong-token", "", 401, "authorization"},
			{"/v1/enrichment/tune", "", `{"batch_size": 3}`, 401, "authorization"},
			{"/v1/enrichment/tune", adminToken, `{"batch_size": 3`, 400, "body"},
			{"/v1/enrichment/tune", adminToken, `{"batch_size": 0}`, 400, "batch_size"},
			{"/v1/enrichment/tune", adminToken, `{"interval_ms": 999999}`, 400, "interval_ms"},
			{"/v1/enrichment/tune", adminToken, `{"speed": 9}`, 400, "speed"},
		} {
			body = nil
			if code := doJSON(t, "POST", w.base+c.path, c.token, c.body, &body); code != c.code || body["field"] != c.field {
				t.Errorf("POST %s %q: %d %v; want %d field %s", c.path, c.body, code, body, c.code, c.field)
			}
		}
		after := getStatus(t, w)
		if !after.Running || after.Pacing != before.Pacing || after.Totals.Cooldowns != before.Totals.Cooldowns {
			t.Fatalf("state changed by rejected calls: before %+v after %+v", before, after)
		}
	})

	t.Run("hostile upstream: back off and cool down", func(t *testing.T) {
		// A 403 storm: beyond a trickle, every refusal blocks the client for a minute.
		s.setConfig(t, map[string]any{"rate_per_min": 2, "burst": 1, "on_exceed": 403, "block_s": 60})
		eventually(t, 90*time.Second, "cooldown", func() (bool, string) {
			st = getStatus(t, w)
			return st.InCooldown && st.Totals.Cooldowns >= 1 && st.CooldownRemainingS >= 5, jsonString(st)
		})
		if st.ProjectedPerDay != 0 || st.Totals.RateLimited == 0 || st.CapacityEstimatePerMin <= 0 {
			t.Fatalf("cooldown state: %+v", st)
		}
		if !strings.Contains(w.log.String(), `"event":"enrichment.cooldown"`) {
			t.Fatal("cooldown was not logged as a JSON event")
		}
		// In cooldown nothing reaches the upstream.
		served := s.stats(t)["served"].(float64) + s.stats(t)["refused"].(float64)
		time.Sleep(time.Duration(min(4, st.CooldownRemainingS-1)) * time.Second)
		st2 := s.stats(t)
		if now := st2["served"].(float64) + st2["refused"].(float64); now != served {
			t.Fatalf("upstream called during cooldown: %v → %v", served, now)
		}
	})

	t.Run("calm upstream: recover after the cooldown", func(t *testing.T) {
		s.setConfig(t, map[string]any{"rate_per_min": 6000, "burst": 100, "on_exceed": 429})
		before := getStatus(t, w)
		// The backoff ends by itself; the probe after it succeeds and the
		// loop climbs back towards the learned capacity.
		eventually(t, 2*time.Minute, "work resumes after the cooldown", func() (bool, string) {
			st = getStatus(t, w)
			return !st.InCooldown && st.Totals.Completed >= before.Totals.Completed+5, jsonString(st)
		})
		if st.Totals.Cooldowns != before.Totals.Cooldowns {
			t.Fatalf("re-entered cooldown against a calm upstream: %+v", st)
		}
		// Back near the capacity it learned before the storm, not at a crawl.
		if rate := st.PacingDetail["rate_per_min"].(float64); rate < 0.8*st.CapacityEstimatePerMin {
			t.Fatalf("resumed at %.0f/min, far below the learned %.0f/min", rate, st.CapacityEstimatePerMin)
		}
	})

	t.Run("stop is seen by the next alarm; start resumes", func(t *testing.T) {
		if code := doJSON(t, "POST", w.base+"/v1/enrichment/stop", adminToken, nil, &st); code != 200 || st.Running {
			t.Fatalf("stop: %d %+v", code, st)
		}
		eventually(t, 30*time.Second, "the run in flight to finish", func() (bool, string) {
			st = getStatus(t, w)
			return !st.RunInFlight, jsonString(st)
		})
		ticks := st.Totals.Dispatched
		time.Sleep(12 * time.Second) // longer than the interval
		if after := getStatus(t, w); after.Totals.Dispatched != ticks || after.Running {
			t.Fatalf("stopped controller kept working: %d → %+v", ticks, after)
		}
		if code := doJSON(t, "POST", w.base+"/v1/enrichment/start", adminToken, nil, &st); code != 200 || !st.Running {
			t.Fatalf("start: %d %+v", code, st)
		}
		eventually(t, 30*time.Second, "work after start", func() (bool, string) {
			st = getStatus(t, w)
			return st.Totals.Dispatched > ticks, jsonString(st)
		})
	})

	t.Run("survives a restart of wrangler dev", func(t *testing.T) {
		before := getStatus(t, w)
		w.restart(t, "wrangler-2.log")
		after := getStatus(t, w)
		if after.Totals.Completed < before.Totals.Completed || after.Totals.Cooldowns != before.Totals.Cooldowns || !after.Running ||
			after.CapacityEstimatePerMin != before.CapacityEstimatePerMin || after.Pacing != "probe" {
			t.Fatalf("state lost across restart: before %+v after %+v", before, after)
		}
		eventually(t, 60*time.Second, "the loop continues after restart", func() (bool, string) {
			st = getStatus(t, w)
			return st.Totals.Completed > after.Totals.Completed, jsonString(st)
		})
	})

	t.Run("cron trigger runs end to end", func(t *testing.T) {
		req := w.base + "/__scheduled?cron=" + strings.ReplaceAll("*/5 * * * *", " ", "+")
		if code := doJSON(t, "GET", req, "", nil, nil); code != 200 {
			t.Fatalf("scheduled: %d", code)
		}
		var runs map[string]map[string]any
		eventually(t, 20*time.Second, "cron run recorded", func() (bool, string) {
			runs = nil
			doJSON(t, "GET", w.base+"/v1/system/cron", "", nil, &runs)
			r := runs["*/5 * * * *"]
			return r != nil && r["result"] == "controller_awake running=true", jsonString(runs)
		})
		// The same cycle woke the SchedulerDO (its alarm armed after a deploy).
		if runs["*/5 * * * *"]["scheduler"] != fmt.Sprintf("scheduler_awake tasks=%d", len(sc.DeclaredTasks())) {
			t.Fatalf("scheduler not woken by the cron: %v", runs)
		}
		// The crawl cycle scanned one category and queued what it found.
		crawl, _ := runs["*/5 * * * *"]["crawl"].(map[string]any)
		if crawl["action"] != "category_scan" || crawl["apps"].(float64) < 1 {
			t.Fatalf("crawl cycle: %v", runs)
		}
	})
}
