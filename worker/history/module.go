package history

import "storecrawl/worker/module"

// Module is the ledger's D1 side: the facts every Durable Object
// replicates, their per-minute and lifetime roll-ups (kept by triggers,
// so a report reads rows it can bound), the pipeline counters and the
// dead letters.
var Module = module.Module{
	Name: "ledger",
	Doc:  "the Durable Objects' facts in D1, their roll-ups, the pipeline counters and dead letters",
	Tables: []module.Table{
		{Name: "facts", Writer: "worker/history", Doc: "one fact a Durable Object recorded: its kind, counters and data"},
		{Name: "fact_minutes", Writer: "worker/history", Doc: "a source's tick and limiter counters summed per minute"},
		{Name: "fact_totals", Doc: "a source's lifetime total of each counter"},
		{Name: "pipeline_counters", Doc: "counts of apps known, enriched and unavailable, clusters and opportunities, kept by triggers"},
		{Name: "ledger_mismatches", Writer: "worker/history", Doc: "a writer whose counters differed from its facts: open, or repaired or cleared with its duration"},
		{Name: "dead_letters", Writer: "worker/history", Doc: "a queue message that exhausted its retries: its body, or its key in R2, and replays"},
	},
	Triggers: []module.Trigger{
		{Name: "facts_add_minute", On: "facts", Writes: []string{"fact_minutes"},
			Doc: "sums a tick or limiter-minute fact into its minute"},
		{Name: "facts_add_totals", On: "facts", Writes: []string{"fact_totals"},
			Doc: "adds a fact's counters to its source's lifetime totals"},
		{Name: "facts_retire_totals", On: "facts", Writes: []string{"fact_totals"},
			Doc: "a retired writer's totals move to the retired source"},
	},
}
