package controller

import (
	"math"
	"testing"
	"time"

	"storecrawl/durable/pacing"
)

// hostBucket is a host's hidden limit in the tests below: a token bucket
// of ratePerMin requests a minute holding up to burst.
type hostBucket struct {
	ratePerMin, burst, tokens float64
	last                      time.Time
}

func newHostBucket(ratePerMin, burst float64, now time.Time) *hostBucket {
	return &hostBucket{ratePerMin: ratePerMin, burst: burst, tokens: burst, last: now}
}

func (b *hostBucket) take(now time.Time) bool {
	b.tokens = math.Min(b.burst, b.tokens+now.Sub(b.last).Minutes()*b.ratePerMin)
	b.last = now
	if b.tokens >= 1 {
		b.tokens--
		return true
	}
	return false
}

// runHosts drives the controller for d against two hosts with their own
// limits: every item takes a lookup (in batches of LookupBatch) and a
// page; a refused lookup batch fails its items, a refused page its item.
func runHosts(t *testing.T, cfg Config, api, store *hostBucket, d time.Duration) Status {
	t.Helper()
	st := ""
	now := t0
	end := t0.Add(d)
	for now.Before(end) {
		dec := decideWith(t, cfg, &st, "tick", TickRequest{}, now)
		if dec.Run == nil {
			now = time.UnixMilli(max(dec.AlarmAt, now.UnixMilli()+1))
			continue
		}
		plan := dec.Run
		var o RunOutcome
		sent := now
		for i := 0; i < plan.BatchSize; {
			n := min(plan.LookupBatch, plan.BatchSize-i)
			at := sent.UnixMilli()
			lookup := RequestOutcome{Item: i, Kind: RequestLookup, SentAt: at, DoneAt: at + 50, Class: ClassOK, Remaining: -1}
			if !api.take(sent) {
				lookup.Class = ClassRateLimit
			}
			o.Requests = append(o.Requests, lookup)
			refused := false
			for j := i; j < i+n; j++ {
				if lookup.Class != ClassOK {
					o.Results = append(o.Results, ItemResult{TrackID: int64(j), Class: ClassRateLimit, BatchFailed: true})
					refused = true
					continue
				}
				page := RequestOutcome{Item: j, Kind: RequestPage, SentAt: at, DoneAt: at + 50, Class: ClassOK, Remaining: -1}
				res := ItemResult{TrackID: int64(j), Class: ClassOK, Page: PageParsed}
				if !store.take(sent) {
					page.Class, res.Class, res.Page, refused = ClassRateLimit, ClassRateLimit, "", true
				}
				o.Requests = append(o.Requests, page)
				o.Results = append(o.Results, res)
			}
			i += n
			o.Picked = i
			if refused && plan.StopOnThrottle {
				break
			}
			sent = sent.Add(time.Duration(plan.ChunkPauseMs) * time.Millisecond)
		}
		done := sent.Add(100 * time.Millisecond)
		dec = decideWith(t, cfg, &st, "tick_done", o, done)
		now = time.UnixMilli(max(dec.AlarmAt, done.UnixMilli()+1))
	}
	return status(t, st, now, cfg)
}

// The two hosts have separate limits upstream: each pace learns from its
// own host's answers only. Pages throttled hard leave the lookups' pace
// unrefused and unheld; lookups throttled hard leave the pages' pace alone.
func TestEachHostPaceFollowsItsOwnLimit(t *testing.T) {
	cfg := DefaultConfig()
	cfg.LookupBatch = 5 // lookups matter: one per 5 apps

	// Pages limited to 30/min; lookups free.
	st := runHosts(t, cfg, newHostBucket(100000, 1000, t0), newHostBucket(30, 5, t0), 40*time.Minute)
	api, store := st.Paces[HostAPI], st.Paces[HostStore]
	if store.Refused == 0 || store.CapacityEstimatePerMin < 20 || store.CapacityEstimatePerMin > 45 {
		t.Fatalf("the store pace did not learn its host's 30/min: %+v", store)
	}
	if api.Refused != 0 || api.InHold || api.CapacityEstimatePerMin != 0 {
		t.Fatalf("page refusals reached the lookups' pace: %+v", api)
	}
	if st.CapacityEstimatePerMin != store.CapacityEstimatePerMin {
		t.Fatalf("top-level capacity %v is not the store host's %v", st.CapacityEstimatePerMin, store.CapacityEstimatePerMin)
	}
	perMinute := float64(st.Totals.PageRequests-st.Totals.PageRefusals) / 40
	if perMinute < 20 || perMinute > 32 {
		t.Fatalf("pages served %.1f/min against a 30/min limit", perMinute)
	}

	// Lookups limited to 4/min (20 apps/min at 5 a lookup); pages free.
	st = runHosts(t, cfg, newHostBucket(4, 2, t0), newHostBucket(100000, 1000, t0), 40*time.Minute)
	api, store = st.Paces[HostAPI], st.Paces[HostStore]
	// At a few requests a minute a tick sends one lookup, so each refusal
	// reads as a block to probe (everything refused) and backs off in time:
	// the estimate lands above the limit, the served rate at it.
	served := float64(api.Sent-api.Refused) / 40
	if api.Refused == 0 || api.CapacityEstimatePerMin < 2.5 || api.CapacityEstimatePerMin > 8 || served < 3 || served > 4.2 {
		t.Fatalf("the lookups' pace did not follow its host's 4/min (served %.2f/min): %+v", served, api)
	}
	t.Logf("lookups limited to 4/min: served %.2f/min, %d of %d refused, estimate %.2f/min", served, api.Refused, api.Sent, api.CapacityEstimatePerMin)
	if store.Refused != 0 || store.InHold || store.CapacityEstimatePerMin != 0 {
		t.Fatalf("lookup refusals reached the pages' pace: %+v", store)
	}
	if st.Totals.Completed < 20*30 {
		t.Fatalf("completed %d in 40 min with lookups for 20 apps/min", st.Totals.Completed)
	}
}

// A Retry-After on one host holds that host; the other host's pace is
// not held, and the loop wakes when both may be called again.
func TestRetryAfterHoldsOnlyItsHost(t *testing.T) {
	st := ""
	d := decide(t, &st, "tick", TickRequest{}, t0)
	n := d.Run.BatchSize
	res, _ := okResults(n)
	for i := range res {
		res[i] = ItemResult{TrackID: int64(i), Class: ClassRateLimit, RetryAfterS: 30, BatchFailed: true}
	}
	at := t0.UnixMilli()
	reqs := []RequestOutcome{{Item: 0, Kind: RequestLookup, SentAt: at, DoneAt: at + 40, Class: ClassRateLimit, RetryAfterMs: 30000, Remaining: -1}}
	done := t0.Add(time.Second)
	d = decide(t, &st, "tick_done", RunOutcome{Picked: n, Results: res, Requests: reqs}, done)
	if d.AlarmAt < at+30000 {
		t.Fatalf("next tick %d ms after the refusal, before the lookup's Retry-After", d.AlarmAt-at)
	}
	s := status(t, st, done, DefaultConfig())
	if api := s.Paces[HostAPI]; !api.InHold || api.HoldRemainingS < 29 {
		t.Fatalf("the API host is not held: %+v", api)
	}
	if store := s.Paces[HostStore]; store.InHold || store.Refused != 0 {
		t.Fatalf("the store host is held by the API host's Retry-After: %+v", store)
	}
	// A tick before the hold ends runs only the items whose stored lookup
	// is fresh (NoLookups): their pages need nothing of the API host.
	tick := done.Add(5 * time.Second)
	d = decide(t, &st, "tick", TickRequest{}, tick)
	if d.Run == nil || !d.Run.NoLookups || d.Run.LookupFreshS != int64(DefaultLookupFresh/time.Second) {
		t.Fatalf("no page-only run while the lookups are held: %+v", d.Run)
	}
	// Fresh items found: the pages keep their own pace.
	res, reqs = okResults(2)
	for i := range reqs {
		reqs[i].Kind, reqs[i].SentAt, reqs[i].DoneAt = RequestPage, tick.UnixMilli(), tick.UnixMilli()+50
		res[i].StoredLookup, res[i].Page = true, PageParsed
	}
	d = decide(t, &st, "tick_done", RunOutcome{Picked: 2, Skipped: d.Run.BatchSize - 2, Results: res, Requests: reqs}, tick.Add(time.Second))
	if d.AlarmAt >= at+30000 {
		t.Fatalf("the pages of fresh items waited for the lookups' hold: next in %d ms", d.AlarmAt-tick.UnixMilli())
	}
	if s := status(t, st, tick.Add(time.Second), DefaultConfig()); s.Totals.LookupsSkipped != 2 || s.Totals.Completed != 2 {
		t.Fatalf("totals %+v", s.Totals)
	}
	// No fresh item: the loop waits for the lookups' hold, not the idle poll.
	tick = time.UnixMilli(d.AlarmAt)
	d = decide(t, &st, "tick", TickRequest{}, tick)
	if d.Run == nil || !d.Run.NoLookups {
		t.Fatalf("second page-only run: %+v", d.Run)
	}
	d = decide(t, &st, "tick_done", RunOutcome{Picked: 0, Skipped: d.Run.BatchSize}, tick.Add(time.Second))
	if d.AlarmAt < at+30000 || d.AlarmAt > at+30000+int64(pacing.TickInterval/time.Millisecond) {
		t.Fatalf("with no fresh item the next tick is %d ms after the refusal, want the end of its 30 s hold", d.AlarmAt-at)
	}
	// With freshness off, the held lookups hold every item.
	cfg := DefaultConfig()
	if err := cfg.SetLookupFreshHours(0); err != nil {
		t.Fatal(err)
	}
	if d := decideWith(t, cfg, &st, "tick", TickRequest{}, tick.Add(2*time.Second)); d.Run != nil {
		t.Fatalf("a run while the lookups are held and nothing is fresh: %+v", d.Run)
	}
}
