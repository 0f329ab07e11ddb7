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
	neturl "net/url"
	"strconv"
	"strings"
	"time"

	"storecrawl/internal/objects"
	"storecrawl/worker/bytebudget"
	"storecrawl/worker/logx"
	"storecrawl/worker/subreq"
)

const (
	// DefaultTimeout bounds one upstream call; a slower answer counts as a
	// timeout against the upstream (it is overloaded or throttling by delay).
	DefaultTimeout = 15 * time.Second
	// MaxBodyBytes bounds what is read from one answer (store pages are ~100 KB).
	MaxBodyBytes = 4 << 20
	// MaxRedirects bounds the same-host redirects one call follows: a store
	// normalising an app's URL takes a hop or two; more is a loop. Each hop
	// is a subrequest of its own, so the bound also bounds a call's cost.
	MaxRedirects = 2
	// DefaultMaxHold caps how long one answer's Retry-After or
	// RateLimit-Reset can hold the crawler: a hostile or buggy header
	// (86400 s, an epoch in the far future) must not stop it for a day.
	DefaultMaxHold = 300 * time.Second
	// maxHintSeconds bounds a parsed header before any Duration arithmetic,
	// so huge numbers cannot overflow into a small or negative hold.
	maxHintSeconds = int64(100 * 365 * 24 * 3600)
	// readChunk is the most one Read takes from the body budget before it
	// reads: a 4 MB body is a few dozen takes, and a refusal near the limit
	// wastes at most this much room.
	readChunk = 64 << 10
	// redirectBodyBytes bounds what is read, and dropped, of a redirect's
	// body: reading it gives the connection back (the Workers runtime allows
	// six at once) instead of holding it until the body is collected.
	redirectBodyBytes = 64 << 10
)

// ErrBodyBudget is why a call failed whose body found no room in the body
// budget of its context (WithBodyBudget).
var ErrBodyBudget = errors.New("body budget: no room for the body")

// Response is one classified upstream answer.
type Response struct {
	Status      int
	Body        []byte
	RetryAfterS int
	// Remaining is the rate-limit budget the answer reported (-1 = none), and
	// Reset when it refills; the pacing algorithm obeys both.
	Remaining int
	Reset     time.Duration
	Class     objects.Class
	Err       error
	// HoldHint is the longer hold the upstream asked for when it was capped
	// at MaxHold (0 when nothing was capped), for the upstream.hold_capped log.
	HoldHint time.Duration
	// SentAt and DoneAt bracket the request (the pacing algorithm's samples).
	SentAt, DoneAt time.Time
	// lease is what Body holds of the context's body budget.
	lease *bytebudget.Lease
}

// Release gives Body's bytes back to the body budget it was read under:
// call it once done with Body. Harmless without a budget, and when repeated.
func (r Response) Release() { r.lease.Release() }

// Doer sends one request: *http.Client natively; under workerd an adapter
// over syumai/workers' fetch, which keeps http.Client (and the TLS stack it
// links) out of the wasm module. Do must hand redirects back, not follow
// them (an http.Client whose CheckRedirect returns http.ErrUseLastResponse;
// fetch with redirect "manual"): the Client follows the ones it allows, the
// same way on both.
type Doer interface {
	Do(*http.Request) (*http.Response, error)
}

// Client fetches from the upstream.
type Client struct {
	HTTP    Doer
	Timeout time.Duration
	// MaxHold caps Retry-After and RateLimit-Reset (DefaultMaxHold when 0).
	MaxHold time.Duration
	// After starts the timer that bounds a call: a channel that fires once
	// after d, and a func that stops it. A Go timer (time.NewTimer) when nil;
	// under workerd a JS timer (cf.After), because a Go timer wakes its
	// goroutine on whatever call next enters the shared Go instance, or not
	// while the isolate is idle (see cf.Sleep).
	After func(d time.Duration) (fire <-chan time.Time, stop func())
	// Header is sent with every request (nil: none). The hints host needs
	// the storefront (X-Apple-Store-Front); the other hosts get none.
	Header http.Header
}

type budgetKey struct{}

// WithBodyBudget makes every Get under ctx hold the bytes of the body it
// reads against b until its Response is released. A body that finds no room
// fails the call (ErrBodyBudget).
func WithBodyBudget(ctx context.Context, b *bytebudget.Budget) context.Context {
	return context.WithValue(ctx, budgetKey{}, b)
}

func bodyBudget(ctx context.Context) *bytebudget.Budget {
	b, _ := ctx.Value(budgetKey{}).(*bytebudget.Budget)
	return b
}

// after starts the call's timer (Client.After).
func (c *Client) after(d time.Duration) (<-chan time.Time, func()) {
	if c.After != nil {
		return c.After(d)
	}
	t := time.NewTimer(d)
	return t.C, func() { t.Stop() }
}

// Get fetches url with no custom headers but Client.Header (custom
// User-Agents have triggered false 403s from this kind of upstream) and
// classifies the result.
func (c *Client) Get(ctx context.Context, url string) Response {
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	// The Workers fetch transport ignores context cancellation, so the wait
	// is bounded here; an abandoned fetch finishes in the background, and
	// the cancel makes it stop reading its body.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	fire, stop := c.after(timeout)
	defer stop()
	sent := time.Now()
	ch := make(chan Response, 1)
	go func() {
		defer func() {
			if err := logx.Recovered(recover(), "upstream.Get"); err != nil {
				ch <- Response{Class: objects.ClassTimeout, Remaining: -1, Err: err}
			}
		}()
		ch <- c.do(ctx, url)
	}()
	var r Response
	select {
	case r = <-ch:
	case <-fire:
		r = Response{Class: objects.ClassTimeout, Remaining: -1, Err: fmt.Errorf("GET %s: no answer within %s", url, timeout)}
		go abandon(ch)
	case <-ctx.Done():
		r = Response{Class: objects.ClassTimeout, Remaining: -1, Err: ctx.Err()}
		go abandon(ch)
	}
	r.SentAt, r.DoneAt = sent, time.Now()
	return capHold(r, c.MaxHold, url)
}

// abandon gives back the budget of a call Get stopped waiting for, once the
// call ends: nobody else will release its answer.
func abandon(ch <-chan Response) { (<-ch).Release() }

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

// do sends the request, following same-host redirects up to MaxRedirects;
// a redirect to another host (scheme, host and port) is not followed.
func (c *Client) do(ctx context.Context, url string) Response {
	target := url
	for hops := 0; ; hops++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
		if err != nil {
			return Response{Class: objects.ClassParseError, Remaining: -1, Err: err}
		}
		for k, vs := range c.Header {
			req.Header[k] = vs
		}
		if err := subreq.Spend(ctx, 1); err != nil {
			// Never reached in a run (it reserves each item's worst case,
			// every hop included); a guard against the platform killing the
			// invocation mid-item.
			return Response{Class: objects.ClassTimeout, Remaining: -1, Err: fmt.Errorf("GET %s: %w", target, err)}
		}
		resp, err := c.HTTP.Do(req)
		if err != nil {
			// No answer at all: connection refused/reset, DNS. Count it like a timeout.
			return Response{Class: objects.ClassTimeout, Remaining: -1, Err: err}
		}
		if resp.Request != nil && resp.Request.URL != nil && !sameOrigin(req.URL, resp.Request.URL) {
			// A Doer that followed a redirect itself: what it reached
			// elsewhere is refused like a redirect there.
			r := head(resp)
			drop(resp)
			r.Class, r.Err = objects.ClassParseError, fmt.Errorf("GET %s: the Doer followed a redirect to another host (%s); answer not used", url, origin(resp.Request.URL))
			return r
		}
		next, ok := redirectTarget(req.URL, resp)
		if !ok {
			return read(ctx, url, resp)
		}
		r := head(resp)
		drop(resp)
		// Another host's answer is not the upstream's: it is never fetched.
		// Nothing known says the store sends a removed app elsewhere, so it
		// is not taken for not_found: it fails the item like an answer that
		// does not parse (retried, then given up).
		switch {
		case next == nil:
			r.Class, r.Err = objects.ClassParseError, fmt.Errorf("GET %s: HTTP %d with a bad Location %q", url, resp.StatusCode, resp.Header.Get("Location"))
		case !sameOrigin(req.URL, next):
			r.Class, r.Err = objects.ClassParseError, fmt.Errorf("GET %s: HTTP %d to another host (%s), not followed", url, resp.StatusCode, origin(next))
		case hops >= MaxRedirects:
			r.Class, r.Err = objects.ClassParseError, fmt.Errorf("GET %s: more than %d redirects", url, MaxRedirects)
		default:
			target = next.String()
			continue
		}
		return r
	}
}

// read reads and classifies a final answer. Its body holds room in the
// context's body budget as it is read. A body that finds no room fails
// its call at once rather than waiting for room: every body being read
// holds part of the budget, and an item's finished body is given back only
// when its other body finishes, so readers waiting for each other could
// all wait out the timeout; failing one frees its bytes for the others.
// The failure is a timeout: the pacing then slows, and smaller chunks
// bring fewer bodies at once; the item is retried.
func read(ctx context.Context, url string, resp *http.Response) Response {
	defer resp.Body.Close()
	budget := bodyBudget(ctx)
	lease := budget.Lease()
	body, err := io.ReadAll(io.LimitReader(&budgetReader{ctx: ctx, r: resp.Body, lease: lease, budget: budget}, MaxBodyBytes+1))
	r := head(resp)
	switch {
	case errors.Is(err, ErrBodyBudget):
		r.Class, r.Err = objects.ClassTimeout, fmt.Errorf("GET %s: %w", url, err)
	case err != nil:
		r.Class, r.Err = objects.ClassTimeout, fmt.Errorf("reading body: %w", err)
	case len(body) > MaxBodyBytes:
		r.Class, r.Err = objects.ClassParseError, errors.New("body exceeds MaxBodyBytes")
	case r.Class != objects.ClassOK:
		r.Err = fmt.Errorf("GET %s: HTTP %d", url, resp.StatusCode)
	}
	if err != nil || len(body) > MaxBodyBytes {
		// Nothing of a body cut short is used: its room goes back now.
		lease.Release()
		body = nil
	}
	r.Body, r.lease = body, lease
	return r
}

// head classifies an answer by its status and headers.
func head(resp *http.Response) Response {
	r := Response{Status: resp.StatusCode, Class: objects.ClassifyStatus(resp.StatusCode), RetryAfterS: RetryAfter(resp.Header.Get("Retry-After"), time.Now())}
	r.Remaining, r.Reset = RateLimitBudget(resp.Header)
	return r
}

// budgetReader reads a body under a lease: each Read takes room for what it
// may read before reading and gives back what it did not use, and reading
// stops once the call is abandoned (the Workers fetch ignores ctx).
type budgetReader struct {
	ctx    context.Context
	r      io.Reader
	lease  *bytebudget.Lease
	budget *bytebudget.Budget
}

func (b *budgetReader) Read(p []byte) (int, error) {
	if err := b.ctx.Err(); err != nil {
		return 0, err
	}
	p = p[:min(len(p), readChunk)]
	want := int64(len(p))
	if !b.lease.Take(want) {
		return 0, fmt.Errorf("%w (%d of %d bytes held)", ErrBodyBudget, b.budget.InUse(), b.budget.Limit())
	}
	n, err := b.r.Read(p)
	b.lease.Give(want - int64(n))
	return n, err
}

// redirectTarget is where a redirect answer points, resolved against the
// request's URL (nil when its Location does not parse); ok is false for an
// answer that is not a redirect to follow (no Location: the answer itself).
func redirectTarget(from *neturl.URL, resp *http.Response) (next *neturl.URL, ok bool) {
	switch resp.StatusCode {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
		http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
	default:
		return nil, false
	}
	loc := resp.Header.Get("Location")
	if loc == "" {
		return nil, false
	}
	next, err := from.Parse(loc)
	if err != nil {
		return nil, true
	}
	return next, true
}

// drop reads a little of an answer not used and closes it.
func drop(resp *http.Response) {
	io.CopyN(io.Discard, resp.Body, redirectBodyBytes)
	resp.Body.Close()
}

// origin is a URL's scheme and host, with the scheme's default port made
// explicit: what makes two URLs the same host.
func origin(u *neturl.URL) string {
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[scheme]
	}
	return scheme + "://" + strings.ToLower(u.Hostname()) + ":" + port
}

func sameOrigin(a, b *neturl.URL) bool { return origin(a) == origin(b) }

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
