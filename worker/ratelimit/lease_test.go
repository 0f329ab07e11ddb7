package ratelimit

import (
	"context"
	"errors"
	"testing"
	"time"

	"storecrawl/durable/limiter"
)

// runUnder runs n sends under ctx's permits for key, counting those let through.
func runUnder(t *testing.T, c *Client, ctx context.Context, key string, n int) (ran int, refused int) {
	t.Helper()
	for range n {
		err := c.Schedule(ctx, key, 1, func(context.Context) error { ran++; return nil })
		switch {
		case errors.Is(err, ErrRateLimited):
			refused++
		case err != nil:
			t.Fatal(err)
		}
	}
	return ran, refused
}

// A controller's ticks, 10 s apart, each sending 20 pages: one acquire
// buys six ticks' pages; the seventh tick buys the next six. No page is
// sent without a slot: every send is a unit the limiter admitted.
func TestALeaseBuysSixTicksInOneAcquire(t *testing.T) {
	f := &inProcess{states: map[string]*limiter.State{}, now: time.Unix(1_800_000_000, 0)}
	c := &Client{Caller: f, Sleep: func(d time.Duration) { f.now = f.now.Add(d) }, Jitter: func() float64 { return 0 }}
	l := &Lease{Client: c, Key: StorePages}
	sent := 0
	for tick := range 12 {
		now := f.now.Add(time.Duration(tick) * 10 * time.Second)
		ctx := l.Take(context.Background(), 20, now)
		ran, refused := runUnder(t, c, ctx, StorePages, 20)
		if refused != 0 {
			t.Fatalf("tick %d: %d refused", tick, refused)
		}
		sent += ran
	}
	if f.calls != 2 || l.Acquires != 2 || sent != 240 {
		t.Fatalf("12 ticks of 20: %d limiter calls (lease %d), %d sent; want 2 calls", f.calls, l.Acquires, sent)
	}
	// The limiter admitted exactly what was sent: 2 × 120 units.
	if d := f.states[StorePages].Acquire(f.now, 1); d.Remaining != 1200-241 {
		t.Fatalf("remaining %d, want %d", d.Remaining, 1200-241)
	}
	if got := LeaseSize(20, 20, 1200); got != 120 {
		t.Fatalf("lease size %d", got)
	}
	if got := LeaseSize(88, 88, 1200); got != 300 || LeaseSize(400, 400, 1200) != 400 {
		t.Fatalf("a lease takes at most a quarter of the limit, never less than the run's need: %d", got)
	}
}

// Slots left past LeaseSpan are dropped, not carried into a burst; a
// refused reservation ahead falls back to the run's own need; a refusal
// of that refuses the run's sends (their work stays due).
func TestALeaseExpiresAndFallsBack(t *testing.T) {
	f := &inProcess{states: map[string]*limiter.State{}, now: time.Unix(1_800_000_000, 0)}
	c := &Client{Caller: f, MaxWait: time.Millisecond, Sleep: func(d time.Duration) {}, Jitter: func() float64 { return 0 }}
	l := &Lease{Client: c, Key: StorePages}
	t0 := f.now
	ctx := l.Take(context.Background(), 10, t0)
	runUnder(t, c, ctx, StorePages, 10)
	// 50 left, but a minute later they are gone: a new acquire.
	ctx = l.Take(context.Background(), 10, t0.Add(LeaseSpan))
	if ran, _ := runUnder(t, c, ctx, StorePages, 10); ran != 10 || l.Acquires != 2 {
		t.Fatalf("after the span: ran %d, %d acquires", ran, l.Acquires)
	}
	// The limit nearly spent: the reservation ahead is refused, the run's
	// own 10 are not.
	l2 := &Lease{Client: c, Key: StorePages}
	s := f.states[StorePages]
	s.Acquire(f.now, s.Usage(f.now).Remaining-15)
	ctx = l2.Take(context.Background(), 10, f.now)
	if ran, refused := runUnder(t, c, ctx, StorePages, 10); ran != 10 || refused != 0 || l2.Acquires != 2 {
		t.Fatalf("fallback: ran %d refused %d, %d acquires", ran, refused, l2.Acquires)
	}
	// Nothing left: the run's sends are refused, with no call of their own.
	calls := f.calls
	ctx = l2.Take(context.Background(), 10, f.now.Add(LeaseSpan))
	if ran, refused := runUnder(t, c, ctx, StorePages, 10); ran != 0 || refused != 10 || f.calls != calls+2 {
		t.Fatalf("refused: ran %d refused %d, %d calls", ran, refused, f.calls-calls)
	}
}
