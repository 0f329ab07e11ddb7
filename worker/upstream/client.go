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
	"strings"
	"time"

	"storecrawl/durable/object"
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
	// Remaining is the rate-limit budget the answer reported (-1 = none), and
	// Reset when it refills; the pacing algorithm obeys both.
	Remaining int
	Reset     time.Duration
	Class     object.Class
	Err       error
	// SentAt and DoneAt bracket the request (the pacing algorithm's samples).
	SentAt, DoneAt time.Time
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
	sent := time.Now()
	ch := make(chan Response, 1)
	go func() { ch <- c.do(ctx, url) }()
	var r Response
	select {
	case r = <-ch:
	case <-time.After(timeout):
		r = Response{Class: object.ClassTimeout, Remaining: -1, Err: fmt.Errorf("GET %s: no answer within %s", url, timeout)}
	case <-ctx.Done():
		r = Response{Class: object.ClassTimeout, Remaining: -1, Err: ctx.Err()}
	}
	r.SentAt, r.DoneAt = sent, time.Now()
	return r
}

func (c *Client) do(ctx context.Context, url string) Response {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return Response{Class: object.ClassParseError, Remaining: -1, Err: err}
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		// No answer at all: connection refused/reset, DNS. Count it like a timeout.
		return Response{Class: object.ClassTimeout, Remaining: -1, Err: err}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxBodyBytes+1))
	r := Response{Status: resp.StatusCode, Class: object.ClassifyStatus(resp.StatusCode), RetryAfterS: RetryAfter(resp.Header.Get("Retry-After"), time.Now())}
	r.Remaining, r.Reset = RateLimitBudget(resp.Header)
	switch {
	case err != nil:
		r.Class, r.Err = object.ClassTimeout, fmt.Errorf("reading body: %w", err)
	case len(body) > MaxBodyBytes:
		r.Class, r.Err = object.ClassParseError, errors.New("body exceeds MaxBodyBytes")
	case r.Class != object.ClassOK:
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

// RateLimitBudget reads the remaining request budget and its reset time
// from the headers APIs use for it: the IETF draft's RateLimit-Remaining /
// RateLimit-Reset or its combined "RateLimit: remaining=N, reset=S", and the
// common x-ratelimit-remaining / x-ratelimit-minute-remaining /
// x-ratelimit-reset. remaining is -1 when no header says.
func RateLimitBudget(h http.Header) (remaining int, reset time.Duration) {
	remaining = -1
	num := func(v string) (int, bool) {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		return n, err == nil && n >= 0
	}
	for _, k := range []string{"RateLimit-Remaining", "X-RateLimit-Remaining", "X-RateLimit-Minute-Remaining"} {
		if n, ok := num(h.Get(k)); ok {
			remaining = n
			break
		}
	}
	for _, k := range []string{"RateLimit-Reset", "X-RateLimit-Reset"} {
		if n, ok := num(h.Get(k)); ok {
			// Small numbers are seconds from now; epoch-sized ones are unix times.
			if n > 1e9 {
				reset = time.Until(time.Unix(int64(n), 0))
			} else {
				reset = time.Duration(n) * time.Second
			}
			break
		}
	}
	if combined := h.Get("RateLimit"); combined != "" {
		for _, part := range strings.Split(combined, ",") {
			k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
			if !ok {
				continue
			}
			switch strings.TrimSpace(k) {
			case "remaining", "r":
				if n, ok := num(v); ok {
					remaining = n
				}
			case "reset", "t":
				if n, ok := num(v); ok {
					reset = time.Duration(n) * time.Second
				}
			}
		}
	}
	if reset < 0 {
		reset = 0
	}
	return remaining, reset
}
