package ledgerdb

import (
	"context"
	"time"

	"storecrawl/durable/ledger"
	"storecrawl/worker/module"
)

// Module is the ledger's D1 side: the facts every Durable Object
// replicates, their per-minute and lifetime roll-ups (kept by triggers,
// so a report reads rows it can bound), the pipeline counters and the
// dead letters.
var Module = module.Module{
	Name: "ledger",
	Doc:  "the Durable Objects' facts in D1, their roll-ups, the pipeline counters and dead letters",
	Tables: []module.Table{
		{Name: "facts", Writer: "worker/ledgerdb", Doc: "one fact a Durable Object recorded: its kind, counters and data"},
		{Name: "fact_minutes", Writer: "worker/ledgerdb", Doc: "a source's tick and limiter counters summed per minute"},
		{Name: "fact_totals", Doc: "a source's lifetime total of each counter"},
		{Name: "pipeline_counters", Doc: "counts of apps known, enriched and unavailable, clusters and opportunities, kept by triggers"},
		{Name: "ledger_mismatches", Writer: "worker/ledgerdb", Doc: "a writer whose counters differed from its facts: open, or repaired or cleared with its duration"},
		{Name: "dead_letters", Writer: "worker/ledgerdb", Doc: "a queue message that exhausted its retries: its body, or its key in R2, and replays"},
	},
	Triggers: []module.Trigger{
		{Name: "facts_add_minute", On: "facts", Writes: []string{"fact_minutes"},
			Doc: "sums a tick or limiter-minute fact into its minute"},
		{Name: "facts_add_totals", On: "facts", Writes: []string{"fact_totals"},
			Doc: "adds a fact's counters to its source's lifetime totals"},
		{Name: "facts_retire_totals", On: "facts", Writes: []string{"fact_totals"},
			Doc: "a retired writer's totals move to the retired source"},
	},
	Consumes: []string{ledger.BatchType},
}

// Reconciler compares ledger writers with D1: the configured ones and a
// bounded batch of the others per run, from a cursor (*Service).
type Reconciler interface {
	ReconcileRun(ctx context.Context) RunResult
}

// FactsPruner deletes D1's raw facts and rollup minutes past their
// retention, in bounded batches from a cursor (Pruner).
type FactsPruner interface {
	PruneFacts(ctx context.Context) PruneResult
}

// Tasks are the ledger's periodic work.
func Tasks(r Reconciler, p FactsPruner) []module.Task {
	return []module.Task{{
		Name: "ledger-reconcile", Every: 15 * time.Minute, Jitter: 2 * time.Minute,
		Doc: "every ledger writer's counters against the sum of its facts in D1; a writer that drifted repairs its counters",
		Run: func(ctx context.Context, _ func() time.Time) module.Result {
			// A mismatch is summarised and repaired, not a failure: the
			// check ran. Only writers it could not read fail the run.
			summary, allRead := r.ReconcileRun(ctx).Summary()
			res := module.Result{OK: allRead, Summary: summary}
			if !allRead {
				res.Error = summary
			}
			return res
		},
	}, {
		Name: "facts-prune", Every: time.Hour, Jitter: 5 * time.Minute,
		Doc: "D1's raw facts past FACTS_RETENTION_DAYS and rollup minutes past /v1/history's reach, in bounded batches from a cursor",
		Run: func(ctx context.Context, _ func() time.Time) module.Result {
			out := p.PruneFacts(ctx)
			return module.Result{OK: out.Error == "", Summary: out.Summary(), Error: out.Error}
		},
	}}
}
