//go:build unix

package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"storecrawl/internal/devstack"
	"storecrawl/worker/crawl"
	"storecrawl/worker/subreq"
)

// pipelineApps is the catalogue the cost benchmark seeds.
const pipelineApps = 100_000

// idleCycleMaxRows is the idle cycle's bound (worker/e2e's idleCycleMaxRows).
const idleCycleMaxRows = 9

// keywordCycleKeywords is how many keywords the busy keyword cycle finds
// pending: more than one cycle searches, so the pick is full.
var keywordCycleKeywords = crawl.KeywordSearchesPerCycle + 50

// benchPipeline measures D1 rows read and written per crawl cycle, from the
// Worker's own D1 result metadata (reported in /v1/system/cron), on a local
// D1 seeded with pipelineApps apps: busy cycles (category scans), an idle
// one (nothing due), then a busy keyword cycle (benchKeywordCycle); with
// each, its subrequests and wall time from the same record.
func benchPipeline(root string) {
	persist, _ := os.MkdirTemp("", "bench-pipeline-")
	defer os.RemoveAll(persist)
	run := func(args ...string) string { return wranglerLocal(root, persist, args...) }
	run("d1", "migrations", "apply", "DB", "--local")
	seedLocalDB(root, persist, pipelineApps)

	simBase, stopSim := startSim(root)
	defer stopSim()
	base, stop := startWranglerWith(root, filepath.Join(root, "wrangler.jsonc"), persist,
		"--test-scheduled", "--var", "UPSTREAM_API_BASE:"+simBase, "--var", "UPSTREAM_STORE_BASE:"+simBase, "--var", "UPSTREAM_HINTS_BASE:"+simBase,
		"--var", "ADMIN_TOKEN:"+benchAdminToken)
	defer stop()

	fmt.Printf("\nD1 cost of the 5-minute crawl cycle on %d seeded apps (rows from D1's result metadata; subrequests of the\n", pipelineApps)
	fmt.Printf("invocation's %d, as the cron record counts them; wall time from the record)\n", subreq.PlatformLimit)
	fmt.Printf("%-6s %-16s %6s %10s %13s %8s %8s %8s   %s\n", "cycle", "action", "apps", "rows read", "rows written", "queries", "subreqs", "wall ms", "read ÷ written (goal busy ≤ 3)")
	for i := 1; i <= 3; i++ {
		r := fireCron(base)
		fmt.Printf("%-6s %-16s %6v %10d %13d %8d %8d %8d   %.2f\n", "busy", r.Crawl.Action, r.Crawl.Apps, r.D1.RowsRead, r.D1.RowsWritten, r.D1.Queries,
			r.Subrequests, r.DurationMs, float64(r.D1.RowsRead)/max(1, float64(r.D1.RowsWritten)))
	}
	// Nothing due: every category freshly scanned, no pending keyword, and
	// every app stamped ranking-filled (the controller keeps enriching, and
	// an app it enriches keeps its stamp, so it does not become due).
	run("d1", "execute", "DB", "--local", "--command",
		"UPDATE category_scans SET last_scanned_at = strftime('%Y-%m-%dT%H:%M:%fZ','now'); UPDATE crawl_keywords SET searched_at = strftime('%Y-%m-%dT%H:%M:%fZ','now') WHERE searched_at IS NULL; "+
			"UPDATE app_registry SET rankings_filled_at = strftime('%Y-%m-%dT%H:%M:%fZ','now')")
	// The steering step first catches up on the clusters the markets stage
	// scored since its cursor (as the e2e idle test does): idle cycles
	// until one re-values and promotes nothing.
	for i := 0; ; i++ {
		r := fireCron(base)
		if r.Crawl.Action != "idle" || i == 10 {
			fail("catch-up cycle %d: %+v", i, r)
		}
		if r.Crawl.Revalued == 0 && r.Crawl.Promoted == 0 {
			break
		}
	}
	r := fireCron(base)
	fmt.Printf("%-6s %-16s %6v %10d %13d %8d %8d %8d   (bound: ≤ %d rows read, worker/e2e idleCycleMaxRows)\n", "idle", r.Crawl.Action, r.Crawl.Apps,
		r.D1.RowsRead, r.D1.RowsWritten, r.D1.Queries, r.Subrequests, r.DurationMs, idleCycleMaxRows)
	benchKeywordCycle(base, run)
	benchEnrichmentCost(base)
	// The daily cron over the apps enriched so far: the data-quality check (no snapshot copies).
	control(base, "stop", "")
	d := fireCronExpr(base, "0 3 * * *")
	if d.Daily == nil {
		fail("daily cron recorded no result: %+v", d)
	}
	fmt.Printf("\nDaily cron (data-quality check): %d apps, %d rows read, %d rows written, %d queries\n",
		d.Daily.Quality.Apps, d.D1.RowsRead, d.D1.RowsWritten, d.D1.Queries)
}

const benchAdminToken = "bench-admin-token"

// enrichSample is how many enriched apps the per-app cost is averaged over.
const enrichSample = 300

// enrichmentStatus is the controller's totals in GET /v1/enrichment/status
// that the benches read.
type enrichmentStatus struct {
	Totals struct {
		Dispatched         int64 `json:"dispatched"`
		Completed          int64 `json:"completed"`
		Refreshed          int64 `json:"refreshed"`
		RefreshesUnchanged int64 `json:"refreshes_unchanged"`
		Ticks              int64 `json:"ticks"`
		PageRequests       int64 `json:"page_requests"`
		LookupRequests     int64 `json:"lookup_requests"`
		D1RowsRead         int64 `json:"d1_rows_read"`
		D1RowsWritten      int64 `json:"d1_rows_written"`
		PagePuts           int64 `json:"page_puts"`
		LimiterCalls       int64 `json:"limiter_calls"`
	} `json:"totals"`
	LastTick *struct {
		At         int64 `json:"at"`
		DurationMs int64 `json:"duration_ms"`
	} `json:"last_tick"`
}

func enrichStatus(base string) enrichmentStatus {
	var st enrichmentStatus
	getJSON(base+"/v1/enrichment/status", &st)
	return st
}

// control sends an admin call to the EnrichmentController.
func control(base, action, body string) { adminPost(base, "/v1/enrichment/"+action, body) }

// adminPost posts body to an admin route and fails the bench unless 200.
func adminPost(base, path, body string) {
	req, _ := http.NewRequest("POST", base+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+benchAdminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fail("%s: %v", path, err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		fail("%s: HTTP %d", path, resp.StatusCode)
	}
}

// benchEnrichmentCost measures the EnrichmentController's D1 rows per
// enriched app (pick, record upsert, similar-app edges, developer, requeues),
// from the runs' D1 result metadata the controller adds to its totals.
func benchEnrichmentCost(base string) {
	control(base, "start", "")
	control(base, "tune", `{"rate_per_min": 1200}`)
	before := enrichStatus(base)
	after := before
	deadline := time.Now().Add(3 * time.Minute)
	for after.Totals.Completed-before.Totals.Completed < enrichSample && time.Now().Before(deadline) {
		time.Sleep(time.Second)
		after = enrichStatus(base)
	}
	n := after.Totals.Completed - before.Totals.Completed
	if n == 0 {
		fail("no app enriched in 3 minutes: %+v", after)
	}
	read := after.Totals.D1RowsRead - before.Totals.D1RowsRead
	written := after.Totals.D1RowsWritten - before.Totals.D1RowsWritten
	fmt.Printf("\nD1 cost per enriched app (EnrichmentController runs, D1 result metadata; %d apps enriched of %d dispatched)\n",
		n, after.Totals.Dispatched-before.Totals.Dispatched)
	fmt.Printf("%-22s %10s %13s\n", "", "rows read", "rows written")
	fmt.Printf("%-22s %10d %13d\n", "total", read, written)
	fmt.Printf("%-22s %10.1f %13.1f\n", "per enriched app", float64(read)/float64(n), float64(written)/float64(n))
}

type cronRun struct {
	Crawl struct {
		Action      string `json:"action"`
		Apps        int    `json:"apps"`
		Found       int    `json:"found"`
		Searches    int    `json:"searches"`
		RateLimited bool   `json:"rate_limited"`
		Conns       int    `json:"conns"`
		Revalued    int    `json:"revalued"`
		Promoted    int    `json:"promoted"`
		Error       string `json:"error"`
	} `json:"crawl"`
	D1 struct {
		RowsRead    int64 `json:"rows_read"`
		RowsWritten int64 `json:"rows_written"`
		Queries     int64 `json:"queries"`
	} `json:"d1"`
	Daily *struct {
		Quality struct {
			Apps int `json:"apps"`
		} `json:"quality"`
	} `json:"daily"`
	RanAt       string `json:"ran_at"`
	DurationMs  int64  `json:"duration_ms"`
	Subrequests int    `json:"subrequests"`
	Error       string `json:"error"`
}

// fireCron triggers the 5-minute cron and returns the run it recorded.
func fireCron(base string) cronRun { return fireCronExpr(base, "*/5 * * * *") }

// fireCronExpr triggers a cron expression and returns the run it recorded.
func fireCronExpr(base, expr string) cronRun {
	var before map[string]cronRun
	getJSON(base+"/v1/system/cron", &before)
	resp, err := http.Get(base + "/__scheduled?cron=" + strings.ReplaceAll(expr, " ", "+"))
	if err != nil {
		fail("scheduled: %v", err)
	}
	resp.Body.Close()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		var runs map[string]cronRun
		getJSON(base+"/v1/system/cron", &runs)
		if r, ok := runs[expr]; ok && r.RanAt != before[expr].RanAt {
			return r
		}
		time.Sleep(300 * time.Millisecond)
	}
	fail("cron run not recorded")
	return cronRun{}
}

func getJSON(url string, v any) {
	resp, err := http.Get(url)
	if err != nil {
		fail("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	json.NewDecoder(resp.Body).Decode(v)
}

// startSim runs cmd/upstream-sim on a free port with ample capacity.
func startSim(root string) (string, func()) {
	return startSimWith(root, pipelineApps, "-rate-per-min", "60000", "-burst", "1000")
}

// startSimWith runs cmd/upstream-sim with a catalogue of apps and flags.
func startSimWith(root string, apps int, flags ...string) (string, func()) {
	bin := filepath.Join(os.TempDir(), "bench-upstream-sim")
	build := exec.Command("go", "build", "-o", bin, "./cmd/upstream-sim")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		fail("build sim: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, append([]string{"-addr", "127.0.0.1:0", "-apps", strconv.Itoa(apps)}, flags...)...)
	out, _ := cmd.StdoutPipe()
	devstack.InGroup(cmd)
	if err := cmd.Start(); err != nil {
		fail("sim: %v", err)
	}
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		var ev struct{ Event, Addr string }
		if json.Unmarshal(sc.Bytes(), &ev) == nil && ev.Event == "listening" {
			go func() {
				for sc.Scan() {
				}
			}()
			return "http://" + ev.Addr, func() { devstack.StopGroup(cmd) }
		}
	}
	fail("sim did not start")
	return "", nil
}

// wranglerLocal runs one wrangler command against the persisted local
// state, failing the bench if it fails, and returns its output.
func wranglerLocal(root, persist string, args ...string) string {
	cmd := exec.Command(devstack.Wrangler(root), append(args, "--persist-to", persist)...)
	cmd.Dir, cmd.Env = root, devstack.ToolEnv(root)
	out, err := cmd.CombinedOutput()
	if err != nil {
		fail("wrangler %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// seedLocalDB queues the simulator's first apps apps in the local D1
// (cmd/seed), its migrations already applied.
func seedLocalDB(root, persist string, apps int) {
	seed := exec.Command("go", "run", "./cmd/seed", "-apps", strconv.Itoa(apps))
	seed.Dir = root
	sql, err := seed.Output()
	if err != nil {
		fail("seed: %v", err)
	}
	seedFile := filepath.Join(persist, "seed.sql")
	os.WriteFile(seedFile, sql, 0o644)
	wranglerLocal(root, persist, "d1", "execute", "DB", "--local", "--file", seedFile)
}

// benchKeywordCycle measures a busy keyword cycle: nothing due but
// keywordCycleKeywords pending keywords (title keywords the scans derived,
// never searched, made pending again), so the cycle runs keyword mapping
// alone, up to crawl.KeywordSearchesPerCycle searches through the global
// limit, each answered by the simulator and saved in its own D1 batches.
func benchKeywordCycle(base string, run func(args ...string) string) {
	out := run("d1", "execute", "DB", "--local", "--json", "--command",
		fmt.Sprintf("UPDATE crawl_keywords SET searched_at = NULL WHERE keyword IN (SELECT keyword FROM crawl_keywords WHERE next_search_at IS NULL ORDER BY keyword LIMIT %d) RETURNING keyword", keywordCycleKeywords))
	var res []struct {
		Results []json.RawMessage `json:"results"`
	}
	if i := strings.Index(out, "["); i < 0 || json.Unmarshal([]byte(out[i:]), &res) != nil || len(res) == 0 {
		fail("pending keywords: %s", out)
	}
	pending := len(res[0].Results)
	r := fireCron(base)
	c := r.Crawl
	per := func(v int64) float64 { return float64(v) / float64(max(1, c.Searches)) }
	fmt.Printf("\nBusy keyword cycle: %d keywords pending, nothing else due (KeywordSearchesPerCycle %d, %d connections)\n",
		pending, crawl.KeywordSearchesPerCycle, crawl.ConnectionBudget)
	fmt.Printf("%-16s %8s %6s %8s %7s %10s %13s %8s %8s %8s\n", "action", "searches", "saved", "results", "limited", "rows read", "rows written", "queries", "subreqs", "wall ms")
	fmt.Printf("%-16s %8d %6d %8d %7v %10d %13d %8d %8d %8d\n", c.Action, c.Searches, c.Found, c.Apps, c.RateLimited,
		r.D1.RowsRead, r.D1.RowsWritten, r.D1.Queries, r.Subrequests, r.DurationMs)
	fmt.Printf("%-16s %8s %6s %8.1f %7s %10.1f %13.1f %8.1f %8.2f %8.0f\n", "per search", "", "", per(int64(c.Apps)), "",
		per(r.D1.RowsRead), per(r.D1.RowsWritten), per(r.D1.Queries), per(int64(r.Subrequests)), per(r.DurationMs))
	fmt.Printf("subrequests: %d of %d (crawl.SubrequestsPerSearch %d × %d searches = %d)\n", r.Subrequests, subreq.PlatformLimit,
		crawl.SubrequestsPerSearch, c.Searches, crawl.SubrequestsPerSearch*c.Searches)
	if c.Searches < crawl.KeywordSearchesPerCycle || c.Error != "" || r.Error != "" {
		fmt.Printf("fewer searches than the cycle allows, or errors: rate_limited=%v crawl error %q, run error %q\n", c.RateLimited, c.Error, r.Error)
	}
}
