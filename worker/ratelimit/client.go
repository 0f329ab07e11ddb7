// Package ratelimit is the Go client every Worker code path uses to call a
// rate-limited upstream through the OmniLimiter: Schedule acquires a slot
// for the key (asking the limiter to hold the call rather than refuse it,
// so a wait costs one subrequest, not a retry loop of them), retries with
// jitter when still refused, then runs the work. Like Bottleneck's
// schedule(), but the limit is global across every isolate.
package ratelimit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"storecrawl/worker/subreq"
	"time"

	"storecrawl/durable/limiter"
)

// Catalogue names the limit of the App Store's API host (lookups,
// searches, charts: itunes.apple.com), StorePages that of its store host
// (product pages: apps.apple.com). The two hosts limit separately upstream,
// so each has its own global limit.
const (
	Catalogue  = "upstream-catalogue"
	StorePages = "upstream-store-pages"
	// Reviews names the limit of the customer-reviews feed (on the API
	// host, but its own budget, so reviews never starve lookups).
	Reviews = "upstream-reviews"
	// Hints names the search-hints host's limit (crawl's keyword sourcing).
	Hints = "upstream-hints"
	// LLMTokens names the analyst's per-minute LLM token budget: every LLM
	// call acquires its estimated tokens (cost) under it. The
	// analyst sends its LLM_TOKENS_PER_MINUTE as the limit; this is the default.
	LLMTokens = "llm-tokens"
)

// Limits are the named limiter definitions: every upstream the system calls
// is listed here, once, with the policy all callers share.
var Limits = map[string]limiter.Policy{
	// The App Store-style catalogue (lookup JSON and store pages). Shared by
	// the EnrichmentController and periodic tasks: a hard global cap under
	// which the controller's own pacing works.
	Catalogue:  {Limit: 1200, Window: 60, Algorithm: limiter.GCRA},
	StorePages: {Limit: 1200, Window: 60, Algorithm: limiter.GCRA},
	Reviews:    {Limit: 60, Window: 60, Algorithm: limiter.GCRA},
	// The search-hints host: an App Store field's completions, asked a
	// few a run within a daily budget (crawl.HintRequestsPerDay); a
	// minute's cap well under what one field's typing sends.
	Hints:     {Limit: 60, Window: 60, Algorithm: limiter.GCRA},
	LLMTokens: {Limit: 20000, Window: 60, Algorithm: limiter.SlidingWindow},
}

// Caller sends one request to a key's OmniLimiter object.
type Caller interface {
	CallLimiter(ctx context.Context, key, method, path string, body []byte) (status int, respBody []byte, err error)
}

// Client schedules work under named limits.
type Client struct {
	Caller Caller
	// MaxWait bounds how long one Schedule waits in total for a slot.
	MaxWait time.Duration
	Sleep   func(time.Duration)
	// Jitter returns a fraction in [0,1) to spread retries (default math/rand).
	Jitter func() float64
}

// Client bounds.
const (
	DefaultMaxWait = 30 * time.Second
	// holdPerCall is what one acquire asks the limiter to hold the caller for.
	holdPerCall = 10 * time.Second
	// MaxAttempts bounds the acquire calls of one Schedule (subrequests are finite).
	MaxAttempts = 5
	// retryJitter spreads retries by up to this share of the wait.
	retryJitter = 0.2
)

// ErrRateLimited means no slot was free within the wait budget.
var ErrRateLimited = errors.New("ratelimit: no slot within the wait budget")

// Schedule runs fn once the named limit admits cost units.
func (c *Client) Schedule(ctx context.Context, name string, cost int, fn func(context.Context) error) error {
	p, ok := Limits[name]
	if !ok {
		return fmt.Errorf("ratelimit: no limit named %q", name)
	}
	return c.ScheduleKey(ctx, name, p, cost, fn)
}

// ScheduleKey runs fn once key's policy admits cost units: from the
// permits ctx carries for key while they last (WithPermits), else by an
// acquire of its own.
func (c *Client) ScheduleKey(ctx context.Context, key string, p limiter.Policy, cost int, fn func(context.Context) error) error {
	if pm := permitsFor(ctx, key); pm != nil {
		switch ok, err := pm.take(cost); {
		case ok:
			return fn(ctx)
		case err != nil:
			return err
		}
	}
	budget := c.MaxWait
	if budget <= 0 {
		budget = DefaultMaxWait
	}
	for attempt := 0; attempt < MaxAttempts; attempt++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		hold := min(budget, holdPerCall)
		d, err := c.acquire(ctx, key, p, cost, hold)
		if err != nil {
			return err
		}
		if d.Allowed {
			return fn(ctx)
		}
		wait := time.Duration(d.RetryAfterMs) * time.Millisecond
		wait += time.Duration(float64(wait) * retryJitter * c.jitter())
		if wait > budget {
			return ErrRateLimited
		}
		c.sleep(wait)
		budget -= wait
	}
	return ErrRateLimited
}

func (c *Client) acquire(ctx context.Context, key string, p limiter.Policy, cost int, hold time.Duration) (limiter.AcquireAnswer, error) {
	body, _ := json.Marshal(map[string]any{
		"key": key, "limit": p.Limit, "windowInSeconds": p.Window, "algorithm": p.Algorithm,
		"cost": cost, "waitMs": hold.Milliseconds(),
	})
	if err := subreq.Spend(ctx, 1); err != nil {
		return limiter.AcquireAnswer{}, fmt.Errorf("ratelimit: acquire %s: %w", key, err)
	}
	status, resp, err := c.Caller.CallLimiter(ctx, key, "POST", "/acquire", body)
	if err != nil {
		return limiter.AcquireAnswer{}, fmt.Errorf("ratelimit: acquire %s: %w", key, err)
	}
	if status != 200 {
		return limiter.AcquireAnswer{}, fmt.Errorf("ratelimit: acquire %s: HTTP %d: %s", key, status, resp)
	}
	var d limiter.AcquireAnswer
	if err := json.Unmarshal(resp, &d); err != nil {
		return limiter.AcquireAnswer{}, fmt.Errorf("ratelimit: acquire %s: %w", key, err)
	}
	return d, nil
}

func (c *Client) sleep(d time.Duration) {
	if c.Sleep != nil {
		c.Sleep(d)
		return
	}
	time.Sleep(d)
}

func (c *Client) jitter() float64 {
	if c.Jitter != nil {
		return c.Jitter()
	}
	return rand.Float64()
}
