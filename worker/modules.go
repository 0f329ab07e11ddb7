package worker

import (
	"storecrawl/worker/analyst"
	appcatalogue "storecrawl/worker/catalogue"
	"storecrawl/worker/crawl"
	"storecrawl/worker/d1"
	"storecrawl/worker/enrichment"
	"storecrawl/worker/history"
	"storecrawl/worker/markets"
	"storecrawl/worker/module"
	"storecrawl/worker/reviews"
)

// Modules are every feature's declaration of what it owns. Each table and
// trigger of migrations/schema.sql is declared by exactly one of them
// (TestModulesDeclareTheSchema), and only a table's declared writer
// writes it (internal/archtest).
var Modules = []module.Module{
	crawl.Module,
	appcatalogue.Module,
	enrichment.Module,
	markets.Module,
	reviews.Module,
	analyst.Module,
	history.Module,
	d1.Module,
}
