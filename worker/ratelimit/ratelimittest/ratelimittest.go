// Package ratelimittest serves ratelimit.Caller from the real limiter
// logic (durable/limiter) in process, for tests: it counts every call, a
// Durable Object request in production, and its cost, per key, on a clock
// the test holds still, so a slot never frees while a test runs, however
// slowly the machine runs it.
package ratelimittest

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"storecrawl/durable/limiter"
)

// Limiter is an in-process OmniLimiter: one limiter.State a key, made on
// its first acquire from the acquire's policy.
type Limiter struct {
	mu     sync.Mutex
	states map[string]*limiter.State
	now    time.Time
	calls  map[string]int
	costs  map[string][]int
}

// New is a Limiter whose clock stands at now.
func New(now time.Time) *Limiter {
	return &Limiter{states: map[string]*limiter.State{}, now: now, calls: map[string]int{}, costs: map[string][]int{}}
}

// Take spends cost units of key's limit under policy p before the test
// starts (a limit other callers used), and says whether they were there.
func (f *Limiter) Take(key string, p limiter.Policy, cost int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.states[key]
	if !ok {
		s = limiter.New(p)
		f.states[key] = s
	}
	return s.Acquire(f.now, cost).Allowed
}

// CallLimiter implements ratelimit.Caller: every call is an acquire.
func (f *Limiter) CallLimiter(_ context.Context, key, _, _ string, body []byte) (int, []byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
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
	f.calls[key]++
	f.costs[key] = append(f.costs[key], a.Cost)
	d := s.Acquire(f.now, a.Cost)
	b, _ := json.Marshal(limiter.AcquireAnswer{Allowed: d.Allowed, RetryAfterMs: d.RetryAfter.Milliseconds(), Remaining: d.Remaining})
	return 200, b, nil
}

// Costs is each key's acquires' costs, in order.
func (f *Limiter) Costs() map[string][]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string][]int, len(f.costs))
	for k, c := range f.costs {
		out[k] = append([]int(nil), c...)
	}
	return out
}

// Calls is how many calls key's object served.
func (f *Limiter) Calls(key string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[key]
}
