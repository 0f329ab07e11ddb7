package tasks

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"storecrawl/durable/controller"
	"storecrawl/worker/appstore"
	"storecrawl/worker/module"
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

// Deps is what the charts' and the catalogue's tasks need from the
// platform.
type Deps interface {
	// Fetch calls the upstream through the global limiter.
	Fetch(ctx context.Context, url string) upstream.Response
	// ReserveFetches admits a run's n Fetch calls in one acquire (one
	// Durable Object request instead of one a call) and returns ctx
	// carrying them.
	ReserveFetches(ctx context.Context, n int) context.Context
	PutKV(ctx context.Context, key, value string) error
	// PassStore walks enriched apps from a cursor (the rating sweep).
	PassStore
}

// Tasks are the charts' and the living catalogue's periodic work. The
// catalogue's three are bounded walks over the catalogue from a cursor.
func Tasks(deps Deps, apiBase string, c CatalogueMaintainer) []module.Task {
	return []module.Task{{
		Name: "charts-refresh", Every: 5 * time.Minute, Jitter: 30 * time.Second,
		Doc: "top charts into KV, read by every user alike",
		Run: func(ctx context.Context, now func() time.Time) module.Result {
			return refreshCharts(ctx, deps, apiBase, now)
		},
	}, {
		Name: "rating-sweep", Every: 15 * time.Minute, Jitter: time.Minute,
		Doc: "a pass over every enriched app within a day: data-quality gaps, and a snapshot of any app whose stored ratings no snapshot holds",
		Run: func(ctx context.Context, now func() time.Time) module.Result {
			return ratingSweep(ctx, deps, now)
		},
	}, {
		Name: "catalogue-sweep", Every: 15 * time.Minute, Jitter: time.Minute,
		Doc: "rating velocities and refresh tiers for a bounded batch of apps from a cursor: about the whole catalogue a day",
		Run: func(ctx context.Context, _ func() time.Time) module.Result {
			if c == nil {
				return module.Result{Error: errNoCatalogue}
			}
			r := c.CatalogueSweep(ctx)
			return module.Result{OK: r.Error == "", Summary: r.Summary(), Error: r.Error}
		},
	}, {
		Name: "catalogue-stale", Every: time.Hour, Jitter: 5 * time.Minute,
		Doc: "marks apps not seen for CATALOGUE_STALE_AFTER_DAYS",
		Run: func(ctx context.Context, _ func() time.Time) module.Result {
			if c == nil {
				return module.Result{Error: errNoCatalogue}
			}
			r := c.MarkStale(ctx)
			return module.Result{OK: r.Error == "", Summary: r.Summary("marked stale"), Error: r.Error}
		},
	}, {
		Name: "history-prune", Every: time.Hour, Jitter: 5 * time.Minute,
		Doc: "deletes app history past its retention",
		Run: func(ctx context.Context, _ func() time.Time) module.Result {
			if c == nil {
				return module.Result{Error: errNoCatalogue}
			}
			r := c.PruneHistory(ctx)
			return module.Result{OK: r.Error == "", Summary: r.Summary("pruned"), Error: r.Error}
		},
	}}
}

func refreshCharts(ctx context.Context, deps Deps, apiBase string, now func() time.Time) module.Result {
	var res module.Result
	ctx = deps.ReserveFetches(ctx, len(ChartCountries)*len(appstore.ChartCollections)*len(ChartCategories))
	written := 0
	for _, country := range ChartCountries {
		for _, coll := range appstore.ChartCollections {
			for _, cat := range ChartCategories {
				genre, _ := strconv.Atoi(cat) // "all" is genre 0
				r := deps.Fetch(ctx, appstore.ChartURL(apiBase, country, coll, genre, ChartLimit))
				if r.Class == controller.ClassRateLimit {
					// Stop at once: the other charts would be refused too.
					res.RateLimited, res.RetryAfterS = true, r.RetryAfterS
					res.Error = fmt.Sprintf("rate limited (HTTP %d) after %d charts", r.Status, written)
					return res
				}
				if r.Class != controller.ClassOK {
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
// outage). It computes no velocity: the catalogue sweep's 7- and 30-day
// velocities come from the observations.
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

func ratingSweep(ctx context.Context, deps Deps, now func() time.Time) module.Result {
	var res module.Result
	r := RunPass(ctx, deps, RatingSweepBounds, now())
	if r.Error != "" {
		res.Error = r.Error
		return res
	}
	res.OK = true
	res.Summary = fmt.Sprintf("%d apps from cursor %d, %d snapshots, next cursor %d", r.Apps, r.From, r.Snapshots, r.Next)
	return res
}
