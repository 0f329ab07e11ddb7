//go:build integration

package e2e

import (
	"fmt"
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

// Bounds of TestEachHostPacedToItsOwnLimit. It proves the wiring: each
// host has its own pace, and one host's refusals never reach the other's.
// How fast and how closely a pace converges is the native virtual-clock
// tests' (durable/pacing), so the live phases are short.
const (
	hostsApps = 1500
	// Pages at 30/min (burst 5) against probe's 60/min start; lookups of 5
	// apps each (LOOKUP_BATCH), so that lookups matter when their host is
	// the tight one, at 6/min (burst 2).
	storeLimit, storeBurst = 30, 5
	apiLimit, apiBurst     = 6, 2
	lookupBatch            = 5
	// storeConvergeTimeout bounds phase 1: the store pace's estimate
	// reaches its host's limit (±50 %) within it.
	storeConvergeTimeout = 3 * time.Minute
	// lookupPhase is how long phase 2 runs with the lookups throttled, and
	// pagesTunedPerMin the pages' pace then (the store host is free).
	lookupPhase      = 90 * time.Second
	pagesTunedPerMin = 300
	// lookupStepRefusals is what coming down from the free host's pace, and
	// probing its new limit, may cost in refusals on top of what the bucket
	// serves. Measured (go test -tags integration -run
	// TestEachHostPacedToItsOwnLimit -v ./worker/e2e/, and make
	// test-integration): 14 and 16 lookups sent in the 90 s, 8 and 10
	// served, 6 refused each time, against a bucket of 11; a lookups' pace
	// that ignored its host would send the demand, ~90.
	lookupStepRefusals = 10
	// lookupServedFloor: the lookups' pace keeps its host busy, serving at
	// least this share of what the limit allows over the phase.
	lookupServedFloor = 0.6
)

// The API host (lookups) and the store host (pages) limit
// separately, and each has its own pace. First the store host is throttled
// hard and the API host free, then the other way round: each time the
// throttled host's pace follows its limit and the free host's pace sees no
// refusal and no hold.
func TestEachHostPacedToItsOwnLimit(t *testing.T) {
	// Not parallel: it measures rates, so it runs alone (Go runs the tests
	// without t.Parallel first, one by one).
	dir := outputDir(t)
	s := startSim(t, dir, "-apps", itoa(hostsApps), "-rate-per-min", "6000", "-burst", "100",
		"-store-rate-per-min", itoa(storeLimit), "-store-burst", itoa(storeBurst))
	persist := filepath.Join(dir, "state")
	prepareDB(t, persist, dir, hostsApps)
	w := &worker{persist: persist, simBase: s.base, dir: dir, owner: t, vars: []string{"LOOKUP_BATCH:" + itoa(lookupBatch)}}
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
	apiUntouched := func(api hostPace) {
		if api.Refused != 0 || api.InHold || api.CapacityEstimatePerMin != 0 {
			t.Fatalf("page refusals reached the lookups' pace: %+v", api)
		}
	}

	// Phase 1: pages throttled, lookups free. The status wakes the
	// controller (its first use arms its alarm).
	phaseStart := time.Now()
	var st pacesStatus
	eventually(t, storeConvergeTimeout, "the store pace's estimate at its host's limit", func() (bool, string) {
		st = paces()
		apiUntouched(st.Paces["api"])
		store := st.Paces["store"]
		return store.Refused > 0 && store.CapacityEstimatePerMin >= storeLimit/2 && store.CapacityEstimatePerMin <= storeLimit*3/2, jsonString(st)
	})
	api, store := st.Paces["api"], st.Paces["store"]
	t.Logf("pages at %d/min, lookups free: after %s store pace %+v; api pace %+v; %d completed",
		storeLimit, time.Since(phaseStart).Round(time.Second), store, api, st.Totals.Completed)
	if _, refused := hostStats("api"); refused != 0 {
		t.Fatalf("the simulator refused %v API-host requests with its limit at 6000/min", refused)
	}
	storeRefused := store.Refused

	// Phase 2: lookups throttled, pages free, and the pages' pace tuned up
	// to pagesTunedPerMin: the lookups' demand (a fifth of the pages) is
	// ten times their host's limit, so a lookups' pace that did not follow
	// its own host would send many times what the bucket serves.
	s.setConfig(t, map[string]any{"rate_per_min": apiLimit, "burst": apiBurst, "store_rate_per_min": 6000, "store_burst": 100})
	if code := doJSON(t, "POST", w.base+"/v1/enrichment/tune", adminToken, fmt.Sprintf(`{"rate_per_min": %d}`, pagesTunedPerMin), nil); code != 200 {
		t.Fatalf("tune the pages' pace: %d", code)
	}
	before := paces()
	phaseStart = time.Now()
	time.Sleep(lookupPhase)
	st = paces()
	minutes := time.Since(phaseStart).Minutes()
	api, store = st.Paces["api"], st.Paces["store"]
	sent := float64(api.Sent - before.Paces["api"].Sent)
	refused := float64(api.Refused - before.Paces["api"].Refused)
	served := sent - refused
	completed := float64(st.Totals.Completed - before.Totals.Completed)
	// What the bucket can serve over the phase: its rate and its burst.
	bucket := apiLimit*minutes + apiBurst
	t.Logf("lookups at %d/min (burst %d), pages free, %.1f min: %.0f lookups sent, %.0f served, %.0f refused (the bucket serves at most %.1f); %.0f apps completed; api pace %+v; store pace %+v",
		apiLimit, apiBurst, minutes, sent, served, refused, bucket, completed, api, store)
	// The lookups' pace follows its host's limit: what it sends overshoots
	// what the bucket could ever serve by no more than the refusals of
	// coming down from the free host's pace, and it keeps the host busy.
	if sent > bucket+lookupStepRefusals {
		t.Fatalf("the lookups' pace overshot its host's %d/min: %.0f sent in %.1f min, the bucket serves at most %.1f (+%d allowed refusals)",
			apiLimit, sent, minutes, bucket, lookupStepRefusals)
	}
	if served < lookupServedFloor*apiLimit*minutes {
		t.Fatalf("the lookups' pace starved its host: %.0f served in %.1f min at %d/min", served, minutes, apiLimit)
	}
	if store.Refused != storeRefused || store.InHold {
		t.Fatalf("lookup refusals reached the pages' pace: %+v (refused %d before)", store, storeRefused)
	}
	// The apps completed follow the lookups served (a refused lookup
	// carries no app): lookupBatch apps a lookup, give or take the lookup
	// whose pages are in flight at either end of the phase.
	if completed < (served-1)*lookupBatch || completed > (served+1)*lookupBatch {
		t.Fatalf("%.0f apps completed with %.0f lookups of %d apps served", completed, served, lookupBatch)
	}
}

// An app whose stored lookup is fresh (a recent search or
// lookup, LOOKUP_FRESH_H) is enriched with its page alone: a queue of such
// apps drains with no lookup sent, and their stored fields are kept.
func TestFreshLookupsAreNotMadeAgain(t *testing.T) {
	t.Parallel()
	const apps = 120
	dir := outputDir(t)
	s := startSim(t, dir, "-apps", itoa(apps), "-rate-per-min", "6000", "-burst", "100")
	persist := filepath.Join(dir, "state")
	prepareDB(t, persist, dir, apps)
	// As a keyword search leaves them: lookup fields and lookup_at, now.
	seedSQL(t, persist,
		`UPDATE app_registry SET name = 'searched ' || track_id, rating_count = 1000, version = '9.9',
  lookup_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')`)
	w := startWorker(t, dir, persist, s.base)
	// Pages at 300/min, not probe's 60/min start: the queue drains in
	// seconds (the host is free; the pace is not what this test checks).
	if code := doJSON(t, "POST", w.base+"/v1/enrichment/tune", adminToken, `{"rate_per_min": 300}`, nil); code != 200 {
		t.Fatalf("tune: %d", code)
	}

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
