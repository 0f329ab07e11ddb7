//go:build integration

package e2e

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// completedTotal is totals.completed in GET /v1/enrichment/status.
func completedTotal(t *testing.T, w *worker) float64 {
	t.Helper()
	var st struct {
		Totals struct {
			Completed float64 `json:"completed"`
		} `json:"totals"`
	}
	if code := doJSON(t, "GET", w.base+"/v1/enrichment/status", "", nil, &st); code != 200 {
		t.Fatalf("status: HTTP %d", code)
	}
	return st.Totals.Completed
}

// TestRetryFailedDoesNotStallTheCrawl reproduces the stall after
// retry-failed: apps given up on pages that never parse (the simulator's
// every 97th id) are put back, go first (they have their lookup), and
// must neither trip the drift breaker nor hold its probes. A real drift
// (a minute of a markup no parser knows) still pauses pages, and once the
// markup is back the crawl keeps its pace within 3 minutes, with no reset
// and no operator. Run it alone with -timeout 20m (about 9 minutes).
func TestRetryFailedDoesNotStallTheCrawl(t *testing.T) {
	t.Parallel()
	const (
		// apps is more than the run crawls at the simulator's limit
		// (simLimit pages a minute at most, ~10 minutes of work): the queue
		// never runs dry, so a flat completion count is a stall.
		apps     = 4000
		simLimit = 400
		// broken is how many queued apps' pages never parse: ids 97, 194,
		// ..., 485 of the first 500 (cmd/upstream-sim brokenPageEvery).
		broken = 5
		pace   = 300 // store pages a minute (tune)
	)
	dir := outputDir(t)
	s := startSim(t, dir, "-apps", fmt.Sprint(apps), "-rate-per-min", fmt.Sprint(simLimit), "-burst", "20")
	persist := filepath.Join(dir, "state")
	prepareDB(t, persist, dir, apps)
	w := &worker{persist: persist, simBase: s.base, dir: dir, owner: t,
		vars: []string{"ENRICHMENT_COOLDOWN_S:" + itoa(testCooldownS), "ENRICHMENT_PARSER_PROBE_S:8"}}
	w.start(t, "wrangler-1.log")
	doJSON(t, "POST", w.base+"/v1/enrichment/tune", adminToken, fmt.Sprintf(`{"rate_per_min": %d}`, pace), nil)

	brokenGivenUp := fmt.Sprintf(`SELECT COUNT(*) AS n FROM app_registry WHERE enrichment_source = 'failed'
  AND enrich_error_class = 'parse_error' AND (track_id - 100000000) %% 97 = 0 AND track_id <= 100000000 + %d`, 97*broken)
	eventually(t, 6*time.Minute, "the broken apps given up", func() (bool, string) {
		rows := d1Rows(t, persist, brokenGivenUp)
		return rows[0]["n"] == float64(broken), jsonString(rows)
	})
	var rf map[string]any
	if code := doJSON(t, "POST", w.base+"/v1/enrichment/retry-failed", adminToken, `{}`, &rf); code != 200 || rf["requeued"].(float64) < broken {
		t.Fatalf("retry-failed: %d %v", code, rf)
	}

	// The retried apps go first and fail again: pages must keep flowing.
	c0 := completedTotal(t, w)
	time.Sleep(60 * time.Second)
	baseline := completedTotal(t, w) - c0
	if h := getParserHealth(t, w); h.PagesPaused || baseline < pace/4 {
		t.Fatalf("after retry-failed: %v completed in 60 s, parser health %s", baseline, jsonString(h))
	}
	t.Logf("after retry-failed of %v apps: %v completed in 60 s, parser health %s", rf["requeued"], baseline, jsonString(getParserHealth(t, w)))

	// A real drift: a minute of a markup nobody reads pauses the pages.
	s.setConfig(t, map[string]any{"current_markup_pct": 0, "unknown_markup_pct": 100})
	eventually(t, 60*time.Second, "parser_health red", func() (bool, string) {
		h := getParserHealth(t, w)
		return h.PagesPaused, jsonString(h)
	})
	time.Sleep(60 * time.Second)
	s.setConfig(t, map[string]any{"current_markup_pct": 50, "unknown_markup_pct": 0})

	// Within 3 minutes, a minute's completions are back to half the
	// baseline's (the probes found a readable page; nobody reset anything).
	type sample struct {
		at time.Time
		n  float64
	}
	var seen []sample
	restored := time.Now()
	defer func() {
		if !t.Failed() && len(seen) > 0 {
			t.Logf("markup restored: back at pace after %s (%v completed then)", time.Since(restored).Round(time.Second), seen[len(seen)-1].n-c0)
		}
	}()
	eventually(t, 3*time.Minute, "completions back at pace", func() (bool, string) {
		now := time.Now()
		seen = append(seen, sample{now, completedTotal(t, w)})
		for _, p := range seen {
			if now.Sub(p.at) <= 60*time.Second {
				got := seen[len(seen)-1].n - p.n
				return now.Sub(p.at) >= 55*time.Second && got >= baseline/2,
					fmt.Sprintf("%v completed in the last %s (baseline %v a minute), parser %s", got, now.Sub(p.at).Round(time.Second), baseline, jsonString(getParserHealth(t, w)))
			}
		}
		return false, "no sample"
	})
	if h := getParserHealth(t, w); h.PagesPaused {
		t.Fatalf("pages still paused: %s", jsonString(h))
	}
}
