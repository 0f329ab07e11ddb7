package ratelimit

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Lease keeps slots of one key reserved ahead for a caller that sends
// steadily, run after run (the EnrichmentController's ticks, every
// pacing.TickInterval): one acquire buys the slots of its next LeaseRuns
// runs at the current run's need, and the runs after it take theirs from
// the lease, in the same instance, without a limiter call. A lease is
// budget spent at its acquire, so what is left of it after LeaseSpan is
// dropped (a reservation kept long would let a burst through later), and
// one reservation takes at most LeaseShare of the key's limit, so the
// others under the same limit keep their room.
type Lease struct {
	Client *Client
	Key    string

	mu    sync.Mutex
	left  int
	until time.Time
	// Acquires counts the limiter calls the lease made (for tests and
	// the status: each is a Durable Object request).
	Acquires int64
}

// Calls is how many limiter calls the lease has made (Acquires, read
// under its lock).
func (l *Lease) Calls() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.Acquires
}

// Lease bounds.
const (
	// LeaseRuns is how many runs' worth one reservation buys: a minute of
	// ticks at the pacing's 10 s interval.
	LeaseRuns = 6
	// LeaseSpan is how long reserved slots are kept: about LeaseRuns runs.
	LeaseSpan = time.Minute
	// LeaseShare bounds one reservation to this share of the key's limit
	// (300 of the store host's 1,200 a minute).
	LeaseShare = 4
)

// LeaseSize is what a reservation asks for when a run needs short more
// slots than the lease holds: short for this run and LeaseRuns-1 more at
// the run's whole need, within limit/LeaseShare (never below short: this
// run's own need is always asked for).
func LeaseSize(short, need, limit int) int {
	ahead := short + (LeaseRuns-1)*need
	return max(short, min(ahead, limit/LeaseShare))
}

// Take returns ctx carrying n slots of the lease's key at now: from the
// lease while it holds them, else by one reservation (LeaseSize). A
// refused reservation ahead is tried once more for the run's own need; a
// refused one of that refuses the n sends it was for (each gets
// ErrRateLimited: their work stays due); a limiter that cannot be reached
// leaves each send to acquire for itself.
func (l *Lease) Take(ctx context.Context, n int, now time.Time) context.Context {
	if l == nil || n <= 0 {
		return ctx
	}
	p, ok := Limits[l.Key]
	if !ok {
		return ctx
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if !now.Before(l.until) {
		l.left = 0
	}
	if short := n - l.left; short > 0 {
		asks := []int{LeaseSize(short, n, p.Limit)}
		if asks[0] > short {
			asks = append(asks, short)
		}
		var got *Permits
		for _, ask := range asks {
			l.Acquires++
			got = l.Client.ReserveKey(ctx, l.Key, p, ask)
			if got.Err() == nil {
				break
			}
		}
		if err := got.Err(); err != nil {
			if !errors.Is(err, ErrRateLimited) {
				return ctx
			}
			return WithPermits(ctx, &Permits{key: l.Key, err: err, covered: n})
		}
		l.left += got.Left()
		l.until = now.Add(LeaseSpan)
	}
	take := min(n, l.left)
	l.left -= take
	return WithPermits(ctx, &Permits{key: l.Key, left: take})
}
