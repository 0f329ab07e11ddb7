//go:build !js

package enrichment

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	neturl "net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"storecrawl/durable/controller"
	"storecrawl/durable/controller/virtual"
	"storecrawl/durable/pacing/sim"
	"storecrawl/worker/appstore"
	"storecrawl/worker/refresh"
	"storecrawl/worker/upstream"
)

// The refresh pace, natively: the real EnrichmentController plans each
// tick (durable/controller.Handle, as its Durable Object would) and the
// real Runner performs it against an in-memory catalogue (memCatalogue:
// the tier sweeps of worker/refresh over apps held in memory, and a queue
// of new apps that never runs dry) and an upstream that answers lookups
// of up to 100 ids and store pages at once, on a virtual clock.

// The catalogue at 1.1M apps (docs/scale.md, "Refreshes the policy
// schedules: 1141680 a day (38,035 hot apps every 6 h, 487,953 warm every
// 12 h, 409,012 cold monthly)", from go run ./cmd/bench -only-scale -json):
// 793 refreshes come due a minute.
const (
	scaleHot, scaleWarm, scaleCold = 38_035, 487_953, 409_012
	// scalePagesPerMin is the bench's store-host pace (its design pace,
	// 7,600 new apps an hour: "tuned to 126 pages/min").
	scalePagesPerMin = 126
	// scaleLookupsPerMin is the API host's pace here: Apple's documented
	// ~20 calls a minute of the Search API (the lookups' host).
	scaleLookupsPerMin = 20
	// changedEvery: one app in changedEvery shows a new rating count at
	// every look (its page is fetched); the rest are unchanged.
	changedEvery = 50
	// newAppBase: the queue's new apps have ids from here, apart from the
	// catalogue's 1..N.
	newAppBase = 10_000_000
)

// tinyPage is the smallest store page that parses (legacy markup, a
// header and its subtitle): the run's pages cost microseconds here.
var tinyPage = []byte(`<html><body><header class="product-header"><h2 class="product-header__subtitle">Fast</h2></header></body></html>`)

// memCatalogue is the catalogue's side of a run in memory: the enriched
// apps in their tiers' round order, the tiers' cursors and the retry list
// (RefreshStore, as D1Store serves them from app_registry), and an endless
// queue of new apps (Store).
type memCatalogue struct {
	mu      sync.Mutex
	tiers   map[string][]refresh.Pos // round order: (slot, track id)
	tierOf  map[int64]string
	page    map[int64]refresh.Fingerprint // what each app's page was fetched for
	cursors map[string]refresh.Cursor
	retry   map[int64]time.Time
	nextNew int64
	// Counters: refreshes saved unchanged, with a new page and with their
	// page deferred, new apps enriched, cursor advances and apps put on
	// the retry list.
	unchanged, changed, deferred, newApps, advances, retries int
}

func newMemCatalogue(counts map[string]int) *memCatalogue {
	c := &memCatalogue{tiers: map[string][]refresh.Pos{}, tierOf: map[int64]string{}, page: map[int64]refresh.Fingerprint{},
		cursors: map[string]refresh.Cursor{}, retry: map[int64]time.Time{}, nextNew: newAppBase}
	id := int64(0)
	for _, tier := range refresh.Tiers {
		apps := make([]refresh.Pos, counts[tier])
		for i := range apps {
			id++
			apps[i] = refresh.Pos{Slot: refresh.Slot(id), TrackID: id}
			c.tierOf[id] = tier
			c.page[id] = refresh.Fingerprint{Version: "1.0", RatingCount: 100}
		}
		slices.SortFunc(apps, func(a, b refresh.Pos) int {
			if a.Less(b) {
				return -1
			}
			if b.Less(a) {
				return 1
			}
			return 0
		})
		c.tiers[tier] = apps
	}
	return c
}

// lookedAt is what the upstream's lookup says of an app at t: every
// changedEvery-th app has a new rating count every minute, the rest are
// as their pages were fetched.
func lookedAt(id int64, t time.Time) refresh.Fingerprint {
	if id < newAppBase && id%changedEvery == 0 {
		return refresh.Fingerprint{Version: "1.0", RatingCount: 100 + t.Unix()/60}
	}
	return refresh.Fingerprint{Version: "1.0", RatingCount: 100}
}

// dueBetween is how many of tier's apps came due between a and b (the
// sweep's target passing their slots), the rounds between included.
func (c *memCatalogue) dueBetween(tier string, a, b time.Time) int {
	ra, ta := refresh.RoundAt(tier, a)
	rb, tb := refresh.RoundAt(tier, b)
	apps := c.tiers[tier]
	below := func(slot int64) int {
		n, _ := slices.BinarySearchFunc(apps, slot, func(p refresh.Pos, s int64) int {
			if p.Slot < s {
				return -1
			}
			return 1
		})
		return n
	}
	if ra == rb {
		return below(tb) - below(ta)
	}
	return len(apps) - below(ta) + int(rb-ra-1)*len(apps) + below(tb)
}

func (c *memCatalogue) PickQueued(_ context.Context, n int, _ bool, _ time.Time) ([]QueuedItem, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	items := make([]QueuedItem, n)
	for i := range items {
		items[i] = QueuedItem{TrackID: c.nextNew + int64(i)}
	}
	return items, nil
}

func (c *memCatalogue) SaveEnriched(_ context.Context, r Record) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r.Refresh {
		c.changed++
		c.page[r.App.TrackID] = refresh.Fingerprint{Version: r.App.Version, RatingCount: r.App.RatingCount}
		delete(c.retry, r.App.TrackID)
		return 0, nil
	}
	c.newApps++
	c.nextNew = max(c.nextNew, r.App.TrackID+1)
	return 0, nil
}

func (c *memCatalogue) SaveLookup(context.Context, appstore.App, string, string, time.Time) error {
	return errors.New("memCatalogue: every page parses")
}
func (c *memCatalogue) MarkMissing(context.Context, int64, time.Time) error {
	return errors.New("memCatalogue: every app is found")
}
func (c *memCatalogue) Requeue(context.Context, int64, int, controller.Class, string, string) error {
	return nil // a refused page: the app stays queued
}
func (c *memCatalogue) Defer(context.Context, int64, int, controller.Class, string, time.Time) error {
	return nil // a refused page: the app stays queued
}
func (c *memCatalogue) GiveUp(context.Context, int64, int, controller.Class, string, string, time.Time) error {
	return errors.New("memCatalogue: no item fails")
}

// DueRefreshes is D1Store.DueRefreshes over memory: each tier's window
// from its cursor (refresh.Due), up to n apps each, and the retry list's
// due apps; the retry list first, then the tiers most behind first.
func (c *memCatalogue) DueRefreshes(_ context.Context, n int, now time.Time) (RefreshPick, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	pick := RefreshPick{Windows: map[string]refresh.Window{}, Read: map[string]int{}, Limit: n, Started: map[string]bool{}}
	byTier := map[string][]DueRefresh{}
	inTier := map[int64]bool{}
	for _, tier := range refresh.Tiers {
		cur, ok := c.cursors[tier]
		if !ok {
			cur, pick.Started[tier] = refresh.StartCursor(tier, now), true
		}
		w := refresh.Due(tier, cur, now)
		pick.Windows[tier] = w
		apps := c.tiers[tier]
		i, _ := slices.BinarySearchFunc(apps, w.From, func(p, from refresh.Pos) int {
			if !from.Less(p) {
				return -1
			}
			return 1
		})
		for ; i < len(apps) && apps[i].Slot < w.UpTo && len(byTier[tier]) < n; i++ {
			id := apps[i].TrackID
			byTier[tier] = append(byTier[tier], DueRefresh{TrackID: id, Page: c.page[id], Tier: tier, Slot: apps[i].Slot})
			inTier[id] = true
		}
		pick.Read[tier] = len(byTier[tier])
	}
	var retry []int64
	for id, at := range c.retry {
		if !at.After(now) && !inTier[id] {
			retry = append(retry, id)
		}
	}
	slices.SortFunc(retry, func(a, b int64) int { return c.retry[a].Compare(c.retry[b]) })
	for _, id := range retry[:min(n, len(retry))] {
		pick.Items = append(pick.Items, DueRefresh{TrackID: id, Page: c.page[id], Slot: refresh.Slot(id)})
	}
	for _, tier := range pick.TiersBehindFirst() {
		pick.Items = append(pick.Items, byTier[tier]...)
	}
	return pick, nil
}

func (c *memCatalogue) SaveUnchangedRefresh(_ context.Context, app appstore.App, _ time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.unchanged++
	delete(c.retry, app.TrackID)
	return nil
}

func (c *memCatalogue) SaveDeferredRefresh(_ context.Context, app appstore.App, _, until time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.deferred++
	if at, ok := c.retry[app.TrackID]; !ok || !at.After(until) {
		c.retry[app.TrackID] = until
	}
	return nil
}

func (c *memCatalogue) PostponeRefresh(_ context.Context, id int64, until time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.retry[id] = until
	c.retries++
	return nil
}

func (c *memCatalogue) AdvanceRefreshes(_ context.Context, cursors map[string]refresh.Cursor, retries []RefreshRetry, _ time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for tier, cur := range cursors {
		c.cursors[tier] = cur
	}
	for _, r := range retries {
		at, err := time.Parse(time.RFC3339Nano, r.At)
		if err != nil {
			return err
		}
		c.retry[r.TrackID] = at
	}
	c.advances++
	c.retries += len(retries)
	return nil
}

// behind is how far tier's sweep is behind its clock at now, in apps'
// slots of its round (0 when on time).
func (c *memCatalogue) behind(tier string, now time.Time) float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return refresh.Due(tier, c.cursors[tier], now).Behind()
}

// instantUpstream answers at once (latency later on the virtual clock):
// a lookup of many ids with a small result for each (lookedAt), a store
// page with tinyPage.
type instantUpstream struct {
	*virtual.Clock
	// t0 starts the hosts' models: api (lookups) and store (pages), each
	// the simulator's token bucket (nil: unlimited).
	t0      time.Time
	api     *sim.Host
	store   *sim.Host
	refused int
	apiBase string
	lookups int
	pages   int
	maxIDs  int
}

// upstreamLatency is each answer's latency on the virtual clock.
const upstreamLatency = 50 * time.Millisecond

func (u *instantUpstream) Get(ctx context.Context, url string) upstream.Response {
	isLookup := strings.HasPrefix(url, u.apiBase)
	model := u.store
	if isLookup {
		model = u.api
	}
	var sent, done time.Time
	a := sim.Answer{Status: http.StatusOK, Latency: upstreamLatency}
	body := tinyPage
	// The clock's lock guards the counts too.
	u.Send(func(now time.Time) (time.Time, bool) {
		sent = now
		if model != nil {
			a = model.Serve(sent.Sub(u.t0), 0)
		}
		done = sent.Add(a.Latency)
		switch {
		case a.Status != http.StatusOK:
			u.refused++
		case isLookup:
			u.lookups++
		default:
			u.pages++
		}
		return done, isLookup // its items wait for a lookup
	})
	if a.Status != http.StatusOK {
		client := &upstream.Client{HTTP: doerFunc(func(req *http.Request) (*http.Response, error) {
			h := http.Header{}
			if a.RetryAfter > 0 {
				h.Set("Retry-After", strconv.Itoa(int(a.RetryAfter/time.Second)))
			}
			return &http.Response{StatusCode: a.Status, Header: h, Body: io.NopCloser(strings.NewReader(http.StatusText(a.Status))), Request: req}, nil
		})}
		r := client.Get(ctx, url)
		r.SentAt, r.DoneAt = sent, done
		return r
	}
	if isLookup {
		q, err := neturl.Parse(url)
		if err != nil {
			panic(err)
		}
		ids := strings.Split(q.Query().Get("id"), ",")
		u.Send(func(now time.Time) (time.Time, bool) {
			u.maxIDs = max(u.maxIDs, len(ids))
			return done, false
		})
		var b bytes.Buffer
		fmt.Fprintf(&b, `{"resultCount":%d,"results":[`, len(ids))
		for i, s := range ids {
			id, _ := strconv.ParseInt(s, 10, 64)
			fp := lookedAt(id, sent)
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"wrapperType":"software","kind":"software","trackId":%d,"trackName":"app %d","version":%q,"userRatingCount":%d,"averageUserRating":4.5,"price":0,"currency":"USD"}`,
				id, id, fp.Version, fp.RatingCount)
		}
		b.WriteString("]}")
		body = b.Bytes()
	}
	client := &upstream.Client{HTTP: doerFunc(func(req *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 200, Header: http.Header{}, Body: io.NopCloser(bytes.NewReader(body)), Request: req}, nil
	})}
	r := client.Get(ctx, url)
	r.SentAt, r.DoneAt = sent, done
	return r
}

// paceRig is the controller, the run and the catalogue together.
type paceRig struct {
	t   *testing.T
	obj *virtual.Object
	up  *instantUpstream
	cat *memCatalogue
	r   *Runner
}

func newPaceRig(t *testing.T, t0 time.Time, counts map[string]int) *paceRig {
	cat := newMemCatalogue(counts)
	up := &instantUpstream{Clock: virtual.NewClock(t0), apiBase: "https://itunes.apple.com"}
	r := &Runner{Store: cat, Refreshes: cat, RefreshShare: refresh.DefaultRefreshShare, HTML: nopPages{}, Upstream: up,
		APIBase: up.apiBase, StoreBase: "https://apps.apple.com", Country: "us", Now: up.Now, Sleep: up.Sleep}
	obj := &virtual.Object{Config: controller.DefaultConfig()}
	if _, err := obj.Decide("load", struct{}{}, t0); err != nil {
		t.Fatal(err)
	}
	for _, tune := range []string{fmt.Sprintf(`{"rate_per_min": %d}`, scalePagesPerMin), fmt.Sprintf(`{"host": "api", "rate_per_min": %d}`, scaleLookupsPerMin)} {
		if d, err := obj.Decide("http", controller.Request{Method: "POST", Path: "/tune", Body: tune}, t0); err != nil || d.Response.Status != 200 {
			t.Fatalf("tune %s: %+v", tune, d.Response)
		}
	}
	return &paceRig{t: t, obj: obj, up: up, cat: cat, r: r}
}

// tick runs the alarm loop's next tick; it returns the tick's run (nil:
// the controller held).
func (g *paceRig) tick() (*controller.RunPlan, controller.RunOutcome) {
	at, ok := g.obj.NextAlarm()
	if !ok {
		g.t.Fatal("the loop stopped: no work alarm")
	}
	plan, out, err := g.obj.Fire(context.Background(), g.up.Wake(at), g.r.Run, g.up.Clock)
	if err != nil {
		g.t.Fatal(err)
	}
	return plan, out
}

type nopPages struct{}

func (nopPages) PutPages(context.Context, string, []byte, int) error { return nil }

// tickCounts is what one run did: refreshes and new apps taken, pages
// fetched.
func tickCounts(out controller.RunOutcome) (refreshes, newApps, pages int) {
	for _, res := range out.Results {
		if res.Refresh {
			refreshes++
		} else {
			newApps++
		}
	}
	for _, rq := range out.Requests {
		if rq.Kind == controller.RequestPage {
			pages++
		}
	}
	return refreshes, newApps, pages
}

// A tick's refreshes follow the lookups, not the page pace: at the
// bench's paces (126 pages/min, 20 lookups/min, 10 s ticks), with new apps
// waiting and a day's refreshes due, one tick takes 21 items by its page
// pace (BatchSize), of which the new apps keep theirs (21 in the first
// tick: the changed refreshes' share, RefreshPageShareWhileBacklog of 21,
// 0.63 pages a tick, rounds to none in it; refresh.ShareSlots), and the
// refreshes as many as its lookups carry: 4 lookups of 100 ids, 400 items,
// within ItemsPerTick (490 at the default subrequest budget: 980 D1
// queries, 2 an item). A changed refresh past its page slot has its page
// deferred: its lookup recorded, the app on the retry list, and the
// round goes on past it.
// go test ./worker/enrichment -run TestATickTakesRefreshesAtTheLookupPace -v
func TestATickTakesRefreshesAtTheLookupPace(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	g := newPaceRig(t, t0, map[string]int{refresh.TierCold: 20_000})
	// A cold round's half behind: ~10,000 due, far more than a tick takes.
	r0, _ := refresh.RoundAt(refresh.TierCold, t0)
	g.cat.cursors[refresh.TierCold] = refresh.Cursor{Round: r0 - 1, Pos: refresh.Pos{Slot: refresh.Slots / 2}}
	plan, out := g.tick()
	if plan == nil {
		t.Fatal("the first tick held")
	}
	refreshes, newApps, pages := tickCounts(out)
	t.Logf("plan: batch_size %d (pages), lookup_requests %d, tick_items %d; the tick took %d refreshes and %d new apps, fetched %d pages in %d lookups",
		plan.BatchSize, plan.LookupRequests, plan.TickItems, refreshes, newApps, pages, g.up.lookups)
	const pagesPerTick = 21  // 126 a minute in 10 s ticks
	const lookupsPerTick = 4 // 20 a minute in 10 s ticks, rounded up
	if plan.BatchSize != pagesPerTick || plan.LookupRequests != lookupsPerTick {
		t.Fatalf("plan %+v: want %d pages and %d lookups a tick", plan, pagesPerTick, lookupsPerTick)
	}
	wantItems := min(lookupsPerTick*controller.DefaultLookupBatch, controller.ItemsPerTick(controller.DefaultLookupBatch, controller.DefaultSubrequests))
	if plan.TickItems != wantItems {
		t.Fatalf("tick_items %d, want %d", plan.TickItems, wantItems)
	}
	_, discovery := SplitTick(pagesPerTick, pagesPerTick, 10_000, refresh.DefaultRefreshShare, plan.TickSeq)
	if newApps != discovery || refreshes != wantItems-discovery || out.Skipped != 0 {
		t.Fatalf("the tick took %d new apps and %d refreshes (%d skipped), want %d and %d", newApps, refreshes, out.Skipped, discovery, wantItems-discovery)
	}
	// Pages: the new apps' and the changed refreshes', the page pace's 21:
	// the refreshes got what the new apps left (none in this tick). Every
	// other changed refresh (one in changedEvery) had its page deferred:
	// recorded, on the retry list for refresh.PageDeferral, none left; the
	// cold cursor went past every refresh the tick took.
	if pages != plan.BatchSize || newApps != discovery {
		t.Fatalf("%d pages for %d new apps, page pace %d", pages, newApps, plan.BatchSize)
	}
	wantChanged := refreshes / changedEvery
	if g.cat.changed != pages-discovery || g.cat.deferred < wantChanged-2 || g.cat.changed+g.cat.deferred+g.cat.unchanged != refreshes || g.cat.retries != 0 {
		t.Fatalf("%d refreshes with a page, %d deferred, %d unchanged of %d, %d put on the retry list by a failure",
			g.cat.changed, g.cat.deferred, g.cat.unchanged, refreshes, g.cat.retries)
	}
	deferredOut := 0
	for _, res := range out.Results {
		if res.PageDeferred {
			deferredOut++
			if at, ok := g.cat.retry[res.TrackID]; !ok || at.Before(t0.Add(refresh.PageDeferral)) || at.After(g.up.Now().Add(refresh.PageDeferral)) {
				t.Fatalf("deferred %d: retry at %v (ok %v)", res.TrackID, at, ok)
			}
		}
	}
	if deferredOut != g.cat.deferred {
		t.Fatalf("%d results deferred, %d saved deferred", deferredOut, g.cat.deferred)
	}
	cold := g.cat.cursors[refresh.TierCold]
	for _, res := range out.Results {
		p := refresh.Pos{Slot: refresh.Slot(res.TrackID), TrackID: res.TrackID}
		if res.Refresh && cold.Pos.Less(p) {
			t.Fatalf("cold cursor %+v before refresh %+v: a refresh left in the window", cold, res)
		}
	}
	t.Logf("done: %d unchanged, %d with a page, %d deferred; the cold cursor past them all", g.cat.unchanged, g.cat.changed, g.cat.deferred)
	if g.up.lookups > plan.LookupRequests || g.up.maxIDs > controller.DefaultLookupBatch {
		t.Fatalf("%d lookups (plan %d), up to %d ids", g.up.lookups, plan.LookupRequests, g.up.maxIDs)
	}
}

// A deferred page deferred again waits longer: the apps a tick deferred
// (on the retry list for refresh.PageDeferral) come back from the retry
// list while new apps still wait, and each one deferred again goes back
// on it for refresh.RepeatPageDeferral, so a backlog of days writes each
// owed app about once a day, not four times.
// go test ./worker/enrichment -run TestARepeatDeferralWaitsADay -v
func TestARepeatDeferralWaitsADay(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	g := newPaceRig(t, t0, map[string]int{refresh.TierCold: 20_000})
	r0, _ := refresh.RoundAt(refresh.TierCold, t0)
	g.cat.cursors[refresh.TierCold] = refresh.Cursor{Round: r0 - 1, Pos: refresh.Pos{Slot: refresh.Slots / 2}}
	if plan, _ := g.tick(); plan == nil {
		t.Fatal("the first tick held")
	}
	first := g.cat.deferred
	if first == 0 {
		t.Fatal("the first tick deferred no page")
	}
	// Their wait is over: each is due on the retry list now.
	g.cat.mu.Lock()
	for id, at := range g.cat.retry {
		if !at.Before(t0.Add(refresh.PageDeferral)) {
			g.cat.retry[id] = t0
		}
	}
	g.cat.mu.Unlock()
	plan, out := g.tick()
	if plan == nil {
		t.Fatal("the second tick held")
	}
	tickAt := g.up.Now()
	again := 0
	for _, res := range out.Results {
		if !res.PageDeferred {
			continue
		}
		at := g.cat.retry[res.TrackID]
		if at.Before(t0.Add(refresh.PageDeferral)) {
			t.Fatalf("deferred %d: retry at %v", res.TrackID, at)
		}
		if at.After(tickAt.Add(refresh.PageDeferral)) {
			again++
			if at.Before(t0.Add(refresh.RepeatPageDeferral)) || at.After(tickAt.Add(refresh.RepeatPageDeferral)) {
				t.Fatalf("deferred again %d: retry at %v, want %v after the tick", res.TrackID, at, refresh.RepeatPageDeferral)
			}
		}
	}
	// The retry list's apps come first in the pick; at most the tick's
	// refresh share of a page (refresh.ShareSlots: 0 or 1) takes one.
	if again < first-1 {
		t.Fatalf("%d of the %d deferred apps deferred again for a day", again, first)
	}
	t.Logf("%d deferred in the first tick, %d of them deferred again for %v", first, again, refresh.RepeatPageDeferral)
}

// A day at 1.1M apps: the controller keeps up with the 793 refreshes a
// minute the policy brings due, beside new apps that keep all but
// RefreshPageShareWhileBacklog of the page pace. The real controller and
// run, 24 virtual hours of ticks, the catalogue's 935,000 enriched apps in
// their tiers, new apps always waiting, the hosts limited to the bench's
// paces (pages 126 a minute, lookups of up to 100 ids 20 a minute; the
// pacing learns them), one app in 50 changed at every look (its page
// fetched within the share, else deferred: its lookup recorded, the app
// on the retry list). Every refresh due is looked at (unchanged, with a
// page or deferred) but the last minute's, and the changed refreshes'
// pages stay within their share. Printed by
//
//	go test ./worker/enrichment -run TestADayOfRefreshesKeepsUpAtScale -v
func TestADayOfRefreshesKeepsUpAtScale(t *testing.T) {
	if testing.Short() {
		t.Skip("a virtual day at 1.1M apps: ~30 s")
	}
	t0 := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	g := newPaceRig(t, t0, map[string]int{refresh.TierHot: scaleHot, refresh.TierWarm: scaleWarm, refresh.TierCold: scaleCold})
	end := t0.Add(24 * time.Hour)
	// Each host refuses beyond its pace (the probe would find more).
	g.up.t0 = t0
	g.up.store, g.up.api = limitedHost(t, scalePagesPerMin, 10), limitedHost(t, scaleLookupsPerMin, 5)
	runs := 0
	for g.up.Wake(time.UnixMilli(g.obj.Alarm)).Before(end) {
		_, out := g.tick()
		if out.Picked > 0 {
			runs++
		}
	}
	minutes := end.Sub(t0).Minutes()
	due, lastMinute := 0, 0
	for _, tier := range refresh.Tiers {
		due += g.cat.dueBetween(tier, t0, end)
		lastMinute += g.cat.dueBetween(tier, end.Add(-time.Minute), end)
	}
	done := g.cat.unchanged + g.cat.changed + g.cat.deferred
	st := status(g.t, g.obj, end)
	t.Logf("paces: api %.1f/min (sent %d, refused %d), store %.1f/min (sent %d, refused %d); lookups %d",
		st.Paces[controller.HostAPI].RatePerMin, st.Paces[controller.HostAPI].Sent, st.Paces[controller.HostAPI].Refused,
		st.Paces[controller.HostStore].RatePerMin, st.Paces[controller.HostStore].Sent, st.Paces[controller.HostStore].Refused, g.up.lookups)
	t.Logf("%d due, %d done (%.1f done a minute ≥ %.1f due), %d with a page, %d deferred, %d on the retry list by a failure; %d new apps (%.1f a minute) in %d runs",
		due, done, float64(done)/minutes, float64(due)/minutes, g.cat.changed, g.cat.deferred, g.cat.retries, g.cat.newApps, float64(g.cat.newApps)/minutes, runs)
	// Kept up: every refresh due was done but at most the last minute's.
	if done < due-lastMinute || float64(done)/minutes < float64(due-lastMinute)/minutes {
		t.Fatalf("%d refreshes done of %d due (%d in the last minute)", done, due, lastMinute)
	}
	for _, tier := range refresh.Tiers {
		if b := g.cat.behind(tier, end); b*refresh.Interval(tier).Minutes() > 1 {
			t.Fatalf("%s tier %.5f rounds behind at the day's end", tier, b)
		}
	}
	// The new apps kept their share of the pages: at least the share
	// SplitTick leaves them (1 − RefreshShare) of the pages served (the
	// refused ones served nobody).
	pagesSent := st.Paces[controller.HostStore].Sent
	served := pagesSent - st.Paces[controller.HostStore].Refused
	if float64(g.cat.newApps) < (1-refresh.DefaultRefreshShare)*float64(served) {
		t.Fatalf("new apps: %d of %d pages served", g.cat.newApps, served)
	}
	// While new apps wait the changed refreshes' pages stay within their
	// share; the rest were deferred, none lost.
	if float64(g.cat.changed) > refresh.RefreshPageShareWhileBacklog*float64(pagesSent) || g.cat.deferred == 0 {
		t.Fatalf("refreshes with a page: %d of %d pages sent (%d deferred)", g.cat.changed, pagesSent, g.cat.deferred)
	}
}

// limitedHost is a host that serves perMin requests a minute (burst),
// refusing the rest (429), cmd/upstream-sim's latency.
func limitedHost(t *testing.T, perMin, burst int) *sim.Host {
	h, err := sim.NewHost(sim.Scenario{Name: "day", DurationS: 2 * 86400, Items: 1, SubrequestsPerItem: 1, Seed: 1,
		Phases: []sim.Phase{{CapacityPerMin: float64(perMin), Burst: burst, LatencyMS: convLatencyMS, LatencyJitterMS: convJitterMS}}})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// ShareTick: new apps keep their share of the pages, refreshes take the
// rest of the items; TickItems: the lookups' items within ItemsPerTick.
func TestShareTickAndTickItems(t *testing.T) {
	for _, c := range []struct {
		pages, items, pending, due int
		seq                        int64
		refreshes, discovery       int
	}{
		{21, 400, 1000, 10_000, 0, 379, 21}, // both wait: the refreshes' 0.63 pages round to none in the first tick
		{21, 400, 1000, 10_000, 1, 380, 20}, // the second tick: one page of theirs, the rest of the items refreshes
		{21, 400, 0, 10_000, 0, 400, 0},     // no new apps: the items are the refreshes'
		{21, 400, 1000, 10, 1, 10, 20},      // few due: the new apps still only their share
		{21, 400, 1000, 0, 1, 0, 21},        // nothing due: the page pace is the new apps'
		{21, 0, 1000, 10_000, 1, 1, 20},     // no items beyond the pages (an old plan): the page share
		{21, 400, 5, 10_000, 0, 395, 5},     // few new apps: the pages they leave are the refreshes' too
	} {
		r, d := ShareTick(c.pages, c.items, c.pending, c.due, refresh.DefaultRefreshShare, c.seq)
		if r != c.refreshes || d != c.discovery {
			t.Errorf("ShareTick%v = %d, %d", c, r, d)
		}
	}
	batch, budget := controller.DefaultLookupBatch, controller.DefaultSubrequests
	if n := controller.TickItems(4, batch, budget); n != 400 {
		t.Errorf("4 lookups: %d items", n)
	}
	if n, most := controller.TickItems(10, batch, budget), controller.ItemsPerTick(batch, budget); n != most || most != 490 {
		t.Errorf("10 lookups: %d items, ItemsPerTick %d (980 D1 queries, 2 an item)", n, most)
	}
	if n := controller.TickItems(4, batch, controller.FreeSubrequests); n != controller.ItemsPerTick(batch, controller.FreeSubrequests) {
		t.Errorf("Workers Free: %d items", n)
	}
}

// While new apps wait, the changed refreshes' pages stop at the slots the
// share left them (RefreshPageCap), even when a new app's lookup leaves
// its slot unused: that slot starts the next tick sooner, for a new app.
// The refreshes past the cap have their pages deferred, none left in its
// tier's window. With no new app waiting, a refresh takes any slot left.
// Before, a refresh took every slot the new apps left in the tick.
func TestRefreshPagesStopAtTheirCapWhileNewAppsWait(t *testing.T) {
	const pages = 22
	_, discovery := SplitTick(pages, 1000, 1000, 0.05, 0)
	if discovery != 21 {
		t.Fatalf("discovery %d of %d pages", discovery, pages)
	}
	changed := appstore.App{Version: "2.0", RatingCount: 120}
	var items []QueuedItem
	var lookups []lookupOutcome
	for i := range discovery {
		items = append(items, QueuedItem{TrackID: newAppBase + int64(i)})
		o := lookupOutcome{class: controller.ClassOK, app: appstore.App{TrackID: newAppBase + int64(i)}}
		if i < 3 {
			o = lookupOutcome{class: controller.ClassNotFound} // no page: its slot is left
		}
		lookups = append(lookups, o)
	}
	for i := range 5 {
		items = append(items, QueuedItem{TrackID: int64(i + 1), Refresh: &DueRefresh{TrackID: int64(i + 1), Tier: refresh.TierHot,
			Page: refresh.Fingerprint{Version: "1.0", RatingCount: 100}}})
		lookups = append(lookups, lookupOutcome{class: controller.ClassOK, app: changed})
	}
	count := func(s *pageSlots) (paged, deferred, left int) {
		for j := discovery; j < len(items); j++ {
			switch {
			case s.left[j]:
				left++
			case s.deferred[j]:
				deferred++
			case !s.denied[j]:
				paged++
			}
		}
		return
	}
	backlog := newPageSlots(pages, len(items), RefreshPageCap(pages, discovery, true))
	backlog.allot(items, lookups, 0)
	if paged, deferred, left := count(backlog); paged != 1 || deferred != 4 || left != 0 {
		t.Fatalf("new apps waiting: %d refreshes with a page, %d deferred, %d left; want 1, 4, 0", paged, deferred, left)
	}
	// No new app waits: any slot left is a refresh's, past them the rest
	// are left in their tier's window (the first denied halts its tier).
	idle := newPageSlots(pages, len(items), RefreshPageCap(pages, discovery, false))
	idle.allot(items, lookups, 0)
	if paged, deferred, left := count(idle); paged != 4 || deferred != 0 || left != 0 || !idle.denied[len(items)-1] {
		t.Fatalf("no backlog: %d refreshes with a page, %d deferred, %d left; want 4, 0, 0 and the last denied", paged, deferred, left)
	}
}
