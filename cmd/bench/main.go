//go:build unix

// Command bench prints the request-path and size figures of the Worker:
// req/s and p50/p99 latency of GET /health through the Go Worker, against a
// minimal pure-JS reference worker served by wrangler dev in the same run,
// and the wasm module's raw and gzip size. Figures, not pass/fail.
//
//	go run ./cmd/bench [-md docs/measurements.md] [-only-coldstart] [-duration 10s] [-concurrency 1,16,64] [-rounds 2] [-only-pipeline] [-only-enrichment]
//	    [-only-freshness [-apps 100000] [-hours 72] [-pace 0] [-changes-per-hour 400]]
//	    [-only-discovery [-apps 1100000] [-discovery-days 14] [-discovery-png docs/discovery.png] [-json]]
//	    [-only-segments [-apps 110000] [-segments-seed 1] [-json]]
package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"storecrawl/internal/devstack"
	"storecrawl/worker/refresh"
)

const startupTimeout = 120 * time.Second

func main() {
	duration := flag.Duration("duration", 8*time.Second, "load duration per measurement")
	pipeline := flag.Bool("pipeline", true, "also measure the crawl cycle's D1 cost on 100,000 seeded apps")
	concList := flag.String("concurrency", "1,16,64", "comma-separated concurrent client counts")
	rounds := flag.Int("rounds", 2, "interleaved rounds (reference, go) per concurrency")
	wasm := flag.String("wasm", "build/app.wasm", "wasm module to size")
	onlyPipeline := flag.Bool("only-pipeline", false, "measure only the pipeline's D1 costs (skip the request-path runs)")
	enrichRate := flag.Bool("enrichment", true, "also measure upstream requests per enriched app and apps per hour at the simulator's default limits")
	onlyEnrichment := flag.Bool("only-enrichment", false, "measure only upstream requests per enriched app and apps per hour")
	fidelityRun := flag.Bool("fidelity", true, "also run the live-fidelity scenario (9 minutes) next to cmd/simulate's prediction")
	onlyFidelity := flag.Bool("only-fidelity", false, "run only the live-fidelity scenario")
	freshRun := flag.Bool("freshness", true, "also measure value-weighted freshness under the simulator's catalogue drift")
	onlyFreshness := flag.Bool("only-freshness", false, "measure only the freshness scenario")
	freshAppsN := flag.Int("apps", freshApps, "freshness: catalogue size")
	freshHoursN := flag.Int("hours", freshHours, "freshness: simulated hours")
	freshPace := flag.Int("pace", 0, "freshness: upstream requests per simulated hour (0 = the simulator's default limit × 60)")
	freshChanges := flag.Int("changes-per-hour", freshChangesPerHour, "freshness: the simulator's app changes per simulated hour")
	flag.DurationVar(&refresh.HotInterval, "hot-interval", refresh.HotInterval, "freshness: the policy's hot refresh interval (refresh.HotInterval)")
	flag.DurationVar(&refresh.WarmInterval, "warm-interval", refresh.WarmInterval, "freshness: the policy's warm refresh interval (refresh.WarmInterval)")
	flag.DurationVar(&refresh.ColdInterval, "cold-interval", refresh.ColdInterval, "freshness: the policy's cold refresh interval (refresh.ColdInterval)")
	onlyColdStart := flag.Bool("only-coldstart", false, "measure only the module's size and cold start")
	mdPath := flag.String("md", "", "also write the output as this Markdown page (make bench: docs/measurements.md)")
	flag.Parse()
	if *mdPath != "" {
		finish := teeMarkdown(*mdPath, os.Args[1:])
		defer finish()
	}

	root, _ := os.Getwd()
	if *onlyDiscovery { // discovery.go: native, needs no wasm build
		runDiscovery(root)
		return
	}
	if *onlySegments { // segments.go: native, needs no wasm build
		runSegments()
		return
	}
	if *onlyScale { // scale.go: builds its own Worker state; needs the wasm build
		runScale(root)
		return
	}
	if *onlyFreshness { // native: needs no wasm build
		benchFreshness(root, *freshAppsN, *freshHoursN, *freshPace, *freshChanges)
		return
	}
	printSize(*wasm)
	printUploadSize(root)
	benchColdStart(root, *wasm, coldStartRuns)
	if *onlyColdStart {
		return
	}
	if *onlyEnrichment {
		benchEnrichmentRate(root)
		return
	}
	if *onlyFidelity {
		benchFidelity(root)
		return
	}
	if *onlyPipeline {
		benchPipeline(root)
		return
	}

	ref, stopRef := startWrangler(root, filepath.Join(root, "cmd", "bench", "refworker", "wrangler.jsonc"))
	defer stopRef()
	gow, stopGo := startWrangler(root, filepath.Join(root, "wrangler.jsonc"), "--var", "LIMITER_CLIENT_TOKEN:"+benchClientToken)
	defer stopGo()

	beforeGo := health(gow)
	fmt.Printf("\nGET /health under wrangler dev (loopback, keep-alive), %s per run, %d interleaved rounds\n", *duration, *rounds)
	fmt.Printf("%-11s %-10s %10s %9s %9s %9s\n", "concurrency", "worker", "req/s", "p50 ms", "p99 ms", "errors")
	for _, cs := range strings.Split(*concList, ",") {
		c, err := strconv.Atoi(strings.TrimSpace(cs))
		if err != nil || c < 1 {
			fail("bad -concurrency %q", cs)
		}
		var refR, goR result
		for r := 0; r < *rounds; r++ {
			refR.add(load(ref+"/health", c, *duration))
			goR.add(load(gow+"/health", c, *duration))
		}
		refR.print(c, "js-ref")
		goR.print(c, "go")
		fmt.Printf("%-11d %-10s %10.2f   (go req/s ÷ js-ref req/s; goal ≥ 0.70)\n", c, "ratio", goR.rps()/refR.rps())
	}
	benchLimiter(gow, ref, *duration)
	afterGo := health(gow)
	if *pipeline || *enrichRate || *fidelityRun || *freshRun || *scaleRun {
		stopRef()
		stopGo()
	}
	if *pipeline {
		benchPipeline(root)
	}
	if *enrichRate {
		benchEnrichmentRate(root)
	}
	if *fidelityRun {
		benchFidelity(root)
	}
	if *freshRun {
		benchFreshness(root, *freshAppsN, *freshHoursN, *freshPace, *freshChanges)
	}
	if *scaleRun {
		runScale(root)
	}
	// Whether the id changed, not the ids: they differ every run and
	// docs/measurements.md keeps only figures changing.
	fmt.Printf("\nGo instance reuse: one instance served every request (instance_id unchanged): %v; requests_served %v → %v\n",
		beforeGo["instance_id"] == afterGo["instance_id"], beforeGo["requests_served"], afterGo["requests_served"])
}

func printSize(path string) {
	b, err := os.ReadFile(path)
	if err != nil {
		fail("read %s: %v (run make build)", path, err)
	}
	var gz bytes.Buffer
	w, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	w.Write(b)
	w.Close()
	fmt.Printf("wasm module %s: raw %d bytes (%.2f MiB), gzip -9 %d bytes (%.2f MiB); goal gzip ≤ 2 MB\n",
		path, len(b), float64(len(b))/(1<<20), gz.Len(), float64(gz.Len())/(1<<20))
}

type result struct {
	n, errs int
	secs    float64
	lat     []time.Duration
}

func (r *result) add(o result) {
	r.n += o.n
	r.errs += o.errs
	r.secs += o.secs
	r.lat = append(r.lat, o.lat...)
}

func (r result) rps() float64 { return float64(r.n) / r.secs }

func (r result) pct(p float64) float64 {
	if len(r.lat) == 0 {
		return 0
	}
	sort.Slice(r.lat, func(i, j int) bool { return r.lat[i] < r.lat[j] })
	return float64(r.lat[int(p*float64(len(r.lat)-1))].Microseconds()) / 1000
}

func (r result) print(c int, name string) {
	fmt.Printf("%-11d %-10s %10.0f %9.2f %9.2f %9d\n", c, name, r.rps(), r.pct(0.50), r.pct(0.99), r.errs)
}

// load runs c clients against url for d and collects latencies.
func load(url string, c int, d time.Duration) result {
	return loadReq(func(int, int) (*http.Request, error) { return http.NewRequest("GET", url, nil) }, c, d, nil)
}

// loadReq runs c clients for d; mk builds each request (client, sequence);
// check, when set, sees every 200 body.
func loadReq(mk func(client, seq int) (*http.Request, error), c int, d time.Duration, check func(body []byte)) result {
	tr := &http.Transport{MaxIdleConnsPerHost: c, MaxConnsPerHost: c, DisableCompression: true}
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	defer tr.CloseIdleConnections()
	var mu sync.Mutex
	var res result
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	start := time.Now()
	var wg sync.WaitGroup
	for i := 0; i < c; i++ {
		wg.Add(1)
		go func(ci int) {
			defer wg.Done()
			var lat []time.Duration
			n, errs := 0, 0
			for seq := 0; ctx.Err() == nil; seq++ {
				req, err := mk(ci, seq)
				if err != nil {
					fail("request: %v", err)
				}
				t0 := time.Now()
				resp, err := client.Do(req)
				if err == nil {
					body, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					if check != nil && resp.StatusCode == 200 {
						check(body)
					}
				}
				if err != nil || resp.StatusCode != 200 {
					if ctx.Err() == nil {
						errs++
					}
					continue
				}
				lat = append(lat, time.Since(t0))
				n++
			}
			mu.Lock()
			res.n += n
			res.errs += errs
			res.lat = append(res.lat, lat...)
			mu.Unlock()
		}(i)
	}
	wg.Wait()
	res.secs = time.Since(start).Seconds()
	return res
}

func health(base string) map[string]any {
	resp, err := http.Get(base + "/health")
	if err != nil {
		fail("health: %v", err)
	}
	defer resp.Body.Close()
	var m map[string]any
	json.NewDecoder(resp.Body).Decode(&m)
	return m
}

func freePort() int {
	p, err := devstack.FreePort()
	if err != nil {
		fail("listen: %v", err)
	}
	return p
}

// startWrangler runs `wrangler dev -c config` on a free loopback port with
// its own fresh state.
func startWrangler(root, config string, extra ...string) (string, func()) {
	persist, _ := os.MkdirTemp("", "bench-state-")
	base, stop := startWranglerWith(root, config, persist, extra...)
	return base, func() { stop(); os.RemoveAll(persist) }
}

// startWranglerWith runs `wrangler dev -c config` on persisted state.
func startWranglerWith(root, config, persist string, extra ...string) (string, func()) {
	port := freePort()
	args := append([]string{"dev", "-c", config,
		"--ip", "127.0.0.1", "--port", strconv.Itoa(port), "--inspector-port", strconv.Itoa(freePort()),
		"--persist-to", persist, "--show-interactive-dev-session=false", "--log-level", "warn"}, extra...)
	cmd := exec.Command(devstack.Wrangler(root), args...)
	cmd.Dir, cmd.Env = root, devstack.ToolEnv(root)
	logf, _ := os.CreateTemp("", "bench-wrangler-*.log")
	cmd.Stdout, cmd.Stderr = logf, logf
	devstack.InGroup(cmd)
	if err := cmd.Start(); err != nil {
		fail("wrangler dev: %v", err)
	}
	stop := func() { devstack.StopGroup(cmd) }
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	if err := devstack.WaitHealthy(base, startupTimeout); err != nil {
		stop()
		fail("wrangler dev (%s) did not start: %v; see %s", config, err, logf.Name())
	}
	return base, stop
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...)
	os.Exit(1)
}

// benchLimiter measures POST /v1/limiter/acquire: one key and 64 keys at
// several concurrencies (next to the reference worker's /health at the same
// concurrency), storage operations per acquire, and over-admissions.
func benchLimiter(gow, ref string, d time.Duration) {
	run := time.Now().UnixNano()
	acquire := func(url, key string, limit int, window float64) func(int, int) (*http.Request, error) {
		return func(ci, seq int) (*http.Request, error) {
			k := key
			if strings.Contains(key, "%d") {
				k = fmt.Sprintf(key, ci%64)
			}
			body := fmt.Sprintf(`{"key":%q,"limit":%d,"windowInSeconds":%g}`, k, limit, window)
			return clientRequest(url, body)
		}
	}
	goURL, refURL := gow+"/v1/limiter/acquire", ref+"/acquire"
	fmt.Printf("\nPOST /v1/limiter/acquire (sliding_window), %s per run. js-ref = the reference worker's /health at the same\n", d)
	fmt.Printf("concurrency; js-do = its pure-JS Durable Object counter (RPC, one SQLite write per call): the platform's floor.\n")
	fmt.Printf("%-9s %-11s %-8s %10s %9s %9s   %s\n", "keys", "concurrency", "worker", "req/s", "p50 ms", "p99 ms", "go vs js-ref req/s, p99")
	for _, c := range []int{1, 16, 64} {
		refR := load(ref+"/health", c, d)
		oneKey := fmt.Sprintf("bench-%d-one-%d", run, c)
		// A client's sliding window holds at most 1,000 admissions
		// (limiter.MaxClientRing): 1,000 per second keeps most acquires admitted.
		jsDO := loadReq(acquire(refURL, oneKey, 1000, 1), c, d, nil)
		r := loadReq(acquire(goURL, oneKey, 1000, 1), c, d, nil)
		fmt.Printf("%-9s %-11d %-8s %10.0f %9.2f %9.2f\n", "1", c, "js-do", jsDO.rps(), jsDO.pct(0.5), jsDO.pct(0.99))
		fmt.Printf("%-9s %-11d %-8s %10.0f %9.2f %9.2f   %.2f×, %.2f× (goal at 16: ≥0.5×, ≤2×); %.2f× of js-do\n", "1", c, "go", r.rps(), r.pct(0.5), r.pct(0.99), r.rps()/refR.rps(), r.pct(0.99)/refR.pct(0.99), r.rps()/jsDO.rps())
		if c == 64 {
			many := fmt.Sprintf("bench-%d-many-%%d", run)
			rm := loadReq(acquire(goURL, many, 1000, 1), c, d, nil)
			fmt.Printf("%-9s %-11d %-8s %10.0f %9.2f %9.2f   %.2f× of one key (goal ≥ 1×)\n", "64", c, "go", rm.rps(), rm.pct(0.5), rm.pct(0.99), rm.rps()/r.rps())
		}
		st := limiterStatus(gow, oneKey)
		if storage, ok := st["storage"].(map[string]any); ok {
			allowed := st["counters"].(map[string]any)["allowed"].(float64)
			fmt.Printf("%-9s %-11s %-8s storage: %.0f writes, %.0f reads for %.0f allowed acquires = %.3f writes per allowed acquire (goal ≤ 1)\n",
				"", "", "go", storage["writes"], storage["reads"], allowed, storage["writes"].(float64)/allowed)
		}
	}
	// Over-admission: a fresh key with a small limit, hammered by 64 callers
	// for the whole run; the window outlasts the run, so exactly `limit`
	// must be admitted.
	for _, alg := range []string{"sliding_window", "gcra", "token_bucket"} {
		const limit = 500
		key := fmt.Sprintf("bench-%d-exact-%s", run, alg)
		var mu sync.Mutex
		allowed := 0
		mk := func(int, int) (*http.Request, error) {
			body := fmt.Sprintf(`{"key":%q,"limit":%d,"windowInSeconds":3600,"algorithm":%q}`, key, limit, alg)
			return clientRequest(gow+"/v1/limiter/acquire", body)
		}
		r := loadReq(mk, 64, d/2, func(b []byte) {
			if strings.Contains(string(b), `"allowed":true`) {
				mu.Lock()
				allowed++
				mu.Unlock()
			}
		})
		// gcra/token bucket may also admit the refill over the run: limit + t·rate.
		bound := limit
		if alg != "sliding_window" {
			bound = limit + int(r.secs*limit/3600) + 1
		}
		fmt.Printf("over-admission %-14s %d acquires by 64 callers, %d admitted, bound %d: over-admissions %d\n",
			alg, r.n, allowed, bound, max(0, allowed-bound))
	}
}

// benchClientToken is the limiter client token the bench's Worker gets.
const benchClientToken = "bench-client-token"

// clientRequest is an acquire with the client token.
func clientRequest(url, body string) (*http.Request, error) {
	req, err := http.NewRequest("POST", url, strings.NewReader(body))
	if err == nil {
		req.Header.Set("Authorization", "Bearer "+benchClientToken)
	}
	return req, err
}

func limiterStatus(base, key string) map[string]any {
	req, _ := http.NewRequest("GET", base+"/v1/limiter/status?key="+key, nil)
	req.Header.Set("Authorization", "Bearer "+benchClientToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fail("limiter status: %v", err)
	}
	defer resp.Body.Close()
	var m map[string]any
	json.NewDecoder(resp.Body).Decode(&m)
	return m
}
