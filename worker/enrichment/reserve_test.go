package enrichment

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	controller "storecrawl/durable/enrichment"
	"storecrawl/durable/limiter"
	"storecrawl/worker/ratelimit"
)

// countingLimiter is the real limiter logic behind a ratelimit.Caller,
// counting its calls (each a Durable Object request) and the units they
// asked for, per key.
type countingLimiter struct {
	mu     sync.Mutex
	states map[string]*limiter.State
	calls  map[string]int
	costs  map[string][]int
}

func newCountingLimiter() *countingLimiter {
	return &countingLimiter{states: map[string]*limiter.State{}, calls: map[string]int{}, costs: map[string][]int{}}
}

func (f *countingLimiter) CallLimiter(_ context.Context, key, _, _ string, body []byte) (int, []byte, error) {
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
	d := s.Acquire(time.Now(), a.Cost)
	b, _ := json.Marshal(limiter.AcquireAnswer{Allowed: d.Allowed, RetryAfterMs: d.RetryAfter.Milliseconds(), Remaining: d.Remaining})
	return 200, b, nil
}

func limitedRunner(t *testing.T, srv *fakeUpstream, st *fakeStore, f *countingLimiter) *Runner {
	r, _, _, _ := newRunner(t, srv, st)
	c := &ratelimit.Client{Caller: f, MaxWait: time.Millisecond, Sleep: func(time.Duration) {}}
	r.Limit = GlobalLimit(c, ratelimit.Catalogue)
	r.PageLimit = GlobalLimit(c, ratelimit.StorePages)
	r.ReservePages = GlobalReserve(c, ratelimit.StorePages)
	return r
}

// A run's pages are one acquire of as many units as pages it fetches, not
// one a page: a tick of 10 items in chunks of 3 makes two limiter calls
// (its lookup batch, its pages), where it made eleven.
func TestARunReservesItsPagesInOneAcquire(t *testing.T) {
	var inflight, peak int
	srv := fixtureUpstream(t, &inflight, &peak)
	defer srv.Close()
	var items []QueuedItem
	for k := range 9 {
		items = append(items, QueuedItem{TrackID: int64(fixtureID + 1000 + k)})
	}
	items = append(items, QueuedItem{TrackID: 2}) // not found: no page
	st := newStore(items...)
	f := newCountingLimiter()
	r := limitedRunner(t, srv, st, f)
	out := r.Run(context.Background(), controller.RunPlan{BatchSize: 10, ChunkItems: 3, ChunkPauseMs: 100})
	pages := 0
	for _, q := range out.Requests {
		if q.Kind == controller.RequestPage && !q.Local {
			pages++
		}
	}
	if pages != 9 || len(st.saved) != 9 || !st.missing[2] {
		t.Fatalf("pages %d, saved %d, missing %v", pages, len(st.saved), st.missing)
	}
	if f.calls[ratelimit.StorePages] != 1 || f.costs[ratelimit.StorePages][0] != 9 || f.calls[ratelimit.Catalogue] != 1 {
		t.Fatalf("limiter calls %v (costs %v), want one lookup acquire and one of 9 pages", f.calls, f.costs)
	}
	// The reservation is the budget the pages spent: 9 of the store host's
	// 1,200 (gcra gives back 20 a second: the run took a fraction of one).
	if d := f.states[ratelimit.StorePages].Acquire(time.Now(), 1); d.Remaining < 1200-10 || d.Remaining > 1200-10+10 {
		t.Fatalf("store host's remaining after the run and one more: %d", d.Remaining)
	}
}

// A refused reservation refuses the pages it was for, and loses nothing:
// every item keeps its lookup and stays queued without using an attempt,
// and the run asks the limiter once for them.
func TestARefusedReservationLosesNoItem(t *testing.T) {
	var inflight, peak int
	srv := fixtureUpstream(t, &inflight, &peak)
	defer srv.Close()
	var items []QueuedItem
	for k := range 5 {
		items = append(items, QueuedItem{TrackID: int64(fixtureID + 2000 + k)})
	}
	st := newStore(items...)
	f := newCountingLimiter()
	// The store host's limit is spent: 1,196 of 1,200 units taken.
	f.states[ratelimit.StorePages] = limiter.New(ratelimit.Limits[ratelimit.StorePages])
	if d := f.states[ratelimit.StorePages].Acquire(time.Now(), 1196); !d.Allowed {
		t.Fatal("setup")
	}
	r := limitedRunner(t, srv, st, f)
	out := r.Run(context.Background(), controller.RunPlan{BatchSize: 5, ChunkItems: 2})
	if len(out.Results) != 5 {
		t.Fatalf("settled %d of 5", len(out.Results))
	}
	for _, res := range out.Results {
		if res.Class != controller.ClassRateLimit || !res.LookupSaved {
			t.Fatalf("result %+v: want a refused page, its lookup kept", res)
		}
	}
	for _, it := range items {
		if st.lookups[it.TrackID] != PagePending {
			t.Fatalf("item %d: lookup status %q", it.TrackID, st.lookups[it.TrackID])
		}
	}
	if len(st.requeued)+len(st.gaveUp)+len(st.saved) != 0 {
		t.Fatalf("requeued %v gave up %v saved %d: a refusal must not use an attempt", st.requeued, st.gaveUp, len(st.saved))
	}
	if f.calls[ratelimit.StorePages] != 1 {
		t.Fatalf("store host acquires %d, want the one refused reservation", f.calls[ratelimit.StorePages])
	}
}
