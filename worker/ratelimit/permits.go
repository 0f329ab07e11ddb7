package ratelimit

import (
	"context"
	"sync"

	"storecrawl/durable/limiter"
)

// Batched acquires. Every acquire is a Durable Object request (billed), so
// a caller that knows it is about to send n requests under one key asks
// for them in one acquire of cost n (Reserve) and carries the admitted
// slots in its context (WithPermits): each Schedule under that key then
// takes a slot without calling the limiter. A reservation of n units is
// the same budget as n acquires of one (gcra advances its arrival time
// n emission intervals, a sliding window holds one entry of cost n), so
// the global rate holds; the caller spreads the sends itself (its chunks
// and pauses). A refused reservation refuses every Schedule it covers (the
// callers' rate-limited path: their work stays due, nothing is lost); one
// used up falls back to an acquire a call.

// Permits are slots of one key admitted by one acquire.
type Permits struct {
	key string
	mu  sync.Mutex
	// left is the slots not yet taken; err is the reservation's failure
	// (ErrRateLimited, or the limiter's own error), given to every
	// Schedule the reservation covered.
	left, covered int
	err           error
}

// Left is the slots not yet taken.
func (p *Permits) Left() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.left
}

// Err is the reservation's failure (nil: admitted).
func (p *Permits) Err() error { return p.err }

// take is what the next Schedule of cost under the permits' key does:
// ok, a slot taken; err, the reservation's refusal; neither, no slot
// left, so the Schedule acquires for itself.
func (p *Permits) take(cost int) (ok bool, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil && p.covered >= cost {
		p.covered -= cost
		return false, p.err
	}
	if p.err == nil && p.left >= cost {
		p.left -= cost
		return true, nil
	}
	return false, nil
}

type permitsKey struct{ key string }

// WithPermits is ctx carrying p: every Schedule under p's key in ctx takes
// its slots from p while they last.
func WithPermits(ctx context.Context, p *Permits) context.Context {
	if p == nil {
		return ctx
	}
	return context.WithValue(ctx, permitsKey{p.key}, p)
}

func permitsFor(ctx context.Context, key string) *Permits {
	p, _ := ctx.Value(permitsKey{key}).(*Permits)
	return p
}

// Reserve acquires n slots of the named limit in one call (n ≤ 0: no call,
// no permits). The answer is never nil for n > 0: a refusal is Permits
// whose Err is given to the n Schedules it covers.
func (c *Client) Reserve(ctx context.Context, name string, n int) *Permits {
	p, ok := Limits[name]
	if !ok || n <= 0 {
		return nil
	}
	return c.ReserveKey(ctx, name, p, n)
}

// ReserveKey is Reserve under key's policy. n is capped at the policy's
// limit (a larger cost could never be admitted); the calls past it
// acquire for themselves.
func (c *Client) ReserveKey(ctx context.Context, key string, p limiter.Policy, n int) *Permits {
	if n <= 0 {
		return nil
	}
	n = min(n, p.Limit)
	out := &Permits{key: key}
	// The reservation runs through Schedule itself (its hold and retries),
	// outside any permits already in ctx.
	err := c.ScheduleKey(context.WithValue(ctx, permitsKey{key}, (*Permits)(nil)), key, p, n, func(context.Context) error {
		out.left = n
		return nil
	})
	if err != nil {
		out.err, out.covered = err, n
	}
	return out
}

// A reserver is how code that knows it is about to send n requests under
// one limit asks for them in one acquire without knowing the limiter: the
// caller that wires the fetch function puts its reservation function in
// ctx (WithReserver, e.g. upstream.Limited.Reserve), and the code about
// to send calls Reserved.
type reserverKey struct{}

// WithReserver is ctx carrying reserve (nil: none, hiding one ctx had:
// a reserver of another limit would reserve slots nobody takes).
func WithReserver(ctx context.Context, reserve func(ctx context.Context, n int) context.Context) context.Context {
	return context.WithValue(ctx, reserverKey{}, reserve)
}

// Reserved is ctx carrying n sends admitted in one acquire, when ctx
// carries a reserver; else ctx (each send acquires for itself).
func Reserved(ctx context.Context, n int) context.Context {
	if f, ok := ctx.Value(reserverKey{}).(func(ctx context.Context, n int) context.Context); ok && f != nil && n > 0 {
		return f(ctx, n)
	}
	return ctx
}
