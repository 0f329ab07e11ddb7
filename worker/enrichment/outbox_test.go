package enrichment

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
	"sync"
	"testing"
	"time"

	"storecrawl/durable/controller"
	"storecrawl/worker/events"
)

// queueDouble is the EVENTS queue: it records the apps of every message
// it accepts and refuses every send while down.
type queueDouble struct {
	mu   sync.Mutex
	down bool
	apps map[int64]int
	sent int
}

func (q *queueDouble) Send(_ context.Context, body string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.down {
		return errors.New("queue unavailable")
	}
	var ev events.Event
	if err := json.Unmarshal([]byte(body), &ev); err != nil {
		return err
	}
	if q.apps == nil {
		q.apps = map[int64]int{}
	}
	for _, id := range ev.TrackIDs {
		q.apps[id]++
	}
	q.sent++
	return nil
}

func queuedApps(n int) []QueuedItem {
	items := make([]QueuedItem, n)
	for i := range items {
		items[i] = QueuedItem{TrackID: 1000 + int64(i)}
	}
	return items
}

// memEnriched upstream: every app looked up, every page parses.
func outboxRunner(t *testing.T, st *fakeStore, q *queueDouble) *Runner {
	r, _ := budgetRunner(st, &memUpstream{lookup: fixture(t, "lookup_us_uber_2017.json"), page: fixture(t, "legacy_netflix_us_2023.html")})
	r.Events = QueueEvents{Queue: q, Now: time.Now}
	// The tick's own body bound: budgetRunner's 3 MB is for the body
	// budget's tests, and 50 pages of 79 KB held at once (each compressed
	// into the tick's batch before its body is released) would defer some.
	r.BodyBytes = TickBodyBytes
	return r
}

// More apps than one message holds: the run sets aside a call for every
// message, so none is lost to "subrequest budget exhausted".
func TestEveryEnrichedAppIsAnnounced(t *testing.T) {
	q := &queueDouble{}
	n := controller.ItemsPerTick(controller.DefaultLookupBatch, 1000) // more than one message
	st := newStore(queuedApps(n)...)
	out := outboxRunner(t, st, q).Run(context.Background(), controller.RunPlan{BatchSize: n, ChunkItems: 50})
	if len(st.saved) != n || len(q.apps) != n || len(out.UnsentEnriched) != 0 || q.sent != (n+events.MaxTrackIDs-1)/events.MaxTrackIDs || q.sent < 2 {
		t.Fatalf("of %d: saved %d, announced %d in %d messages, unsent %d", n, len(st.saved), len(q.apps), q.sent, len(out.UnsentEnriched))
	}
}

// A budget too small for the events, and a queue that is down: the apps
// go to the controller's outbox, and later runs announce every one.
func TestUnsentEventsWaitInTheOutbox(t *testing.T) {
	ctx := context.Background()
	q := &queueDouble{}
	// The outbox alone needs 12 messages; a budget of 5 cannot set them aside.
	pending := make([]int64, 12*events.MaxTrackIDs)
	for i := range pending {
		pending[i] = 5000 + int64(i)
	}
	out := outboxRunner(t, newStore(), q).Run(ctx, controller.RunPlan{BatchSize: 1, Subrequests: 5, PendingEnriched: pending})
	if len(out.UnsentEnriched) != len(pending) || q.sent != 0 {
		t.Fatalf("budget exhausted: unsent %d of %d, sent %d", len(out.UnsentEnriched), len(pending), q.sent)
	}

	// Through the controller: a run with the queue down, then runs with it up.
	cfg := controller.DefaultConfig()
	st := newStore(queuedApps(60)...)
	r := outboxRunner(t, st, q)
	state, now := "", time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	decide := func(op string, arg any) controller.Decision {
		b, _ := json.Marshal(arg)
		d := controller.Handle(cfg, op, state, b, now)
		if d.State != "" {
			state = d.State
		}
		return d
	}
	q.down = true
	for range 30 {
		d := decide("tick", controller.TickRequest{})
		if d.Run == nil {
			now = now.Add(time.Minute)
			continue
		}
		out := r.Run(ctx, *d.Run)
		now = now.Add(time.Second)
		decide("tick_done", out)
		if s, _ := controller.LoadState(state, now); q.down && len(s.EventOutbox) == 0 {
			t.Fatalf("queue down: the run's apps must wait in the outbox: %+v", out.UnsentEnriched)
		}
		var left []QueuedItem // the fake's pick does not dequeue
		for _, it := range st.queue {
			if _, ok := st.saved[it.TrackID]; !ok {
				left = append(left, it)
			}
		}
		st.queue = left
		now = now.Add(time.Minute)
		q.down = false
	}
	var status controller.Status
	b, _ := json.Marshal(decide("http", controller.Request{Method: "GET", Path: "/status"}).Response.Body)
	json.Unmarshal(b, &status)
	var missing []int64
	for id := range st.saved {
		if q.apps[id] == 0 {
			missing = append(missing, id)
		}
	}
	sort.Slice(missing, func(i, j int) bool { return missing[i] < missing[j] })
	if len(st.saved) != 60 || len(missing) != 0 || status.EventOutbox != 0 {
		t.Fatalf("saved %d, never announced %v, outbox %d", len(st.saved), missing, status.EventOutbox)
	}
}

// Under Workers Free's 50 subrequests a tick plans a couple of items, and
// the crawl goes on: every app is enriched and announced (the last ones
// within controller.AnnounceWithin of ticks), none given up,
// and no run passes its budgets.
func TestFreePlanBudgetCrawlsInSmallTicks(t *testing.T) {
	ctx := context.Background()
	cfg := controller.DefaultConfig()
	if err := cfg.SetSubrequestBudget(controller.FreeSubrequests); err != nil {
		t.Fatal(err)
	}
	q := &queueDouble{}
	st := newStore(queuedApps(12)...)
	r := outboxRunner(t, st, q)
	state, now := "", time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	decide := func(op string, arg any) controller.Decision {
		b, _ := json.Marshal(arg)
		d := controller.Handle(cfg, op, state, b, now)
		if d.State != "" {
			state = d.State
		}
		return d
	}
	calls, queries := controller.RunBudget(controller.FreeSubrequests)
	runs := 0
	for range 200 {
		// The last apps wait in the outbox for a full message, at most
		// controller.AnnounceWithin of ticks.
		if s, _ := controller.LoadState(state, now); len(st.queue) == 0 && len(s.EventOutbox) == 0 {
			break
		}
		d := decide("tick", controller.TickRequest{})
		if d.Run == nil {
			now = now.Add(10 * time.Second)
			continue
		}
		if d.Run.BatchSize > controller.ItemsPerTick(controller.DefaultLookupBatch, controller.FreeSubrequests) || d.Run.Subrequests != calls || d.Run.D1Queries != queries {
			t.Fatalf("free plan: %+v", d.Run)
		}
		out := r.Run(ctx, *d.Run)
		runs++
		if out.Subrequests > calls || out.Error != "" {
			t.Fatalf("run used %d of %d calls: %+v", out.Subrequests, calls, out)
		}
		now = now.Add(time.Second)
		decide("tick_done", out)
		now = now.Add(10 * time.Second)
		var left []QueuedItem
		for _, it := range st.queue {
			if _, ok := st.saved[it.TrackID]; !ok {
				left = append(left, it)
			}
		}
		st.queue = left
	}
	if len(st.saved) != 12 || len(q.apps) != 12 || len(st.gaveUp)+len(st.requeued) != 0 || runs < 12/controller.ItemsPerTick(controller.DefaultLookupBatch, controller.FreeSubrequests) {
		t.Fatalf("free plan: saved %d, announced %d, given up %v, requeued %v in %d runs", len(st.saved), len(q.apps), st.gaveUp, st.requeued, runs)
	}
}

// Under HoldPartial a run sends full messages only; the last partial
// message's apps go back to the outbox (none is lost), and the
// controller sends them whole once its oldest is AnnounceWithin old.
func TestPartialMessageWaitsInTheOutbox(t *testing.T) {
	ctx := context.Background()
	pending := make([]int64, 40)
	for i := range pending {
		pending[i] = 5000 + int64(i)
	}
	for _, c := range []struct {
		hold       bool
		sent, kept int
	}{{true, 1, 40 + 20 - events.MaxTrackIDs}, {false, 2, 0}} {
		q := &queueDouble{}
		st := newStore(queuedApps(20)...)
		out := outboxRunner(t, st, q).Run(ctx, controller.RunPlan{BatchSize: 20, ChunkItems: 20, PendingEnriched: pending, HoldPartial: c.hold})
		if len(st.saved) != 20 || q.sent != c.sent || len(out.UnsentEnriched) != c.kept || len(q.apps)+len(out.UnsentEnriched) != 60 {
			t.Fatalf("hold %v: saved %d, %d messages of %d apps, %d back to the outbox; want %d messages, %d back",
				c.hold, len(st.saved), q.sent, len(q.apps), len(out.UnsentEnriched), c.sent, c.kept)
		}
		if c.hold && out.UnsentEnriched[0] != 1000+int64(events.MaxTrackIDs-40) {
			t.Fatalf("held: %v, want the newest apps (the outbox's first go first)", out.UnsentEnriched)
		}
	}
}
