package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"storecrawl/durable/enrichment"
	"storecrawl/durable/ledger"
	"storecrawl/durable/scheduler"
	"storecrawl/worker/appstore"
	"storecrawl/worker/history"
	"storecrawl/worker/upstream"
)

type fakeTaskDeps struct {
	*memPass
	kv      map[string]string
	fetches []string
	answer  func(n int, url string) upstream.Response
}

func (f *fakeTaskDeps) Fetch(_ context.Context, u string) upstream.Response {
	f.fetches = append(f.fetches, u)
	return f.answer(len(f.fetches), u)
}
func (f *fakeTaskDeps) PutKV(_ context.Context, k, v string) error { f.kv[k] = v; return nil }

// chartBody is a one-entry iTunes RSS feed: entry is then an object, not a list.
var chartBody = []byte(`{"feed":{"entry":{"im:name":{"label":"A"},"id":{"attributes":{"im:id":"100000001"}}},"title":{"label":"iTunes Store: Top Free Applications"}}}`)

func okChart(int, string) upstream.Response {
	return upstream.Response{Status: 200, Class: enrichment.ClassOK, Body: chartBody, Remaining: -1}
}

func TestChartsRefreshWritesEveryChart(t *testing.T) {
	f := &fakeTaskDeps{kv: map[string]string{}, answer: okChart}
	res := RunTask(context.Background(), "charts-refresh", f, "http://up", time.Now)
	want := len(ChartCountries) * len(appstore.ChartCollections) * len(ChartCategories)
	if !res.OK || len(f.kv) != want {
		t.Fatalf("%+v, %d keys", res, len(f.kv))
	}
	var rec ChartRecord
	json.Unmarshal([]byte(f.kv[ChartKey("us", "topfreeapplications", "6014")]), &rec)
	if len(rec.Items) != 1 || rec.FetchedAt == "" || rec.RateLimit.Remaining != nil {
		t.Fatalf("record %+v", rec)
	}
	if f.fetches[0] != "http://up/us/rss/topfreeapplications/limit=50/json" || f.fetches[1] != "http://up/us/rss/topfreeapplications/limit=50/genre=6014/json" {
		t.Fatalf("urls %v", f.fetches[:2])
	}
}

func TestChartsRefreshHonoursRateLimits(t *testing.T) {
	f := &fakeTaskDeps{kv: map[string]string{}, answer: func(n int, u string) upstream.Response {
		if n == 3 {
			return upstream.Response{Status: 429, Class: enrichment.ClassRateLimit, RetryAfterS: 120, Remaining: -1, Err: errors.New("429")}
		}
		return okChart(n, u)
	}}
	res := RunTask(context.Background(), "charts-refresh", f, "http://up", time.Now)
	if res.OK || !res.RateLimited || res.RetryAfterS != 120 || len(f.fetches) != 3 || len(f.kv) != 2 {
		t.Fatalf("429 must stop the task and carry Retry-After: %+v, %d fetches", res, len(f.fetches))
	}
	f = &fakeTaskDeps{kv: map[string]string{}, answer: func(n int, u string) upstream.Response {
		return upstream.Response{Status: 200, Class: enrichment.ClassOK, Body: chartBody, Remaining: 0, Reset: 40 * time.Second}
	}}
	res = RunTask(context.Background(), "charts-refresh", f, "http://up", time.Now)
	if !res.OK || res.RetryAfterS != 40 || len(f.fetches) != 1 {
		t.Fatalf("remaining=0 must stop and wait for the reset: %+v", res)
	}
}

func TestRatingSweep(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	m := newMemPass(RatingSweepBatchApps*RatingSweepMaxBatches + 5)
	m.apps[10].ratings++
	f := &fakeTaskDeps{memPass: m, kv: map[string]string{}}
	res := RunTask(context.Background(), "rating-sweep", f, "", func() time.Time { return now })
	want := RatingSweepBatchApps * RatingSweepMaxBatches
	if !res.OK || m.cursors[RatingSweepCursor] != strconv.Itoa(want) || !strings.HasPrefix(res.Summary, strconv.Itoa(want)+" apps from cursor 0, 1 snapshots") {
		t.Fatalf("%+v cursor %q", res, m.cursors[RatingSweepCursor])
	}
	if len(f.kv) != 0 {
		t.Fatalf("the sweep judges no field coverage (the daily check does): %v", f.kv)
	}
	RunTask(context.Background(), "rating-sweep", f, "", func() time.Time { return now })
	if m.cursors[RatingSweepCursor] != "0" {
		t.Fatalf("a short batch must wrap the cursor, got %q", m.cursors[RatingSweepCursor])
	}
	m.failRead = m.reads + 1
	if res := RunTask(context.Background(), "rating-sweep", f, "", time.Now); res.OK || res.Error == "" {
		t.Fatalf("%+v", res)
	}
	if res := RunTask(context.Background(), "nope", f, "", time.Now); res.OK {
		t.Fatal("unknown task ran")
	}
}

type recordingRetrier struct {
	olderThan []time.Time
	n         int
}

func (r *recordingRetrier) RetryFailed(_ context.Context, class string, olderThan, now time.Time) (int, error) {
	r.olderThan = append(r.olderThan, olderThan)
	return r.n, nil
}

func TestRetryFailedTaskRequeuesOldGiveUps(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	f := &recordingRetrier{n: 5}
	b := Bindings{Failed: f, RetryFailedAfter: 24 * time.Hour, RetryFailedBatch: 5}
	res := RunTask(context.Background(), "retry-failed", b, "", func() time.Time { return now })
	if !res.OK || !strings.Contains(res.Summary, "requeued 5") || !strings.Contains(res.Summary, "more remain") {
		t.Fatalf("%+v", res)
	}
	if len(f.olderThan) != 1 || !f.olderThan[0].Equal(now.Add(-24*time.Hour)) {
		t.Fatalf("must requeue only items that gave up a day ago or earlier: %v", f.olderThan)
	}
	b.RetryFailedAfter = 0
	if res := RunTask(context.Background(), "retry-failed", b, "", func() time.Time { return now }); !res.OK || len(f.olderThan) != 1 {
		t.Fatalf("0 turns the task off: %+v %v", res, f.olderThan)
	}
}

// pruningDeps is a platform that prunes facts: its pruner answers r, or panics.
type pruningDeps struct {
	*fakeTaskDeps
	r     history.PruneResult
	panic bool
	runs  int
}

func (p *pruningDeps) PruneFacts(context.Context) history.PruneResult {
	p.runs++
	if p.panic {
		panic("pruner bug")
	}
	return p.r
}

func TestFactsPruneTaskReportsItsRun(t *testing.T) {
	ok := &pruningDeps{fakeTaskDeps: &fakeTaskDeps{}, r: history.PruneResult{Facts: 1200, Minutes: 60, Statements: 5, Writers: 3}}
	res := RunTask(context.Background(), "facts-prune", ok, "", time.Now)
	if !res.OK || ok.runs != 1 || res.Summary != "pruned 1200 facts and 60 rollup minutes in 5 statements; 3 writers done" {
		t.Fatalf("%+v", res)
	}
	failed := &pruningDeps{fakeTaskDeps: &fakeTaskDeps{}, r: history.PruneResult{Facts: 10, Error: "limiter:a: D1 unavailable"}}
	if res := RunTask(context.Background(), "facts-prune", failed, "", time.Now); res.OK || res.Error != "limiter:a: D1 unavailable" {
		t.Fatalf("a failed run: %+v", res)
	}
	// Isolated like every task: a panic is its own failed result.
	if res := RunTask(context.Background(), "facts-prune", &pruningDeps{fakeTaskDeps: &fakeTaskDeps{}, panic: true}, "", time.Now); res.OK || !strings.Contains(res.Error, "panic: pruner bug") {
		t.Fatalf("a panicking run: %+v", res)
	}
	if res := RunTask(context.Background(), "facts-prune", &fakeTaskDeps{}, "", time.Now); res.OK || res.Error != "platform cannot prune facts" {
		t.Fatalf("no pruner: %+v", res)
	}
	if r := (Bindings{}).PruneFacts(context.Background()); r.Error == "" {
		t.Fatalf("unbound pruner: %+v", r)
	}
}

// TestEveryRegisteredTaskHasARunFunction: the scheduler's registry and
// RunTask's switch name the same tasks.
func TestEveryRegisteredTaskHasARunFunction(t *testing.T) {
	for _, task := range scheduler.Registry {
		res := RunTask(context.Background(), task.Name, &fakeTaskDeps{memPass: &memPass{cursors: map[string]string{}, failRead: 1}, kv: map[string]string{}, answer: okChart}, "", time.Now)
		if res.Error == "no run function for task" {
			t.Errorf("%s has no run function", task.Name)
		}
	}
}

// reconcilingDeps is a platform that reconciles: one run answers r.
type reconcilingDeps struct {
	*fakeTaskDeps
	r    history.RunResult
	runs int
}

func (p *reconcilingDeps) ReconcileRun(context.Context) history.RunResult {
	p.runs++
	return p.r
}

// TestLedgerReconcileTaskReportsItsBatch: the task runs one bounded batch
// (history.ReconcileRun) and says where the next run goes on; a writer or
// the list of writers it could not read fails the run.
func TestLedgerReconcileTaskReportsItsBatch(t *testing.T) {
	ok := &reconcilingDeps{fakeTaskDeps: &fakeTaskDeps{}, r: history.RunResult{
		Writers: []ledger.Result{{Source: "controller:main", Status: ledger.StatusOK}, {Source: "limiter:client:a", Status: history.StatusRetired}},
		Next:    "limiter:client:a",
	}}
	res := RunTask(context.Background(), "ledger-reconcile", ok, "", time.Now)
	if !res.OK || ok.runs != 1 || res.Summary != "2 writers: 1 ok, 0 settling, 0 mismatch, 0 error, 1 retired; next run continues after limiter:client:a" {
		t.Fatalf("%+v", res)
	}
	failed := &reconcilingDeps{fakeTaskDeps: &fakeTaskDeps{}, r: history.RunResult{Error: "writers: D1 unavailable"}}
	if res := RunTask(context.Background(), "ledger-reconcile", failed, "", time.Now); res.OK || !strings.Contains(res.Error, "writers: D1 unavailable") {
		t.Fatalf("a failed run: %+v", res)
	}
	if r := (Bindings{}).ReconcileRun(context.Background()); r.Error == "" {
		t.Fatalf("unbound reconciler: %+v", r)
	}
}

// reservingDeps records the reservations a run asks for.
type reservingDeps struct {
	*fakeTaskDeps
	reserved []int
}

func (r *reservingDeps) ReserveFetches(ctx context.Context, n int) context.Context {
	r.reserved = append(r.reserved, n)
	return ctx
}

// A charts run asks the limit for all its charts at once: one acquire (a
// Durable Object request), not one a chart.
func TestChartsRefreshReservesItsChartsInOneAcquire(t *testing.T) {
	f := &reservingDeps{fakeTaskDeps: &fakeTaskDeps{kv: map[string]string{}, answer: okChart}}
	res := RunTask(context.Background(), "charts-refresh", f, "http://up", time.Now)
	want := len(ChartCountries) * len(appstore.ChartCollections) * len(ChartCategories)
	if !res.OK || len(f.reserved) != 1 || f.reserved[0] != want || len(f.fetches) != want {
		t.Fatalf("%+v: reservations %v for %d fetches", res, f.reserved, len(f.fetches))
	}
}
