//go:build unix

package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"storecrawl/durable/controller"
	"storecrawl/worker/catalogue"
	"storecrawl/worker/d1"
	"storecrawl/worker/d1/d1test"
	"storecrawl/worker/enrichment"
	"storecrawl/worker/logx"
	"storecrawl/worker/refresh"
	"storecrawl/worker/upstream"
)

// The freshness benchmark ("measured, not assumed"): a catalogue
// enriched at t0 from the simulator's base values, then N simulated hours
// of the simulator's catalogue drift, served by the real enrichment Runner
// (due refreshes beside the discovery queue) and the real catalogue sweep,
// history prune and stale marking, against the real schema (SQLite through
// d1test), under a virtual clock that moves with the simulator's hours.
// Each simulated hour may spend the default pace in upstream requests.

// Freshness bench defaults.
const (
	// freshApps is the catalogue docs/catalogue.md's figures are for.
	freshApps = 100_000
	// freshHours: three simulated days.
	freshHours = 72
	// freshChangesPerHour is the simulator's catalogue drift the bench
	// runs at (an assumption, not a measurement: nothing in this repository
	// says how fast the App Store changes): 400 app changes an hour is 9.6%
	// of a 100,000-app catalogue a day, each adding up to 5% to an app's
	// ratings and one in three a new version.
	freshChangesPerHour = 400
	// freshSeed seeds the drift (deterministic run).
	freshSeed = 16
	// freshTickEvery: the virtual minutes between the controller's ticks
	// (a tick serves what is due then, as many runs as have work).
	freshTickEvery = time.Minute
	// freshSweepEvery and freshHourlyEvery: the catalogue-sweep task's
	// cadence (15 min) and the history-prune and catalogue-stale tasks'
	// (hourly), as worker/tasks schedules them.
	freshSweepEvery = 15 * time.Minute
	// freshWithinPct: a stored rating count within this share of the
	// simulator's current one is fresh (the product's freshness bound).
	freshWithinPct = 1.0
	// freshSampleHours: freshness is sampled this often (simulated hours),
	// so a day's figure is not only its last instant: the apps enriched
	// together at t0 come due together, and the day's end can fall at the
	// oldest point of their cycle.
	freshSampleHours = 3
	// frozenHourS freezes the simulator's drift between simulated hours
	// (its largest catalogue_hour_s); advanceHourS lets exactly one pass.
	frozenHourS  = 86400
	advanceHourS = 1
)

// freshT0 is the virtual clock's start.
var freshT0 = time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)

// freshApp is one enriched app as the metric sees it.
type freshApp struct {
	Stored, Current int64
	Tier            string
}

// freshWithin reports whether a stored count is within freshWithinPct of
// the current one (a count of 0 is fresh only when equal).
func freshWithin(stored, current int64) bool {
	d := stored - current
	if d < 0 {
		d = -d
	}
	return float64(d)*100 <= freshWithinPct*float64(current)
}

// freshShare is a share of apps, plain and weighted by value.
type freshShare struct {
	Apps, Fresh      int
	Value, FreshVal  float64
	Weighted, Simple float64
}

// freshness is the metric over a catalogue: all apps and per tier.
type freshness struct {
	All    freshShare
	ByTier map[string]freshShare
}

// measureFreshness: the share of apps whose stored rating count is within
// freshWithinPct of the simulator's current one, unweighted and weighted by
// value, where an app's value is its current rating count on the
// simulator (what the charts and searches rank by; an app nobody rated
// weighs nothing in the weighted share).
func measureFreshness(apps []freshApp) freshness {
	f := freshness{ByTier: map[string]freshShare{}}
	add := func(s *freshShare, a freshApp) {
		s.Apps++
		s.Value += float64(a.Current)
		if freshWithin(a.Stored, a.Current) {
			s.Fresh++
			s.FreshVal += float64(a.Current)
		}
	}
	for _, a := range apps {
		add(&f.All, a)
		t := f.ByTier[a.Tier]
		add(&t, a)
		f.ByTier[a.Tier] = t
	}
	done := func(s *freshShare) {
		if s.Apps > 0 {
			s.Simple = float64(s.Fresh) / float64(s.Apps)
		}
		if s.Value > 0 {
			s.Weighted = s.FreshVal / s.Value
		}
	}
	done(&f.All)
	for k, t := range f.ByTier {
		done(&t)
		f.ByTier[k] = t
	}
	return f
}

// hourBudget is the upstream requests one simulated hour may spend: the
// Runner's Limit and PageLimit (one bucket for both hosts, as the
// simulator's default limit is), refusing with ErrLimited once spent.
type hourBudget struct {
	mu         sync.Mutex
	per, used  int
	lookups    int
	pages      int
	exhausted  int // hours whose budget ran out
	maxUsedPct float64
}

func (b *hourBudget) limit(kind *int) func(ctx context.Context, cost int, fn func(context.Context) error) error {
	return func(ctx context.Context, cost int, fn func(context.Context) error) error {
		b.mu.Lock()
		if b.per > 0 && b.used+cost > b.per {
			b.mu.Unlock()
			return enrichment.ErrLimited
		}
		b.used += cost
		*kind += cost
		b.mu.Unlock()
		return fn(ctx)
	}
}

// nextHour closes an hour's budget.
func (b *hourBudget) nextHour() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.per > 0 {
		b.maxUsedPct = max(b.maxUsedPct, 100*float64(b.used)/float64(b.per))
		if b.used >= b.per {
			b.exhausted++
		}
	}
	b.used = 0
}

type noHTML struct{}

func (noHTML) PutPages(context.Context, string, []byte, int) error { return nil }

// dayCounts is what one simulated day spent and did.
type dayCounts struct {
	lookups, pages                          int
	discovered, unchanged, changed, refails int
}

func (c *dayCounts) add(o controller.RunOutcome) {
	for _, r := range o.Results {
		switch {
		case r.Refresh && r.Unchanged:
			c.unchanged++
		case r.Refresh && r.Class == controller.ClassOK && r.Page == controller.PageParsed:
			c.changed++
		case r.Refresh:
			c.refails++
		case r.Class == controller.ClassOK && r.Page == controller.PageParsed:
			c.discovered++
		}
	}
}

// historyTables are the history tables the bench sizes.
var historyTables = []string{"app_snapshots", "app_version_history", "app_price_history", "keyword_rank_history", "chart_position_history"}

type tableSize struct{ rows, bytes int64 }

// historySizes reads each history table's rows and bytes (SQLite's dbstat:
// the bytes its pages and its indexes' pages use, headers included).
func historySizes(ctx context.Context, db *d1.DB) map[string]tableSize {
	out := map[string]tableSize{}
	for _, t := range historyTables {
		var rows []struct {
			N int64 `json:"n"`
		}
		if err := db.Query(ctx, &rows, `SELECT count(*) AS n FROM `+t); err != nil {
			fail("count %s: %v", t, err)
		}
		var sz []struct {
			B int64 `json:"b"`
		}
		if err := db.Query(ctx, &sz, `SELECT COALESCE(sum(s.pgsize - s.unused), 0) AS b FROM dbstat s JOIN sqlite_master m ON m.name = s.name WHERE m.tbl_name = ?`, t); err != nil {
			fail("dbstat %s: %v", t, err)
		}
		out[t] = tableSize{rows: rows[0].N, bytes: sz[0].B}
	}
	return out
}

// simPost posts a /__config body to the simulator.
func simPost(simBase, body string) {
	resp, err := http.Post(simBase+"/__config", "application/json", strings.NewReader(body))
	if err != nil {
		fail("simulator config: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		fail("simulator config %s: HTTP %d", body, resp.StatusCode)
	}
}

type simCatalogue struct {
	Hours int64 `json:"hours"`
	Apps  []struct {
		ID          int64 `json:"id"`
		RatingCount int64 `json:"rating_count"`
	} `json:"apps"`
}

// simHours is how many simulated hours of drift the simulator has applied
// (asking for one app makes it catch up).
func simHours(simBase string) int64 {
	var st simCatalogue
	getJSON(simBase+"/__catalogue?id="+strconv.Itoa(100000001), &st)
	return st.Hours
}

// advanceSim lets exactly one simulated hour of drift pass, then freezes
// it again.
func advanceSim(simBase string, changes int, want int64) {
	simPost(simBase, fmt.Sprintf(`{"catalogue_changes_per_hour":%d,"catalogue_hour_s":%d,"catalogue_seed":%d}`, changes, advanceHourS, freshSeed))
	time.Sleep(advanceHourS*time.Second + 150*time.Millisecond)
	simPost(simBase, fmt.Sprintf(`{"catalogue_changes_per_hour":%d,"catalogue_hour_s":%d,"catalogue_seed":%d}`, changes, frozenHourS, freshSeed))
	if got := simHours(simBase); got != want {
		fail("simulator applied %d hours of drift, want %d", got, want)
	}
}

// currentCounts reads the simulator's current rating counts (1,000 ids a call).
func currentCounts(simBase string, ids []int64) map[int64]int64 {
	out := make(map[int64]int64, len(ids))
	for i := 0; i < len(ids); i += 1000 {
		part := ids[i:min(i+1000, len(ids))]
		var sb strings.Builder
		for j, id := range part {
			if j > 0 {
				sb.WriteByte(',')
			}
			sb.WriteString(strconv.FormatInt(id, 10))
		}
		var st simCatalogue
		getJSON(simBase+"/__catalogue?id="+sb.String(), &st)
		for _, a := range st.Apps {
			out[a.ID] = a.RatingCount
		}
	}
	return out
}

// storedApps reads the enriched apps' stored counts and tiers.
func storedApps(ctx context.Context, db *d1.DB) (ids []int64, stored map[int64]freshApp) {
	var rows []struct {
		ID    int64  `json:"track_id"`
		Count int64  `json:"rating_count"`
		Tier  string `json:"tier"`
	}
	if err := db.Query(ctx, &rows, `SELECT track_id, COALESCE(rating_count, 0) AS rating_count, COALESCE(refresh_tier, '') AS tier
FROM app_registry WHERE enrichment_source = 'itunes+store' ORDER BY track_id`); err != nil {
		fail("read stored apps: %v", err)
	}
	stored = make(map[int64]freshApp, len(rows))
	for _, r := range rows {
		ids = append(ids, r.ID)
		stored[r.ID] = freshApp{Stored: r.Count, Tier: r.Tier}
	}
	return ids, stored
}

// sampleFreshness measures the enriched apps' freshness now.
func sampleFreshness(ctx context.Context, db *d1.DB, simBase string) freshness {
	ids, stored := storedApps(ctx, db)
	cur := currentCounts(simBase, ids)
	list := make([]freshApp, 0, len(ids))
	for _, id := range ids {
		a := stored[id]
		a.Current = cur[id]
		list = append(list, a)
	}
	return measureFreshness(list)
}

// benchFreshness runs the scenario and prints its figures.
func benchFreshness(root string, apps, hours, pace, changes int) {
	ctx := context.Background()
	// The Runner's per-item events (the broken pages' parse errors, ...)
	// would bury the figures.
	logx.SetOutput(io.Discard)
	defer logx.SetOutput(os.Stdout)
	simBase, stopSim := startSimWith(root, apps) // the simulator's default limits, read below
	defer stopSim()
	var sim struct {
		Config struct {
			RatePerMin int `json:"rate_per_min"`
			Burst      int `json:"burst"`
		} `json:"config"`
	}
	getJSON(simBase+"/__stats", &sim)
	defaultPace := sim.Config.RatePerMin * 60
	if pace <= 0 {
		pace = defaultPace
	}
	// The bench enforces the hour's budget itself (virtual time): the
	// simulator's own limit and latency are lifted so a simulated hour
	// takes seconds.
	simPost(simBase, `{"rate_per_min":6000000,"burst":100000,"latency_ms":0,"latency_jitter_ms":0}`)
	simPost(simBase, fmt.Sprintf(`{"catalogue_changes_per_hour":%d,"catalogue_hour_s":%d,"catalogue_seed":%d}`, changes, frozenHourS, freshSeed))

	db, drv, closeDB, err := d1test.Open()
	if err != nil {
		fail("d1test: %v", err)
	}
	defer closeDB()
	_ = drv
	store := enrichment.D1Store{DB: db}
	cat := catalogue.D1Store{DB: db}
	budget := &hourBudget{}
	var now time.Time
	runner := &enrichment.Runner{
		Store: store, HTML: noHTML{},
		Upstream: &upstream.Client{HTTP: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}, Timeout: 10 * time.Second},
		APIBase:  simBase, StoreBase: simBase, Country: "us",
		Now:   func() time.Time { return now },
		Sleep: func(time.Duration) {},
		Limit: budget.limit(&budget.lookups), PageLimit: budget.limit(&budget.pages),
		Refreshes: store, RefreshShare: refresh.DefaultRefreshShare,
	}
	calls, queries := controller.RunBudget(controller.DefaultSubrequests)
	plan := controller.RunPlan{BatchSize: controller.ItemsPerTick(controller.DefaultLookupBatch, controller.DefaultSubrequests), ChunkItems: 32,
		LookupBatch: controller.DefaultLookupBatch, Subrequests: calls, D1Queries: queries, StopOnThrottle: true}
	var day dayCounts
	// ticks runs the controller's runs at now until nothing is left to do
	// or the hour's budget is spent.
	ticks := func() {
		for {
			l0, p0 := budget.lookups, budget.pages
			out := runner.Run(ctx, plan)
			if out.Error != "" {
				fail("run: %s", out.Error)
			}
			day.add(out)
			day.lookups += budget.lookups - l0
			day.pages += budget.pages - p0
			if out.Picked == 0 || out.Skipped > 0 || anyLimited(out) {
				return
			}
		}
	}

	fmt.Printf("\nFreshness of a %d-app catalogue under drift (go run ./cmd/bench -only-freshness -apps %d -hours %d -pace %d -changes-per-hour %d)\n",
		apps, apps, hours, pace, changes)
	fmt.Printf("simulator drift: %d app changes a simulated hour (%.1f%% of the catalogue a day; each adds up to 5%% to an app's ratings, one in three bumps its version), seed %d\n",
		changes, 100*float64(changes)*24/float64(apps), freshSeed)
	fmt.Printf("pace: %d upstream requests a simulated hour (lookups + pages, one budget as the simulator's default limit has: %d/min × 60 = %d)\n",
		pace, sim.Config.RatePerMin, defaultPace)
	fmt.Printf("policy: hot %s, warm %s, cold %s; refresh share %.2f; fresh = stored rating count within %.0f%% of the simulator's; value = the simulator's current rating count\n",
		refresh.HotInterval, refresh.WarmInterval, refresh.ColdInterval, refresh.DefaultRefreshShare, freshWithinPct)

	// t0: every app queued and enriched once from the simulator's base
	// values (discovery, no budget), then scheduled by the sweep.
	start := time.Now()
	now = freshT0
	var seed strings.Builder
	for i := 1; i <= apps; i++ {
		if seed.Len() == 0 {
			seed.WriteString(`INSERT INTO app_registry (track_id, enrich_priority) VALUES `)
		} else {
			seed.WriteByte(',')
		}
		fmt.Fprintf(&seed, "(%d,0)", 100000000+i)
		if i%500 == 0 || i == apps {
			if _, err := db.Exec(ctx, d1.Stmt{SQL: seed.String()}); err != nil {
				fail("seed: %v", err)
			}
			seed.Reset()
		}
	}
	ticks()
	for {
		r := catalogue.Sweep(ctx, cat, now)
		if r.Error != "" {
			fail("sweep: %s", r.Error)
		}
		if r.Scheduled == 0 {
			break
		}
	}
	ids, _ := storedApps(ctx, db)
	fmt.Printf("t0: %d of %d apps enriched (%d lookups, %d pages) and scheduled in %s\n", len(ids), apps,
		budget.lookups, budget.pages, time.Since(start).Round(time.Second))
	budget.per, budget.used = pace, 0
	day = dayCounts{}
	sizes0 := historySizes(ctx, db)
	prevSizes := sizes0
	tiers0 := tierCounts(ctx, db)
	fmt.Printf("t0 tiers: %s\n", tiers0)

	fmt.Printf("\nweighted: at the day's end, and the mean and minimum of the day's samples (every %d simulated hours); plain: by app at the day's end\n", freshSampleHours)
	fmt.Printf("%-4s %9s %8s %8s %9s %-24s %-24s %-24s %8s %7s %9s %9s %7s\n", "day", "weighted", "mean", "min", "plain",
		"hot (apps, w, plain)", "warm", "cold", "lookups", "pages", "unchanged", "changed", "failed")
	perDay := map[string][]tableSize{}
	days := 0
	var samples []float64
	for h := 0; h < hours; h++ {
		for m := time.Duration(0); m < time.Hour; m += freshTickEvery {
			now = freshT0.Add(time.Duration(h)*time.Hour + m)
			if m%freshSweepEvery == 0 {
				if r := catalogue.Sweep(ctx, cat, now); r.Error != "" {
					fail("sweep: %s", r.Error)
				}
			}
			if m == 0 {
				if r := catalogue.PruneHistory(ctx, cat, now); r.Error != "" {
					fail("prune: %s", r.Error)
				}
				if r := catalogue.MarkStale(ctx, cat, catalogue.DefaultStaleAfter, now); r.Error != "" {
					fail("stale: %s", r.Error)
				}
			}
			ticks()
		}
		budget.nextHour()
		advanceSim(simBase, changes, int64(h+1))
		if (h+1)%freshSampleHours != 0 && h+1 != hours {
			continue
		}
		now = freshT0.Add(time.Duration(h+1) * time.Hour)
		f := sampleFreshness(ctx, db, simBase)
		samples = append(samples, f.All.Weighted)
		if (h+1)%24 != 0 && h+1 != hours {
			continue
		}
		days++
		mean, low := 0.0, 1.0
		for _, w := range samples {
			mean += w / float64(len(samples))
			low = min(low, w)
		}
		samples = samples[:0]
		tier := func(name string) string {
			t := f.ByTier[name]
			return fmt.Sprintf("%6d %6.1f%% %6.1f%%", t.Apps, 100*t.Weighted, 100*t.Simple)
		}
		fmt.Printf("%-4s %8.2f%% %7.2f%% %7.2f%% %8.2f%% %-24s %-24s %-24s %8d %7d %9d %9d %7d\n", fmt.Sprintf("%.3g", float64(h+1)/24),
			100*f.All.Weighted, 100*mean, 100*low, 100*f.All.Simple, tier(refresh.TierHot), tier(refresh.TierWarm), tier(refresh.TierCold),
			day.lookups, day.pages, day.unchanged, day.changed, day.refails)
		sz := historySizes(ctx, db)
		for _, t := range historyTables {
			perDay[t] = append(perDay[t], tableSize{rows: sz[t].rows - prevSizes[t].rows, bytes: sz[t].bytes - prevSizes[t].bytes})
		}
		prevSizes = sz
		day = dayCounts{}
	}
	fmt.Printf("budget: %d of %d hours spent their whole budget; the busiest hour used %.1f%% of it\n", budget.exhausted, hours, budget.maxUsedPct)
	fmt.Printf("tiers at the end: %s\n", tierCounts(ctx, db))

	fmt.Printf("\nHistory tables: rows and bytes added per simulated day (bytes: dbstat pgsize − unused over the table and its indexes), and what retention keeps\n")
	fmt.Printf("%-24s %10s %12s", "table", "t0 rows", "t0 bytes")
	for d := 1; d <= days; d++ {
		fmt.Printf(" %18s", fmt.Sprintf("day %d rows/bytes", d))
	}
	fmt.Printf(" %10s %26s\n", "retention", "steady state (last day ×)")
	for _, t := range historyTables {
		fmt.Printf("%-24s %10d %12d", t, sizes0[t].rows, sizes0[t].bytes)
		for _, g := range perDay[t] {
			fmt.Printf(" %18s", fmt.Sprintf("%d/%s", g.rows, kib(g.bytes)))
		}
		ret := retentionOf(t)
		last := perDay[t][len(perDay[t])-1]
		daysKept := int64(ret / (24 * time.Hour))
		fmt.Printf(" %9dd %26s\n", daysKept, fmt.Sprintf("%d rows, %s", last.rows*daysKept, kib(last.bytes*daysKept)))
	}
	fmt.Printf("(keyword_rank_history and chart_position_history grow with searches and chart scans, which this bench does not run)\n")
	fmt.Printf("freshness bench: %s\n", time.Since(start).Round(time.Second))
}

func anyLimited(o controller.RunOutcome) bool {
	for _, r := range o.Requests {
		if r.Local {
			return true
		}
	}
	return false
}

func retentionOf(table string) time.Duration {
	switch table {
	case "app_snapshots":
		return catalogue.RatingHistoryRetention
	case "app_version_history", "app_price_history":
		return catalogue.ChangeHistoryRetention
	}
	return catalogue.RankHistoryRetention
}

func kib(b int64) string {
	switch {
	case b >= 10<<20 || b <= -10<<20:
		return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
	default:
		return fmt.Sprintf("%.0f KiB", float64(b)/(1<<10))
	}
}

// tierCounts is how many enriched apps each tier holds.
func tierCounts(ctx context.Context, db *d1.DB) string {
	var rows []struct {
		Tier string `json:"tier"`
		N    int    `json:"n"`
	}
	if err := db.Query(ctx, &rows, `SELECT COALESCE(refresh_tier, 'none') AS tier, count(*) AS n FROM app_registry
WHERE enrichment_source = 'itunes+store' GROUP BY 1`); err != nil {
		fail("tiers: %v", err)
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].Tier < rows[j].Tier })
	var b bytes.Buffer
	for i, r := range rows {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %d", r.Tier, r.N)
	}
	return b.String()
}
