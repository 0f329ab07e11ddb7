package markets

import (
	"storecrawl/worker/events"
	"storecrawl/worker/module"
)

// Module is the markets' declaration: clusters and their opportunity
// scores. The counters kept by its triggers let the pipeline counts read
// a row, not scan a table.
var Module = module.Module{
	Name: "markets",
	Doc:  "market clusters, fragmentation and opportunity scores",
	Tables: []module.Table{
		{Name: "market_clusters", Writer: "worker/markets", Doc: "the apps ranking for one keyword: size, leader's share, fragmentation"},
		{Name: "opportunity_scores", Writer: "worker/markets", Doc: "a cluster's opportunity score and its parts: demand, fragmentation, quality gap"},
	},
	Triggers: []module.Trigger{
		{Name: "clusters_add", On: "market_clusters", Writes: []string{"pipeline_counters"}, Doc: "counts clusters as they are inserted"},
		{Name: "clusters_remove", On: "market_clusters", Writes: []string{"pipeline_counters"}, Doc: "counts clusters as they are deleted"},
		{Name: "opportunities_add", On: "opportunity_scores", Writes: []string{"pipeline_counters"}, Doc: "counts opportunities as they are inserted"},
		{Name: "opportunities_remove", On: "opportunity_scores", Writes: []string{"pipeline_counters"}, Doc: "counts opportunities as they are deleted"},
	},
	// The pipeline's events (HandleEvent); segments marks the keywords of
	// a rankings-updated after it.
	Consumes: events.Types,
}
