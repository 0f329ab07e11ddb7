package enrichment

import (
	"context"
	"fmt"
	"testing"
	"time"

	"storecrawl/durable/controller"
	"storecrawl/worker/ratelimit"
	"storecrawl/worker/ratelimit/ratelimittest"
)

func limitedRunner(t *testing.T, srv *fakeUpstream, st *fakeStore, f *ratelimittest.Limiter) *Runner {
	r, _, _, _ := newRunner(t, srv, st)
	c := &ratelimit.Client{Caller: f, MaxWait: time.Millisecond, Sleep: func(time.Duration) {}}
	r.Limit = GlobalLimit(c, ratelimit.Catalogue)
	r.PageLimit = GlobalLimit(c, ratelimit.StorePages)
	pages, lookups := &ratelimit.Lease{Client: c, Key: ratelimit.StorePages}, &ratelimit.Lease{Client: c, Key: ratelimit.Catalogue}
	r.ReservePages = GlobalLease(pages, time.Now)
	r.ReserveLookups = GlobalLease(lookups, time.Now)
	r.LimiterCalls = func() int64 { return pages.Calls() + lookups.Calls() }
	return r
}

// A run's pages and lookups come from leases, not an acquire a request:
// a tick of 10 items in chunks of 3 makes two limiter calls (one lease of
// each host's limit), where it made eleven, and the next ticks of the
// minute make none.
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
	f := ratelimittest.New(time.Now())
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
	want := map[string][]int{ratelimit.StorePages: {ratelimit.LeaseSize(9, 9, 1200)}, ratelimit.Catalogue: {ratelimit.LeaseRuns}}
	if fmt.Sprint(f.Costs()) != fmt.Sprint(want) || out.LimiterCalls != 2 {
		t.Fatalf("limiter calls %v (the run reports %d), want one lease of each limit %v", f.Costs(), out.LimiterCalls, want)
	}
	// The next tick takes its pages and lookup from the leases.
	st.queue = nil
	for k := range 5 {
		st.queue = append(st.queue, QueuedItem{TrackID: int64(fixtureID + 1100 + k)})
	}
	out = r.Run(context.Background(), controller.RunPlan{BatchSize: 5, ChunkItems: 3})
	if len(st.saved) != 14 || fmt.Sprint(f.Costs()) != fmt.Sprint(want) || out.LimiterCalls != 0 {
		t.Fatalf("second tick: saved %d, limiter calls %v", len(st.saved), f.Costs())
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
	f := ratelimittest.New(time.Now())
	// The store host's limit is spent: 1,196 of 1,200 units taken.
	if !f.Take(ratelimit.StorePages, ratelimit.Limits[ratelimit.StorePages], 1196) {
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
	// The lease ahead refused, then the run's own 5: two calls, no more.
	if fmt.Sprint(f.Costs()[ratelimit.StorePages]) != fmt.Sprint([]int{ratelimit.LeaseSize(5, 5, 1200), 5}) {
		t.Fatalf("store host acquires %v, want the lease ahead and the run's own need, both refused", f.Costs()[ratelimit.StorePages])
	}
}
