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
	"storecrawl/worker/subreq"
	"strconv"
	"strings"
	"time"

	"storecrawl/durable/object"
	"storecrawl/worker/logx"
)

const (
	// DefaultTimeout bounds one upstream call; a slower answer counts as a
	// timeout against the upstream (it is overloaded or throttling by delay).
	DefaultTimeout = 15 * time.Second
	// MaxBodyBytes bounds what is read from one answer (store pages are ~100 KB).
	MaxBodyBytes = 4 << 20
	// DefaultMaxHold caps how long one answer's Retry-After or
	// RateLimit-Reset can hold the crawler: a hostile or buggy header
	// (86400 s, an epoch in the far future) must not stop it for a day.
	DefaultMaxHold = 300 * time.Second
	// maxHintSeconds bounds a parsed header before any Duration arithmetic,
	// so huge numbers cannot overflow into a small or negative hold.
	maxHintSeconds = int64(100 * 365 * 24 * 3600)
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
	// HoldHint is the longer hold the upstream asked for when it was capped
	// at MaxHold (0 when nothing was capped), for the upstream.hold_capped log.
	HoldHint time.Duration
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
	// MaxHold caps Retry-After and RateLimit-Reset (DefaultMaxHold when 0).
	MaxHold time.Duration
}

// Get fetches url with no custom headers (custom User-Agents have triggered
// false 403s from this kind of upstream) and classifies the result.
func (c *Client) Get(ctx context.Context, url string) Response {
	if err := subreq.Spend(ctx, 1); err != nil {
		// Never reached in a run (it reserves each item's worst case); a
		// guard against the platform killing the invocation mid-item.
		return Response{Class: object.ClassTimeout, Remaining: -1, Err: fmt.Errorf("GET %s: %w", url, err)}
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	// The Workers fetch transport ignores context cancellation, so the wait
	// is bounded here; an abandoned fetch finishes in the background.
	sent := time.Now()
	ch := make(chan Response, 1)
	go func() {
		defer func() {
			if err := logx.Recovered(recover(), "upstream.Get"); err != nil {
				ch <- Response{Class: object.ClassTimeout, Remaining: -1, Err: err}
			}
		}()
		ch <- c.do(ctx, url)
	}()
	var r Response
	select {
	case r = <-ch:
	case <-time.After(timeout):
		r = Response{Class: object.ClassTimeout, Remaining: -1, Err: fmt.Errorf("GET %s: no answer within %s", url, timeout)}
	case <-ctx.Done():
		r = Response{Class: object.ClassTimeout, Remaining: -1, Err: ctx.Err()}
	}
	r.SentAt, r.DoneAt = sent, time.Now()
	return capHold(r, c.MaxHold, url)
}

// capHold bounds the hold an answer asks for and logs when it had to.
func capHold(r Response, limit time.Duration, url string) Response {
	if limit <= 0 {
		limit = DefaultMaxHold
	}
	asked := max(time.Duration(r.RetryAfterS)*time.Second, r.Reset)
	if r.RetryAfterS > int(limit/time.Second) {
		r.RetryAfterS = int(limit / time.Second)
	}
	if r.Reset > limit {
		r.Reset = limit
	}
	if asked > limit {
		r.HoldHint = asked
		logx.Event("upstream.hold_capped", map[string]any{"level": logx.Warn, "url": url,
			"asked_s": int64(asked / time.Second), "held_s": int64(limit / time.Second)})
	}
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
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	switch {
	case err == nil && n < 0:
		return 0
	case err == nil, errors.Is(err, strconv.ErrRange) && n > 0:
		return int(min(n, maxHintSeconds)) // a number too big for int64 is "forever"
	}
	if t, err := http.ParseTime(v); err == nil {
		// In whole seconds, not via a Duration, which saturates far out.
		if secs := t.Unix() - now.Unix(); secs > 0 {
			return int(min(secs, maxHintSeconds))
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
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if errors.Is(err, strconv.ErrRange) && n > 0 {
			return int(maxHintSeconds), true // too big for int64: "forever"
		}
		return int(min(n, maxHintSeconds*10)), err == nil && n >= 0
	}
	// seconds turns a reset value into a hold: small numbers are seconds
	// from now, epoch-sized ones unix times; bounded before any arithmetic.
	seconds := func(n int) time.Duration {
		s := int64(n)
		if s > 1e9 {
			s -= time.Now().Unix()
		}
		return time.Duration(max(0, min(s, maxHintSeconds))) * time.Second
	}
	for _, k := range []string{"RateLimit-Remaining", "X-RateLimit-Remaining", "X-RateLimit-Minute-Remaining"} {
		if n, ok := num(h.Get(k)); ok {
			remaining = n
			break
		}
	}
	for _, k := range []string{"RateLimit-Reset", "X-RateLimit-Reset"} {
		if n, ok := num(h.Get(k)); ok {
			reset = seconds(n)
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
					reset = seconds(n)
				}
			}
		}
	}
	if reset < 0 {
		reset = 0
	}
	return remaining, reset
}
