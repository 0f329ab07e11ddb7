//go:build !js

package enrichment

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"storecrawl/durable/controller"
	"storecrawl/worker/appstore"
	"storecrawl/worker/catalogue"
	"storecrawl/worker/d1"
	"storecrawl/worker/d1/d1test"
	"storecrawl/worker/events"
	"storecrawl/worker/ratelimit"
	"storecrawl/worker/upstream"
)

type sentQueue struct{ bodies []string }

func (q *sentQueue) Send(_ context.Context, body string) error {
	q.bodies = append(q.bodies, body)
	return nil
}

// TestRunAgainstD1 runs a whole tick against the real schema: the pick
// (priority order), the enriched app's upsert with its similar apps and
// developer, a not-found app dequeued, throttled and failing apps left
// queued with their attempts, a last attempt given up, and the enriched
// app announced on the queue.
func TestRunAgainstD1(t *testing.T) {
	var inflight, peak int
	srv := fixtureUpstream(t, &inflight, &peak)
	defer srv.Close()
	db, drv := d1test.New(t)
	for _, r := range []struct {
		id        int64
		priority  int
		attempts  int
		available bool
	}{{fixtureID, 9, 0, true}, {2, 8, 0, true}, {3, 7, 1, true}, {5, 6, controller.MaxItemAttempts - 1, true}, {6, 0, 0, true}} {
		drv.Exec(t, `INSERT INTO app_registry (track_id, enrich_priority, enrich_attempts) VALUES (?,?,?)`, r.id, r.priority, r.attempts)
	}
	q := &sentQueue{}
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	r, _, _, _ := newRunner(t, srv, nil)
	r.Store, r.Events, r.Now = D1Store{DB: db}, QueueEvents{Queue: q, Now: func() time.Time { return now }}, func() time.Time { return now }
	r.HTML = R2HTML{Bucket: bucketFunc(func(string, []byte, string, map[string]string) error { return nil })}

	out := r.Run(context.Background(), controller.RunPlan{BatchSize: 4, ChunkItems: 2})
	if out.Error != "" || out.Picked != 4 {
		t.Fatalf("run: %+v", out)
	}
	// Every platform call is counted: the pick; the one lookup of the four
	// apps; the enriched app's page and record; app 2's dequeue (not
	// found: no page); app 3's refused page and its lookup kept; app 5's
	// 503, its lookup kept and its deferral; the tick's one put of its
	// pages; the events send.
	if want := 1 + 1 + 2 + 1 + 2 + 3 + 1 + 1; out.Subrequests != want {
		t.Fatalf("subrequests %d, want %d", out.Subrequests, want)
	}
	// Every request says what it asked: one lookup batch for the four apps,
	// then the pages.
	kinds := map[string]int{}
	for _, rq := range out.Requests {
		kinds[rq.Kind]++
	}
	if kinds[controller.RequestLookup] != 1 || kinds[controller.RequestPage] < 1 || kinds[""] != 0 {
		t.Fatalf("request kinds %v", kinds)
	}
	classes := map[int64]controller.Class{}
	for _, res := range out.Results {
		classes[res.TrackID] = res.Class
	}
	// Priority order: app 6 (priority 0) was not picked.
	if _, ok := classes[6]; ok || classes[fixtureID] != controller.ClassOK || classes[2] != controller.ClassNotFound {
		t.Fatalf("classes: %v", classes)
	}
	app := drv.Rows(t, `SELECT enrichment_source, enriched_at, name, developer_id, similar_app_ids, html_r2_key FROM app_registry WHERE track_id = ?`, fixtureID)[0]
	if app["enrichment_source"] != SourceEnriched || app["enriched_at"] != "2026-11-23T12:00:00.000Z" || app["name"] == nil || app["html_r2_key"] == nil {
		t.Fatalf("enriched row: %v", app)
	}
	var similar []int64
	json.Unmarshal([]byte(app["similar_app_ids"].(string)), &similar)
	if len(similar) == 0 {
		t.Fatalf("similar apps: %v", similar)
	}
	if n := drv.Int(t, `SELECT COUNT(*) FROM developers WHERE developer_id = ?`, app["developer_id"]); n != 1 {
		t.Fatalf("developer rows: %d", n)
	}
	if src := drv.Rows(t, `SELECT enrichment_source FROM app_registry WHERE track_id = 2`)[0]["enrichment_source"]; src != SourceNotFound {
		t.Fatalf("not found: %v", src)
	}
	// Throttled (3): still queued, never lost.
	if row := drv.Rows(t, `SELECT enriched_at FROM app_registry WHERE track_id = 3`)[0]; row["enriched_at"] != nil {
		t.Fatalf("a throttled app must stay queued: %v", row)
	}
	// A 5xx at the last attempt (5): the upstream's state, not the item's.
	// Still queued, attempts untouched, deferred by the first backoff; its
	// lookup, which came back, is kept.
	row := drv.Rows(t, `SELECT enrichment_source, enriched_at, enrich_attempts, enrich_defers, enrich_retry_at, enrich_error_class FROM app_registry WHERE track_id = 5`)[0]
	if row["enrichment_source"] != SourceLookupOnly || row["enriched_at"] != nil || row["enrich_attempts"] != float64(controller.MaxItemAttempts-1) || row["enrich_defers"] != float64(1) ||
		row["enrich_retry_at"] != d1.Time(now.Add(controller.DeferBase)) || row["enrich_error_class"] != string(controller.ClassServerError) {
		t.Fatalf("a 5xx must defer the item: %v", row)
	}
	if len(q.bodies) != 1 {
		t.Fatalf("events: %v", q.bodies)
	}
	var ev events.Event
	json.Unmarshal([]byte(q.bodies[0]), &ev)
	if ev.Type != events.AppEnriched || len(ev.TrackIDs) != 1 || ev.TrackIDs[0] != fixtureID {
		t.Fatalf("event: %+v", ev)
	}
	// A re-enrichment replaces the similar apps, it does not add to them.
	if _, err := db.Exec(context.Background(), SaveStatements(Record{App: mustLookup(t), FetchedAt: now})...); err != nil {
		t.Fatal(err)
	}
	if got := drv.Rows(t, `SELECT similar_app_ids FROM app_registry WHERE track_id = ?`, fixtureID)[0]["similar_app_ids"]; got != "[]" {
		t.Fatalf("a record without similar apps must clear them: %v", got)
	}
}

// TestOutageDefersThenRecovers: during an outage every item that was tried
// is deferred, the next pick takes other rows, and once the backoff is over
// and the upstream is back each is enriched; none is ever given up.
func TestOutageDefersThenRecovers(t *testing.T) {
	var inflight, peak int
	srv := fixtureUpstream(t, &inflight, &peak)
	db, drv := d1test.New(t)
	drv.Exec(t, `INSERT INTO app_registry (track_id, enrich_priority, enrich_attempts) VALUES (?, 9, ?)`, fixtureID, controller.MaxItemAttempts-1)
	drv.Exec(t, `INSERT INTO app_registry (track_id, enrich_priority) VALUES (2, 1)`)
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	r, _, _, _ := newRunner(t, srv, nil)
	r.Store, r.Now = D1Store{DB: db}, func() time.Time { return now }
	r.HTML = R2HTML{Bucket: bucketFunc(func(string, []byte, string, map[string]string) error { return nil })}
	down := r.APIBase
	r.APIBase, r.StoreBase = "http://127.0.0.1:1", "http://127.0.0.1:1" // nothing listens: connection refused
	for tick := 1; tick <= 5; tick++ {
		out := r.Run(context.Background(), controller.RunPlan{BatchSize: 1, ChunkItems: 1})
		if tick == 2 {
			// The deferred item is not first any more: the pick takes app 2.
			if len(out.Results) != 1 || out.Results[0].TrackID != 2 {
				t.Fatalf("tick 2 picked %+v, want app 2", out.Results)
			}
		}
		if tick == 1 {
			now = now.Add(controller.DeferBase / 3) // within the first backoff
		} else {
			now = now.Add(controller.DeferMax)
		}
	}
	row := drv.Rows(t, `SELECT enrichment_source, enrich_attempts, enrich_defers FROM app_registry WHERE track_id = ?`, fixtureID)[0]
	if row["enrichment_source"] != nil || row["enrich_attempts"] != float64(controller.MaxItemAttempts-1) || row["enrich_defers"].(float64) < 2 {
		t.Fatalf("an outage must never use up an item: %v", row)
	}
	r.APIBase, r.StoreBase = down, down
	r.Run(context.Background(), controller.RunPlan{BatchSize: 2, ChunkItems: 2})
	row = drv.Rows(t, `SELECT enrichment_source, enrich_defers, enrich_retry_at FROM app_registry WHERE track_id = ?`, fixtureID)[0]
	if row["enrichment_source"] != SourceEnriched || row["enrich_defers"] != float64(0) || row["enrich_retry_at"] != nil {
		t.Fatalf("after the outage the item is enriched and its backoff cleared: %v", row)
	}
	srv.Close()
}

// TestRunStartsOnlyWhatItsSubrequestsCover: a run whose budget covers two
// items' worst case starts two; the rest stay queued, untouched.
func TestRunStartsOnlyWhatItsSubrequestsCover(t *testing.T) {
	var inflight, peak int
	srv := fixtureUpstream(t, &inflight, &peak)
	defer srv.Close()
	db, drv := d1test.New(t)
	for id := int64(1); id <= 5; id++ {
		drv.Exec(t, `INSERT INTO app_registry (track_id) VALUES (?)`, fixtureID+id)
	}
	r, _, _, _ := newRunner(t, srv, nil)
	r.Store = D1Store{DB: db}
	// pick, events, the tick's put of its pages, a lookup, two items
	budget := 1 + 1 + PagePutAttempts + controller.MaxCallsPerLookup + 2*controller.MaxCallsPerItem
	out := r.Run(context.Background(), controller.RunPlan{BatchSize: 5, ChunkItems: 3, Subrequests: budget})
	if out.Picked != 2 || out.Skipped != 3 || out.Subrequests > budget {
		t.Fatalf("picked %d skipped %d, %d calls of %d", out.Picked, out.Skipped, out.Subrequests, budget)
	}
	if n := drv.Int(t, `SELECT COUNT(*) FROM app_registry WHERE enrich_defers = 0 AND enrich_attempts = 0 AND enriched_at IS NULL`); n < 3 {
		t.Fatalf("the items not started must stay queued untouched: %d", n)
	}
}

func TestRetryFailedRequeuesByClassAndAge(t *testing.T) {
	db, drv := d1test.New(t)
	s := D1Store{DB: db}
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	ctx := context.Background()
	give := func(id int64, c controller.Class, at time.Time) {
		drv.Exec(t, `INSERT INTO app_registry (track_id) VALUES (?)`, id)
		if err := s.GiveUp(ctx, id, controller.MaxItemAttempts, c, "boom", "", at); err != nil {
			t.Fatal(err)
		}
	}
	give(1, controller.ClassParseError, t0)
	give(2, controller.ClassStoreError, t0)
	give(3, controller.ClassParseError, t0.Add(time.Hour))
	if items, _ := s.PickQueued(ctx, 10, false, t0.Add(time.Hour)); len(items) != 0 {
		t.Fatalf("given-up items are out of the queue: %v", items)
	}
	n, err := s.RetryFailed(ctx, string(controller.ClassParseError), t0, t0.Add(2*time.Hour))
	if err != nil || n != 1 {
		t.Fatalf("retry parse errors up to t0: %d %v", n, err)
	}
	items, _ := s.PickQueued(ctx, 10, false, t0.Add(2*time.Hour))
	if len(items) != 1 || items[0].TrackID != 1 || items[0].Attempts != 0 {
		t.Fatalf("app 1 is queued again with fresh attempts: %+v", items)
	}
	if n, _ = s.RetryFailed(ctx, "", t0.Add(time.Hour), t0.Add(2*time.Hour)); n != 2 {
		t.Fatalf("any class: %d, want 2", n)
	}
	if n := drv.Int(t, `SELECT COUNT(*) FROM app_registry WHERE enrichment_source = ?`, SourceFailed); n != 0 {
		t.Fatalf("%d still failed", n)
	}
}

// An app that gives up again waits longer each time
// (registry.GiveUpExtraWaitDays): the retry-failed task, at its day's
// age, requeues it 1, 2, 4, 8, 16 and then every 30 days after a give-up,
// so an app that fails for good costs a few requeues a month; every
// give-up writes the same rows; an operator's call requeues it whatever
// its wait.
// go test -run TestARepeatedGiveUpWaitsLonger -v ./worker/enrichment/
func TestARepeatedGiveUpWaitsLonger(t *testing.T) {
	db, drv := d1test.New(t)
	s := D1Store{DB: db}
	ctx := context.Background()
	const age = 24 * time.Hour // the task's default (config.DefaultRetryFailedAfter)
	drv.Exec(t, `INSERT INTO app_registry (track_id) VALUES (1)`)
	at := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	wantDays := []int{1, 2, 4, 8, 16, 30, 30}
	for i, days := range wantDays {
		stmt := GiveUpStmt(1, controller.MaxItemAttempts, controller.ClassParseError, "no parser read the page", "", at)
		// The app's row and the state counters it moves between
		// (apps_state_change), each give-up alike.
		const giveUpRows = 3
		if w := drv.Measure(t, stmt.SQL, stmt.Args...); w.Changes != giveUpRows {
			t.Fatalf("give-up %d wrote %d rows, want %d", i+1, w.Changes, giveUpRows)
		}
		due := at.Add(time.Duration(days) * 24 * time.Hour)
		if n, err := s.RetryFailed(ctx, "", due.Add(-age-time.Minute), due.Add(-time.Minute)); err != nil || n != 0 {
			t.Fatalf("give-up %d: requeued %d a minute before its %d days (%v)", i+1, n, days, err)
		}
		if n, err := s.RetryFailed(ctx, "", due.Add(-age), due); err != nil || n != 1 {
			t.Fatalf("give-up %d: requeued %d after %d days, want 1 (%v)", i+1, n, days, err)
		}
		at = due.Add(time.Hour) // its attempts fail again
	}
	stmt := GiveUpStmt(1, controller.MaxItemAttempts, controller.ClassParseError, "no parser read the page", "", at)
	drv.Exec(t, stmt.SQL, stmt.Args...)
	if n, err := s.RetryFailed(ctx, "", time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC), at.Add(time.Minute)); err != nil || n != 1 {
		t.Fatalf("an operator's call requeued %d (%v), want the app whatever its wait", n, err)
	}
	if n := drv.Int(t, `SELECT enrich_give_ups FROM app_registry WHERE track_id = 1`); n != int64(len(wantDays)+1) {
		t.Fatalf("%d give-ups counted, want %d", n, len(wantDays)+1)
	}
}

func TestD1FailureLeavesItemsQueued(t *testing.T) {
	var inflight, peak int
	srv := fixtureUpstream(t, &inflight, &peak)
	defer srv.Close()
	db, drv := d1test.New(t)
	drv.Exec(t, `INSERT INTO app_registry (track_id) VALUES (?)`, fixtureID)
	r, _, ev, _ := newRunner(t, srv, nil)
	r.Store = D1Store{DB: db}
	// The pick succeeds; the save and the requeue fail: the app stays queued as it was.
	pickThenFail := &failAfter{D1Store: D1Store{DB: db}, drv: drv}
	r.Store = pickThenFail
	out := r.Run(context.Background(), controller.RunPlan{BatchSize: 1, ChunkItems: 1})
	if len(out.Results) != 1 || out.Results[0].Class != controller.ClassStoreError {
		t.Fatalf("results: %+v", out.Results)
	}
	if row := drv.Rows(t, `SELECT enriched_at, enrich_attempts FROM app_registry WHERE track_id = ?`, fixtureID)[0]; row["enriched_at"] != nil {
		t.Fatalf("must stay queued: %v", row)
	}
	if len(ev.ids) != 0 {
		t.Fatalf("nothing was enriched: %v", ev.ids)
	}
}

type failAfter struct {
	D1Store
	drv *d1test.Driver
}

func (f *failAfter) PickQueued(ctx context.Context, n int, unlooked bool, now time.Time) ([]QueuedItem, error) {
	items, err := f.D1Store.PickQueued(ctx, n, unlooked, now)
	f.drv.FailNext.Store(10)
	return items, err
}

type bucketFunc func(key string, body []byte, contentType string, meta map[string]string) error

func (b bucketFunc) Put(_ context.Context, key string, body []byte, ct string, meta map[string]string) error {
	return b(key, body, ct, meta)
}

func (b bucketFunc) Get(context.Context, string) ([]byte, bool, error) { return nil, false, nil }

func (b bucketFunc) GetRange(context.Context, string, int64, int64) ([]byte, bool, error) {
	return nil, false, nil
}

func mustLookup(t *testing.T) appstore.App {
	a, err := appstore.ParseLookup(fixture(t, "lookup_us_uber_2017.json"))
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestLookupOnlyRecordsAgainstD1(t *testing.T) {
	db, drv := d1test.New(t)
	s := D1Store{DB: db}
	app := mustLookup(t)
	drv.Exec(t, `INSERT INTO app_registry (track_id) VALUES (?), (?)`, app.TrackID, 7)
	at := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	if err := s.SaveLookup(context.Background(), app, "", PagePending, at); err != nil {
		t.Fatal(err)
	}
	row := drv.Rows(t, `SELECT enrichment_source, page_status, enriched_at, name, rating_count, html_r2_key FROM app_registry WHERE track_id = ?`, app.TrackID)[0]
	if row["enrichment_source"] != SourceLookupOnly || row["page_status"] != PagePending || row["enriched_at"] != nil || row["name"] != "Uber" || row["html_r2_key"] != nil {
		t.Fatalf("lookup-only row %v", row)
	}
	// While pages are paused the pick skips it; otherwise it is still queued.
	items, _ := s.PickQueued(context.Background(), 10, true, time.Now())
	if len(items) != 1 || items[0].TrackID != 7 {
		t.Fatalf("unlooked pick %+v", items)
	}
	if items, _ = s.PickQueued(context.Background(), 10, false, time.Now()); len(items) != 2 {
		t.Fatalf("full pick %+v", items)
	}
	// The pick carries the stored lookup and when it was stored (a fresh
	// one needs no new lookup); an app never looked up has none.
	for _, it := range items {
		switch it.TrackID {
		case app.TrackID:
			if it.Lookup == nil || !it.LookupAt.Equal(at) || it.Lookup.Name != app.Name || it.Lookup.RatingCount != app.RatingCount ||
				it.Lookup.Version != app.Version || it.Lookup.DeveloperID != app.DeveloperID || fmt.Sprint(it.Lookup.Languages) != fmt.Sprint(app.Languages) ||
				it.Lookup.Description != app.Description || it.Lookup.FileSizeBytes != app.FileSizeBytes || it.Lookup.Price != app.Price {
				t.Fatalf("stored lookup %+v at %v, want %+v at %v", it.Lookup, it.LookupAt, app, at)
			}
		default:
			if it.Lookup != nil || !it.LookupAt.IsZero() {
				t.Fatalf("app %d was never looked up: %+v", it.TrackID, it)
			}
		}
	}
	// A later unparsed page records its key; a complete record is never downgraded.
	s.SaveLookup(context.Background(), app, HTMLKey("us", app.TrackID), PageUnparsedStatus, at)
	if row := drv.Rows(t, `SELECT page_status, html_r2_key FROM app_registry WHERE track_id = ?`, app.TrackID)[0]; row["page_status"] != PageUnparsedStatus || row["html_r2_key"] != HTMLKey("us", app.TrackID) {
		t.Fatalf("unparsed %v", row)
	}
	page, err := appstore.ParseStorePage(fixture(t, "legacy_netflix_us_2023.html"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.SaveEnriched(context.Background(), Record{App: app, Page: page, HTMLKey: HTMLKey("us", app.TrackID), FetchedAt: at}); err != nil {
		t.Fatal(err)
	}
	s.SaveLookup(context.Background(), app, "", PagePending, at)
	row = drv.Rows(t, `SELECT enrichment_source, page_status, page_format, page_missing, page_parser_version, rating_histogram, rating_share FROM app_registry WHERE track_id = ?`, app.TrackID)[0]
	if row["enrichment_source"] != SourceEnriched || row["page_status"] != PageParsedStatus || row["page_format"] != "legacy" ||
		row["page_missing"] != "[]" || fmt.Sprint(row["page_parser_version"]) != fmt.Sprint(appstore.ParserVersion) {
		t.Fatalf("complete record %v", row)
	}
	// Uber's exact 51392 ratings spread over the page's bars.
	if row["rating_histogram"] != "[28780,5653,3083,2570,11306]" || row["rating_share"] != "[0.56,0.11,0.06,0.05,0.22]" {
		t.Fatalf("histogram %v share %v", row["rating_histogram"], row["rating_share"])
	}
}

// MaxCallsPerItem and MaxCallsPerLookup (durable, which cannot import the
// clients) cover what the clients can do for one item (every limiter
// attempt, its page, the raw page, two D1 writes) and one lookup batch
// (every limiter attempt, the lookup).
func TestItemWorstCaseCoversTheClients(t *testing.T) {
	if controller.MaxCallsPerFetch < 1+upstream.MaxRedirects || controller.MaxLimiterCalls < ratelimit.MaxAttempts {
		t.Fatalf("MaxCallsPerFetch %d < 1 + %d redirects, or MaxLimiterCalls %d < %d", controller.MaxCallsPerFetch, upstream.MaxRedirects,
			controller.MaxLimiterCalls, ratelimit.MaxAttempts)
	}
	if want := ratelimit.MaxAttempts + controller.SubrequestsPerItem*controller.MaxCallsPerFetch + 1 + 2; controller.MaxCallsPerItem < want {
		t.Fatalf("MaxCallsPerItem %d < %d", controller.MaxCallsPerItem, want)
	}
	if want := ratelimit.MaxAttempts + controller.MaxCallsPerFetch; controller.MaxCallsPerLookup < want {
		t.Fatalf("MaxCallsPerLookup %d < %d", controller.MaxCallsPerLookup, want)
	}
}

// TestPickByPriorityThenRatingCount: the pick serves priority first, then
// the apps with most ratings (unknown counts last), from its partial index
// without a sort.
func TestPickByPriorityThenRatingCount(t *testing.T) {
	db, drv := d1test.New(t)
	for _, r := range []struct {
		id, priority int64
		count        any
	}{{1, 0, nil}, {2, 0, 500}, {3, 0, 50000}, {4, 5, 1}, {5, 0, 500}} {
		drv.Exec(t, `INSERT INTO app_registry (track_id, enrich_priority, rating_count) VALUES (?,?,?)`, r.id, r.priority, r.count)
	}
	items, err := D1Store{DB: db}.PickQueued(context.Background(), 10, false, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var order []int64
	for _, it := range items {
		order = append(order, it.TrackID)
	}
	if fmt.Sprint(order) != "[4 3 2 5 1]" {
		t.Fatalf("pick order %v", order)
	}
	plan := fmt.Sprint(drv.Rows(t, `EXPLAIN QUERY PLAN `+PickSQL, 0, "2026-01-01T00:00:00.000Z", 10))
	if !strings.Contains(plan, "idx_app_registry_queue_value") || strings.Contains(plan, "TEMP B-TREE") {
		t.Fatalf("pick plan: %s", plan)
	}
}

// TestDeveloperSeenAgainWritesNothing: a developer upserted again with the
// same name writes no row (every search and enrichment names one); a new
// name is kept, with the time it changed.
func TestDeveloperSeenAgainWritesNothing(t *testing.T) {
	db, drv := d1test.New(t)
	ctx := context.Background()
	if _, err := db.Exec(ctx, DeveloperStmt(70, "Dev", "2026-11-01T00:00:00.000Z")); err != nil {
		t.Fatal(err)
	}
	before := drv.TotalChanges(t)
	if _, err := db.Exec(ctx, DeveloperStmt(70, "Dev", "2026-11-02T00:00:00.000Z")); err != nil {
		t.Fatal(err)
	}
	if n := drv.TotalChanges(t) - before; n != 0 {
		t.Fatalf("the same developer again wrote %d rows, want 0", n)
	}
	if _, err := db.Exec(ctx, DeveloperStmt(70, "Dev Ltd", "2026-11-03T00:00:00.000Z")); err != nil {
		t.Fatal(err)
	}
	got := drv.Rows(t, `SELECT name, first_seen_at, updated_at FROM developers WHERE developer_id = 70`)[0]
	if got["name"] != "Dev Ltd" || got["first_seen_at"] != "2026-11-01T00:00:00.000Z" || got["updated_at"] != "2026-11-03T00:00:00.000Z" {
		t.Fatalf("renamed developer: %v", got)
	}
}

// TestSimilarAppsKeptInTheRecord: an app's similar apps are its
// record's similar_app_ids (bounded like the parsed shelf), and the save
// writes that row alone (the edge table, a row an edge with no reader, is
// gone: migrations/0030).
func TestSimilarAppsKeptInTheRecord(t *testing.T) {
	db, drv := d1test.New(t)
	var rec Record
	rec.App.TrackID, rec.FetchedAt = 7, time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	for i := range 2 * appstore.MaxSimilar {
		rec.Page.SimilarAppIDs = append(rec.Page.SimilarAppIDs, int64(100+i))
	}
	if _, err := db.ExecAtomic(context.Background(), SaveStatements(rec)...); err != nil {
		t.Fatal(err)
	}
	if n := drv.Int(t, `SELECT count(*) FROM sqlite_master WHERE name = 'app_similar'`); n != 0 {
		t.Fatal("the edge table is gone")
	}
	var similar []int64
	json.Unmarshal([]byte(drv.Rows(t, `SELECT similar_app_ids FROM app_registry WHERE track_id = 7`)[0]["similar_app_ids"].(string)), &similar)
	if len(similar) != appstore.MaxSimilar || similar[0] != 100 {
		t.Fatalf("similar_app_ids: %v", similar)
	}
}

// TestRefreshSaveLeavesTheState: a refresh's record sets no
// enrichment_source (setting it, even to its value, rewrites the entries
// of the partial indexes on it), and an app that is no longer enriched
// keeps its row as it was.
func TestRefreshSaveLeavesTheState(t *testing.T) {
	db, drv := d1test.New(t)
	ctx := context.Background()
	app := mustLookup(t)
	at := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	for _, s := range SaveStatements(Record{App: app, FetchedAt: at, Refresh: true}) {
		if strings.Contains(s.SQL, "enrichment_source=excluded") {
			t.Fatalf("a refresh sets enrichment_source: %s", s.SQL)
		}
	}
	// No row yet (deleted meanwhile): the record is stored, enriched.
	if _, err := db.ExecAtomic(ctx, SaveStatements(Record{App: app, FetchedAt: at, Refresh: true})...); err != nil {
		t.Fatal(err)
	}
	if n := drv.Int(t, `SELECT count(*) FROM app_registry WHERE track_id = ? AND enrichment_source = ?`, app.TrackID, SourceEnriched); n != 1 {
		t.Fatal("a refresh of a missing row stores the record")
	}
	// Not found meanwhile: the refresh stores nothing over it.
	drv.Exec(t, `UPDATE app_registry SET enrichment_source = ?, name = 'gone' WHERE track_id = ?`, SourceNotFound, app.TrackID)
	if _, err := db.ExecAtomic(ctx, SaveStatements(Record{App: app, FetchedAt: at.Add(time.Hour), Refresh: true})...); err != nil {
		t.Fatal(err)
	}
	if row := drv.Rows(t, `SELECT name, enrichment_source, enriched_at FROM app_registry WHERE track_id = ?`, app.TrackID)[0]; row["name"] != "gone" || row["enrichment_source"] != SourceNotFound || row["enriched_at"] != d1.Time(at) {
		t.Fatalf("a refresh wrote over an app no longer enriched: %v", row)
	}
}

// TestLookupSavedAgainUnchangedWritesNothing: a stored lookup saved again
// as it was (its page failed again) writes no row; a new page status or
// a newer lookup does.
func TestLookupSavedAgainUnchangedWritesNothing(t *testing.T) {
	db, drv := d1test.New(t)
	s := D1Store{DB: db}
	ctx := context.Background()
	app := mustLookup(t)
	at := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	save := func(status string, at time.Time) int64 {
		t.Helper()
		before := drv.TotalChanges(t)
		if err := s.SaveLookup(ctx, app, "", status, at); err != nil {
			t.Fatal(err)
		}
		return drv.TotalChanges(t) - before
	}
	if n := save(PagePending, at); n == 0 {
		t.Fatal("a first lookup wrote nothing")
	}
	if n := save(PagePending, at); n != 0 {
		t.Fatalf("the same lookup again wrote %d rows", n)
	}
	if n := save(PageUnparsedStatus, at); n != 1 {
		t.Fatalf("a new page status wrote %d rows, want 1", n)
	}
	if n := save(PageUnparsedStatus, at.Add(time.Hour)); n != 1 {
		t.Fatalf("a newer lookup wrote %d rows, want 1", n)
	}
	// Raw pages: each fetch is a new reference (its tick's batch). The
	// first is written; a page that failed again with nothing else moved
	// keeps the one stored and writes nothing; a row written for another
	// reason takes the newest.
	saveRef := func(ref string, at time.Time) int64 {
		t.Helper()
		before := drv.TotalChanges(t)
		if err := s.SaveLookup(ctx, app, ref, PageUnparsedStatus, at); err != nil {
			t.Fatal(err)
		}
		return drv.TotalChanges(t) - before
	}
	ref := func() any {
		return drv.Rows(t, `SELECT html_r2_key FROM app_registry WHERE track_id = ?`, app.TrackID)[0]["html_r2_key"]
	}
	if n := saveRef("b/1.gz#0+10", at.Add(time.Hour)); n != 1 || ref() != "b/1.gz#0+10" {
		t.Fatalf("a first page wrote %d rows, stored %v", n, ref())
	}
	if n := saveRef("b/2.gz#0+10", at.Add(time.Hour)); n != 0 || ref() != "b/1.gz#0+10" {
		t.Fatalf("a page failed again wrote %d rows, stored %v", n, ref())
	}
	if n := saveRef("b/3.gz#0+10", at.Add(2*time.Hour)); n != 1 || ref() != "b/3.gz#0+10" {
		t.Fatalf("a newer lookup wrote %d rows, stored %v", n, ref())
	}
}

// TestFirstValuesFromTheEnrichmentWriteNoHistory: an app a chart found
// (its name alone) gets its first values from its enrichment; they are
// its history's first point, read from its row at that time, and no
// history row is written until one changes, which writes them first.
func TestFirstValuesFromTheEnrichmentWriteNoHistory(t *testing.T) {
	db, drv := d1test.New(t)
	ctx := context.Background()
	found := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	app := mustLookup(t)
	if _, err := db.Exec(ctx, catalogue.ObserveStmt([]catalogue.Seen{{TrackID: app.TrackID, Name: app.Name}}, found)...); err != nil {
		t.Fatal(err)
	}
	enriched := found.Add(time.Hour)
	if _, err := db.ExecAtomic(ctx, SaveStatements(Record{App: app, FetchedAt: enriched})...); err != nil {
		t.Fatal(err)
	}
	rows := func() int64 {
		return drv.Int(t, `SELECT (SELECT count(*) FROM app_snapshots) + (SELECT count(*) FROM app_version_history) + (SELECT count(*) FROM app_price_history)`)
	}
	if n := rows(); n != 0 {
		t.Fatalf("first values wrote %d history rows", n)
	}
	series := func() (ratings, versions []map[string]any) {
		t.Helper()
		raw, ok, err := catalogue.D1Store{DB: db}.AppHistory(ctx, catalogue.HistoryQuery{TrackID: app.TrackID, Days: 90, Limit: 10}, enriched.Add(48*time.Hour))
		if err != nil || !ok {
			t.Fatalf("history: %v %v", ok, err)
		}
		var h struct{ Ratings, Versions []map[string]any }
		json.Unmarshal(raw, &h)
		return h.Ratings, h.Versions
	}
	if r, v := series(); len(r) != 1 || r[0]["at"] != d1.Time(enriched) || r[0]["rating_count"] != float64(app.RatingCount) ||
		len(v) != 1 || v[0]["at"] != d1.Time(enriched) || v[0]["version"] != app.Version {
		t.Fatalf("first values: %v %v", r, v)
	}
	// A search a day later sees more ratings: the first count, then the new.
	grown := app
	grown.RatingCount += 10
	later := enriched.Add(24 * time.Hour)
	if _, err := db.Exec(ctx, catalogue.ObserveStmt([]catalogue.Seen{catalogue.SeenFromApp(grown)}, later)...); err != nil {
		t.Fatal(err)
	}
	if r, v := series(); len(r) != 2 || r[0]["at"] != d1.Time(later) || r[1]["at"] != d1.Time(enriched) || r[1]["rating_count"] != float64(app.RatingCount) || len(v) != 1 {
		t.Fatalf("after a change: %v %v", r, v)
	}
	if n := rows(); n != 2 {
		t.Fatalf("history rows after a change: %d", n)
	}
}
