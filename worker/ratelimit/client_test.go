package ratelimit

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"storecrawl/durable/limiter"
)

// inProcess is a Caller backed by the real limiter logic on a fake clock,
// holding a waiting caller the way the Durable Object does.
type inProcess struct {
	mu     sync.Mutex
	states map[string]*limiter.State
	now    time.Time
	calls  int
}

func (f *inProcess) CallLimiter(_ context.Context, key, method, path string, body []byte) (int, []byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	a, fe := limiter.ParseAcquire(body)
	if fe != nil {
		b, _ := json.Marshal(fe)
		return 400, b, nil
	}
	s, ok := f.states[key]
	if !ok {
		s = limiter.New(a.Policy)
		f.states[key] = s
	}
	deadline := f.now.Add(a.Wait)
	for {
		d := s.Acquire(f.now, a.Cost)
		if d.Allowed || f.now.Add(d.RetryAfter).After(deadline) {
			b, _ := json.Marshal(limiter.AcquireAnswer{Allowed: d.Allowed, RetryAfterMs: d.RetryAfter.Milliseconds(), Remaining: d.Remaining})
			return 200, b, nil
		}
		f.now = f.now.Add(d.RetryAfter) // the object holds the caller
	}
}

func TestScheduleRunsWithinTheLimit(t *testing.T) {
	f := &inProcess{states: map[string]*limiter.State{}, now: time.Unix(1_800_000_000, 0)}
	c := &Client{Caller: f, Sleep: func(d time.Duration) { f.mu.Lock(); f.now = f.now.Add(d); f.mu.Unlock() }, Jitter: func() float64 { return 0.5 }}
	p := limiter.Policy{Limit: 3, Window: 1, Algorithm: limiter.SlidingWindow}
	var ran []time.Time
	for i := 0; i < 7; i++ {
		err := c.ScheduleKey(context.Background(), "k", p, 1, func(context.Context) error { ran = append(ran, f.now); return nil })
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := 3; i < len(ran); i++ {
		if ran[i].Sub(ran[i-3]) < time.Second {
			t.Fatalf("runs %d and %d only %s apart: 4 runs in one window", i-3, i, ran[i].Sub(ran[i-3]))
		}
	}
	if f.calls != 7 {
		t.Fatalf("holding should make one acquire per run, made %d", f.calls)
	}
}

func TestScheduleGivesUpAfterItsBudget(t *testing.T) {
	f := &inProcess{states: map[string]*limiter.State{}, now: time.Unix(1_800_000_000, 0)}
	c := &Client{Caller: f, MaxWait: 2 * time.Second, Sleep: func(time.Duration) {}, Jitter: func() float64 { return 0 }}
	p := limiter.Policy{Limit: 1, Window: 3600, Algorithm: limiter.SlidingWindow}
	ok := func(context.Context) error { return nil }
	if err := c.ScheduleKey(context.Background(), "k", p, 1, ok); err != nil {
		t.Fatal(err)
	}
	ran := false
	err := c.ScheduleKey(context.Background(), "k", p, 1, func(context.Context) error { ran = true; return nil })
	if !errors.Is(err, ErrRateLimited) || ran {
		t.Fatalf("err=%v ran=%v", err, ran)
	}
	if err := c.Schedule(context.Background(), "no-such-limit", 1, ok); err == nil {
		t.Fatal("unknown name accepted")
	}
	for name, p := range Limits {
		// An internal key is out of every HTTP caller's reach: the clients'
		// keys all carry limiter.ClientPrefix.
		if limiter.IsClientKey(name) {
			t.Errorf("limit %s is in the clients' namespace", name)
		}
		if _, fe := limiter.ParseAcquire([]byte(`{"key":"` + name + `","limit":` + itoa(p.Limit) + `,"windowInSeconds":1}`)); fe != nil {
			t.Errorf("limit %s is invalid: %+v", name, fe)
		}
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
