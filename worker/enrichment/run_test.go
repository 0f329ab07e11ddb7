package enrichment

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	controller "storecrawl/durable/enrichment"
	"storecrawl/worker/appstore"
	"storecrawl/worker/upstream"
)

const fixtureID = 368677368 // trackId in ../appstore/testdata/lookup_us_uber_2017.json

type fakeStore struct {
	mu       sync.Mutex
	queue    []QueuedItem
	saved    map[int64]Record
	missing  map[int64]bool
	requeued map[int64]int
	gaveUp   map[int64]int
	deferred map[int64]time.Duration // backoff asked for, from the run's clock
	classes  map[int64]controller.Class
	lookups  map[int64]string // lookup-only saves: page status
	failSave bool
}

func newStore(items ...QueuedItem) *fakeStore {
	return &fakeStore{queue: items, saved: map[int64]Record{}, missing: map[int64]bool{}, requeued: map[int64]int{}, gaveUp: map[int64]int{},
		deferred: map[int64]time.Duration{}, classes: map[int64]controller.Class{}}
}

func (s *fakeStore) PickQueued(_ context.Context, n int, _ bool, _ time.Time) ([]QueuedItem, error) {
	return s.queue[:min(n, len(s.queue))], nil
}
func (s *fakeStore) SaveEnriched(_ context.Context, r Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failSave {
		return errors.New("d1 down")
	}
	s.saved[r.App.TrackID] = r
	return nil
}
func (s *fakeStore) SaveLookup(_ context.Context, app appstore.App, _, status string, _ time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lookups == nil {
		s.lookups = map[int64]string{}
	}
	s.lookups[app.TrackID] = status
	return nil
}
func (s *fakeStore) MarkMissing(_ context.Context, id int64, _ time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.missing[id] = true
	return nil
}
func (s *fakeStore) Requeue(_ context.Context, id int64, attempts int, c controller.Class, _ string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requeued[id], s.classes[id] = attempts, c
	return nil
}
func (s *fakeStore) Defer(_ context.Context, id int64, _ int, c controller.Class, _ string, until time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.deferred[id], s.classes[id] = time.Until(until), c
	return nil
}
func (s *fakeStore) GiveUp(_ context.Context, id int64, attempts int, c controller.Class, _ string, _ time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gaveUp[id], s.classes[id] = attempts, c
	return nil
}

type fakeCache struct {
	mu   sync.Mutex
	keys map[string]int
}

func (c *fakeCache) PutHTML(_ context.Context, key string, html []byte, _ PageMeta) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.keys[key] = len(html)
	return nil
}

type fakeEvents struct{ ids []int64 }

func (e *fakeEvents) AppsEnriched(_ context.Context, ids []int64) error {
	e.ids = append(e.ids, ids...)
	return nil
}

// lookupAs is the real lookup capture rewritten to answer for id.
func lookupAs(lookup []byte, id string) []byte {
	return bytes.ReplaceAll(lookup, []byte(strconv.Itoa(fixtureID)), []byte(id))
}

func fixture(t *testing.T, name string) []byte {
	b, err := os.ReadFile("../appstore/testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fixtureUpstream serves: the fixture app for fixtureID; an empty lookup for 2;
// 429 with Retry-After for 3; a blocked page for 4; 503 for 5.
func fixtureUpstream(t *testing.T, inflight *int, peak *int) *httptest.Server {
	var mu sync.Mutex
	lookup, empty := fixture(t, "lookup_us_uber_2017.json"), fixture(t, "search_us_empty_mas_2018.json")
	full := fixture(t, "legacy_netflix_us_2023.html")
	// A real page cut before any product data, as a dropped connection leaves it.
	blocked := full[:bytes.Index(full, []byte(`<script name="schema:software-application"`))]
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		*inflight++
		if *inflight > *peak {
			*peak = *inflight
		}
		mu.Unlock()
		defer func() { mu.Lock(); *inflight--; mu.Unlock() }()
		time.Sleep(20 * time.Millisecond)
		id := r.URL.Query().Get("id")
		if strings.HasPrefix(r.URL.Path, "/us/app/id") {
			id = strings.TrimPrefix(r.URL.Path, "/us/app/id")
		}
		isPage := id != r.URL.Query().Get("id")
		switch id {
		case "368677368":
			if isPage {
				w.Write(full)
			} else {
				w.Write(lookup)
			}
		case "2":
			if isPage {
				w.WriteHeader(404)
			} else {
				w.Write(empty)
			}
		case "3":
			w.Header().Set("Retry-After", "30")
			w.WriteHeader(429)
		case "4":
			if isPage {
				w.Write(blocked)
			} else {
				w.Write(lookupAs(lookup, id))
			}
		case "6":
			if isPage {
				w.Write([]byte(`<html><body><form id="challenge-form">Please complete the captcha to continue</form></body></html>`))
			} else {
				w.Write(lookupAs(lookup, id))
			}
		case "8": // answers with another app's lookup
			if isPage {
				w.Write(full)
			} else {
				w.Write(lookup)
			}
		default:
			w.WriteHeader(503)
		}
	}))
}

func newRunner(t *testing.T, srv *httptest.Server, st *fakeStore) (*Runner, *fakeCache, *fakeEvents, *[]time.Duration) {
	cache := &fakeCache{keys: map[string]int{}}
	ev := &fakeEvents{}
	var sleeps []time.Duration
	return &Runner{
		Store: st, HTML: cache, Events: ev,
		Upstream: &upstream.Client{HTTP: srv.Client(), Timeout: 5 * time.Second},
		APIBase:  srv.URL, StoreBase: srv.URL, Country: "us",
		Now:   time.Now,
		Sleep: func(d time.Duration) { sleeps = append(sleeps, d) },
	}, cache, ev, &sleeps
}

func TestRunSettlesEveryItem(t *testing.T) {
	var inflight, peak int
	srv := fixtureUpstream(t, &inflight, &peak)
	defer srv.Close()
	st := newStore(
		QueuedItem{TrackID: fixtureID}, QueuedItem{TrackID: 2}, QueuedItem{TrackID: 3, Attempts: 2},
		QueuedItem{TrackID: 4}, QueuedItem{TrackID: 5, Attempts: controller.MaxItemAttempts - 1},
		QueuedItem{TrackID: 4, Attempts: controller.MaxItemAttempts - 1},
	)
	r, cache, ev, sleeps := newRunner(t, srv, st)
	out := r.Run(context.Background(), controller.RunPlan{BatchSize: 10, ChunkItems: 3, ChunkPauseMs: 200})
	if out.Picked != 6 || len(out.Results) != 6 || out.Error != "" {
		t.Fatalf("outcome %+v", out)
	}
	want := []controller.Class{controller.ClassOK, controller.ClassNotFound, controller.ClassRateLimit,
		controller.ClassParseError, controller.ClassServerError, controller.ClassParseError}
	for i, w := range want {
		if out.Results[i].Class != w {
			t.Errorf("item %d: %s (%s), want %s", i, out.Results[i].Class, out.Results[i].Error, w)
		}
	}
	if out.Results[2].RetryAfterS != 30 {
		t.Errorf("Retry-After lost: %+v", out.Results[2])
	}
	rec, ok := st.saved[fixtureID]
	if !ok || rec.HTMLKey != HTMLKey("us", fixtureID) || cache.keys[rec.HTMLKey] == 0 {
		t.Fatalf("enriched app not stored with its HTML: %+v %v", rec, cache.keys)
	}
	if rec.Page.Subtitle == "" || rec.App.Name == "" {
		t.Fatalf("record missing parsed fields: %+v", rec)
	}
	if !st.missing[2] {
		t.Error("not-found app must be dequeued as not_found")
	}
	if _, ok := st.requeued[3]; ok {
		t.Error("a rate-limited item must stay queued without using an attempt")
	}
	if st.requeued[4] != 1 {
		t.Errorf("first parse error must requeue with attempt 1: %v", st.requeued)
	}
	// The unparsed page is kept for a reparse, and the lookup is saved.
	if out.Results[3].Page != controller.PageUnparsed || cache.keys[HTMLKey("us", 4)] == 0 || st.lookups[4] != PageUnparsedStatus {
		t.Errorf("unparsed page: %+v, html %v, lookups %v", out.Results[3], cache.keys, st.lookups)
	}
	// A 5xx is the upstream's state: even at its last attempt the item
	// stays queued, its attempts untouched, deferred by the first backoff.
	if _, ok := st.gaveUp[5]; ok || out.Results[4].GaveUp || !out.Results[4].Deferred {
		t.Errorf("a 5xx must defer the item, not give it up: %v %+v", st.gaveUp, out.Results[4])
	}
	if d := st.deferred[5]; d < controller.DeferBase-time.Second || d > controller.DeferBase {
		t.Errorf("first deferral backs off %s, want %s", d, controller.DeferBase)
	}
	if st.gaveUp[4] != controller.MaxItemAttempts || !out.Results[5].GaveUp || st.classes[4] != controller.ClassParseError {
		t.Errorf("a parse error at its last attempt must be given up with its class: %v %v", st.gaveUp, st.classes)
	}
	if len(ev.ids) != 1 || ev.ids[0] != fixtureID {
		t.Errorf("events: %v", ev.ids)
	}
	if len(*sleeps) != 1 || (*sleeps)[0] != 200*time.Millisecond {
		t.Errorf("want one pause between two chunks, got %v", *sleeps)
	}
	if peak > 3*controller.SubrequestsPerItem {
		t.Errorf("peak concurrent upstream requests %d exceeds chunk × subrequests", peak)
	}
}

func TestPausedPagesFetchLookupsOnly(t *testing.T) {
	var inflight, peak int
	srv := fixtureUpstream(t, &inflight, &peak)
	defer srv.Close()
	st := newStore(QueuedItem{TrackID: fixtureID}, QueuedItem{TrackID: fixtureID, Attempts: controller.MaxItemAttempts - 1}, QueuedItem{TrackID: 2})
	r, cache, ev, _ := newRunner(t, srv, st)
	out := r.Run(context.Background(), controller.RunPlan{BatchSize: 10, ChunkItems: 3, SkipPages: true, PageProbes: 1})
	if len(out.Results) != 3 || out.Results[0].Page != controller.PageParsed || out.Results[1].Page != controller.PageSkipped {
		t.Fatalf("the first item probes, the rest skip their page: %+v", out.Results)
	}
	// 2 requests for the probe, 1 lookup for each other item.
	if len(out.Requests) != 4 {
		t.Fatalf("requests %+v", out.Requests)
	}
	if !out.Results[1].LookupSaved || st.lookups[fixtureID] != PagePending || len(st.requeued)+len(st.gaveUp) != 0 {
		t.Fatalf("a skipped page keeps the item queued, its lookup saved, no attempt counted: %+v %v %v %v", out.Results[1], st.lookups, st.requeued, st.gaveUp)
	}
	if !st.missing[2] || len(ev.ids) != 1 || len(cache.keys) != 1 {
		t.Fatalf("missing %v events %v pages %v", st.missing, ev.ids, cache.keys)
	}
}

func TestLookupOfAnotherAppIsAParseError(t *testing.T) {
	var inflight, peak int
	srv := fixtureUpstream(t, &inflight, &peak)
	defer srv.Close()
	st := newStore(QueuedItem{TrackID: 8})
	r, _, _, _ := newRunner(t, srv, st)
	out := r.Run(context.Background(), controller.RunPlan{BatchSize: 1, ChunkItems: 1})
	if res := out.Results[0]; res.Class != controller.ClassParseError || !strings.Contains(res.Error, "answered trackId 368677368 for id 8") {
		t.Fatalf("%+v", res)
	}
	if len(st.saved)+len(st.lookups) != 0 || st.requeued[8] != 1 {
		t.Fatalf("nothing may be saved under another id: saved %v lookups %v requeued %v", st.saved, st.lookups, st.requeued)
	}
}

func TestChallengePageIsARefusal(t *testing.T) {
	var inflight, peak int
	srv := fixtureUpstream(t, &inflight, &peak)
	defer srv.Close()
	st := newStore(QueuedItem{TrackID: 6, Attempts: controller.MaxItemAttempts - 1})
	r, cache, _, _ := newRunner(t, srv, st)
	out := r.Run(context.Background(), controller.RunPlan{BatchSize: 1, ChunkItems: 1})
	res := out.Results[0]
	if res.Class != controller.ClassRateLimit || res.Page != controller.PageSoftBlock || out.Requests[1].Class != controller.ClassRateLimit {
		t.Fatalf("a challenge page must pace like a 429: %+v %+v", res, out.Requests)
	}
	if len(st.gaveUp)+len(st.requeued) != 0 || st.lookups[6] != PagePending || cache.keys[HTMLKey("us", 6)] == 0 {
		t.Fatalf("the item stays queued, lookup and page kept: %v %v %v %v", st.gaveUp, st.requeued, st.lookups, cache.keys)
	}
}

func TestRepeatedStoreFailureGivesUp(t *testing.T) {
	var inflight, peak int
	srv := fixtureUpstream(t, &inflight, &peak)
	defer srv.Close()
	st := newStore(QueuedItem{TrackID: fixtureID}, QueuedItem{TrackID: fixtureID, Attempts: controller.MaxItemAttempts - 1})
	st.failSave = true
	r, _, ev, _ := newRunner(t, srv, st)
	out := r.Run(context.Background(), controller.RunPlan{BatchSize: 1, ChunkItems: 1})
	if out.Results[0].Class != controller.ClassStoreError || st.requeued[fixtureID] != 1 || st.classes[fixtureID] != controller.ClassStoreError {
		t.Fatalf("a store error counts as the item's attempt: %+v %v", out.Results[0], st.requeued)
	}
	st.queue = st.queue[1:]
	out = r.Run(context.Background(), controller.RunPlan{BatchSize: 1, ChunkItems: 1})
	if !out.Results[0].GaveUp || st.gaveUp[fixtureID] != controller.MaxItemAttempts {
		t.Fatalf("a store error that keeps repeating must give up, not retry forever: %+v %v", out.Results[0], st.gaveUp)
	}
	if len(ev.ids) != 0 {
		t.Fatal("an app that was not stored must not be announced")
	}
}

type failingPick struct{ *fakeStore }

func (*failingPick) PickQueued(context.Context, int, bool, time.Time) ([]QueuedItem, error) {
	return nil, errors.New("D1_ERROR: no such table")
}

func TestPickFailureIsRunError(t *testing.T) {
	r := &Runner{Store: &failingPick{}, Now: time.Now}
	out := r.Run(context.Background(), controller.RunPlan{BatchSize: 5})
	if out.Error == "" || out.Picked != 0 {
		t.Fatalf("%+v", out)
	}
}

func TestSaveStatementsTruncateAndReplaceEdges(t *testing.T) {
	var rec Record
	rec.App.TrackID = 9
	rec.App.Description = strings.Repeat("é", 5000)
	for i := range 3 * appstore.MaxSimilar {
		rec.Page.SimilarAppIDs = append(rec.Page.SimilarAppIDs, int64(100+i))
	}
	stmts := SaveStatements(rec)
	// However long the shelf: the record, the edges' delete and one insert.
	if len(stmts) != 3 || !strings.HasPrefix(stmts[1].SQL, "DELETE FROM app_similar") {
		t.Fatalf("statements: %d", len(stmts))
	}
	var edges []int64
	if err := json.Unmarshal([]byte(stmts[2].Args[1].(string)), &edges); err != nil || len(edges) != appstore.MaxSimilar {
		t.Fatalf("edges bounded to %d: %d (%v)", appstore.MaxSimilar, len(edges), err)
	}
	desc := stmts[0].Args[14].(string)
	if n := len([]rune(desc)); n > 2000 {
		t.Fatalf("description not truncated: %d runes", n)
	}
	if strings.Count(stmts[0].SQL, "?") != len(stmts[0].Args) {
		t.Fatalf("placeholders %d != args %d", strings.Count(stmts[0].SQL, "?"), len(stmts[0].Args))
	}
}

func TestRunStopsAtRefusalAndReportsRequests(t *testing.T) {
	var inflight, peak int
	srv := fixtureUpstream(t, &inflight, &peak)
	defer srv.Close()
	st := newStore(QueuedItem{TrackID: fixtureID}, QueuedItem{TrackID: 3}, QueuedItem{TrackID: fixtureID}, QueuedItem{TrackID: 2})
	r, _, _, _ := newRunner(t, srv, st)
	out := r.Run(context.Background(), controller.RunPlan{BatchSize: 4, ChunkItems: 1, StopOnThrottle: true})
	if out.Picked != 2 || out.Skipped != 2 || len(out.Results) != 2 {
		t.Fatalf("the run must stop after the refused chunk: %+v", out)
	}
	if len(out.Requests) != 2*controller.SubrequestsPerItem {
		t.Fatalf("requests: %+v", out.Requests)
	}
	for _, rq := range out.Requests {
		if rq.SentAt == 0 || rq.DoneAt < rq.SentAt || rq.Remaining != -1 {
			t.Fatalf("request outcome incomplete: %+v", rq)
		}
	}
	if last := out.Requests[len(out.Requests)-1]; last.Item != 1 || last.Class != controller.ClassRateLimit || last.RetryAfterMs != 30000 {
		t.Fatalf("refused request: %+v", last)
	}
	if st.missing[2] {
		t.Fatal("a skipped item must stay untouched")
	}
}

func TestRunGoesThroughTheGlobalLimit(t *testing.T) {
	var inflight, peak int
	srv := fixtureUpstream(t, &inflight, &peak)
	defer srv.Close()
	st := newStore(QueuedItem{TrackID: fixtureID}, QueuedItem{TrackID: fixtureID + 1})
	r, _, _, _ := newRunner(t, srv, st)
	var costs []int
	admitted := 0
	r.Limit = func(ctx context.Context, cost int, fn func(context.Context) error) error {
		costs = append(costs, cost)
		if admitted == 1 {
			return ErrLimited
		}
		admitted++
		return fn(ctx)
	}
	out := r.Run(context.Background(), controller.RunPlan{BatchSize: 2, ChunkItems: 1})
	if len(costs) != 2 || costs[0] != controller.SubrequestsPerItem {
		t.Fatalf("one acquire per item of %d units, got %v", controller.SubrequestsPerItem, costs)
	}
	if out.Results[0].Class != controller.ClassOK || out.Results[1].Class != controller.ClassRateLimit {
		t.Fatalf("results %+v", out.Results)
	}
	if len(st.requeued)+len(st.gaveUp) != 0 {
		t.Fatal("a globally limited item must stay queued without using an attempt")
	}
}

func TestRunStopsFetchingPagesNobodyCanRead(t *testing.T) {
	var inflight, peak int
	srv := fixtureUpstream(t, &inflight, &peak)
	defer srv.Close()
	var items []QueuedItem
	for range 12 {
		items = append(items, QueuedItem{TrackID: 4}) // its page has no product data
	}
	st := newStore(items...)
	r, cache, _, _ := newRunner(t, srv, st)
	out := r.Run(context.Background(), controller.RunPlan{BatchSize: 12, ChunkItems: 3})
	unparsed, skipped := 0, 0
	for _, res := range out.Results {
		switch res.Page {
		case controller.PageUnparsed:
			unparsed++
		case controller.PageSkipped:
			skipped++
		}
	}
	// Two chunks of 3 trip the breaker (6 unparsed); the other 6 look up only.
	if unparsed != 6 || skipped != 6 || len(out.Requests) != 6*2+6 || len(cache.keys) != 1 {
		t.Fatalf("unparsed %d, skipped %d, requests %d, pages kept %v", unparsed, skipped, len(out.Requests), cache.keys)
	}
}

// panicky panics on the lookup of one id: a bug in a fetch must cost that
// item, not the shared Go instance (issue 14, item 10).
type panicky struct{ upstream.Client }

func (p *panicky) Get(ctx context.Context, url string) upstream.Response {
	if strings.Contains(url, "id=99") {
		panic("boom")
	}
	return p.Client.Get(ctx, url)
}

func TestAPanickingFetchCostsOneItem(t *testing.T) {
	var inflight, peak int
	srv := fixtureUpstream(t, &inflight, &peak)
	defer srv.Close()
	st := newStore(QueuedItem{TrackID: 99}, QueuedItem{TrackID: fixtureID})
	r, _, _, _ := newRunner(t, srv, st)
	r.Upstream = &panicky{upstream.Client{HTTP: srv.Client(), Timeout: 5 * time.Second}}
	out := r.Run(context.Background(), controller.RunPlan{BatchSize: 2, ChunkItems: 2})
	if len(out.Results) != 2 || out.Results[0].Class != controller.ClassTimeout || !strings.Contains(out.Results[0].Error, "panic in lookup fetch") {
		t.Fatalf("%+v", out.Results)
	}
	if out.Results[1].Class != controller.ClassOK || len(st.gaveUp) != 0 {
		t.Fatalf("the other item is untouched: %+v %v", out.Results[1], st.gaveUp)
	}
}
