package worker

import (
	"storecrawl/worker/alerts"
	"storecrawl/worker/analyst"
	living "storecrawl/worker/catalogue"
	"storecrawl/worker/crawl"
	"storecrawl/worker/d1"
	"storecrawl/worker/datasets"
	"storecrawl/worker/enrichment"
	"storecrawl/worker/keywords"
	"storecrawl/worker/ledgerdb"
	"storecrawl/worker/markets"
	"storecrawl/worker/reviews"
	"storecrawl/worker/search"
	"storecrawl/worker/segments"
	"storecrawl/worker/tasks"
)

// HotQueries lists every feature's reads on the cron, queue and request
// paths, with sample arguments: TestHotQueriesDoNotGrowWithTheCatalogue
// checks each plan on a catalogue of 100,000 apps (EXPLAIN QUERY PLAN: no
// step walks a large table unless the query is bounded), and a list
// route's page read (d1.NamedQuery.Page) is not sorted in a temporary
// B-tree either.
func HotQueries() []d1.NamedQuery {
	var all []d1.NamedQuery
	for _, qs := range [][]d1.NamedQuery{enrichment.HotQueries(), crawl.HotQueries(), markets.HotQueries(), tasks.HotQueries(), ledgerdb.HotQueries(), living.HotQueries(), analyst.HotQueries(), reviews.HotQueries(), markets.DetailHotQueries(), search.HotQueries(), keywords.HotQueries(), alerts.HotQueries(), segments.HotQueries(), datasets.HotQueries()} {
		all = append(all, qs...)
	}
	return all
}
