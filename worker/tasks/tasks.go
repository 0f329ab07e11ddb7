package tasks

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"storecrawl/durable/enrichment"
	"storecrawl/durable/scheduler"
	"storecrawl/worker/analyst"
	"storecrawl/worker/appstore"
	"storecrawl/worker/history"
	"storecrawl/worker/logx"
	"storecrawl/worker/reviews"
	"storecrawl/worker/upstream"
)

// The closed set of charts the charts-refresh task keeps in KV.
var (
	ChartCountries = []string{"us"}
	// ChartCategories: "all" or a genre id.
	ChartCategories = []string{"all", "6014"}
)

// ChartLimit is how many ranks each chart keeps.
const ChartLimit = 50

// ChartKey is where one chart lives in KV.
func ChartKey(country, collection, category string) string {
	return "chart:" + country + ":" + collection + ":" + category
}

// ChartRecord is the KV value of a chart.
type ChartRecord struct {
	Items     []appstore.ChartEntry `json:"items"`
	FetchedAt string                `json:"fetchedAt"`
	RateLimit ChartRateLimit        `json:"rateLimit"`
}

// ChartRateLimit is what the upstream said of its budget when the chart was fetched.
type ChartRateLimit struct {
	Remaining *int `json:"remaining"`
	ResetS    int  `json:"resetS,omitempty"`
}

// Deps is what the periodic tasks need from the platform.
type Deps interface {
	// Fetch calls the upstream through the global limiter.
	Fetch(ctx context.Context, url string) upstream.Response
	PutKV(ctx context.Context, key, value string) error
	// PassStore walks enriched apps from a cursor (the rating sweep).
	PassStore
}

// Reconciler compares ledger writers with D1 (ledger-reconcile): the
// configured ones and a bounded batch of the others per run, from a cursor
// (history.ReconcileRun). A mismatch is logged and summarised, not a task
// failure: the check ran.
type Reconciler interface {
	ReconcileRun(ctx context.Context) history.RunResult
}

// FactsPruner deletes D1's raw facts and rollup minutes past their
// retention, in bounded batches from a cursor (facts-prune).
type FactsPruner interface {
	PruneFacts(ctx context.Context) history.PruneResult
}

// PageReparser runs the active page reparse for one task run (page-reparse).
type PageReparser interface {
	ReparseRun(ctx context.Context) (summary string, err error)
}

// FailedRetrier puts given-up enrichment items back in the queue
// (retry-failed): those that gave up at or before olderThan.
type FailedRetrier interface {
	RetryFailedBefore(ctx context.Context, now time.Time) (requeued int, more bool, err error)
}

// ReviewsRefresher fetches the customer reviews of the top clusters' apps
// that are due (reviews-refresh).
type ReviewsRefresher interface {
	RefreshReviews(ctx context.Context, now time.Time) reviews.RefreshResult
}

// AnalystRunner advances the analyst's briefs (analyst-run).
type AnalystRunner interface {
	RunAnalyst(ctx context.Context) analyst.RunResult
}

// RunTask runs a registered task in its own error boundary: a panic or a
// failure becomes the task's result, never the alarm's.
func RunTask(ctx context.Context, name string, deps Deps, apiBase string, now func() time.Time) (res scheduler.ResultMsg) {
	start := now()
	res.Task = name
	defer func() {
		if p := recover(); p != nil {
			res.OK, res.Error = false, fmt.Sprintf("panic: %v", p)
		}
		res.DurationMs = now().Sub(start).Milliseconds()
		if !res.OK {
			logx.Event("scheduler.task.error_detail", map[string]any{"level": logx.Error, "task": name, "error": res.Error})
		}
	}()
	switch name {
	case "charts-refresh":
		return refreshCharts(ctx, deps, apiBase, now)
	case "rating-sweep":
		return ratingSweep(ctx, deps, now)
	case "page-reparse":
		r, ok := deps.(PageReparser)
		if !ok {
			return scheduler.ResultMsg{Task: name, Error: "platform cannot reparse pages"}
		}
		summary, err := r.ReparseRun(ctx)
		if err != nil {
			return scheduler.ResultMsg{Task: name, Error: err.Error()}
		}
		return scheduler.ResultMsg{Task: name, OK: true, Summary: summary}
	case "retry-failed":
		r, ok := deps.(FailedRetrier)
		if !ok {
			return scheduler.ResultMsg{Task: name, Error: "platform cannot retry failed items"}
		}
		n, more, err := r.RetryFailedBefore(ctx, now())
		if err != nil {
			return scheduler.ResultMsg{Task: name, Error: err.Error()}
		}
		summary := fmt.Sprintf("requeued %d given-up items", n)
		if more {
			summary += " (more remain for the next run)"
		}
		return scheduler.ResultMsg{Task: name, OK: true, Summary: summary}
	case "ledger-reconcile":
		r, ok := deps.(Reconciler)
		if !ok {
			return scheduler.ResultMsg{Task: name, Error: "platform cannot reconcile ledgers"}
		}
		summary, allRead := r.ReconcileRun(ctx).Summary()
		res := scheduler.ResultMsg{Task: name, OK: allRead, Summary: summary}
		if !allRead {
			res.Error = summary
		}
		return res
	case "reviews-refresh":
		r, ok := deps.(ReviewsRefresher)
		if !ok {
			return scheduler.ResultMsg{Task: name, Error: "platform cannot fetch reviews"}
		}
		out := r.RefreshReviews(ctx, now())
		return scheduler.ResultMsg{Task: name, OK: out.Err == "" && !out.RateLimited, Summary: out.Summary(), Error: out.Err,
			RateLimited: out.RateLimited, RetryAfterS: out.RetryAfterS}
	case "facts-prune":
		p, ok := deps.(FactsPruner)
		if !ok {
			return scheduler.ResultMsg{Task: name, Error: "platform cannot prune facts"}
		}
		r := p.PruneFacts(ctx)
		return scheduler.ResultMsg{Task: name, OK: r.Error == "", Summary: r.Summary(), Error: r.Error}
	case "catalogue-sweep", "catalogue-stale", "history-prune":
		return runCatalogueTask(ctx, name, deps)
	case "analyst-run":
		r, ok := deps.(AnalystRunner)
		if !ok {
			return scheduler.ResultMsg{Task: name, Error: "platform cannot run the analyst"}
		}
		out := r.RunAnalyst(ctx)
		// The spend rides on the run's ledger fact (per cluster and brief in its detail).
		return scheduler.ResultMsg{Task: name, OK: out.Err == "" && !out.RateLimited, Summary: out.Summary(), Error: out.Err,
			RateLimited: out.RateLimited, RetryAfterS: out.RetryAfterS, Counters: out.Counters(), Detail: out.Detail()}
	}
	return scheduler.ResultMsg{Task: name, Error: "no run function for task"}
}

// FetchReserver admits a run's n Fetch calls in one acquire (one Durable
// Object request instead of one a call) and returns ctx carrying them.
type FetchReserver interface {
	ReserveFetches(ctx context.Context, n int) context.Context
}

func refreshCharts(ctx context.Context, deps Deps, apiBase string, now func() time.Time) scheduler.ResultMsg {
	res := scheduler.ResultMsg{Task: "charts-refresh"}
	if r, ok := deps.(FetchReserver); ok {
		ctx = r.ReserveFetches(ctx, len(ChartCountries)*len(appstore.ChartCollections)*len(ChartCategories))
	}
	written := 0
	for _, country := range ChartCountries {
		for _, coll := range appstore.ChartCollections {
			for _, cat := range ChartCategories {
				genre, _ := strconv.Atoi(cat) // "all" is genre 0
				r := deps.Fetch(ctx, appstore.ChartURL(apiBase, country, coll, genre, ChartLimit))
				if r.Class == enrichment.ClassRateLimit {
					// Stop at once: the other charts would be refused too.
					res.RateLimited, res.RetryAfterS = true, r.RetryAfterS
					res.Error = fmt.Sprintf("rate limited (HTTP %d) after %d charts", r.Status, written)
					return res
				}
				if r.Class != enrichment.ClassOK {
					res.Error = fmt.Sprintf("chart %s/%s/%s: %v", country, coll, cat, r.Err)
					return res
				}
				items, err := appstore.ParseChart(r.Body)
				if err != nil {
					res.Error = fmt.Sprintf("chart %s/%s/%s: %v", country, coll, cat, err)
					return res
				}
				rec := ChartRecord{Items: items, FetchedAt: now().UTC().Format(time.RFC3339)}
				if r.Remaining >= 0 {
					rem := r.Remaining
					rec.RateLimit = ChartRateLimit{Remaining: &rem, ResetS: int(r.Reset.Seconds())}
				}
				b, _ := json.Marshal(rec)
				if err := deps.PutKV(ctx, ChartKey(country, coll, cat), string(b)); err != nil {
					res.Error = "kv put: " + err.Error()
					return res
				}
				written++
				if r.Remaining == 0 {
					// The budget is spent: honour its reset before the next call.
					res.OK, res.RetryAfterS = true, max(1, int(r.Reset.Seconds()))
					res.Summary = fmt.Sprintf("%d charts (budget spent)", written)
					return res
				}
			}
		}
	}
	res.OK, res.Summary = true, fmt.Sprintf("%d charts", written)
	return res
}

// The rating sweep (rating-sweep, every 15 min) is a pass over every
// enriched app within a day: a snapshot of each app whose stored ratings
// its latest snapshot does not hold (field coverage is the daily check's,
// daily.go). The history triggers record every change of the
// stored ratings as an observation (app_snapshots with a source), so the
// sweep writes almost nothing: only what a trigger could not record (an
// observation at a time another row already holds, history lost to an
// outage). It no longer computes rating_velocity: nothing read it, and the
// catalogue sweep's 7- and 30-day velocities come from observations.
const (
	// RatingSweepCursor names the sweep's cursor in sweep_cursors.
	RatingSweepCursor = "rating-sweep"
	// RatingSweepBatchApps bounds one read: the sums of this many enriched
	// apps (about two rows read an app: its row and its latest snapshot).
	RatingSweepBatchApps = 2000
	// RatingSweepMaxBatches bounds one run: 12,000 apps, so 96 runs a day
	// walk 1.15M enriched apps, the 935,000 of a 1.1M-app catalogue in
	// 0.81 days, at about 24,000 rows read and one written a run (a
	// dozen D1 queries).
	RatingSweepMaxBatches = 6
)

// RatingSweepBounds is the rating sweep's pass.
var RatingSweepBounds = PassBounds{Cursor: RatingSweepCursor, BatchApps: RatingSweepBatchApps, MaxBatches: RatingSweepMaxBatches, Snapshot: true}

func ratingSweep(ctx context.Context, deps Deps, now func() time.Time) scheduler.ResultMsg {
	res := scheduler.ResultMsg{Task: "rating-sweep"}
	r := RunPass(ctx, deps, RatingSweepBounds, now())
	if r.Error != "" {
		res.Error = r.Error
		return res
	}
	res.OK = true
	res.Summary = fmt.Sprintf("%d apps from cursor %d, %d snapshots, next cursor %d", r.Apps, r.From, r.Snapshots, r.Next)
	return res
}
