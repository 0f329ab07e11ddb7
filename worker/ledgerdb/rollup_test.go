//go:build !js

package ledgerdb

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"storecrawl/durable/ledger"
	"storecrawl/internal/objects"
	"storecrawl/worker/d1"
	"storecrawl/worker/d1/d1test"
	"storecrawl/worker/ratelimit"
)

// oldFact is a fact as /v1/history read it before the rollups.
type oldFact struct {
	Source   string
	Kind     string
	At       int64
	Counters map[string]int64
	Data     map[string]any
}

// factsHistory is /v1/history as it was before the rollups (the code of
// commit ddc2e8b): every raw fact of the window read with the old queries
// and bucketed one by one. The rollups must answer the same.
func factsHistory(t *testing.T, drv *d1test.Driver, q HistoryQuery) History {
	t.Helper()
	read := func(sql string, args ...any) []oldFact {
		var out []oldFact
		for _, r := range drv.Rows(t, sql, args...) {
			f := oldFact{At: int64(r["at"].(float64))}
			f.Source, _ = r["source"].(string)
			f.Kind, _ = r["kind"].(string)
			json.Unmarshal([]byte(r["counters"].(string)), &f.Counters)
			if d, ok := r["data"].(string); ok {
				json.Unmarshal([]byte(d), &f.Data)
			}
			out = append(out, f)
		}
		return out
	}
	since, until := q.Since.UnixMilli(), q.Until.UnixMilli()
	ticks := read(`SELECT kind, at, counters, data FROM facts WHERE source = ? AND at >= ? AND at <= ? ORDER BY at`, q.Source(), since, until)
	limiterFacts := read(`SELECT source, at, counters FROM facts WHERE source >= 'limiter:' AND source < 'limiter;' AND at >= ? AND at <= ?`, since, until)

	h := History{Target: q.Target, Since: q.Since.UnixMilli(), Until: q.Until.UnixMilli(), BucketS: int64(q.Bucket / time.Second),
		Points: []HistoryPoint{}, Cooldowns: []int64{}, Limiters: []LimiterSummary{}}
	bucket := q.Bucket.Milliseconds()
	recentFrom := q.Until.Add(-ThroughputWindow).UnixMilli()
	var recent int64
	byT := map[int64]*HistoryPoint{}
	for _, f := range ticks {
		if f.Kind != "controller.tick" {
			continue
		}
		t := f.At / bucket * bucket
		p := byT[t]
		if p == nil {
			h.Points = append(h.Points, HistoryPoint{T: t})
			p = &h.Points[len(h.Points)-1]
			byT = map[int64]*HistoryPoint{t: p}
		}
		c := f.Counters
		p.Ticks += c["ticks"]
		p.Dispatched += c["dispatched"]
		p.Completed += c["completed"]
		p.Failed += c["failed"]
		p.RateLimited += c["rate_limited"]
		p.ItemErrors += c["item_errors"]
		p.LookupRequests += c["lookup_requests"]
		p.PageRequests += c["page_requests"]
		p.LookupRefusals += c["lookup_refusals"]
		p.PageRefusals += c["page_refusals"]
		if v, ok := f.Data["capacity_after"].(float64); ok {
			p.CapacityMin = &v
		}
		if c["cooldowns"] > 0 {
			p.Cooldown = true
			h.Cooldowns = append(h.Cooldowns, f.At)
		}
		if f.At >= recentFrom {
			recent += c["completed"]
		}
	}
	for i := range h.Points {
		p := &h.Points[i]
		if served := p.Dispatched; served > 0 {
			r := round3(float64(served-p.Failed) / float64(served))
			p.SuccessRate = &r
		}
		p.PacePerMin = round3(float64(p.Completed) / (float64(bucket) / 60000))
		if p.Completed > 0 {
			r := round3(float64(p.LookupRequests+p.PageRequests) / float64(p.Completed))
			p.RequestsPerEnrichedApp = &r
		}
	}
	span := min(ThroughputWindow, q.Until.Sub(q.Since))
	if span > 0 {
		h.ThroughputPerMin = round3(float64(recent) / span.Minutes())
		h.ProjectedPerDay = float64(int64(h.ThroughputPerMin * 60 * 24))
	}
	byKey := map[string]*LimiterSummary{}
	for _, f := range limiterFacts {
		key := f.Source[len(objects.SourceLimiterPrefix):]
		s := byKey[key]
		if s == nil {
			s = &LimiterSummary{Key: key}
			byKey[key] = s
		}
		s.Allowed += f.Counters["allowed"]
		s.Refused += f.Counters["refused"]
		s.Waited += f.Counters["waited"]
	}
	for _, s := range byKey {
		h.Limiters = append(h.Limiters, *s)
	}
	sort.Slice(h.Limiters, func(i, j int) bool { return h.Limiters[i].Key < h.Limiters[j].Key })
	return h
}

// jsonOf is the /v1/history body of h.
func jsonOf(t *testing.T, h History) string {
	t.Helper()
	b, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// seededFacts is a few hours of every writer's facts, from a fixed seed:
// a tick every ~10 s (capacity as a real, an integer, missing, text or
// null; a cooldown now and then, twice in one minute once), a baseline
// and a reset, another crawl target, three limiter keys' minutes and the
// scheduler's runs. Times are distinct per writer, as a writer's clock
// makes them.
func seededFacts(from, to time.Time) []ledger.Fact {
	rng := rand.New(rand.NewPCG(14, 11))
	var out []ledger.Fact
	at := from
	for i := 0; at.Before(to); i++ {
		c := map[string]int64{"ticks": 1}
		if rng.IntN(5) > 0 {
			c["dispatched"] = int64(rng.IntN(20))
			c["completed"] = int64(rng.IntN(int(c["dispatched"]) + 1))
			c["failed"] = c["dispatched"] - c["completed"]
			c["rate_limited"] = int64(rng.IntN(3))
			c["item_errors"] = int64(rng.IntN(2))
			c["page_requests"] = c["dispatched"]
			c["page_refusals"] = c["rate_limited"]
			if c["dispatched"] > 0 && rng.IntN(3) == 0 {
				c["lookup_requests"] = 1
				c["lookup_refusals"] = int64(rng.IntN(2))
			}
		}
		if rng.IntN(30) == 0 || i == 41 || i == 42 { // 41 and 42 share a minute
			c["cooldowns"] = 1
		}
		data := map[string]any{}
		switch rng.IntN(10) {
		case 0:
		case 1:
			data["capacity_after"] = "12"
		case 2:
			data["capacity_after"] = nil
		case 3:
			data["capacity_after"] = rng.IntN(300)
		default:
			data["capacity_after"] = float64(rng.IntN(300000)) / 1000
		}
		out = append(out, ledger.New("controller:main", "controller.tick", at, c, data))
		if i%97 == 0 {
			out = append(out, ledger.New("controller:main", "controller.baseline", at.Add(time.Millisecond), map[string]int64{"completed": 1000}, nil))
		}
		if i%50 == 0 {
			out = append(out, ledger.New("controller:other", "controller.tick", at, map[string]int64{"completed": 7, "ticks": 1}, nil))
		}
		at = at.Add(time.Duration(5000+rng.IntN(10000)) * time.Millisecond)
	}
	for m := from.Truncate(time.Minute); m.Before(to); m = m.Add(time.Minute) {
		for k, key := range []string{"upstream-catalogue", "adhoc", "quiet"} {
			if key == "quiet" && rng.IntN(20) > 0 {
				continue
			}
			c := map[string]int64{"allowed": int64(rng.IntN(50)), "refused": int64(rng.IntN(3)), "waited": int64(rng.IntN(2))}
			// Closed after its minute, as the limiter closes it.
			if at := m.Add(time.Minute + time.Duration(k*1000+rng.IntN(900))*time.Millisecond); at.Before(to) {
				out = append(out, ledger.New("limiter:"+key, "limiter.minute", at, c, map[string]any{"minute": m.UnixMilli()}))
			}
		}
		if m.Minute()%5 == 0 {
			out = append(out, ledger.New("scheduler:v1", "scheduler.task_run", m.Add(3*time.Second), map[string]int64{"runs.charts-refresh": 1}, nil))
		}
	}
	return out
}

// deliver stores facts as the queue delivers them: per writer, out of
// order, in batches of up to ledger.MaxBatchFacts; every fourth batch is
// delivered twice, and every fifth re-sends half of the previous batch
// with its own (a redelivery overlapping new facts).
func deliver(t *testing.T, db *d1.DB, facts []ledger.Fact) {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	order, bySource := groupBySource(facts)
	var stats ConsumerStats
	n := 0
	for _, src := range order {
		fs := bySource[src]
		rng.Shuffle(len(fs), func(i, j int) { fs[i], fs[j] = fs[j], fs[i] })
		var prev []ledger.Fact
		for i := 0; i < len(fs); i += ledger.MaxBatchFacts / 2 {
			batch := fs[i:min(i+ledger.MaxBatchFacts/2, len(fs))]
			n++
			if n%5 == 0 && len(prev) > 0 {
				batch = append(append([]ledger.Fact{}, prev[:len(prev)/2]...), batch...)
			}
			for range 1 + boolInt(n%4 == 0) {
				if err := HandleFacts(ctx, batchOf(t, batch...), D1Store{DB: db}, &stats, t0); err != nil {
					t.Fatal(err)
				}
			}
			prev = batch
		}
	}
	if stats.Duplicates.Load() == 0 {
		t.Fatal("no redelivery happened")
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// historyQueries are windows to compare: whole minutes (the rollups'
// grain) from before the first fact to the last half hour, in buckets of
// one minute to an hour.
func historyQueries(since []time.Time, until time.Time) []HistoryQuery {
	var qs []HistoryQuery
	for _, s := range since {
		for _, b := range []time.Duration{time.Minute, 2 * time.Minute, 5 * time.Minute, 7 * time.Minute, time.Hour} {
			qs = append(qs, HistoryQuery{Target: "main", Since: s, Until: until, Bucket: b})
		}
	}
	return qs
}

// TestHistoryFromRollupsEqualsHistoryFromFacts: the same facts, delivered
// out of order and partly twice, give the same /v1/history JSON from the
// rollups as the raw facts gave before them.
func TestHistoryFromRollupsEqualsHistoryFromFacts(t *testing.T) {
	db, drv := d1test.New(t)
	now := t0.Add(4 * time.Hour)
	deliver(t, db, seededFacts(t0.Add(-10*time.Minute), now.Add(-time.Second)))
	qs := historyQueries([]time.Time{now.Add(-6 * time.Hour), t0, t0.Add(17 * time.Minute), now.Add(-30 * time.Minute)}, now)
	var cooldowns, capacities int
	compare := func(stage string) {
		for _, q := range qs {
			svc := &Service{Store: D1Store{DB: db}, Now: func() time.Time { return now }}
			h, err := svc.History(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			want := factsHistory(t, drv, q)
			if got, want := jsonOf(t, h), jsonOf(t, want); got != want {
				t.Fatalf("%s: since %s, bucket %s:\nrollups %s\nfacts   %s", stage, q.Since.Format(time.TimeOnly), q.Bucket, got, want)
			}
			cooldowns += len(want.Cooldowns)
			for _, p := range want.Points {
				if p.CapacityMin != nil {
					capacities++
				}
			}
			if len(want.Points) == 0 || len(want.Limiters) == 0 || want.ThroughputPerMin == 0 {
				t.Fatalf("%s: a vacuous comparison: %s", stage, jsonOf(t, want))
			}
		}
	}
	compare("trigger")
	if cooldowns == 0 || capacities == 0 {
		t.Fatalf("the data holds %d cooldowns, %d capacities: nothing compared", cooldowns, capacities)
	}

	// The migration's backfill (the facts D1 held before the trigger)
	// builds the same rollups.
	// So do 0014's with 0020's (the requests by host).
	drv.Exec(t, `DELETE FROM fact_minutes`)
	drv.Exec(t, backfillSQL(t, "0014_fact_minutes.sql", `(?s)INSERT OR IGNORE INTO fact_minutes.*?;`))
	drv.Exec(t, backfillSQL(t, "0020_fact_minutes_requests.sql", `(?s)UPDATE fact_minutes SET.*?;`))
	compare("backfill")
}

// backfillSQL is a migration's backfill statement, found by pattern.
func backfillSQL(t *testing.T, migration, pattern string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "migrations", migration))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(pattern).Find(b)
	if m == nil {
		t.Fatalf("no backfill in migration %s", migration)
	}
	return string(m)
}

// TestHistoryWindowEndsCountWholeMinutes: the rollups' grain is a minute,
// so the minute holding a window's start counts whole.
func TestHistoryWindowEndsCountWholeMinutes(t *testing.T) {
	db, _ := d1test.New(t)
	store(t, db,
		ledger.New("controller:main", "controller.tick", t0.Add(10*time.Second), map[string]int64{"completed": 3}, nil),
		ledger.New("controller:main", "controller.tick", t0.Add(-time.Second), map[string]int64{"completed": 100}, nil), // the minute before
	)
	now := t0.Add(10 * time.Minute)
	svc := &Service{Store: D1Store{DB: db}, Now: func() time.Time { return now }}
	h, err := svc.History(ctx, HistoryQuery{Target: "main", Since: t0.Add(30 * time.Second), Until: now, Bucket: time.Minute})
	if err != nil || len(h.Points) != 1 || h.Points[0].Completed != 3 || h.Since != t0.Add(30*time.Second).UnixMilli() {
		t.Fatalf("%+v %v", h, err)
	}
}

// TestRollupsCountARedeliveredFactOnce: a batch written then failed, its
// redelivery, and a later batch re-sending some of it with new facts add
// each fact to its minute exactly once.
func TestRollupsCountARedeliveredFactOnce(t *testing.T) {
	db, drv := d1test.New(t)
	var stats ConsumerStats
	w := &FailAfterWrite{Writer: D1Store{DB: db}, N: 1}
	tick := func(sec int, completed int64, capacity any, cooldown bool) ledger.Fact {
		c := map[string]int64{"ticks": 1, "dispatched": completed + 1, "completed": completed, "failed": 1}
		if cooldown {
			c["cooldowns"] = 1
		}
		return ledger.New("controller:main", "controller.tick", t0.Add(time.Duration(sec)*time.Second), c, map[string]any{"capacity_after": capacity})
	}
	first := []ledger.Fact{tick(1, 2, 50.5, false), tick(20, 3, 70.25, true), tick(40, 4, nil, false)}
	if err := HandleFacts(ctx, batchOf(t, first...), w, &stats, t0); !errors.Is(err, ErrInjected) {
		t.Fatalf("first delivery: %v", err)
	}
	if err := HandleFacts(ctx, batchOf(t, first...), w, &stats, t0); err != nil {
		t.Fatalf("redelivery: %v", err)
	}
	// Re-sends two of the first (one of them the cooldown) with an earlier
	// tick whose capacity must not win over the later one.
	second := []ledger.Fact{first[1], tick(10, 5, 99.0, false), first[2], tick(70, 1, 10.0, false)}
	if err := HandleFacts(ctx, batchOf(t, second...), w, &stats, t0); err != nil {
		t.Fatalf("overlapping batch: %v", err)
	}
	lim := ledger.New("limiter:adhoc", "limiter.minute", t0.Add(5*time.Second), map[string]int64{"allowed": 4, "refused": 1}, nil)
	for range 2 {
		if err := HandleFacts(ctx, batchOf(t, lim), w, &stats, t0); err != nil {
			t.Fatal(err)
		}
	}
	rows := drv.Rows(t, `SELECT source, minute, ticks, dispatched, completed, failed, capacity, capacity_at, cooldown_ats, allowed, refused, waited
FROM fact_minutes ORDER BY source, minute`)
	m0 := float64(t0.UnixMilli())
	want := []map[string]any{
		{"source": "controller:main", "minute": m0, "ticks": 4.0, "dispatched": 18.0, "completed": 14.0, "failed": 4.0,
			"capacity": 70.25, "capacity_at": m0 + 20000, "cooldown_ats": fmt.Sprintf("[%d]", t0.UnixMilli()+20000), "allowed": 0.0, "refused": 0.0, "waited": 0.0},
		{"source": "controller:main", "minute": m0 + 60000, "ticks": 1.0, "dispatched": 2.0, "completed": 1.0, "failed": 1.0,
			"capacity": 10.0, "capacity_at": m0 + 70000, "cooldown_ats": "[]", "allowed": 0.0, "refused": 0.0, "waited": 0.0},
		{"source": "limiter:adhoc", "minute": m0, "ticks": 0.0, "dispatched": 0.0, "completed": 0.0, "failed": 0.0,
			"capacity": nil, "capacity_at": nil, "cooldown_ats": "[]", "allowed": 4.0, "refused": 1.0, "waited": 0.0},
	}
	if !reflect.DeepEqual(rows, want) {
		t.Fatalf("fact_minutes\n%v\nwant\n%v", rows, want)
	}
	if v := stats.View(); v["inserted"] != 6 || v["duplicates"] != 6 {
		t.Fatalf("consumer %v", v)
	}
}

// fullScan matches a plan step that reads a whole table (the catalogue-
// scale check of every package's hot queries is worker/queryplan_test.go).
var fullScan = regexp.MustCompile(`^SCAN \w+( AS \w+)?$`)

// TestHistoryQueriesReadTheRowsTheyReturn checks the plans of history's hot
// queries on the migrated schema: no full scans, and the window reads bound
// the time on the index, per writer. Before the rollups the limiters'
// read was bounded by source only: every limiter fact ever stored.
func TestHistoryQueriesReadTheRowsTheyReturn(t *testing.T) {
	_, drv := d1test.New(t)
	plans := map[string]string{}
	for _, q := range HotQueries() {
		var steps []string
		for _, r := range drv.Rows(t, "EXPLAIN QUERY PLAN "+q.SQL, q.Args...) {
			d := r["detail"].(string)
			steps = append(steps, d)
			if fullScan.MatchString(d) {
				t.Errorf("%s scans a table: %q", q.Name, d)
			}
		}
		plans[q.Name] = strings.Join(steps, " | ")
	}
	for name, want := range map[string]string{
		"history ticks":      "SEARCH fact_minutes USING PRIMARY KEY (source=? AND minute>? AND minute<?)",
		"history limiters":   "SEARCH fact_minutes USING PRIMARY KEY (source=? AND minute>? AND minute<?)",
		"facts prune":        "USING COVERING INDEX idx_facts_source_at (source=? AND at<?)",
		"fact minutes prune": "SEARCH fact_minutes USING PRIMARY KEY (source=? AND minute<?)",
		"writers page":       "SEARCH fact_totals USING PRIMARY KEY (source>?)",
	} {
		if !strings.Contains(plans[name], want) {
			t.Errorf("%s: plan %q, want %q", name, plans[name], want)
		}
	}
}

// TestPruneKeepsHistoryAndReconciliation: forty days of facts; pruning
// deletes the raw facts past the retention and the rollup minutes past
// /v1/history's reach, and nothing else: reconciliation still matches the
// writers (fact_totals is untouched), and /v1/history answers as before,
// even once the raw facts of its window are gone.
func TestPruneKeepsHistoryAndReconciliation(t *testing.T) {
	db, drv := d1test.New(t)
	now := t0
	var facts []ledger.Fact
	for at := now.Add(-40 * 24 * time.Hour); at.Before(now); at = at.Add(10 * time.Minute) {
		facts = append(facts,
			ledger.New("limiter:upstream-catalogue", "limiter.minute", at, map[string]int64{"allowed": 3, "waited": 1}, nil))
		if at.Minute() == 0 {
			facts = append(facts,
				ledger.New("scheduler:v1", "scheduler.task_run", at, map[string]int64{"runs.charts-refresh": 1}, nil),
				ledger.New("controller:main", "controller.tick", at.Add(time.Second), map[string]int64{"ticks": 1, "dispatched": 4, "completed": 3, "failed": 1},
					map[string]any{"capacity_after": 12.5}))
		}
	}
	for at := now.Add(-time.Hour); at.Before(now); at = at.Add(10 * time.Second) {
		facts = append(facts, ledger.New("controller:main", "controller.tick", at, map[string]int64{"ticks": 1, "dispatched": 2, "completed": 2}, nil))
	}
	store(t, db, facts...)

	// The writers' side: every fact appended, sent, summed.
	reps := &reports{bySource: map[string]ledger.Report{}}
	for _, f := range facts {
		r := reps.bySource[f.Source]
		if r.Counters == nil {
			r.Counters = map[string]int64{}
		}
		for k, v := range f.Counters {
			r.Counters[k] += v
		}
		r.Appended++
		reps.bySource[f.Source] = r
	}
	// The other configured limiters wrote nothing.
	for key := range ratelimit.Limits {
		if _, ok := reps.bySource["limiter:"+key]; !ok {
			reps.bySource["limiter:"+key] = ledger.Report{Counters: map[string]int64{}}
		}
	}
	svc := &Service{Store: D1Store{DB: db}, Reports: reps, Now: func() time.Time { return now }}
	reconciled := func(stage string) {
		t.Helper()
		rs := svc.ReconcileRun(ctx)
		if summary, ok := rs.Summary(); !ok || summary != fmt.Sprintf("%d writers: %d ok, 0 settling, 0 mismatch, 0 error", len(reps.bySource), len(reps.bySource)) {
			t.Fatalf("%s: %s %+v", stage, summary, rs)
		}
	}
	windows := []HistoryQuery{
		{Target: "main", Since: now.Add(-DefaultHistoryWindow), Until: now, Bucket: time.Minute},
		{Target: "main", Since: now.Add(-MaxHistoryAge), Until: now, Bucket: time.Hour},
	}
	histories := func() []string {
		var out []string
		for _, q := range windows {
			h, err := (&Service{Store: D1Store{DB: db}, Now: svc.Now}).History(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, jsonOf(t, h))
		}
		return out
	}
	reconciled("before pruning")
	before := histories()
	for i, q := range windows {
		if want := jsonOf(t, factsHistory(t, drv, q)); before[i] != want {
			t.Fatalf("window %d before pruning:\n%s\nwant\n%s", i, before[i], want)
		}
	}
	count := func(sql string, args ...any) int64 { return drv.Int(t, sql, args...) }
	factsCut := now.Add(-30 * 24 * time.Hour).UnixMilli()
	minutesCut := minuteOf(now.Add(-RollupRetention).UnixMilli())
	oldFacts, keptFacts := count(`SELECT COUNT(*) FROM facts WHERE at < ?`, factsCut), count(`SELECT COUNT(*) FROM facts WHERE at >= ?`, factsCut)
	oldMinutes, keptMinutes := count(`SELECT COUNT(*) FROM fact_minutes WHERE minute < ?`, minutesCut), count(`SELECT COUNT(*) FROM fact_minutes WHERE minute >= ?`, minutesCut)
	if oldFacts <= PruneBatchRows || oldMinutes == 0 {
		t.Fatalf("setup: %d old facts, %d old minutes", oldFacts, oldMinutes)
	}

	p := Pruner{Store: D1Store{DB: db}, Retention: 30 * 24 * time.Hour, Now: svc.Now}
	r := p.PruneFacts(ctx)
	if r.Error != "" || r.Facts != oldFacts || r.Minutes != oldMinutes || r.Writers != 3 || r.Next != "" {
		t.Fatalf("prune: %+v, want %d facts and %d minutes", r, oldFacts, oldMinutes)
	}
	if n := count(`SELECT COUNT(*) FROM facts WHERE at < ?`, factsCut); n != 0 || count(`SELECT COUNT(*) FROM facts`) != keptFacts {
		t.Fatalf("facts after pruning: %d old, %d in all, want %d", n, count(`SELECT COUNT(*) FROM facts`), keptFacts)
	}
	if n := count(`SELECT COUNT(*) FROM fact_minutes WHERE minute < ?`, minutesCut); n != 0 || count(`SELECT COUNT(*) FROM fact_minutes`) != keptMinutes {
		t.Fatalf("minutes after pruning: %d old, %d in all, want %d", n, count(`SELECT COUNT(*) FROM fact_minutes`), keptMinutes)
	}
	reconciled("after pruning")
	if after := histories(); !reflect.DeepEqual(after, before) {
		t.Fatalf("history changed by pruning:\n%v\n%v", after, before)
	}
	if again := p.PruneFacts(ctx); again.Facts != 0 || again.Minutes != 0 || again.Error != "" {
		t.Fatalf("a second run: %+v", again)
	}

	// A retention shorter than the window: its raw facts go, its history stays.
	p.Retention = time.Hour
	if r := p.PruneFacts(ctx); r.Error != "" || r.Facts == 0 {
		t.Fatalf("prune to an hour: %+v", r)
	}
	reconciled("after pruning to an hour")
	if after := histories(); !reflect.DeepEqual(after, before) {
		t.Fatalf("history changed by pruning its raw facts:\n%v\n%v", after, before)
	}

	// The cursor is a writer's name in sweep_cursors (a text cursor).
	st := D1Store{DB: db}
	for _, c := range []string{"limiter:upstream-catalogue", ""} {
		cur, err := st.PruneCursor(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.SavePruneCursor(ctx, cur, c, now); err != nil {
			t.Fatal(err)
		}
		if got, err := st.PruneCursor(ctx); err != nil || got.Text() != c {
			t.Fatalf("cursor %q, want %q (%v)", got, c, err)
		}
	}
}
