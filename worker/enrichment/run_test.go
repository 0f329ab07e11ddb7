package enrichment

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"storecrawl/durable/controller"
	"storecrawl/worker/appstore"
	"storecrawl/worker/pagebatch"
	"storecrawl/worker/registry"
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
	pageRefs map[int64]string // lookup-only saves: the raw page's reference
	failSave bool
}

func newStore(items ...QueuedItem) *fakeStore {
	return &fakeStore{queue: items, saved: map[int64]Record{}, missing: map[int64]bool{}, requeued: map[int64]int{}, gaveUp: map[int64]int{},
		deferred: map[int64]time.Duration{}, classes: map[int64]controller.Class{}}
}

func (s *fakeStore) PickQueued(_ context.Context, n int, _ bool, _ time.Time) ([]QueuedItem, error) {
	return s.queue[:min(n, len(s.queue))], nil
}
func (s *fakeStore) SaveEnriched(_ context.Context, r Record) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failSave {
		return 0, errors.New("d1 down")
	}
	s.saved[r.App.TrackID] = r
	return 0, nil
}
func (s *fakeStore) SaveLookup(_ context.Context, app appstore.App, htmlKey, status string, _ time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lookups == nil {
		s.lookups, s.pageRefs = map[int64]string{}, map[int64]string{}
	}
	s.lookups[app.TrackID] = status
	if htmlKey != "" {
		s.pageRefs[app.TrackID] = htmlKey
	}
	return nil
}
func (s *fakeStore) MarkMissing(_ context.Context, id int64, _ time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.missing[id] = true
	return nil
}
func (s *fakeStore) Requeue(_ context.Context, id int64, attempts int, c controller.Class, _, _ string) error {
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
func (s *fakeStore) GiveUp(_ context.Context, id int64, attempts int, c controller.Class, _, _ string, _ time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gaveUp[id], s.classes[id] = attempts, c
	return nil
}

// fakeCache is the pages' bucket: the objects put, and how many puts.
type fakeCache struct {
	mu      sync.Mutex
	objects map[string][]byte
	puts    int
	pages   int // in the objects put
	fail    int // the next fail puts fail
}

func newCache() *fakeCache { return &fakeCache{objects: map[string][]byte{}} }

func (c *fakeCache) PutPages(_ context.Context, key string, body []byte, pages int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.puts++
	if c.fail > 0 {
		c.fail--
		return errors.New("r2 down")
	}
	c.objects[key] = bytes.Clone(body)
	c.pages += pages
	return nil
}

// page is a stored reference's page (nil when it does not resolve), as
// R2HTML reads it.
func (c *fakeCache) page(ref string) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, err := pagebatch.ParseRef(ref)
	obj, ok := c.objects[r.Key]
	if err != nil || !ok || r.Offset+r.Length > int64(len(obj)) {
		return nil
	}
	page, err := pagebatch.Read(r, obj[r.Offset:r.Offset+r.Length])
	if err != nil {
		return nil
	}
	return page
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

// lookupAnswer answers a lookup of ids (comma-separated) as the real
// endpoint does: one result per id it knows, in the order asked, the
// unknown ones left out. Each result is the real capture's (lookup)
// rewritten for its id; the ids in unknown are left out, and answerAs
// maps an id to the result of another.
func lookupAnswer(lookup []byte, ids string, unknown map[string]bool, answerAs map[string]string) []byte {
	var env struct{ Results []json.RawMessage }
	if err := json.Unmarshal(lookup, &env); err != nil || len(env.Results) != 1 {
		panic(fmt.Sprintf("lookup capture: %v", err))
	}
	results := []string{}
	seen := map[string]bool{}
	for _, id := range strings.Split(ids, ",") {
		if seen[id] || unknown[id] {
			continue
		}
		seen[id] = true
		as := id
		if other, ok := answerAs[id]; ok {
			as = other
		}
		results = append(results, string(lookupAs(env.Results[0], as)))
	}
	return []byte(fmt.Sprintf(`{"resultCount":%d,"results":[%s]}`, len(results), strings.Join(results, ",")))
}

func fixture(t *testing.T, name string) []byte {
	b, err := os.ReadFile("../appstore/testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fakeUpstream is the store in a test: lookups (of many ids, as the real
// endpoint answers them) and pages.
type fakeUpstream struct {
	*httptest.Server
	mu sync.Mutex
	// lookups lists the id lists asked, in order.
	lookups []string
	// lookup, when set, answers every lookup instead.
	lookup http.HandlerFunc
}

func (f *fakeUpstream) asked() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.lookups...)
}

// fixtureUpstream serves lookups from the real capture: every id is known
// but 2 and 7, and 8 is answered with another app's result (fixtureID's).
// Pages: the real page for fixtureID, 8 and every id not listed; 404 for
// 2; 429 with Retry-After for 3; a page cut before its product data for
// 4; 503 for 5; a challenge page for 6.
func fixtureUpstream(t *testing.T, inflight *int, peak *int) *fakeUpstream {
	lookup := fixture(t, "lookup_us_uber_2017.json")
	full := fixture(t, "legacy_netflix_us_2023.html")
	// A real page cut before any product data, as a dropped connection leaves it.
	blocked := full[:bytes.Index(full, []byte(`<script name="schema:software-application"`))]
	f := &fakeUpstream{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		*inflight++
		if *inflight > *peak {
			*peak = *inflight
		}
		custom := f.lookup
		f.mu.Unlock()
		defer func() { f.mu.Lock(); *inflight--; f.mu.Unlock() }()
		time.Sleep(20 * time.Millisecond)
		if r.URL.Path == "/lookup" {
			ids := r.URL.Query().Get("id")
			f.mu.Lock()
			f.lookups = append(f.lookups, ids)
			f.mu.Unlock()
			if custom != nil {
				custom(w, r)
				return
			}
			w.Write(lookupAnswer(lookup, ids, map[string]bool{"2": true, "7": true}, map[string]string{"8": strconv.Itoa(fixtureID)}))
			return
		}
		switch strings.TrimPrefix(r.URL.Path, "/us/app/id") {
		case "2":
			w.WriteHeader(404)
		case "3":
			w.Header().Set("Retry-After", "30")
			w.WriteHeader(429)
		case "4":
			w.Write(blocked)
		case "5":
			w.WriteHeader(503)
		case "6":
			w.Write([]byte(`<html><body><form id="challenge-form">Please complete the captcha to continue</form></body></html>`))
		default:
			if id, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/us/app/id")); id >= brokenFirst && id < brokenFirst+100 {
				w.Write(blocked) // a range of apps whose pages never parse
				return
			}
			w.Write(full)
		}
	}))
	return f
}

func newRunner(t *testing.T, srv *fakeUpstream, st *fakeStore) (*Runner, *fakeCache, *fakeEvents, *[]time.Duration) {
	cache := newCache()
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
	if !ok || !strings.Contains(string(cache.page(rec.HTMLKey)), "product-header") {
		t.Fatalf("enriched app not stored with its HTML: %+v %v", rec, cache.objects)
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
	if out.Results[3].Page != controller.PageUnparsed || cache.page(st.pageRefs[4]) == nil || st.lookups[4] != PageUnparsedStatus {
		t.Errorf("unparsed page: %+v, html %v, lookups %v", out.Results[3], st.pageRefs, st.lookups)
	}
	// Every page of the tick is in one object, put once.
	if cache.puts != 1 || out.PagePuts != 1 || len(cache.objects) != 1 {
		t.Errorf("%d puts (outcome %d) of %d objects, want the tick's one", cache.puts, out.PagePuts, len(cache.objects))
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
	// One lookup for the six items (4 asked once), then a page for each
	// item found: the not-found app needs none.
	if asked := srv.asked(); len(asked) != 1 || asked[0] != "368677368,2,3,4,5" {
		t.Errorf("lookups asked: %q", asked)
	}
	if len(out.Requests) != 1+5 || out.Requests[0].Item != 0 {
		t.Errorf("requests: one lookup and five pages, got %+v", out.Requests)
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
	// One lookup for all three items, and the probe's page.
	if len(out.Requests) != 2 || len(srv.asked()) != 1 {
		t.Fatalf("requests %+v, lookups %q", out.Requests, srv.asked())
	}
	if !out.Results[1].LookupSaved || st.lookups[fixtureID] != PagePending || len(st.requeued)+len(st.gaveUp) != 0 {
		t.Fatalf("a skipped page keeps the item queued, its lookup saved, no attempt counted: %+v %v %v %v", out.Results[1], st.lookups, st.requeued, st.gaveUp)
	}
	if !st.missing[2] || len(ev.ids) != 1 || cache.pages != 1 {
		t.Fatalf("missing %v events %v pages %v", st.missing, ev.ids, cache.pages)
	}
}

func TestLookupOfAnotherAppIsAParseError(t *testing.T) {
	var inflight, peak int
	srv := fixtureUpstream(t, &inflight, &peak)
	defer srv.Close()
	st := newStore(QueuedItem{TrackID: 8})
	r, _, _, _ := newRunner(t, srv, st)
	out := r.Run(context.Background(), controller.RunPlan{BatchSize: 1, ChunkItems: 1})
	if res := out.Results[0]; res.Class != controller.ClassParseError || !strings.Contains(res.Error, "no result for id 8") || !strings.Contains(res.Error, "[368677368]") {
		t.Fatalf("%+v", res)
	}
	if len(out.Requests) != 1 {
		t.Fatalf("no page for an app whose lookup did not come back: %+v", out.Requests)
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
	if len(st.gaveUp)+len(st.requeued) != 0 || st.lookups[6] != PagePending || cache.page(st.pageRefs[6]) == nil {
		t.Fatalf("the item stays queued, lookup and page kept: %v %v %v %v", st.gaveUp, st.requeued, st.lookups, st.pageRefs)
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

func TestSaveStatementsTruncateAndBoundTheShelf(t *testing.T) {
	var rec Record
	rec.App.TrackID = 9
	rec.App.Description = strings.Repeat("é", 5000)
	for i := range 3 * appstore.MaxSimilar {
		rec.Page.SimilarAppIDs = append(rec.Page.SimilarAppIDs, int64(100+i))
	}
	stmts := SaveStatements(rec)
	// However long the shelf: the record (no developer here), its similar
	// apps in it, bounded, and the discovery of the unknown ones, bounded
	// by SimilarDiscoverPerPage.
	if len(stmts) != 2 || stmts[1].SQL != registry.DiscoveredSQL {
		t.Fatalf("statements: %d", len(stmts))
	}
	var discover []int64
	if err := json.Unmarshal([]byte(stmts[1].Args[0].(string)), &discover); err != nil || len(discover) != SimilarDiscoverPerPage {
		t.Fatalf("discovery bounded to %d: %d (%v)", SimilarDiscoverPerPage, len(discover), err)
	}
	var edges []int64
	if err := json.Unmarshal([]byte(stmts[0].Args[23].(string)), &edges); err != nil || len(edges) != appstore.MaxSimilar {
		t.Fatalf("similar apps bounded to %d: %d (%v)", appstore.MaxSimilar, len(edges), err)
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
	// One lookup for the four items, then the pages of the two attempted.
	if len(out.Requests) != 1+2 || out.Requests[0].Item != 0 || out.Requests[0].Class != controller.ClassOK {
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
		if admitted == 2 {
			return ErrLimited
		}
		admitted++
		return fn(ctx)
	}
	out := r.Run(context.Background(), controller.RunPlan{BatchSize: 2, ChunkItems: 1})
	// One unit for the two items' lookup, then one for each page.
	if fmt.Sprint(costs) != "[1 1 1]" {
		t.Fatalf("acquires: one for the lookup batch, one per page, got %v", costs)
	}
	if out.Results[0].Class != controller.ClassOK || out.Results[1].Class != controller.ClassRateLimit || out.Requests[2].Class != controller.ClassRateLimit {
		t.Fatalf("results %+v requests %+v", out.Results, out.Requests)
	}
	if len(st.requeued)+len(st.gaveUp) != 0 || st.lookups[fixtureID+1] != PagePending {
		t.Fatal("a globally limited page must leave the item queued without using an attempt, its lookup kept")
	}
}

func TestRunStopsFetchingPagesNobodyCanRead(t *testing.T) {
	var inflight, peak int
	srv := fixtureUpstream(t, &inflight, &peak)
	defer srv.Close()
	var items []QueuedItem
	for i := range 12 {
		items = append(items, QueuedItem{TrackID: brokenFirst + int64(i)}) // 12 apps, no page with product data
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
	// Two chunks of 3 trip the breaker (6 unparsed apps); the other 6 look up only.
	if unparsed != 6 || skipped != 6 || len(out.Requests) != 1+6 || cache.pages != 6 || cache.puts != 1 {
		t.Fatalf("unparsed %d, skipped %d, requests %d, pages kept %v in %d puts", unparsed, skipped, len(out.Requests), cache.pages, cache.puts)
	}
}

// panicky panics on the page of one id, or on every lookup: a bug in a
// fetch must cost that item, or that batch, not the shared Go instance.
type panicky struct {
	upstream.Client
	lookups bool
}

func (p *panicky) Get(ctx context.Context, url string) upstream.Response {
	if strings.HasSuffix(url, "/id99") || (p.lookups && strings.Contains(url, "/lookup")) {
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
	r.Upstream = &panicky{Client: upstream.Client{HTTP: srv.Client(), Timeout: 5 * time.Second}}
	out := r.Run(context.Background(), controller.RunPlan{BatchSize: 2, ChunkItems: 2})
	if len(out.Results) != 2 || out.Results[0].Class != controller.ClassTimeout || !strings.Contains(out.Results[0].Error, "panic in page fetch") {
		t.Fatalf("%+v", out.Results)
	}
	if out.Results[1].Class != controller.ClassOK || len(st.gaveUp) != 0 {
		t.Fatalf("the other item is untouched: %+v %v", out.Results[1], st.gaveUp)
	}
	// A panic in the lookup costs its batch: every item deferred, none given up.
	st = newStore(QueuedItem{TrackID: 98, Attempts: controller.MaxItemAttempts - 1}, QueuedItem{TrackID: fixtureID})
	r.Store = st
	r.Upstream = &panicky{Client: upstream.Client{HTTP: srv.Client(), Timeout: 5 * time.Second}, lookups: true}
	out = r.Run(context.Background(), controller.RunPlan{BatchSize: 2, ChunkItems: 2})
	for _, res := range out.Results {
		if res.Class != controller.ClassTimeout || !res.Deferred || !strings.Contains(res.Error, "panic in lookup fetch") {
			t.Fatalf("%+v", out.Results)
		}
	}
	if len(out.Results) != 2 || len(st.gaveUp)+len(st.requeued) != 0 {
		t.Fatalf("results %+v, gave up %v, requeued %v", out.Results, st.gaveUp, st.requeued)
	}
}

// TestRunLooksUpInBatches: the items of a run are looked up in batches, one
// request each. An id the answer leaves out is not found for that app
// alone; an id asked twice is sent once; a batch that fails (refused, 5xx,
// a connection dropped mid-body, an answer cut short or refused) is the
// fate of all its items, never one of their attempts, and one request for
// the pacing.
func TestRunLooksUpInBatches(t *testing.T) {
	uber := fixture(t, "lookup_us_uber_2017.json")
	answer := lookupAnswer(uber, "11,12,13", nil, nil)
	status := func(code int, retryAfter string) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			if retryAfter != "" {
				w.Header().Set("Retry-After", retryAfter)
			}
			w.WriteHeader(code)
		}
	}
	last := controller.MaxItemAttempts - 1
	items := func(ids ...int64) []QueuedItem {
		var out []QueuedItem
		for _, id := range ids {
			out = append(out, QueuedItem{TrackID: id, Attempts: last})
		}
		return out
	}
	type check struct {
		picked   int
		asked    []string           // id lists the lookups asked
		classes  []controller.Class // per attempted item
		reqItems []int              // RequestOutcome.Item, in send order
		lookup   controller.Class   // class of the first request (the first batch)
		failed   bool               // the batch failed as a whole: deferred or kept, never counted
		retryS   int                // the batch's Retry-After
	}
	tests := []struct {
		name   string
		items  []QueuedItem
		plan   controller.RunPlan
		lookup http.HandlerFunc
		limit  bool // our own global cap refuses the batch
		want   check
	}{
		{name: "an id left out of the answer is not found for that app alone", items: items(fixtureID, 7, 11),
			want: check{picked: 3, asked: []string{"368677368,7,11"}, classes: []controller.Class{"ok", "not_found", "ok"}, reqItems: []int{0, 0, 2}, lookup: "ok"}},
		{name: "an id asked twice is sent once", items: items(11, 11, 12),
			want: check{picked: 3, asked: []string{"11,12"}, classes: []controller.Class{"ok", "ok", "ok"}, reqItems: []int{0, 0, 1, 2}, lookup: "ok"}},
		{name: "batches of LOOKUP_BATCH, each before the pages of its items", items: items(11, 12, 13, 14, 15), plan: controller.RunPlan{LookupBatch: 2, ChunkItems: 3},
			want: check{picked: 5, asked: []string{"11,12", "13,14", "15"}, classes: []controller.Class{"ok", "ok", "ok", "ok", "ok"}, reqItems: []int{0, 0, 1, 2, 2, 3, 4, 4}, lookup: "ok"}},
		{name: "a refused batch stops the run: the rest stay queued, untouched", items: items(11, 12, 13), plan: controller.RunPlan{ChunkItems: 1, StopOnThrottle: true},
			lookup: status(429, "30"),
			want:   check{picked: 1, asked: []string{"11,12,13"}, classes: []controller.Class{"rate_limit"}, reqItems: []int{0}, lookup: "rate_limit", failed: true, retryS: 30}},
		{name: "a refused batch is the fate of all its items", items: items(11, 12, 13), plan: controller.RunPlan{ChunkItems: 2, ChunkPauseMs: 500},
			lookup: status(403, ""),
			want:   check{picked: 3, asked: []string{"11,12,13"}, classes: []controller.Class{"rate_limit", "rate_limit", "rate_limit"}, reqItems: []int{0}, lookup: "rate_limit", failed: true}},
		{name: "our own global cap refuses the batch", items: items(11, 12), plan: controller.RunPlan{ChunkItems: 2, StopOnThrottle: true}, limit: true,
			want: check{picked: 2, classes: []controller.Class{"rate_limit", "rate_limit"}, reqItems: []int{0}, lookup: "rate_limit", failed: true}},
		{name: "a 5xx defers every item of the batch", items: items(11, 12), lookup: status(503, ""),
			want: check{picked: 2, asked: []string{"11,12"}, classes: []controller.Class{"server_error", "server_error"}, reqItems: []int{0}, lookup: "server_error", failed: true}},
		{name: "a connection dropped mid-body defers every item", items: items(11, 12, 13),
			lookup: func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Length", strconv.Itoa(len(answer)))
				w.Write(answer[:len(answer)/2])
				w.(http.Flusher).Flush()
				panic(http.ErrAbortHandler) // the connection closes mid-body
			},
			want: check{picked: 3, asked: []string{"11,12,13"}, classes: []controller.Class{"timeout", "timeout", "timeout"}, reqItems: []int{0}, lookup: "timeout", failed: true}},
		{name: "an answer cut short says nothing about any one app: deferred, not counted", items: items(11, 12, 13),
			lookup: func(w http.ResponseWriter, _ *http.Request) { w.Write(answer[:len(answer)/2]) },
			want:   check{picked: 3, asked: []string{"11,12,13"}, classes: []controller.Class{"parse_error", "parse_error", "parse_error"}, reqItems: []int{0}, lookup: "parse_error", failed: true}},
		{name: "a 404 from the lookup endpoint is not every app not found", items: items(11, 12), lookup: status(404, ""),
			want: check{picked: 2, asked: []string{"11,12"}, classes: []controller.Class{"parse_error", "parse_error"}, reqItems: []int{0}, lookup: "not_found", failed: true}},
		{name: "a 400 (too many ids) is not the apps' fault", items: items(11, 12), lookup: status(400, ""),
			want: check{picked: 2, asked: []string{"11,12"}, classes: []controller.Class{"parse_error", "parse_error"}, reqItems: []int{0}, lookup: "parse_error", failed: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var inflight, peak int
			srv := fixtureUpstream(t, &inflight, &peak)
			defer srv.Close()
			srv.lookup = tt.lookup
			st := newStore(tt.items...)
			r, _, _, sleeps := newRunner(t, srv, st)
			if tt.limit {
				r.Limit = func(context.Context, int, func(context.Context) error) error { return ErrLimited }
			}
			plan := tt.plan
			plan.BatchSize = len(tt.items)
			out := r.Run(context.Background(), plan)
			w := tt.want
			if out.Picked != w.picked || out.Skipped != len(tt.items)-w.picked || fmt.Sprint(srv.asked()) != fmt.Sprint(w.asked) {
				t.Fatalf("picked %d skipped %d, lookups %q; want %d, %q", out.Picked, out.Skipped, srv.asked(), w.picked, w.asked)
			}
			var reqItems []int
			for _, rq := range out.Requests {
				reqItems = append(reqItems, rq.Item)
			}
			if fmt.Sprint(reqItems) != fmt.Sprint(w.reqItems) || out.Requests[0].Class != w.lookup {
				t.Fatalf("requests %+v, want items %v, the lookup's class %s", out.Requests, w.reqItems, w.lookup)
			}
			for i, res := range out.Results {
				if res.Class != w.classes[i] || res.BatchFailed != w.failed {
					t.Errorf("item %d: %+v, want class %s, batch failed %v", i, res, w.classes[i], w.failed)
				}
			}
			if w.failed {
				// Never the items' own attempt, however many they had.
				if len(st.requeued)+len(st.gaveUp)+len(st.missing)+len(st.saved)+len(st.lookups) != 0 {
					t.Fatalf("requeued %v gave up %v missing %v saved %v lookups %v", st.requeued, st.gaveUp, st.missing, st.saved, st.lookups)
				}
				for _, res := range out.Results {
					if refused := res.Class == controller.ClassRateLimit; res.Deferred == refused || !strings.Contains(res.Error, "lookup batch") && !strings.Contains(res.Error, "rate limiter") {
						t.Errorf("refused items are kept, others deferred: %+v", res)
					}
				}
				if out.Results[0].RetryAfterS != w.retryS || out.Requests[0].RetryAfterMs != int64(w.retryS)*1000 {
					t.Errorf("Retry-After: %+v %+v, want %d s", out.Results[0], out.Requests[0], w.retryS)
				}
				if len(*sleeps) != 0 {
					t.Errorf("no pause between chunks that sent nothing: %v", *sleeps)
				}
			}
		})
	}
}

// TestLookupBatchFitsOneBody: the answer to a lookup of MaxLookupBatch apps
// fits one answer's body bound (upstream.MaxBodyBytes), or every batch that
// size would fail as too large. lookupResultBound is what one app's result
// is held to: twice the largest real result kept in testdata (an app at the
// store's text limits has a longer description and release notes).
func TestLookupBatchFitsOneBody(t *testing.T) {
	const lookupResultBound = 20 << 10
	if controller.MaxLookupBatch*lookupResultBound+1024 > upstream.MaxBodyBytes {
		t.Fatalf("%d results of %d bytes exceed %d", controller.MaxLookupBatch, lookupResultBound, upstream.MaxBodyBytes)
	}
	largest := 0
	for _, name := range []string{"lookup_us_uber_2017.json", "lookup_us_two_apps_2017.json", "lookup_hk_whatsapp_2018.json", "search_us_software_tsubasa_2021.json"} {
		var env struct{ Results []json.RawMessage }
		if err := json.Unmarshal(fixture(t, name), &env); err != nil {
			t.Fatal(err)
		}
		for _, raw := range env.Results {
			var compact bytes.Buffer
			json.Compact(&compact, raw)
			largest = max(largest, compact.Len())
		}
	}
	if largest == 0 || 2*largest > lookupResultBound {
		t.Fatalf("largest real result %d bytes: the bound %d leaves less than twice that", largest, lookupResultBound)
	}
}

// An item whose stored lookup (from a lookup or a search) is
// within LookupFreshS needs only its page; a stale one, or one never
// looked up, goes in a lookup batch. With NoLookups (the API host held)
// only the fresh ones run and the rest stay queued, untouched.
func TestFreshStoredLookupsSkipTheLookup(t *testing.T) {
	now := time.Now()
	stored := func(id int64, age time.Duration) QueuedItem {
		app := appstore.App{TrackID: id, Name: fmt.Sprint("stored ", id), RatingCount: 1000 + id, Version: "1.0", Languages: []string{"EN"}}
		return QueuedItem{TrackID: id, Lookup: &app, LookupAt: now.Add(-age)}
	}
	plan := controller.RunPlan{BatchSize: 4, ChunkItems: 4, LookupFreshS: int64((24 * time.Hour).Seconds())}
	for _, tt := range []struct {
		name      string
		noLookups bool
		// wantAsked: the lookups sent; wantSaved: the apps enriched, by
		// whether their fields came from the store.
		wantAsked []string
		wantSaved map[int64]bool
		skipped   int
	}{
		{name: "fresh first, the rest batched", wantAsked: []string{"3,4"},
			wantSaved: map[int64]bool{fixtureID: true, fixtureID + 1: true}},
		{name: "API host held: only the fresh", noLookups: true, wantAsked: nil,
			wantSaved: map[int64]bool{fixtureID: true, fixtureID + 1: true}, skipped: 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var inflight, peak int
			srv := fixtureUpstream(t, &inflight, &peak)
			defer srv.Close()
			st := newStore(QueuedItem{TrackID: 3}, stored(fixtureID, time.Hour), stored(4, 48*time.Hour), stored(fixtureID+1, 23*time.Hour))
			r, _, _, _ := newRunner(t, srv, st)
			p := plan
			p.NoLookups = tt.noLookups
			out := r.Run(context.Background(), p)
			if fmt.Sprint(srv.asked()) != fmt.Sprint(tt.wantAsked) || out.Skipped != tt.skipped {
				t.Fatalf("lookups %q skipped %d, want %q and %d", srv.asked(), out.Skipped, tt.wantAsked, tt.skipped)
			}
			for id := range tt.wantSaved {
				rec, ok := st.saved[id]
				if !ok || rec.App.Name != fmt.Sprint("stored ", id) || !rec.LookupAt.Equal(now.Add(-map[int64]time.Duration{fixtureID: time.Hour, fixtureID + 1: 23 * time.Hour}[id])) {
					t.Fatalf("app %d enriched from its stored lookup: %+v (saved %v)", id, rec, ok)
				}
			}
			stored := 0
			for _, res := range out.Results {
				if res.StoredLookup {
					stored++
				}
			}
			lookups := 0
			for _, rq := range out.Requests {
				if rq.Kind == controller.RequestLookup {
					lookups++
				}
			}
			if stored != 2 || lookups != len(tt.wantAsked) {
				t.Fatalf("%d results from stored lookups, %d lookup requests: %+v", stored, lookups, out.Requests)
			}
		})
	}
	// Freshness off (0): every item is looked up.
	var inflight, peak int
	srv := fixtureUpstream(t, &inflight, &peak)
	defer srv.Close()
	st := newStore(stored(fixtureID, time.Minute), QueuedItem{TrackID: 3})
	r, _, _, _ := newRunner(t, srv, st)
	r.Run(context.Background(), controller.RunPlan{BatchSize: 2, ChunkItems: 2})
	if fmt.Sprint(srv.asked()) != fmt.Sprint([]string{fmt.Sprintf("%d,3", fixtureID)}) {
		t.Fatalf("with freshness off: lookups %q", srv.asked())
	}
}

// A tick's pages are put once, in one object, whatever the number of
// items; a failed put is tried once more, and a put that fails twice
// loses the tick's pages but never its records.
func TestRunPutsItsPagesOnce(t *testing.T) {
	var inflight, peak int
	srv := fixtureUpstream(t, &inflight, &peak)
	defer srv.Close()
	for _, c := range []struct {
		name       string
		fail, puts int
		stored     bool
	}{{"first put", 0, 1, true}, {"put again", 1, 2, true}, {"put failed", 2, 2, false}} {
		t.Run(c.name, func(t *testing.T) {
			var items []QueuedItem
			for i := int64(0); i < 6; i++ {
				items = append(items, QueuedItem{TrackID: fixtureID})
			}
			st := newStore(items...)
			r, cache, _, _ := newRunner(t, srv, st)
			cache.fail = c.fail
			out := r.Run(context.Background(), controller.RunPlan{TickAt: 1795627800123, BatchSize: 6, ChunkItems: 2})
			if out.PagePuts != c.puts || cache.puts != c.puts {
				t.Fatalf("%d puts (outcome %d), want %d", cache.puts, out.PagePuts, c.puts)
			}
			rec, ok := st.saved[fixtureID]
			if !ok || !strings.HasPrefix(rec.HTMLKey, "store-pages/batches/2026-11-25/us-1795627800123-368677368.gz#") {
				t.Fatalf("the record is kept, its page in the tick's batch: %+v", rec.HTMLKey)
			}
			if got := cache.page(rec.HTMLKey) != nil; got != c.stored || (c.stored && cache.pages != 6) {
				t.Fatalf("page readable %v, want %v (%d pages stored)", got, c.stored, cache.pages)
			}
			for _, res := range out.Results {
				if res.Class != controller.ClassOK {
					t.Fatalf("a put after the items never fails them: %+v", res)
				}
			}
		})
	}
}
