package ratelimit

import (
	"context"
	"errors"
	"testing"
	"time"

	"storecrawl/durable/limiter"
)

// A reservation of n is one acquire (one Durable Object request); the n
// Schedules under it call no limiter, and the next call past it acquires
// for itself. The reservation spent the same budget n acquires would.
func TestReserveIsOneAcquireForItsCalls(t *testing.T) {
	f := &inProcess{states: map[string]*limiter.State{}, now: time.Unix(1_800_000_000, 0)}
	c := &Client{Caller: f, Sleep: func(d time.Duration) { f.now = f.now.Add(d) }, Jitter: func() float64 { return 0 }}
	p := limiter.Policy{Limit: 60, Window: 60, Algorithm: limiter.GCRA}
	pm := c.ReserveKey(context.Background(), "k", p, 10)
	if pm.Err() != nil || pm.Left() != 10 || f.calls != 1 {
		t.Fatalf("reserve: err %v left %d calls %d", pm.Err(), pm.Left(), f.calls)
	}
	ctx := WithPermits(context.Background(), pm)
	ran := 0
	for range 10 {
		if err := c.ScheduleKey(ctx, "k", p, 1, func(context.Context) error { ran++; return nil }); err != nil {
			t.Fatal(err)
		}
	}
	if ran != 10 || f.calls != 1 || pm.Left() != 0 {
		t.Fatalf("ran %d, %d limiter calls, %d left", ran, f.calls, pm.Left())
	}
	// Other keys are not covered; a used-up reservation acquires again.
	if err := c.ScheduleKey(ctx, "other", p, 1, func(context.Context) error { return nil }); err != nil || f.calls != 2 {
		t.Fatalf("other key: %v, calls %d", err, f.calls)
	}
	if err := c.ScheduleKey(ctx, "k", p, 1, func(context.Context) error { return nil }); err != nil || f.calls != 3 {
		t.Fatalf("past the reservation: %v, calls %d", err, f.calls)
	}
	// The budget is the one 11 acquires spend: of 60 a minute, 49 remain
	// (gcra's burst is the limit).
	if d := f.states["k"].Acquire(f.now, 1); !d.Allowed || d.Remaining != 60-12 {
		t.Fatalf("after 11 units and 1 more: %+v", d)
	}
}

// A refused reservation refuses each call it covers without a limiter
// call (the callers keep their work due), and only those.
func TestRefusedReserveRefusesItsCalls(t *testing.T) {
	f := &inProcess{states: map[string]*limiter.State{}, now: time.Unix(1_800_000_000, 0)}
	c := &Client{Caller: f, MaxWait: time.Second, Sleep: func(d time.Duration) { f.now = f.now.Add(d) }, Jitter: func() float64 { return 0 }}
	p := limiter.Policy{Limit: 5, Window: 3600, Algorithm: limiter.GCRA}
	if pm := c.ReserveKey(context.Background(), "k", p, 5); pm.Err() != nil {
		t.Fatal(pm.Err())
	}
	pm := c.ReserveKey(context.Background(), "k", p, 3)
	if !errors.Is(pm.Err(), ErrRateLimited) || pm.Left() != 0 {
		t.Fatalf("a reservation past the budget: %v, %d left", pm.Err(), pm.Left())
	}
	calls := f.calls
	ctx := WithPermits(context.Background(), pm)
	for i := range 3 {
		err := c.ScheduleKey(ctx, "k", p, 1, func(context.Context) error { t.Fatal("ran under a refused reservation"); return nil })
		if !errors.Is(err, ErrRateLimited) || f.calls != calls {
			t.Fatalf("call %d: %v, %d limiter calls", i, err, f.calls-calls)
		}
	}
	// Past what it covered, a call asks the limiter itself.
	_ = c.ScheduleKey(ctx, "k", p, 1, func(context.Context) error { return nil })
	if f.calls == calls {
		t.Fatal("a call past the refused reservation did not acquire")
	}
	// More than the limit is capped at it: a cost the limiter could admit.
	if pm := c.ReserveKey(context.Background(), "big", p, 50); pm.Err() != nil || pm.Left() != 5 {
		t.Fatalf("reserve past the limit: %v, %d", pm.Err(), pm.Left())
	}
	if c.Reserve(context.Background(), Catalogue, 0) != nil || c.Reserve(context.Background(), "no-such-limit", 3) != nil {
		t.Fatal("nothing to reserve gave permits")
	}
}
