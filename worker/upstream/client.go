// Package upstream is the client every Worker code path uses to call the
// crawled upstream: it fetches, bounds the wait, reads the body (bounded),
// and classifies the answer the way the controller counts it.
package upstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"storecrawl/durable/enrichment"
)

const (
	// DefaultTimeout bounds one upstream call; a slower answer counts as a
	// timeout against the upstream (it is overloaded or throttling by delay).
	DefaultTimeout = 15 * time.Second
	// MaxBodyBytes bounds what is read from one answer (store pages are ~100 KB).
	MaxBodyBytes = 4 << 20
)

// Response is one classified upstream answer.
type Response struct {
	Status      int
	Body        []byte
	RetryAfterS int
	Class       enrichment.Class
	Err         error
}

// Doer sends one request: *http.Client natively; under workerd an adapter
// over syumai/workers' fetch, which keeps http.Client (and the TLS stack it
// links) out of the wasm module.
type Doer interface {
	Do(*http.Request) (*http.Response, error)
}

// Client fetches from the upstream.
type Client struct {
	HTTP    Doer
	Timeout time.Duration
}

// Get fetches url with no custom headers (custom User-Agents have triggered
// false 403s from this kind of upstream) and classifies the result.
func (c *Client) Get(ctx context.Context, url string) Response {
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	// The Workers fetch transport ignores context cancellation, so the wait
	// is bounded here; an abandoned fetch finishes in the background.
	ch := make(chan Response, 1)
	go func() { ch <- c.do(ctx, url) }()
	select {
	case r := <-ch:
		return r
	case <-time.After(timeout):
		return Response{Class: enrichment.ClassTimeout, Err: fmt.Errorf("GET %s: no answer within %s", url, timeout)}
	case <-ctx.Done():
		return Response{Class: enrichment.ClassTimeout, Err: ctx.Err()}
	}
}

func (c *Client) do(ctx context.Context, url string) Response {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return Response{Class: enrichment.ClassParseError, Err: err}
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		// No answer at all: connection refused/reset, DNS. Count it like a timeout.
		return Response{Class: enrichment.ClassTimeout, Err: err}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxBodyBytes+1))
	r := Response{Status: resp.StatusCode, Class: enrichment.ClassifyStatus(resp.StatusCode), RetryAfterS: RetryAfter(resp.Header.Get("Retry-After"), time.Now())}
	switch {
	case err != nil:
		r.Class, r.Err = enrichment.ClassTimeout, fmt.Errorf("reading body: %w", err)
	case len(body) > MaxBodyBytes:
		r.Class, r.Err = enrichment.ClassParseError, errors.New("body exceeds MaxBodyBytes")
	case r.Class != enrichment.ClassOK:
		r.Err = fmt.Errorf("GET %s: HTTP %d", url, resp.StatusCode)
	}
	r.Body = body
	return r
}

// RetryAfter parses a Retry-After header (delta seconds or an HTTP date) into
// whole seconds from now; absent or unparseable is 0.
func RetryAfter(v string, now time.Time) int {
	if v == "" {
		return 0
	}
	if n, err := strconv.Atoi(v); err == nil {
		if n < 0 {
			return 0
		}
		return n
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return int((d + time.Second - 1) / time.Second)
		}
	}
	return 0
}
