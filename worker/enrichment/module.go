package enrichment

import "storecrawl/worker/module"

// Module is enrichment's declaration: the executor of the
// EnrichmentController's ticks (lookups, store pages, R2, saves).
var Module = module.Module{
	Name: "enrichment",
	Doc:  "performs the EnrichmentController's ticks: batched lookups, store pages, raw pages in R2, saves",
	Tables: []module.Table{
		{Name: "developers", Writer: "worker/enrichment", Doc: "a developer seen on an enriched app"},
		{Name: "reparse_jobs", Writer: "worker/enrichment", Doc: "a re-parse of stored pages from R2: its scope and cursor"},
	},
}
