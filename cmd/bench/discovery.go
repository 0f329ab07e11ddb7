//go:build unix

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"os/signal"
	"runtime/pprof"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"storecrawl/durable/controller"
	"storecrawl/durable/controller/virtual"
	"storecrawl/internal/objects"
	"storecrawl/worker/appstore"
	"storecrawl/worker/catalogue"
	"storecrawl/worker/crawl"
	"storecrawl/worker/d1"
	"storecrawl/worker/enrichment"
	"storecrawl/worker/logx"
	"storecrawl/worker/refresh"
	"storecrawl/worker/tasks"
	"storecrawl/worker/upstream"
)

// The discovery bench (docs/scale.md, "Discovery"): from an empty D1 to
// the design's 1.1M apps, the product's own crawl cycle (crawl.Crawler.Run
// every crawl.CyclePeriod), EnrichmentController (durable/controller.Handle
// as its Durable Object calls it: load, the work alarm's tick and
// tick_done, the cron's status wake) and enrichment Runner, and the
// catalogue's periodic tasks (tasks.Tasks, at their cadences), on d1test
// (SQLite with the real migrations), against the living simulator with
// the real store's limits (upstream-sim -living -real-limits), on a
// virtual clock that moves the simulator's (POST /__sim/clock): nothing
// sleeps.

var (
	onlyDiscovery = flag.Bool("only-discovery", false, "run only the discovery bench: days to discover and enrich -apps apps (default 1,100,000) from an empty D1, on virtual time")
	discoMaxDays  = flag.Float64("discovery-days", discoDefaultMaxDays, "discovery: virtual days to run at most")
	discoPNG      = flag.String("discovery-png", "", "discovery: also draw the curve (apps known and enriched vs days) as this PNG")
	discoProfile  = flag.String("discovery-cpuprofile", "", "discovery: write the bench's CPU profile here")
)

const (
	// discoDefaultMaxDays bounds a run that never gets there.
	discoDefaultMaxDays = 14
	// goalDiscoveryDays: every app known with its lookup fields within
	// four days; goalEnrichFactor: every app enriched within 1.1× the
	// page host's floor.
	goalDiscoveryDays = 4.0
	goalEnrichFactor  = 1.1
	// realPagesPerMin is the page host's capacity under -real-limits
	// (upstream-sim's realStoreRatePerMin): the floor is pages ÷ it.
	realPagesPerMin = 127
	// discoLatency is each answer's latency on the virtual clock (the
	// simulator's default; its own latency is off, so nothing waits).
	discoLatency = 20 * time.Millisecond
	// discoSampleEvery: the curve's resolution.
	discoSampleEvery = time.Hour
	// discoSeed seeds the crawl's tier choice.
	discoSeed = 4
	// sitemapTask is the periodic task whose new apps are the sitemaps'.
	sitemapTask = "sitemap-scan"
)

// designMilestones are the design's milestones (apps known); a smaller
// -apps scales them by apps ÷ 1.1M.
var designMilestones = []int{100_000, 500_000, 1_000_000, 1_100_000}

// scaledMilestones is designMilestones for a catalogue of apps.
func scaledMilestones(apps int) []int {
	out := make([]int, len(designMilestones))
	for i, m := range designMilestones {
		out[i] = int(math.Round(float64(m) * float64(apps) / designApps))
	}
	return out
}

// pageFloorDays is the page host's floor: a page an app at its capacity.
func pageFloorDays(apps int) float64 {
	return float64(apps) / (realPagesPerMin * 60 * 24)
}

// discoReport is the bench's figures (-json).
type discoReport struct {
	Apps    int     `json:"apps"`
	Scale   float64 `json:"scale"` // apps ÷ 1.1M: the milestones are scaled by it
	DaysRun float64 `json:"days_run"`
	WallS   float64 `json:"wall_s"`
	// Stopped: a signal ended the run before its days (DaysRun says how far).
	Stopped    bool  `json:"stopped,omitempty"`
	Milestones []int `json:"milestone_apps"`
	// Days to each milestone of apps known with their lookup fields
	// (null: not reached within days_run).
	DiscoveryDays100k *float64 `json:"discovery_days_100k"`
	DiscoveryDays500k *float64 `json:"discovery_days_500k"`
	DiscoveryDays1M   *float64 `json:"discovery_days_1m"`
	DiscoveryDays11M  *float64 `json:"discovery_days_1_1m"`
	EnrichedDays11M   *float64 `json:"enriched_days_1_1m"`
	PageFloorDays     float64  `json:"page_floor_days"`
	// RequestsPerDiscoveredApp: the crawl's upstream requests (searches,
	// charts, any other) ÷ the apps it discovered.
	RequestsPerDiscoveredApp float64 `json:"requests_per_discovered_app"`
	// DiscoveryLookups: the crawl's lookups of apps known by id alone,
	// and the apps they kept with their lookup fields.
	DiscoveryLookups lookupFigure           `json:"discovery_lookups"`
	Sources          []sourceFigure         `json:"sources"`
	Requests         map[string]reqCount    `json:"requests"` // every upstream request, "caller/kind"
	Final            discoSample            `json:"final"`
	Curve            []discoSample          `json:"curve"`
	Goal             map[string]any         `json:"goal"`
	SimClockDriftS   float64                `json:"sim_clock_drift_s"`
	CrawlActions     map[string]int         `json:"crawl_actions"`
	ControllerTotals map[string]json.Number `json:"controller_totals,omitempty"`
}

// runDiscovery runs the discovery bench with the flags.
func runDiscovery(root string) {
	n := designApps
	flag.Visit(func(f *flag.Flag) {
		if f.Name == "apps" {
			n, _ = strconv.Atoi(f.Value.String())
		}
	})
	if *discoProfile != "" {
		f, err := os.Create(*discoProfile)
		if err != nil {
			fail("profile: %v", err)
		}
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	benchDiscovery(root, n, *discoMaxDays, *scaleJSON, *discoPNG)
}

// simClockSync keeps the simulator's clock at least at the bench's: before a
// request at t, it moves it to t. The simulator's clock also runs with
// the wall clock, so between two requests it leads by the wall time
// they are apart (SimClockDriftS: the difference at the end).
type simClockSync struct {
	base   string
	client *http.Client
	mu     sync.Mutex
	synced time.Time // the simulator's clock was at least this
	wallAt time.Time // when synced was read
}

func (s *simClockSync) post(body string) (time.Time, int) {
	resp, err := s.client.Post(s.base+"/__sim/clock", "application/json", strings.NewReader(body))
	if err != nil {
		fail("simulator clock: %v", err)
	}
	defer resp.Body.Close()
	var out clockAnswer
	json.NewDecoder(resp.Body).Decode(&out)
	now, _ := time.Parse(time.RFC3339Nano, out.Now)
	return now, resp.StatusCode
}

type clockAnswer struct {
	Now   string `json:"now"`
	Epoch string `json:"epoch"`
}

// to moves the simulator's clock to t when it may be behind it.
func (s *simClockSync) to(t time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !t.After(s.synced.Add(time.Since(s.wallAt))) {
		return
	}
	now, status := s.post(fmt.Sprintf(`{"now":%q}`, t.UTC().Format(time.RFC3339Nano)))
	if status == http.StatusOK {
		s.synced, s.wallAt = now, time.Now()
	}
	// A 400 is a t the simulator's clock already passed (it runs with the
	// wall clock too): nothing to move.
}

// read is the simulator's clock now.
func (s *simClockSync) read() clockAnswer {
	var out clockAnswer
	getJSON(s.base+"/__sim/clock", &out)
	return out
}

// simFetcher is an upstream caller of the run: the real client against
// the simulator, each request sent at the virtual clock's time (the
// simulator's moved there first) and answered discoLatency later, counted
// by kind in its ledger.
type simFetcher struct {
	clock  *virtual.Clock
	sim    *simClockSync
	client *upstream.Client
	ledger *requestLedger
}

func (f *simFetcher) Get(ctx context.Context, url string) upstream.Response {
	sent := f.clock.Now()
	f.sim.to(sent)
	r := f.client.Get(ctx, url)
	r.SentAt, r.DoneAt = sent, sent.Add(discoLatency)
	f.clock.Done(r.DoneAt)
	f.ledger.add(requestKind(url), r.Class == objects.ClassRateLimit, r.Class != objects.ClassOK && r.Class != objects.ClassRateLimit)
	return r
}

// taskDeps is the catalogue tasks' platform on the run's D1 and upstream.
type taskDeps struct {
	tasks.D1Store
	fetch *simFetcher
}

func (d taskDeps) Fetch(ctx context.Context, url string) upstream.Response {
	return d.fetch.Get(ctx, url)
}
func (taskDeps) ReserveFetches(ctx context.Context, _ int) context.Context { return ctx }
func (taskDeps) PutKV(context.Context, string, string) error               { return nil }

type nopSender struct{}

func (nopSender) Send(context.Context, string) error { return nil }

type nopHTML struct{}

func (nopHTML) PutPages(context.Context, string, []byte, int) error { return nil }

// sampleCatalogue reads the curve's counts.
func sampleCatalogue(ctx context.Context, db *d1.DB, day float64) discoSample {
	var rows []discoSample
	if err := db.Query(ctx, &rows, `SELECT count(*) AS known, count(lookup_at) AS lookup, count(enriched_at) AS enriched,
  COALESCE(sum(enrichment_source = 'itunes+store'), 0) AS parsed FROM app_registry`); err != nil {
		fail("sample: %v", err)
	}
	s := rows[0]
	s.Day = day
	return s
}

// benchDiscovery runs the bench and prints its figures (tables on stderr
// and JSON on stdout with -json).
func benchDiscovery(root string, apps int, maxDays float64, asJSON bool, pngPath string) {
	ctx := context.Background()
	out := io.Writer(os.Stdout)
	if asJSON {
		out = os.Stderr
	}
	say := func(format string, args ...any) { fmt.Fprintf(out, format, args...) }
	logx.SetOutput(io.Discard) // the per-item events would bury the figures
	defer logx.SetOutput(os.Stdout)
	wall := time.Now()
	// A stop (SIGTERM from timeout(1), or an interrupt) ends the run at
	// the next sample, and the figures are printed for the days run.
	var stopped atomic.Bool
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, os.Interrupt)
	defer signal.Stop(sigs)
	go func() {
		if _, ok := <-sigs; ok {
			stopped.Store(true)
		}
	}()

	simBase, stopSim := startSimWith(root, apps, "-living", "-real-limits", "-latency-ms", "0", "-latency-jitter-ms", "0")
	defer stopSim()
	httpc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 30 * time.Second}
	sim := &simClockSync{base: simBase, client: httpc}
	ca := sim.read()
	t0, err := time.Parse(time.RFC3339Nano, ca.Now)
	if err != nil {
		fail("simulator clock %q: %v", ca.Now, err)
	}
	sim.synced, sim.wallAt = t0, time.Now()

	db, _, err := openFastD1() // d1test's SQLite and schema, statements kept prepared
	if err != nil {
		fail("d1: %v", err)
	}

	clock := virtual.NewClock(t0)
	client := &upstream.Client{HTTP: httpc, Timeout: 10 * time.Second}
	crawlReqs, enrichReqs, taskReqs := newRequestLedger(), newRequestLedger(), newRequestLedger()
	crawlFetch := &simFetcher{clock: clock, sim: sim, client: client, ledger: crawlReqs}
	enrichFetch := &simFetcher{clock: clock, sim: sim, client: client, ledger: enrichReqs}
	taskFetch := &simFetcher{clock: clock, sim: sim, client: client, ledger: taskReqs}

	store := newCountingStore(crawl.D1Store{DB: db}, db)
	crawler := &crawl.Crawler{Store: store, Fetch: crawlFetch.Get, Events: nopSender{},
		APIBase: simBase, Country: "us", Sleep: clock.Sleep}
	es := enrichment.D1Store{DB: db}
	runner := &enrichment.Runner{Store: es, HTML: nopHTML{}, Events: enrichment.QueueEvents{Queue: nopSender{}, Now: clock.Now},
		Upstream: enrichFetch, APIBase: simBase, StoreBase: simBase, Country: "us",
		Now: clock.Now, Sleep: clock.Sleep, Refreshes: es, RefreshShare: refresh.DefaultRefreshShare}
	obj := &virtual.Object{Config: controller.DefaultConfig()}
	decide := func(op string, arg any, now time.Time) controller.Decision {
		d, err := obj.Decide(op, arg, now)
		if err != nil {
			fail("%v", err)
		}
		return d
	}
	decide("load", struct{}{}, t0)
	// The search hints' host needs the storefront (worker/wiring_js.go's
	// hintsHost); its asks are the tasks'.
	sf, _ := appstore.StoreFront("us")
	hintsFetch := &simFetcher{clock: clock, sim: sim, ledger: taskReqs,
		client: &upstream.Client{HTTP: httpc, Timeout: 10 * time.Second, Header: http.Header{appstore.StoreFrontHeader: {sf}}}}
	noReserve := func(ctx context.Context, _ int) context.Context { return ctx }
	periodic := slices.Concat(
		tasks.Tasks(taskDeps{D1Store: tasks.D1Store{DB: db}, fetch: taskFetch}, simBase,
			tasks.Catalogue{Store: catalogue.D1Store{DB: db}, StaleAfter: catalogue.DefaultStaleAfter, Now: clock.Now}),
		crawl.Tasks(crawl.D1Store{DB: db}, crawl.Host{Get: hintsFetch.Get, Reserve: noReserve, Base: simBase},
			crawl.Host{Get: taskFetch.Get, Reserve: noReserve, Base: simBase}, "us"))
	nextTask := make([]time.Time, len(periodic))
	for i := range nextTask {
		nextTask[i] = t0
	}
	rng := rand.New(rand.NewPCG(discoSeed, discoSeed))

	milestones := scaledMilestones(apps)
	floor := pageFloorDays(apps)
	say("\nDiscovery from an empty D1 to %d apps (go run ./cmd/bench -only-discovery -apps %d): the real crawl cycle every %s, EnrichmentController and Runner, catalogue tasks,\n",
		apps, apps, crawl.CyclePeriod)
	say("against upstream-sim -living -real-limits (search+lookup 20/min shared, pages %d/min, charts 20/min apart) on virtual time; milestones %v; page floor %.2f days\n",
		realPagesPerMin, milestones, floor)
	say("%6s %10s %10s %10s %10s %9s %9s %9s %9s\n", "day", "known", "lookup", "enriched", "parsed", "searches", "charts", "lookups", "pages")

	end := t0.Add(time.Duration(maxDays * float64(24*time.Hour)))
	nextCron, nextSample := t0, t0
	var curve []discoSample
	actions := map[string]int{}
	sitemapNew := 0 // the sitemap-scan task's new apps
	dayOf := func(t time.Time) float64 { return t.Sub(t0).Hours() / 24 }
	lastPrint := -1
	for {
		// The next event: the sample, the cron, a task, the alarm.
		at, what, which := nextSample, "sample", -1
		if nextCron.Before(at) {
			at, what = nextCron, "cron"
		}
		for i, t := range nextTask {
			if t.Before(at) {
				at, what, which = t, "task", i
			}
		}
		if alarm, ok := obj.NextAlarm(); ok && alarm.Before(at) {
			at, what = alarm, "alarm"
		}
		now := clock.Wake(at)
		switch what {
		case "sample":
			s := sampleCatalogue(ctx, db, dayOf(at))
			curve = append(curve, s)
			nextSample = at.Add(discoSampleEvery)
			if d := int(s.Day * 4); d != lastPrint { // every 6 virtual hours
				lastPrint = d
				say("%6.2f %10d %10d %10d %10d %9d %9d %9d %9d\n", s.Day, s.Known, s.Lookup, s.Enriched, s.Parsed,
					crawlReqs.get(kindSearch).Sent, crawlReqs.get(kindChart).Sent, enrichReqs.get(kindLookup).Sent, enrichReqs.get(kindPage).Sent)
			}
			if s.Enriched >= apps && s.Lookup >= apps || !at.Before(end) || stopped.Load() {
				goto done
			}
		case "cron":
			// The cron wakes the controller (its status call restarts a
			// lost loop), then runs the crawl cycle.
			decide("http", controller.Request{Method: "GET", Path: "/status"}, now)
			res := crawler.Run(ctx, rng.Float64(), now)
			actions[res.Action]++
			if res.Side != nil {
				actions["side:"+res.Side.Action]++
			}
			clock.Settle()
			nextCron = nextCron.Add(crawl.CyclePeriod)
		case "task":
			t := periodic[which]
			r := t.Run(ctx, clock.Now)
			if r.Error != "" {
				actions["task_error:"+t.Name]++
			}
			if t.Name == sitemapTask {
				sitemapNew += int(r.Counters["new_apps"])
			}
			clock.Settle()
			nextTask[which] = at.Add(t.Every)
		case "alarm":
			if _, _, err := obj.Fire(ctx, now, runner.Run, clock); err != nil {
				fail("%v", err)
			}
		}
	}
done:
	final := curve[len(curve)-1]
	simNow := sim.read()
	simT, _ := time.Parse(time.RFC3339Nano, simNow.Now)

	rep := discoReport{Apps: apps, Scale: float64(apps) / designApps, DaysRun: final.Day, WallS: math.Round(time.Since(wall).Seconds()),
		Milestones: milestones, PageFloorDays: math.Round(floor*1000) / 1000, Final: final, Curve: curve, CrawlActions: actions,
		SimClockDriftS: math.Round(simT.Sub(clock.Now()).Seconds()), Stopped: stopped.Load()}
	rep.DiscoveryDays100k = days(curve, lookupField, milestones[0])
	rep.DiscoveryDays500k = days(curve, lookupField, milestones[1])
	rep.DiscoveryDays1M = days(curve, lookupField, milestones[2])
	rep.DiscoveryDays11M = days(curve, lookupField, milestones[3])
	rep.EnrichedDays11M = days(curve, enrichedField, milestones[3])
	// The similar apps are counted before the rest: the status call below
	// reads the controller's totals.
	similar := 0
	rep.DiscoveryLookups = lookupFigure{Requests: crawlReqs.get(kindLookup).Sent, Apps: store.lookedUp()}
	if n := rep.DiscoveryLookups.Requests; n > 0 {
		rep.DiscoveryLookups.PerReq = math.Round(10*float64(rep.DiscoveryLookups.Apps)/float64(n)) / 10
	}
	rep.Requests = map[string]reqCount{}
	for caller, l := range map[string]*requestLedger{"crawl": crawlReqs, "enrichment": enrichReqs, "tasks": taskReqs} {
		l.mu.Lock()
		for k, c := range l.byKind {
			rep.Requests[caller+"/"+k] = *c
		}
		l.mu.Unlock()
	}
	st := decide("http", controller.Request{Method: "GET", Path: "/status"}, clock.Now())
	if b, err := json.Marshal(st.Response.Body); err == nil {
		var s struct {
			Totals map[string]json.Number `json:"totals"`
		}
		d := json.NewDecoder(bytes.NewReader(b))
		d.UseNumber()
		if d.Decode(&s) == nil {
			rep.ControllerTotals = s.Totals
		}
	}
	if n, err := rep.ControllerTotals["similar_discovered"].Int64(); err == nil {
		similar = int(n)
	}
	rep.Sources = sourceFigures(crawlReqs, enrichReqs, taskReqs, store, similar, sitemapNew, final.Known)
	discovered := 0
	for _, s := range rep.Sources {
		discovered += s.NewApps
	}
	// The crawl's requests and the catalogue tasks' (the hints asks that
	// feed the searches, the sitemaps): the pages the similar apps come
	// with are the enrichment's, fetched for it anyway.
	if t := crawlReqs.total().Sent + taskReqs.get(kindHints).Sent + taskReqs.get(kindSitemap).Sent; discovered > 0 {
		rep.RequestsPerDiscoveredApp = math.Round(1000*float64(t)/float64(discovered)) / 1000
	}
	met := func(d *float64, goal float64) bool { return d != nil && *d <= goal }
	rep.Goal = map[string]any{
		"discovery_days":     goalDiscoveryDays,
		"discovery_met":      met(rep.DiscoveryDays11M, goalDiscoveryDays),
		"enriched_days":      math.Round(goalEnrichFactor*floor*1000) / 1000,
		"enriched_met":       met(rep.EnrichedDays11M, goalEnrichFactor*floor),
		"design_days":        6.0,
		"design_pages_per_h": designAppsPerHour,
	}

	printDiscovery(out, rep)
	if pngPath != "" {
		if err := writeCurvePNG(pngPath, curve, apps, floor); err != nil {
			fail("png: %v", err)
		}
		say("curve: %s\n", pngPath)
	}
	if asJSON {
		rep.Curve = thinCurve(curve, 6) // every 6 virtual hours in the JSON
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		enc.Encode(rep)
	}
}

// lookupFigure is what the discovery lookups did.
type lookupFigure struct {
	Requests int     `json:"requests"`
	Apps     int     `json:"apps"` // apps kept with their lookup fields
	PerReq   float64 `json:"apps_per_request"`
}

// thinCurve keeps every nth sample and the last.
func thinCurve(c []discoSample, n int) []discoSample {
	var out []discoSample
	for i, s := range c {
		if i%n == 0 || i == len(c)-1 {
			out = append(out, s)
		}
	}
	return out
}

func fmtDays(d *float64) string {
	if d == nil {
		return "not reached"
	}
	return fmt.Sprintf("%.2f days", *d)
}

// printDiscovery prints the figures.
func printDiscovery(w io.Writer, r discoReport) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	if r.Stopped {
		p("\nstopped by a signal before its days:")
	}
	p("\nran %.2f virtual days in %.0f s wall (the simulator's clock led the bench's by %.0f s at the end)\n", r.DaysRun, r.WallS, r.SimClockDriftS)
	p("final: %d known, %d with lookup fields, %d enriched (%d pages parsed)\n", r.Final.Known, r.Final.Lookup, r.Final.Enriched, r.Final.Parsed)
	p("apps known with lookup fields: %d in %s, %d in %s, %d in %s, %d in %s (goal: %d within %.0f days)\n",
		r.Milestones[0], fmtDays(r.DiscoveryDays100k), r.Milestones[1], fmtDays(r.DiscoveryDays500k), r.Milestones[2], fmtDays(r.DiscoveryDays1M),
		r.Milestones[3], fmtDays(r.DiscoveryDays11M), r.Milestones[3], goalDiscoveryDays)
	p("apps enriched: %d in %s; page floor %.2f days (%d pages ÷ %d/min), goal ≤ %.2f days (%.1f× the floor)\n",
		r.Milestones[3], fmtDays(r.EnrichedDays11M), r.PageFloorDays, r.Apps, realPagesPerMin, goalEnrichFactor*r.PageFloorDays, goalEnrichFactor)
	p("new apps per upstream request, by source:\n")
	for _, s := range r.Sources {
		p("  %-9s %9d new apps, %8d requests (%d refused): %.3f a request\n", s.Source, s.NewApps, s.Requests, s.Refused, s.PerReq)
	}
	p("discovery lookups: %d apps kept with their lookup fields, %d requests: %.1f a request\n", r.DiscoveryLookups.Apps, r.DiscoveryLookups.Requests, r.DiscoveryLookups.PerReq)
	p("upstream requests per discovered app (the crawl's, the hints asks and the sitemaps): %.3f\n", r.RequestsPerDiscoveredApp)
	p("requests by caller and kind (sent, refused, failed):")
	for _, k := range sortedKeys(r.Requests) {
		c := r.Requests[k]
		p(" %s %d/%d/%d;", k, c.Sent, c.Refused, c.Failed)
	}
	p("\ncrawl cycles by action: %v\n", r.CrawlActions)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
