package worker

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"storecrawl/durable/controller"
	"storecrawl/worker/config"
	"storecrawl/worker/crawl"
	"storecrawl/worker/d1"
	"storecrawl/worker/guard"
	"storecrawl/worker/module"
)

// TestCostGuardSkipsSlowedTasks: the reviews and analyst tasks are the
// guard's to slow, and a slowed one is skipped without running; the
// others (the refresh of the catalogue among them) always run.
func TestCostGuardSkipsSlowedTasks(t *testing.T) {
	ts := DeclaredTasks()
	works := map[string]string{}
	for _, tk := range ts {
		works[tk.Name] = tk.Slowable
	}
	if works["reviews-refresh"] != guard.WorkReviews || works["analyst-run"] != guard.WorkAnalyst {
		t.Fatalf("slowable tasks %v", works)
	}
	ran := 0
	run := func(ctx context.Context, now func() time.Time) module.Result {
		ran++
		return module.Result{OK: true, Summary: "ran"}
	}
	fake := []module.Task{{Name: "reviews-refresh", Slowable: guard.WorkReviews, Run: run}, {Name: "catalogue", Run: run}}
	th := guard.Decide(guard.Projection{OverageUSD: 100, OverIncluded: []string{"d1_rows_written"}})
	res := RunPeriodicGuarded(context.Background(), fake, "reviews-refresh", th, time.Now)
	if !res.OK || ran != 0 || !strings.HasPrefix(res.Summary, "skipped") {
		t.Fatalf("slowed task: ran %d, %+v", ran, res)
	}
	if res := RunPeriodicGuarded(context.Background(), fake, "catalogue", th, time.Now); !res.OK || ran != 1 {
		t.Fatalf("a task the guard never slows: ran %d, %+v", ran, res)
	}
	if res := RunPeriodicGuarded(context.Background(), fake, "reviews-refresh", guard.Throttle{}, time.Now); ran != 2 || res.Summary != "ran" {
		t.Fatalf("not slowed: ran %d, %+v", ran, res)
	}
}

// TestARefusedRunSaysSo: a task refused by its upstream's rate limit
// with no error of its own is reported as refused, with its wait, not as
// a failure without a message; a failure without one still says so.
func TestARefusedRunSaysSo(t *testing.T) {
	fake := []module.Task{
		{Name: "keyword-popularity", Run: func(context.Context, func() time.Time) module.Result {
			return module.Result{RateLimited: true, RetryAfterS: 42}
		}},
		{Name: "silent", Run: func(context.Context, func() time.Time) module.Result { return module.Result{} }},
	}
	res := RunPeriodicGuarded(context.Background(), fake, "keyword-popularity", guard.Throttle{}, time.Now)
	if res.OK || !res.RateLimited || res.Error != "refused by the upstream's rate limit; retry after 42 s" {
		t.Fatalf("refused run: %+v", res)
	}
	if res := RunPeriodicGuarded(context.Background(), fake, "silent", guard.Throttle{}, time.Now); res.OK || res.Error != "failed without an error message" {
		t.Fatalf("silent failure: %+v", res)
	}
}

// TestControllerUsageReadsTheStatusTotals: the controller's own status
// (its Totals as it marshals them) gives the guard its usage.
func TestControllerUsageReadsTheStatusTotals(t *testing.T) {
	st := controller.Status{Totals: controller.Totals{D1RowsRead: 900, D1RowsWritten: 90, Ticks: 30, LimiterCalls: 4, PagePuts: 7, PagesFromR2: 2}}
	body, _ := json.Marshal(st)
	u, ok := ControllerUsage(body)
	if !ok || u != (guard.Usage{D1RowsRead: 900, D1RowsWritten: 90, DORequests: 34, R2ClassA: 7, R2ClassB: 2}) {
		t.Fatalf("usage %+v ok %v", u, ok)
	}
	if _, ok := ControllerUsage([]byte(`{"running":true}`)); ok {
		t.Fatal("a status without totals gave usage")
	}
}

func TestCronUsage(t *testing.T) {
	run := CronRun{Cron: config.CronCrawlCycle, D1: &d1.CostView{RowsRead: 50, RowsWritten: 5},
		Crawl: &crawl.Result{Action: "category_scan", Side: &crawl.Result{Action: "keyword_mapping", Searches: 3}}}
	if u := CronUsage(run); u != (guard.Usage{D1RowsRead: 50, D1RowsWritten: 5, WorkersRequests: 1, KVReads: 1, KVWrites: 1, DORequests: 4}) {
		t.Fatalf("crawl cycle %+v", u)
	}
	if u := CronUsage(CronRun{Cron: config.CronDaily}); u != (guard.Usage{WorkersRequests: 1, KVReads: 1, KVWrites: 1}) {
		t.Fatalf("daily %+v", u)
	}
	if s := CrawlSlow(guard.Throttle{Throttled: []string{guard.WorkFirstSearches, guard.WorkReSearches}}); s != (crawl.Slow{FirstSearches: true, ReSearches: true}) {
		t.Fatalf("slow %+v", s)
	}
}
