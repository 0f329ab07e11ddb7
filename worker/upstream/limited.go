package upstream

import (
	"context"
	"fmt"
	"time"

	"storecrawl/internal/objects"
	"storecrawl/worker/ratelimit"
)

// CatalogueLimit names the global limit every API-host call goes through
// (ratelimit.Limits), StorePagesLimit that of the store host's pages, and
// LimitWait bounds how long one call waits for either: the callers' own
// pacing, not a long wait, should slow them.
const (
	CatalogueLimit  = ratelimit.Catalogue
	StorePagesLimit = ratelimit.StorePages
	LimitWait       = 5 * time.Second
)

// Limited fetches through a global limit: Get waits for a slot of Key,
// then calls the upstream. No slot in time is a rate_limit answer (nothing
// reached the upstream).
type Limited struct {
	Client *Client
	Limits *ratelimit.Client
	Key    string
}

// Get fetches url once the limit admits it.
func (l Limited) Get(ctx context.Context, url string) Response {
	var r Response
	err := l.Limits.Schedule(ctx, l.Key, 1, func(ctx context.Context) error {
		r = l.Client.Get(ctx, url)
		return nil
	})
	if err != nil {
		return Response{Class: objects.ClassRateLimit, Remaining: -1, Err: fmt.Errorf("global limit: %w", err)}
	}
	return r
}
