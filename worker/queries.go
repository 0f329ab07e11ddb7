package worker

import (
	"storecrawl/worker/analyst"
	living "storecrawl/worker/catalogue"
	"storecrawl/worker/crawl"
	"storecrawl/worker/d1"
	"storecrawl/worker/enrichment"
	"storecrawl/worker/history"
	"storecrawl/worker/markets"
	"storecrawl/worker/tasks"
)

// HotQueries lists every feature's reads on the cron, queue and request
// paths, with sample arguments: an integration test (worker/e2e) checks
// each plan against the migrated local D1 (EXPLAIN QUERY PLAN: no
// full-table scans).
func HotQueries() []d1.NamedQuery {
	var all []d1.NamedQuery
	for _, qs := range [][]d1.NamedQuery{enrichment.HotQueries(), crawl.HotQueries(), markets.HotQueries(), tasks.HotQueries(), history.HotQueries(), living.HotQueries(), analyst.HotQueries()} {
		all = append(all, qs...)
	}
	return all
}
