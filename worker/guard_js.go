//go:build js && wasm

package worker

import (
	"context"
	"net/http"
	"sync"
	"time"

	"storecrawl/worker/d1"
	"storecrawl/worker/guard"
	"storecrawl/worker/logx"
)

// costGuard is this instance's cost guard (docs/cost.md), made after
// loadConfig: a decision per guard.CacheTTL from usage_months.
var costGuard = sync.OnceValue(func() *guard.Guard {
	return &guard.Guard{Reader: guard.D1Store{DB: db}, BudgetUSD: cfg.BudgetOverageUSD}
})

// usagePending is what this instance's HTTP requests spent, added to its
// next usage record.
var usagePending guard.Pending

// recordUsage adds an invocation's spend, and what is pending, to the
// month's usage; on failure the spend stays pending for the next record.
func recordUsage(ctx context.Context, source string, u guard.Usage) {
	u = u.Plus(usagePending.Take())
	if err := (guard.D1Store{DB: db}).Record(ctx, source, u, time.Now()); err != nil {
		usagePending.Add(u)
		logx.Event("cost_guard.record_failed", map[string]any{"level": logx.Warn, "source": source, "error": err.Error()})
	}
}

// sampleController adds the EnrichmentController's growth since the last
// sample (its status body's totals) to the month's usage.
func sampleController(ctx context.Context, status []byte) {
	u, ok := ControllerUsage(status)
	if !ok {
		return
	}
	if _, err := (guard.D1Store{DB: db}).SampleController(ctx, u, time.Now()); err != nil {
		logx.Event("cost_guard.sample_failed", map[string]any{"level": logx.Warn, "error": err.Error()})
	}
}

// metered counts each HTTP request and its D1 rows as pending usage.
func metered(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cost := d1.WithCost(r.Context())
		h.ServeHTTP(w, r.WithContext(ctx))
		v := cost.View()
		usagePending.Add(guard.Usage{WorkersRequests: 1, D1RowsRead: v.RowsRead, D1RowsWritten: v.RowsWritten})
	})
}
