//go:build unix

package main

import (
	"math"
	"testing"
	"time"

	"storecrawl/durable/pacing"
	"storecrawl/worker"
	"storecrawl/worker/crawl"
	"storecrawl/worker/ratelimit"
)

// A key's second status read is one of its calls: the delta leaves it
// out. A key with no object is nothing; one whose object restarted counts
// from zero.
func TestLimiterDeltaLeavesOutItsOwnReads(t *testing.T) {
	before := map[string]LimiterRequests{"a": {Calls: 10, Alarms: 3}, "b": {Calls: 50, Alarms: 9}}
	after := map[string]LimiterRequests{"a": {Calls: 15, Alarms: 5}, "b": {Calls: 4, Alarms: 1}, "c": {}}
	d := LimiterDelta(before, after)
	if d.Calls != (15-10-1)+(4-1) || d.Alarms != 2+1 {
		t.Fatalf("delta %+v", d)
	}
}

// The fill month's Durable Object requests at 1.1M apps, by source: the
// bench's figures before (docs/scale.md: one limiter acquire an upstream
// request) and what the code's cadences make now. `go test ./cmd/bench
// -run TestDORequestsAtTheDesignSize -v` prints both.
func TestDORequestsAtTheDesignSize(t *testing.T) {
	fill, _, _ := MonthPaces(designApps) // 37,767 new apps a day
	const refreshesPerDay = 1_141_680    // what the policy schedules (docs/scale.md)
	var schedRuns float64
	for _, task := range worker.SchedulerRegistry(worker.DeclaredTasks()) {
		schedRuns += float64(24*time.Hour) / float64(task.Every)
	}
	cycles := float64(24*time.Hour) / float64(crawl.CyclePeriod)
	before := []ScaleOp{
		{Name: "crawl-cycle (*/5)", RunsPerDay: cycles, DORequests: 2 + 150}, // ~150 upstream requests a run
		{Name: "crawl: a new keyword", RunsPerDay: fill, DORequests: 0.3},
		{Name: "enrichment: new app", RunsPerDay: fill, DORequests: 1.1},
		{Name: "scheduler alarms", RunsPerDay: schedRuns, DORequests: 1},
		{Name: "limiter minute alarms", RunsPerDay: 2 * 1440, DORequests: 1},
	}
	b := MonthOf(before, Storage{}, 0).DORequests
	t.Logf("before (docs/scale.md's figures; its total 3.30M, the other %.2fM the ticks, refreshes and tasks):", 3.30-b/1e6)
	for _, s := range DOBreakdown(before) {
		t.Logf("  %-42s %10.0f", s.Name, s.Month)
	}

	// Now, from the code's cadences in the fill month (the controller busy
	// all day): a tick every pacing.TickInterval, one alarm each (its facts
	// sent in the same wake); its pages and lookups from two leases of
	// ratelimit.LeaseRuns ticks each; a crawl cycle's scan and keyword
	// mapping one reservation each (a new app's first searches ride in
	// the mapping's); a limiter key busy every minute closes it with one
	// alarm (the store host's and the API host's); charts-refresh and
	// reviews-refresh one reservation a run (reviews: and its key's alarm);
	// ledger-reconcile reads the controller, the scheduler and three used
	// limiter keys.
	ticks := float64(24*time.Hour) / float64(pacing.TickInterval)
	leases := 2 * ticks / ratelimit.LeaseRuns
	per := func(every time.Duration) float64 { return float64(24*time.Hour) / float64(every) }
	after := []ScaleOp{
		{Name: "crawl-cycle (*/5)", RunsPerDay: cycles, DORequests: cronWakes + 2},
		{Name: "enrichment: ticks", RunsPerDay: ticks, DORequests: 1},
		{Name: "enrichment: leases (new apps, refreshes)", RunsPerDay: leases, DORequests: 1},
		{Name: "limiter alarms", RunsPerDay: 1440, DORequests: 2},
		{Name: "scheduler alarms", RunsPerDay: schedRuns, DORequests: 1},
		{Name: "charts-refresh", RunsPerDay: per(5 * time.Minute), DORequests: 1},
		{Name: "reviews-refresh", RunsPerDay: per(10 * time.Minute), DORequests: 2},
		{Name: "ledger-reconcile", RunsPerDay: per(15 * time.Minute), DORequests: reconcileObjectReads + 3},
	}
	a := MonthOf(after, Storage{}, 0)
	t.Logf("after (%.0f new apps and %d refreshes a day ride in the ticks):", fill, refreshesPerDay)
	for _, s := range DOBreakdown(after) {
		t.Logf("  %-42s %10.0f", s.Name, s.Month)
	}
	t.Logf("Durable Object requests a month: %.2fM before, %.2fM now (%.0f%% of the 1M included)", 3.30, a.DORequests/1e6, a.DORequests/1e4)
	// The target: within the plan's 1M with a fifth to spare.
	if a.DORequests > 0.8e6 || a.Overage[DORequests.Name] != 0 {
		t.Fatalf("%.0f Durable Object requests a month", a.DORequests)
	}
	if got := DOBreakdown(after); got[0].Name != "enrichment: ticks" || math.Abs(got[0].Month-ticks*30) > 1 {
		t.Fatalf("breakdown %v", got)
	}
}
