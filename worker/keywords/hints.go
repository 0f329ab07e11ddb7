package keywords

import (
	"context"
	"fmt"

	"storecrawl/internal/objects"
	"storecrawl/worker/appstore"
	"storecrawl/worker/upstream"
)

// HTTPHints is a HintsFetcher over the search hints host (the wiring's
// hints client: the storefront header and the hints' own limit): the
// request and the parser are appstore's.
type HTTPHints struct {
	Get  func(ctx context.Context, url string) upstream.Response
	Base string
}

// Hints fetches and parses one prefix's hints, in Apple's order.
func (h HTTPHints) Hints(ctx context.Context, prefix string) ([]string, error) {
	r := h.Get(ctx, appstore.HintsURL(h.Base, prefix))
	defer r.Release()
	switch r.Class {
	case objects.ClassOK:
		hints, err := appstore.ParseHints(r.Body)
		if err != nil {
			return nil, err
		}
		return Terms(hints), nil
	case objects.ClassRateLimit:
		return nil, &RateLimited{RetryAfterS: r.RetryAfterS}
	default:
		return nil, fmt.Errorf("hints: HTTP %d (%s): %v", r.Status, r.Class, r.Err)
	}
}

// Terms are the hints' terms in their order.
func Terms(hints []appstore.Hint) []string {
	out := make([]string, len(hints))
	for i, h := range hints {
		out[i] = h.Term
	}
	return out
}
