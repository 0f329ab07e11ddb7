package reviews

import "storecrawl/worker/module"

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
