package reviews

import (
	"context"
	"time"

	"storecrawl/worker/module"
	"storecrawl/worker/ratelimit"
	"storecrawl/worker/upstream"
)

// Module is the reviews' declaration: the customer-reviews feed, each
// review's sentiment, and the complaint themes read from them.
var Module = module.Module{
	Name: "reviews",
	Doc:  "customer reviews of the markets' leaders, their sentiment and complaint themes",
	Tables: []module.Table{
		{Name: "app_reviews", Writer: "worker/reviews", Doc: "one review: rating, text, version and lexicon sentiment"},
		{Name: "review_fetches", Writer: "worker/reviews", Doc: "when an app's reviews were last fetched, per country"},
	},
}

// Tasks are the reviews' periodic work: reviews-refresh fetches the
// customer reviews of the top clusters' apps that are due, a few apps a
// run, each again after a day (Refresh), through the reviews' global
// limit (get; reserve admits a run's feeds in one acquire).
func Tasks(store RefreshStore, get func(ctx context.Context, url string) upstream.Response,
	reserve func(ctx context.Context, n int) context.Context, apiBase, country string) []module.Task {
	return []module.Task{{
		Name: "reviews-refresh", Every: 10 * time.Minute, Jitter: time.Minute,
		Doc: "customer reviews of the top opportunity clusters' apps, a few apps a run, each refetched after a day",
		Run: func(ctx context.Context, now func() time.Time) module.Result {
			out := Refresh(ratelimit.WithReserver(ctx, reserve), store, get, apiBase, country, now())
			return module.Result{OK: out.Err == "" && !out.RateLimited, Summary: out.Summary(), Error: out.Err,
				RateLimited: out.RateLimited, RetryAfterS: out.RetryAfterS}
		},
	}}
}
