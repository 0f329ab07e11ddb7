package crawl

import "storecrawl/worker/module"

// Module is discovery's declaration: the category scans, charts and
// keyword searches that find apps, and the rankings they record.
var Module = module.Module{
	Name: "crawl",
	Doc:  "discovery: category scans, chart feeds, keyword searches and their rankings",
	Tables: []module.Table{
		{Name: "category_scans", Writer: "worker/crawl", Doc: "one App Store genre: its tier and when it was last scanned"},
		{Name: "chart_positions", Writer: "worker/crawl", Doc: "a chart's current rank → app, per country, collection and genre"},
		{Name: "chart_position_history", Writer: "worker/crawl", Doc: "an app's chart rank each time it moved"},
		{Name: "crawl_keywords", Writer: "worker/crawl", Doc: "a search term: its source, value and when it is next searched"},
		{Name: "crawl_rankings", Writer: "worker/crawl", Doc: "an app's rank in a keyword's latest search: the markets' members"},
	},
	Triggers: []module.Trigger{
		{Name: "app_registry_refill_on_rename", On: "app_registry", Writes: []string{"app_registry"},
			Doc: "a renamed app (name or subtitle) has its rankings filled again from its new terms"},
	},
}
