package enrichment

import (
	"context"
	"fmt"
	"time"

	"storecrawl/worker/module"
)

// Module is enrichment's declaration: the executor of the
// EnrichmentController's ticks (lookups, store pages, R2, saves).
var Module = module.Module{
	Name: "enrichment",
	Doc:  "performs the EnrichmentController's ticks: batched lookups, store pages, raw pages in R2, saves",
	Tables: []module.Table{
		{Name: "developers", Writer: "worker/enrichment", Doc: "a developer seen on an enriched app"},
		{Name: "reparse_jobs", Writer: "worker/enrichment", Doc: "a re-parse of stored pages from R2: its scope and cursor"},
	},
	Settings: Settings,
}

// FailedRequeuer puts given-up items of a class ("" = every class) that
// gave up at or before olderThan back in the queue, a bounded batch a call
// (D1Store).
type FailedRequeuer interface {
	RetryFailed(ctx context.Context, class string, olderThan, now time.Time) (int, error)
}

// Tasks are enrichment's periodic work: page-reparse advances the active
// reparse job (POST /v1/enrichment/reparse starts one; without one a run
// is one D1 read), and retry-failed requeues the items that gave up
// retryAfter ago or earlier (ENRICHMENT_RETRY_FAILED_AFTER_H; 0 turns it
// off), RetryFailedBatch a run.
func Tasks(reparse interface {
	ReparseRun(ctx context.Context) (string, error)
}, failed FailedRequeuer, retryAfter time.Duration) []module.Task {
	return []module.Task{{
		Name: "page-reparse", Every: 10 * time.Minute, Jitter: 30 * time.Second,
		Doc: "re-parses stored store pages from R2 for the active reparse job",
		Run: func(ctx context.Context, _ func() time.Time) module.Result {
			summary, err := reparse.ReparseRun(ctx)
			if err != nil {
				return module.Failed(err)
			}
			return module.Result{OK: true, Summary: summary}
		},
	}, {
		Name: "retry-failed", Every: time.Hour, Jitter: 2 * time.Minute,
		Doc: "puts items that gave up long enough ago back in the enrichment queue, a bounded batch a run",
		Run: func(ctx context.Context, now func() time.Time) module.Result {
			if retryAfter <= 0 {
				return module.Result{OK: true, Summary: "off (ENRICHMENT_RETRY_FAILED_AFTER_H=0)"}
			}
			t := now()
			n, err := failed.RetryFailed(ctx, "", t.Add(-retryAfter), t)
			if err != nil {
				return module.Failed(err)
			}
			summary := fmt.Sprintf("requeued %d given-up items", n)
			if n >= RetryFailedBatch {
				summary += " (more remain for the next run)"
			}
			return module.Result{OK: true, Summary: summary}
		},
	}}
}
