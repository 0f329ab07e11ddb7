package catalogue

import "storecrawl/worker/module"

// Module is the living catalogue's declaration: every known app, its
// history and its refresh schedule. app_registry's statements are in
// worker/registry (each writes only on change); the history tables are
// written by triggers on it, so a change is recorded in the same
// statement that makes it, at no extra query.
var Module = module.Module{
	Name: "catalogue",
	Doc:  "the living catalogue: every known app, its history, refresh tiers and stale marks",
	Tables: []module.Table{
		{Name: "app_registry", Writer: "worker/registry", Doc: "one known app: its facts, its place in the enrichment queue, its page state and refresh tier"},
		{Name: "app_snapshots", Writer: "worker/tasks", Doc: "an app's rating count and average at a moment: observed by a trigger, or a sweep's copy"},
		{Name: "app_price_history", Doc: "an app's price each time it changed"},
		{Name: "app_version_history", Doc: "an app's version each time it changed, with its date (its notes: the current version's are the app's row's)"},
		{Name: "keyword_rank_history", Writer: "worker/catalogue", Doc: "an app's rank for a keyword, a row a day it moved"},
	},
	Triggers: []module.Trigger{
		{Name: "app_history_insert", On: "app_registry", Writes: []string{"app_registry"},
			Doc: "an app inserted with its parsed page records the version and rating count the page showed, and its sighting"},
		{Name: "app_history_price", On: "app_registry", Writes: []string{"app_price_history"},
			Doc: "a price change appends the old price (once, for an app with no history) and the new one"},
		{Name: "app_history_ratings", On: "app_registry", Writes: []string{"app_snapshots"},
			Doc: "a rating count or average change appends an observed snapshot"},
		{Name: "app_history_version", On: "app_registry", Writes: []string{"app_version_history"},
			Doc: "a version change appends the version with its date"},
		{Name: "app_refresh_schedule", On: "app_registry", Writes: []string{"app_registry"},
			Doc: "an enrichment clears the app's refresh retry and records its sighting and the page's version and rating count"},
		{Name: "app_refresh_version_seen", On: "app_registry", Writes: []string{"app_registry"},
			Doc: "a new version seen by a search or lookup puts the enriched app on the refresh retry list"},
		{Name: "apps_known_add", On: "app_registry", Writes: []string{"pipeline_counters"},
			Doc: "counts apps known, enriched and unavailable as apps are inserted, so no count scans the table"},
		{Name: "apps_known_remove", On: "app_registry", Writes: []string{"pipeline_counters"},
			Doc: "the same counts as apps are deleted"},
		{Name: "apps_state_change", On: "app_registry", Writes: []string{"pipeline_counters"},
			Doc: "moves an app between the enriched and unavailable counts when its state changes"},
	},
}
