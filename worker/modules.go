package worker

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"storecrawl/durable/scheduler"
	"storecrawl/worker/alerts"
	"storecrawl/worker/analyst"
	appcatalogue "storecrawl/worker/catalogue"
	"storecrawl/worker/crawl"
	"storecrawl/worker/d1"
	"storecrawl/worker/datasets"
	"storecrawl/worker/enrichment"
	"storecrawl/worker/guard"
	"storecrawl/worker/keywords"
	"storecrawl/worker/ledgerdb"
	"storecrawl/worker/logx"
	"storecrawl/worker/markets"
	"storecrawl/worker/module"
	"storecrawl/worker/reviews"
	"storecrawl/worker/search"
	"storecrawl/worker/segments"
	"storecrawl/worker/subreq"
	"storecrawl/worker/tasks"
	"storecrawl/worker/upstream"
)

// Modules are every feature's declaration of what it owns. Each table and
// trigger of migrations/schema.sql is declared by exactly one of them
// (TestModulesDeclareTheSchema), and only a table's declared writer
// writes it (internal/archtest).
var Modules = []module.Module{
	crawl.Module,
	appcatalogue.Module,
	enrichment.Module,
	markets.Module,
	segments.Module,
	reviews.Module,
	search.Module,
	analyst.Module,
	ledgerdb.Module,
	guard.Module,
	alerts.Module,
	datasets.Module,
	d1.Module,
}

// TaskDeps are what the features' periodic tasks run with, by feature;
// the wiring makes them once per instance.
type TaskDeps struct {
	// Charts and catalogue (tasks.Tasks).
	Catalogue  tasks.Deps
	APIBase    string
	Maintainer tasks.CatalogueMaintainer
	// Ledger (history.Tasks).
	Reconciler  ledgerdb.Reconciler
	FactsPruner ledgerdb.FactsPruner
	// Enrichment (enrichment.Tasks).
	Reparser interface {
		ReparseRun(ctx context.Context) (string, error)
	}
	Failed           enrichment.FailedRequeuer
	RetryFailedAfter time.Duration
	// Reviews (reviews.Tasks).
	Reviews        reviews.RefreshStore
	ReviewsGet     func(ctx context.Context, url string) upstream.Response
	ReviewsReserve func(ctx context.Context, n int) context.Context
	Country        string
	// Keyword sourcing (crawl.Tasks): the search hints through their own
	// limit, on HintsBase.
	Crawl        crawl.D1Store
	HintsGet     func(ctx context.Context, url string) upstream.Response
	HintsReserve func(ctx context.Context, n int) context.Context
	HintsBase    string
	// Sitemap discovery (crawl.Tasks): the store host's sitemaps through
	// the store pages' limit, on StoreBase.
	PagesGet     func(ctx context.Context, url string) upstream.Response
	PagesReserve func(ctx context.Context, n int) context.Context
	StoreBase    string
	// Analyst (analyst.Tasks).
	Analyst *analyst.Analyst
	// Keyword metrics (keywords.Tasks): the hints of the deployment's
	// storefront, through the hints' limit (HintsReserve above).
	Popularity keywords.PopularityStore
	Hints      keywords.HintsFetcher
	// Alerts (alerts.Tasks).
	Alerts *alerts.Service
	// Segments (segments.Tasks).
	Segments *segments.Store
	// The dataset snapshot (datasets.Tasks).
	Datasets *datasets.Snapshotter
}

// PeriodicTasks is every feature's periodic work: the one list the
// SchedulerDO's registry (SchedulerRegistry), the run-now validation and
// the runs (RunPeriodic) come from. A feature adds a task in its own
// Tasks; a new feature adds its Tasks here.
func PeriodicTasks(d TaskDeps) []module.Task {
	return slices.Concat(
		tasks.Tasks(d.Catalogue, d.APIBase, d.Maintainer),
		ledgerdb.Tasks(d.Reconciler, d.FactsPruner),
		enrichment.Tasks(d.Reparser, d.Failed, d.RetryFailedAfter),
		slowable(reviews.Tasks(d.Reviews, d.ReviewsGet, d.ReviewsReserve, d.APIBase, d.Country), guard.WorkReviews),
		slowable(analyst.Tasks(d.Analyst), guard.WorkAnalyst),
		keywords.Tasks(d.Popularity, d.Hints, d.HintsReserve),
		crawl.Tasks(d.Crawl, crawl.Host{Get: d.HintsGet, Reserve: d.HintsReserve, Base: d.HintsBase},
			crawl.Host{Get: d.PagesGet, Reserve: d.PagesReserve, Base: d.StoreBase}, d.Country),
		alerts.Tasks(d.Alerts),
		segments.Tasks(d.Segments),
		datasets.Tasks(d.Datasets),
	)
}

// slowable marks ts as work the cost guard slows as work.
func slowable(ts []module.Task, work string) []module.Task {
	for i := range ts {
		ts[i].Slowable = work
	}
	return ts
}

// SchedulerRegistry is the tasks' names and cadences, as the SchedulerDO
// schedules them.
func SchedulerRegistry(ts []module.Task) []scheduler.Task {
	out := make([]scheduler.Task, len(ts))
	for i, t := range ts {
		out[i] = scheduler.Task{Name: t.Name, Every: t.Every, Jitter: t.Jitter}
	}
	return out
}

// Spent is what an invocation's work cost: D1's rows and queries (from its
// result metadata), the subrequests made (counted, not capped) and the
// time it took.
type Spent struct {
	D1          d1.CostView
	Subrequests int
	Duration    time.Duration
}

// measure runs fn with a context that counts its D1 cost and subrequests.
func measure(ctx context.Context, now func() time.Time, fn func(ctx context.Context)) Spent {
	start := now()
	ctx, cost := d1.WithCost(ctx)
	ctx, calls := subreq.With(ctx, math.MaxInt32)
	fn(ctx)
	return Spent{D1: cost.View(), Subrequests: calls.Used(), Duration: now().Sub(start)}
}

// RunPeriodic runs the named task of ts once, in its own error boundary,
// measured: a task-level failure, a panic or an unknown name is in the
// result, never the caller's.
func RunPeriodic(ctx context.Context, ts []module.Task, name string, now func() time.Time) scheduler.ResultMsg {
	return RunPeriodicGuarded(ctx, ts, name, guard.Throttle{}, now)
}

// RunPeriodicGuarded is RunPeriodic under the cost guard's throttle: a
// task whose work it slows is skipped (a successful run that did nothing,
// so its cadence and breaker are untouched) until the guard lets it run.
func RunPeriodicGuarded(ctx context.Context, ts []module.Task, name string, th guard.Throttle, now func() time.Time) scheduler.ResultMsg {
	res := scheduler.ResultMsg{Task: name}
	i := slices.IndexFunc(ts, func(t module.Task) bool { return t.Name == name })
	if i < 0 {
		res.Error = "no such task"
		return res
	}
	if w := ts[i].Slowable; w != "" && th.Slowed(w) {
		res.OK, res.Summary = true, "skipped: the cost guard slows "+w+" (docs/cost.md)"
		return res
	}
	var r module.Result
	spent := measure(ctx, now, func(ctx context.Context) { r = ts[i].RunIsolated(ctx, now) })
	res.OK, res.Summary, res.Error = r.OK, r.Summary, r.Error
	res.RateLimited, res.RetryAfterS, res.Counters, res.Detail = r.RateLimited, r.RetryAfterS, r.Counters, r.Detail
	res.DurationMs = spent.Duration.Milliseconds()
	res.D1RowsRead, res.D1RowsWritten, res.D1Queries, res.Subrequests = spent.D1.RowsRead, spent.D1.RowsWritten, spent.D1.Queries, spent.Subrequests
	if !res.OK {
		switch {
		case res.Error == "" && res.RateLimited:
			res.Error = "refused by the upstream's rate limit"
			if res.RetryAfterS > 0 {
				res.Error += fmt.Sprintf("; retry after %d s", res.RetryAfterS)
			}
		case res.Error == "":
			res.Error = "failed without an error message"
		}
		level := logx.Error
		if res.RateLimited {
			level = logx.Warn // the upstream's refusal: the scheduler backs off
		}
		logx.Event("scheduler.task.error_detail", map[string]any{"level": level, "task": name, "error": res.Error})
	}
	return res
}

// DeclaredTasks is every periodic task's declaration with no platform
// behind it: for reading names, cadences and docs (tools, tests); its runs
// have nothing to run with.
func DeclaredTasks() []module.Task { return PeriodicTasks(TaskDeps{}) }
