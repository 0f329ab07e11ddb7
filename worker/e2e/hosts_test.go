//go:build integration

package e2e

import (
	"path/filepath"
	"testing"
	"time"
)

// hostPace is one host's pace in GET /v1/enrichment/status (paces).
type hostPace struct {
	RatePerMin             float64 `json:"rate_per_min"`
	CapacityEstimatePerMin float64 `json:"capacity_estimate_per_min"`
	InHold                 bool    `json:"in_hold"`
	Sent                   int64   `json:"sent"`
	Refused                int64   `json:"refused"`
}

type pacesStatus struct {
	Paces  map[string]hostPace `json:"paces"`
	Totals struct {
		Completed int64 `json:"completed"`
	} `json:"totals"`
}

// Issue 15: the API host (lookups) and the store host (pages) limit
// separately, and each has its own pace. First the store host is throttled
// hard and the API host free, then the other way round: each time the
// throttled host's pace converges to its limit and the free host's pace
// sees no refusal and no hold.
func TestEachHostPacedToItsOwnLimit(t *testing.T) {
	const (
		apps = 1500
		// Pages at 30/min against probe's 60/min start; lookups of 5 apps
		// each, so that lookups matter when their host is the tight one.
		storeLimit, apiLimit = 30, 6
		phase                = 4 * time.Minute
	)
	dir := outputDir(t)
	s := startSim(t, dir, "-apps", itoa(apps), "-rate-per-min", "6000", "-burst", "100",
		"-store-rate-per-min", itoa(storeLimit), "-store-burst", "5")
	persist := filepath.Join(dir, "state")
	prepareDB(t, persist, dir, apps)
	w := &worker{persist: persist, simBase: s.base, dir: dir, owner: t, vars: []string{"LOOKUP_BATCH:5"}}
	w.start(t, "wrangler-1.log")

	paces := func() pacesStatus {
		var st pacesStatus
		if code := doJSON(t, "GET", w.base+"/v1/enrichment/status", "", nil, &st); code != 200 || len(st.Paces) != 2 {
			t.Fatalf("status: %d %+v", code, st)
		}
		return st
	}
	hostStats := func(host string) (served, refused float64) {
		h, _ := s.stats(t)["by_host"].(map[string]any)[host].(map[string]any)
		return h["served"].(float64), h["refused"].(float64)
	}

	// Phase 1: pages throttled, lookups free. The status wakes the
	// controller (its first use arms its alarm).
	eventually(t, 60*time.Second, "first completions", func() (bool, string) {
		st := paces()
		return st.Totals.Completed > 0, jsonString(st)
	})
	time.Sleep(phase)
	st := paces()
	api, store := st.Paces["api"], st.Paces["store"]
	t.Logf("pages at %d/min, lookups free: store pace %+v; api pace %+v; %d completed", storeLimit, store, api, st.Totals.Completed)
	if store.Refused == 0 || store.CapacityEstimatePerMin < storeLimit/2 || store.CapacityEstimatePerMin > storeLimit*3/2 {
		t.Fatalf("the store pace did not converge to its host's %d/min: %+v", storeLimit, store)
	}
	if api.Refused != 0 || api.InHold || api.CapacityEstimatePerMin != 0 {
		t.Fatalf("page refusals reached the lookups' pace: %+v", api)
	}
	if _, refused := hostStats("api"); refused != 0 {
		t.Fatalf("the simulator refused %v API-host requests with its limit at 6000/min", refused)
	}
	storeRefused := store.Refused

	// Phase 2: lookups throttled, pages free.
	s.setConfig(t, map[string]any{"rate_per_min": apiLimit, "burst": 2, "store_rate_per_min": 6000, "store_burst": 100})
	before := st
	phaseStart := time.Now()
	time.Sleep(phase)
	st = paces()
	minutes := time.Since(phaseStart).Minutes()
	api, store = st.Paces["api"], st.Paces["store"]
	sent := float64(api.Sent - before.Paces["api"].Sent)
	refused := float64(api.Refused - before.Paces["api"].Refused)
	perMin := float64(st.Totals.Completed-before.Totals.Completed) / minutes
	t.Logf("lookups at %d/min, pages free: %.1f lookups/min sent, %.0f refused; %.1f apps/min; api pace %+v; store pace %+v",
		apiLimit, sent/minutes, refused, perMin, api, store)
	// What the controller sends the API host follows its limit, with few
	// refusals. (At a few requests a minute a tick sends one lookup, so a
	// refusal reads as a block to probe, which then holds in time instead
	// of learning an estimate: see README "Two hosts, two paces".)
	// Served, not sent: refused lookups are bounded on their own (a
	// quarter), and coming down from the free host's pace the first
	// refusals add to what is sent without adding to what is served.
	if served := (sent - refused) / minutes; served < apiLimit*0.6 || served > apiLimit*1.25 || refused > sent/4 {
		t.Fatalf("the lookups' pace did not follow its host's %d/min: %.1f/min served, %.1f/min sent, %.0f refused", apiLimit, served, sent/minutes, refused)
	}
	if store.Refused != storeRefused || store.InHold {
		t.Fatalf("lookup refusals reached the pages' pace: %+v (refused %d before)", store, storeRefused)
	}
	// The apps completed follow the lookups served (a refused lookup
	// carries no app): 5 apps a lookup.
	served := (sent - refused) / minutes
	if perMin < served*5*0.7 || perMin > served*5*1.1 {
		t.Fatalf("%.1f apps/min with %.1f lookups/min of 5 apps served", perMin, served)
	}
}

// Issue 15: an app whose stored lookup is fresh (a recent search or
// lookup, LOOKUP_FRESH_H) is enriched with its page alone: a queue of such
// apps drains with no lookup sent, and their stored fields are kept.
func TestFreshLookupsAreNotMadeAgain(t *testing.T) {
	const apps = 120
	dir := outputDir(t)
	s := startSim(t, dir, "-apps", itoa(apps), "-rate-per-min", "6000", "-burst", "100")
	persist := filepath.Join(dir, "state")
	prepareDB(t, persist, dir, apps)
	// As a keyword search leaves them: lookup fields and lookup_at, now.
	wrangler(t, persist, "d1", "execute", "DB", "--local", "--command",
		`UPDATE app_registry SET name = 'searched ' || track_id, rating_count = 1000, version = '9.9',
  lookup_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')`)
	w := startWorker(t, dir, persist, s.base)

	var st pacesStatus
	eventually(t, 3*time.Minute, "the queue drained", func() (bool, string) {
		doJSON(t, "GET", w.base+"/v1/enrichment/status", "", nil, &st)
		rows := d1Rows(t, persist, `SELECT COUNT(*) AS queued FROM app_registry WHERE enriched_at IS NULL`)
		return rows[0]["queued"] == 0.0, jsonString(rows)
	})
	var raw map[string]any
	doJSON(t, "GET", w.base+"/v1/enrichment/status", "", nil, &raw)
	totals := raw["totals"].(map[string]any)
	lookups, pages := simRequests(t, s, "lookup"), simRequests(t, s, "page")
	t.Logf("%d apps with fresh stored lookups: %v lookups, %v pages sent; totals %v", apps, lookups, pages, jsonString(totals))
	if lookups != 0 || pages < apps || totals["lookups_skipped"].(float64) < apps*0.95 {
		t.Fatalf("fresh lookups were made again: %v lookups, %v pages, %v skipped", lookups, pages, totals["lookups_skipped"])
	}
	kept := d1Rows(t, persist, `SELECT COUNT(*) AS n FROM app_registry
WHERE enrichment_source = 'itunes+store' AND name = 'searched ' || track_id AND version = '9.9' AND rating_histogram IS NOT NULL`)
	if kept[0]["n"].(float64) < apps*0.95 {
		t.Fatalf("only %v of %d apps enriched from their stored lookup and their page", kept[0]["n"], apps)
	}
}
