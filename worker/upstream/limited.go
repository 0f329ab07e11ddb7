package upstream

import (
	"context"
	"errors"
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

// Reserve admits n calls of l's limit in one acquire (one Durable Object
// request) and returns ctx carrying them: each Get under it takes a slot
// instead of an acquire of its own (ratelimit.Reserve). A refusal refuses
// the n Gets it was for (rate_limit answers: their callers keep the work
// due); a limiter that cannot be reached leaves each Get to acquire for
// itself.
func (l Limited) Reserve(ctx context.Context, n int) context.Context {
	if l.Limits == nil {
		return ctx
	}
	p := l.Limits.Reserve(ctx, l.Key, n)
	if p == nil || (p.Err() != nil && !errors.Is(p.Err(), ratelimit.ErrRateLimited)) {
		return ctx
	}
	return ratelimit.WithPermits(ctx, p)
}
