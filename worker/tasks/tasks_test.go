package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"storecrawl/durable/controller"
	"storecrawl/worker/appstore"
	"storecrawl/worker/module"
	"storecrawl/worker/upstream"
)

type fakeTaskDeps struct {
	*memPass
	kv       map[string]string
	fetches  []string
	reserved []int
	answer   func(n int, url string) upstream.Response
}

func (f *fakeTaskDeps) ReserveFetches(ctx context.Context, n int) context.Context {
	f.reserved = append(f.reserved, n)
	return ctx
}

// runTask runs one of Tasks(f, apiBase, nil) once, isolated, at now.
func runTask(t *testing.T, name string, f Deps, apiBase string, now func() time.Time) module.Result {
	t.Helper()
	for _, task := range Tasks(f, apiBase, nil) {
		if task.Name == name {
			return task.RunIsolated(context.Background(), now)
		}
	}
	t.Fatalf("no task %q", name)
	return module.Result{}
}

// runTaskCtx runs one of Tasks(f, "", c) once, isolated, with ctx.
func runTaskCtx(t *testing.T, ctx context.Context, name string, f Deps, c CatalogueMaintainer, now func() time.Time) module.Result {
	t.Helper()
	for _, task := range Tasks(f, "", c) {
		if task.Name == name {
			return task.RunIsolated(ctx, now)
		}
	}
	t.Fatalf("no task %q", name)
	return module.Result{}
}

func (f *fakeTaskDeps) Fetch(_ context.Context, u string) upstream.Response {
	f.fetches = append(f.fetches, u)
	return f.answer(len(f.fetches), u)
}
func (f *fakeTaskDeps) PutKV(_ context.Context, k, v string) error { f.kv[k] = v; return nil }

// chartBody is a one-entry iTunes RSS feed: entry is then an object, not a list.
var chartBody = []byte(`{"feed":{"entry":{"im:name":{"label":"A"},"id":{"attributes":{"im:id":"100000001"}}},"title":{"label":"iTunes Store: Top Free Applications"}}}`)

func okChart(int, string) upstream.Response {
	return upstream.Response{Status: 200, Class: controller.ClassOK, Body: chartBody, Remaining: -1}
}

func TestChartsRefreshWritesEveryChart(t *testing.T) {
	f := &fakeTaskDeps{kv: map[string]string{}, answer: okChart}
	res := runTask(t, "charts-refresh", f, "http://up", time.Now)
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
			return upstream.Response{Status: 429, Class: controller.ClassRateLimit, RetryAfterS: 120, Remaining: -1, Err: errors.New("429")}
		}
		return okChart(n, u)
	}}
	res := runTask(t, "charts-refresh", f, "http://up", time.Now)
	if res.OK || !res.RateLimited || res.RetryAfterS != 120 || len(f.fetches) != 3 || len(f.kv) != 2 {
		t.Fatalf("429 must stop the task and carry Retry-After: %+v, %d fetches", res, len(f.fetches))
	}
	f = &fakeTaskDeps{kv: map[string]string{}, answer: func(n int, u string) upstream.Response {
		return upstream.Response{Status: 200, Class: controller.ClassOK, Body: chartBody, Remaining: 0, Reset: 40 * time.Second}
	}}
	res = runTask(t, "charts-refresh", f, "http://up", time.Now)
	if !res.OK || res.RetryAfterS != 40 || len(f.fetches) != 1 {
		t.Fatalf("remaining=0 must stop and wait for the reset: %+v", res)
	}
}

func TestRatingSweep(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	m := newMemPass(RatingSweepBatchApps*RatingSweepMaxBatches + 5)
	m.apps[10].ratings++
	f := &fakeTaskDeps{memPass: m, kv: map[string]string{}}
	res := runTask(t, "rating-sweep", f, "", func() time.Time { return now })
	want := RatingSweepBatchApps * RatingSweepMaxBatches
	if !res.OK || m.cursors[RatingSweepCursor] != strconv.Itoa(want) || !strings.HasPrefix(res.Summary, strconv.Itoa(want)+" apps from cursor 0, 1 snapshots") {
		t.Fatalf("%+v cursor %q", res, m.cursors[RatingSweepCursor])
	}
	if len(f.kv) != 0 {
		t.Fatalf("the sweep judges no field coverage (the daily check does): %v", f.kv)
	}
	runTask(t, "rating-sweep", f, "", func() time.Time { return now })
	if m.cursors[RatingSweepCursor] != "0" {
		t.Fatalf("a short batch must wrap the cursor, got %q", m.cursors[RatingSweepCursor])
	}
	m.failRead = m.reads + 1
	if res := runTask(t, "rating-sweep", f, "", time.Now); res.OK || res.Error == "" {
		t.Fatalf("%+v", res)
	}
}

// A charts run asks the limit for all its charts at once: one acquire (a
// Durable Object request), not one a chart.
func TestChartsRefreshReservesItsChartsInOneAcquire(t *testing.T) {
	f := &fakeTaskDeps{kv: map[string]string{}, answer: okChart}
	res := runTask(t, "charts-refresh", f, "http://up", time.Now)
	want := len(ChartCountries) * len(appstore.ChartCollections) * len(ChartCategories)
	if !res.OK || len(f.reserved) != 1 || f.reserved[0] != want || len(f.fetches) != want {
		t.Fatalf("%+v: reservations %v for %d fetches", res, f.reserved, len(f.fetches))
	}
}
