package crawl

import (
	"context"
	"time"

	"storecrawl/worker/module"
	"storecrawl/worker/ratelimit"
	"storecrawl/worker/upstream"
)

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
		{Name: "keyword_hint_prefixes", Writer: "worker/crawl", Doc: "a prefix keyword sourcing asks the search hints: when, what it answered, or waiting with its value"},
	},
	Triggers: []module.Trigger{
		{Name: "app_registry_refill_on_rename", On: "app_registry", Writes: []string{"app_registry"},
			Doc: "a renamed app (name or subtitle) has its rankings filled again from its new terms"},
	},
}

// Host is an upstream host's fetch through its global limit (Get), the
// reservation of a run's requests in one acquire (Reserve), and its base
// URL.
type Host struct {
	Get     func(ctx context.Context, url string) upstream.Response
	Reserve func(ctx context.Context, n int) context.Context
	Base    string
}

// Tasks are discovery's periodic work: keyword-hints asks the search
// hints for the best prefixes of a genre's seeds and the waiting ones,
// and queues the completions no keyword holds as pending keywords, within
// the day's budgets (SourceHints), through the hints' limit; sitemap-scan
// reads the store's sitemaps on the store host (pages), through its
// limit, and queues the apps the catalogue does not hold (ScanSitemaps).
func Tasks(store D1Store, hints, pages Host, country string) []module.Task {
	return []module.Task{{
		Name: "keyword-hints", Every: HintRunEvery, Jitter: time.Minute,
		Doc: "search hints for a genre's seeds and the waiting prefixes; their new terms queued as keywords, within a daily budget",
		Run: func(ctx context.Context, now func() time.Time) module.Result {
			out := SourceHints(ratelimit.WithReserver(ctx, hints.Reserve), store, hints.Get, hints.Base, country, now())
			return module.Result{OK: out.Error == "" && !out.RateLimited, Summary: out.Summary(), Error: out.Error,
				RateLimited: out.RateLimited,
				Counters:    map[string]int64{"asked": int64(out.Asked), "new_keywords": int64(out.NewKeywords)}}
		},
	}, {
		Name: "sitemap-scan", Every: SitemapRunEvery, Jitter: time.Minute,
		Doc: "the store's sitemaps: the new apps' index hourly, every app's weekly, a few files a run from a cursor; the apps not known queued for discovery",
		Run: func(ctx context.Context, now func() time.Time) module.Result {
			out := ScanSitemaps(ratelimit.WithReserver(ctx, pages.Reserve), store.DB, pages.Get, pages.Base, now())
			return module.Result{OK: out.Error == "" && !out.RateLimited, Summary: out.Summary(), Error: out.Error,
				RateLimited: out.RateLimited,
				Counters:    map[string]int64{"requests": int64(out.Requests), "files": int64(out.Files), "ids": int64(out.IDs), "new_apps": int64(out.NewApps)}}
		},
	}}
}
