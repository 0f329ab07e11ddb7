package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"storecrawl/worker/appstore"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestLookupRoute(t *testing.T) {
	ts, _ := newTestServer(t, calmConfig())
	a, _ := testCatalogue().Get(baseTrackID + 5)

	tests := []struct {
		name       string
		query      string
		wantStatus int
		wantCount  int
	}{
		{"known id", fmt.Sprintf("id=%d", a.ID), http.StatusOK, 1},
		{"known id with country", fmt.Sprintf("id=%d&country=us", a.ID), http.StatusOK, 1},
		{"unknown id above range", fmt.Sprintf("id=%d", baseTrackID+testApps+1), http.StatusOK, 0},
		{"unknown id below range", "id=7", http.StatusOK, 0},
		{"non-numeric id", "id=abc", http.StatusBadRequest, -1},
		{"missing id", "", http.StatusBadRequest, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := get(t, ts.URL+"/lookup?"+tt.query)
			if r.status != tt.wantStatus {
				t.Fatalf("status %d, want %d: %s", r.status, tt.wantStatus, r.body)
			}
			if tt.wantCount < 0 {
				return
			}
			resp := decodeJSON[lookupResponse](t, r.body)
			if resp.ResultCount != tt.wantCount || len(resp.Results) != tt.wantCount {
				t.Fatalf("resultCount %d / %d results, want %d", resp.ResultCount, len(resp.Results), tt.wantCount)
			}
			if tt.wantCount == 1 {
				got := resp.Results[0]
				wantURL := fmt.Sprintf("%s/us/app/%s/id%d", ts.URL, a.Slug, a.ID)
				if got.TrackID != a.ID || got.TrackViewURL != wantURL || got.Kind != "software" ||
					got.FileSizeBytes != fmt.Sprint(a.FileSize) {
					t.Fatalf("unexpected result %+v", got)
				}
			}
		})
	}
	// The raw JSON must carry fileSizeBytes as a string, like iTunes.
	r := get(t, fmt.Sprintf("%s/lookup?id=%d", ts.URL, a.ID))
	if want := fmt.Sprintf(`"fileSizeBytes":"%d"`, a.FileSize); !strings.Contains(string(r.body), want) {
		t.Fatalf("body lacks %s", want)
	}
}

// TestLookupOfSeveralIDs: a lookup of several ids answers, as the real
// endpoint does, one result per id it knows in the order asked, leaves
// the unknown ones out, and costs one token.
func TestLookupOfSeveralIDs(t *testing.T) {
	known := func(off int64) int64 { return baseTrackID + off }
	unknown := int64(baseTrackID + testApps + 1)
	ids := func(n int) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = fmt.Sprint(known(int64(i%testApps + 1)))
		}
		return strings.Join(parts, ",")
	}
	tests := []struct {
		name   string
		query  string
		status int
		want   []int64 // trackIds, in order
	}{
		{"in the order asked", fmt.Sprintf("id=%d,%d,%d", known(3), known(1), known(2)), 200, []int64{known(3), known(1), known(2)}},
		{"unknown ids left out", fmt.Sprintf("id=%d,%d,7,%d&country=us", known(5), unknown, known(4)), 200, []int64{known(5), known(4)}},
		{"none known", fmt.Sprintf("id=%d,7", unknown), 200, []int64{}},
		{"an id asked twice is answered once", fmt.Sprintf("id=%d,%d,%d", known(2), known(9), known(2)), 200, []int64{known(2), known(9)}},
		{"broken-page ids have a lookup", fmt.Sprintf("id=%d,%d", known(brokenPageEvery), known(1)), 200, []int64{known(brokenPageEvery), known(1)}},
		{"up to the cap", "id=" + ids(maxLookupIDs), 200, nil},
		{"beyond the cap", "id=" + ids(maxLookupIDs+1), 400, nil},
		{"a bad id in the list", fmt.Sprintf("id=%d,abc", known(1)), 400, nil},
		{"an empty id in the list", fmt.Sprintf("id=%d,,%d", known(1), known(2)), 400, nil},
		{"a trailing comma", fmt.Sprintf("id=%d,", known(1)), 400, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts, _ := newTestServer(t, Config{RatePerMin: 1, Burst: 1, OnExceed: 429})
			r := get(t, ts.URL+"/lookup?"+tt.query)
			if r.status != tt.status {
				t.Fatalf("status %d, want %d: %.200s", r.status, tt.status, r.body)
			}
			if tt.status != 200 {
				if e := decodeJSON[itunesError](t, r.body); e.ErrorMessage != "Invalid value(s) for key(s): [id]" {
					t.Fatalf("error body %s", r.body)
				}
				return
			}
			resp := decodeJSON[lookupResponse](t, r.body)
			if resp.ResultCount != len(resp.Results) {
				t.Fatalf("resultCount %d, %d results", resp.ResultCount, len(resp.Results))
			}
			if tt.want == nil {
				if len(resp.Results) != maxLookupIDs {
					t.Fatalf("%d results for %d known ids", len(resp.Results), maxLookupIDs)
				}
			} else {
				got := []int64{}
				for _, res := range resp.Results {
					got = append(got, res.TrackID)
				}
				if fmt.Sprint(got) != fmt.Sprint(tt.want) {
					t.Fatalf("trackIds %v, want %v", got, tt.want)
				}
			}
			// However many ids: one token (the bucket of one is now empty).
			if r := get(t, fmt.Sprintf("%s/lookup?id=%d", ts.URL, known(1))); r.status != 429 {
				t.Fatalf("second lookup: %d, want 429", r.status)
			}
			st := decodeJSON[Stats](t, get(t, ts.URL+"/__stats").body).ByRoute[routeLookup]
			if st.Served != 1 || st.Refused != 1 {
				t.Fatalf("lookup stats %+v", st)
			}
		})
	}
}

func TestSearchRoute(t *testing.T) {
	ts, _ := newTestServer(t, calmConfig())
	tests := []struct {
		query      string
		wantStatus int
		wantMax    int
	}{
		{"term=budget", http.StatusOK, defaultListLimit},
		{"term=BUDGET&limit=3", http.StatusOK, 3},
		{"term=a&limit=100000", http.StatusOK, maxListLimit}, // > 200 names contain "a"
		{"term=zzzz-no-such-app", http.StatusOK, 0},
		{"term=", http.StatusBadRequest, 0},
		{"term=budget&limit=0", http.StatusBadRequest, 0},
		{"term=budget&limit=x", http.StatusBadRequest, 0},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			r := get(t, ts.URL+"/search?"+tt.query)
			if r.status != tt.wantStatus {
				t.Fatalf("status %d, want %d", r.status, tt.wantStatus)
			}
			if r.status != http.StatusOK {
				return
			}
			resp := decodeJSON[lookupResponse](t, r.body)
			term := strings.ToLower(strings.TrimPrefix(strings.Split(tt.query, "&")[0], "term="))
			want := 0
			for _, a := range testCatalogue().All() {
				if strings.Contains(strings.ToLower(a.Name), term) {
					want++
				}
			}
			want = min(want, tt.wantMax)
			if len(resp.Results) != want || resp.ResultCount != want {
				t.Fatalf("%d results, want %d", len(resp.Results), want)
			}
			for i, res := range resp.Results {
				if !strings.Contains(strings.ToLower(res.TrackName), term) {
					t.Errorf("result %q does not match %q", res.TrackName, term)
				}
				if i > 0 && ratingCount(res) > ratingCount(resp.Results[i-1]) {
					t.Errorf("results not sorted by rating count at %d", i)
				}
			}
		})
	}
}

func TestChartsRoute(t *testing.T) {
	ts, _ := newTestServer(t, calmConfig())
	cat := testCatalogue()
	tests := []struct {
		path       string
		wantStatus int
		member     func(*App) bool
		score      func(*App) int64
	}{
		{"/us/rss/topfreeapplications/limit=50/json", http.StatusOK,
			func(a *App) bool { return a.Price == 0 }, func(a *App) int64 { return a.RatingCount }},
		{"/us/rss/toppaidapplications/limit=5/json", http.StatusOK,
			func(a *App) bool { return a.Price > 0 }, func(a *App) int64 { return a.RatingCount }},
		{"/gb/rss/topgrossingapplications/limit=50/genre=6014/json", http.StatusOK,
			func(a *App) bool { return a.Genre.ID == 6014 && (a.Price > 0 || len(a.IAPs) > 0) },
			func(a *App) int64 { return a.RatingCount * int64(1+len(a.IAPs)) }},
		{"/us/rss/topfreeapplications/limit=50/genre=1/json", http.StatusOK, func(*App) bool { return false }, nil},
		{"/us/rss/topfreeapplications/json", http.StatusOK,
			func(a *App) bool { return a.Price == 0 }, func(a *App) int64 { return a.RatingCount }},
		{"/us/rss/bogus/limit=5/json", http.StatusNotFound, nil, nil},
		{"/us/rss/topfreeapplications/limit=5/xmlish", http.StatusNotFound, nil, nil},
		{"/us/rss/topfreeapplications/genre=x/json", http.StatusNotFound, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			r := get(t, ts.URL+tt.path)
			if r.status != tt.wantStatus {
				t.Fatalf("status %d, want %d: %s", r.status, tt.wantStatus, r.body)
			}
			if r.status != http.StatusOK {
				return
			}
			limit := 50
			switch {
			case strings.Contains(tt.path, "limit=5/"):
				limit = 5
			case !strings.Contains(tt.path, "limit="):
				limit = rssDefaultLimit
			}
			members := 0
			for i := range cat.All() {
				if tt.member(&cat.All()[i]) {
					members++
				}
			}
			entries, err := appstore.ParseChart(r.body)
			if err != nil {
				t.Fatal(err)
			}
			if len(entries) != min(members, limit) {
				t.Fatalf("%d entries, want %d", len(entries), min(members, limit))
			}
			for i, e := range entries {
				a, ok := cat.Get(e.TrackID)
				if !ok || !tt.member(a) || e.Rank != i+1 || e.Name != a.Name {
					t.Fatalf("bad entry %d: %+v", i, e)
				}
				if i > 0 {
					prev, _ := cat.Get(entries[i-1].TrackID)
					if tt.score(prev) < tt.score(a) {
						t.Fatalf("entry %d out of order", i)
					}
				}
			}
		})
	}
}

func TestPageRouteStatuses(t *testing.T) {
	ts, _ := newTestServer(t, calmConfig())
	a, _ := testCatalogue().Get(baseTrackID + 1)
	tests := []struct {
		path       string
		wantStatus int
		wantHeader bool
	}{
		{fmt.Sprintf("/us/app/%s/id%d", a.Slug, a.ID), http.StatusOK, true},
		{fmt.Sprintf("/gb/app/wrong-slug/id%d", a.ID), http.StatusOK, true},
		{fmt.Sprintf("/us/app/id%d", a.ID), http.StatusOK, true}, // slug is optional
		{fmt.Sprintf("/us/app/x/id%d", baseTrackID+brokenPageEvery), http.StatusOK, false},
		{fmt.Sprintf("/us/app/x/id%d", baseTrackID+testApps+1), http.StatusNotFound, false},
		{fmt.Sprintf("/us/app/x/%d", a.ID), http.StatusNotFound, false},
		{"/us/app/x/idabc", http.StatusNotFound, false},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			r := get(t, ts.URL+tt.path)
			if r.status != tt.wantStatus {
				t.Fatalf("status %d, want %d", r.status, tt.wantStatus)
			}
			if got := strings.Contains(string(r.body), productDataTags[0]); got != tt.wantHeader {
				t.Fatalf("has product data = %v, want %v", got, tt.wantHeader)
			}
		})
	}
}

func TestRefusals(t *testing.T) {
	a, _ := testCatalogue().Get(baseTrackID + 1)
	lookup := fmt.Sprintf("/lookup?id=%d", a.ID)
	page := fmt.Sprintf("/us/app/%s/id%d", a.Slug, a.ID)
	tests := []struct {
		name           string
		cfg            Config
		wantStatus     int
		wantRetryAfter string
	}{
		{"429 without Retry-After", Config{RatePerMin: 1, Burst: 2, OnExceed: 429}, 429, ""},
		{"429 with Retry-After", Config{RatePerMin: 1, Burst: 2, OnExceed: 429, RetryAfterS: 30}, 429, "30"},
		{"403", Config{RatePerMin: 1, Burst: 2, OnExceed: 403, RetryAfterS: 5}, 403, "5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts, _ := newTestServer(t, tt.cfg)
			// Tokens are shared across routes.
			for _, p := range []string{lookup, page} {
				if r := get(t, ts.URL+p); r.status != http.StatusOK {
					t.Fatalf("%s: status %d within burst", p, r.status)
				}
			}
			for _, p := range []string{lookup, page, "/search?term=a", "/us/rss/topfreeapplications/limit=10/json"} {
				r := get(t, ts.URL+p)
				if r.status != tt.wantStatus || r.header.Get("Retry-After") != tt.wantRetryAfter {
					t.Fatalf("%s: status %d Retry-After %q, want %d %q", p, r.status,
						r.header.Get("Retry-After"), tt.wantStatus, tt.wantRetryAfter)
				}
			}
			// Admin routes are never limited.
			for _, p := range []string{"/health", "/__stats"} {
				if r := get(t, ts.URL+p); r.status != http.StatusOK {
					t.Fatalf("%s limited: %d", p, r.status)
				}
			}
		})
	}
}

func TestBlockStormAndRecovery(t *testing.T) {
	cfg := Config{RatePerMin: 600, Burst: 1, OnExceed: 403, BlockS: 60}
	ts, clock := newTestServer(t, cfg)
	lookup := fmt.Sprintf("%s/lookup?id=%d", ts.URL, baseTrackID+1)

	status := func() int { return get(t, lookup).status }
	if s := status(); s != http.StatusOK {
		t.Fatalf("first request: %d", s)
	}
	if s := status(); s != http.StatusForbidden {
		t.Fatalf("over limit: %d, want 403", s)
	}
	st := decodeJSON[Stats](t, get(t, ts.URL+"/__stats").body)
	if want := t0.Add(60 * time.Second).UnixMilli(); st.BlockedUntilMS != want {
		t.Fatalf("blocked_until_ms = %d, want %d", st.BlockedUntilMS, want)
	}
	clock.Advance(30 * time.Second) // bucket is full again, but the block holds
	if s := status(); s != http.StatusForbidden {
		t.Fatalf("inside block: %d, want 403", s)
	}
	clock.Advance(30 * time.Second)
	if s := status(); s != http.StatusOK {
		t.Fatalf("after block: %d, want 200", s)
	}

	// Re-trigger, then calm it via /__config: block cleared immediately.
	status()
	if s := status(); s != http.StatusForbidden {
		t.Fatalf("re-trigger: %d", s)
	}
	r := do(t, http.MethodPost, ts.URL+"/__config", `{"burst":3,"block_s":0}`)
	if r.status != http.StatusOK {
		t.Fatalf("config: %d %s", r.status, r.body)
	}
	if got := decodeJSON[Config](t, r.body); got.Burst != 3 || got.BlockS != 0 || got.OnExceed != 403 {
		t.Fatalf("config answer %+v", got)
	}
	for i := range 3 {
		if s := status(); s != http.StatusOK {
			t.Fatalf("after calm, request %d: %d (bucket must refill to burst)", i, s)
		}
	}
	if s := status(); s != http.StatusForbidden {
		t.Fatalf("new burst exceeded: %d", s)
	}
}

func TestStatsAndReset(t *testing.T) {
	ts, _ := newTestServer(t, Config{RatePerMin: 1, Burst: 3, OnExceed: 429})
	get(t, fmt.Sprintf("%s/lookup?id=%d", ts.URL, baseTrackID+1))
	get(t, fmt.Sprintf("%s/lookup?id=%d", ts.URL, baseTrackID+testApps+5)) // not found
	get(t, ts.URL+"/us/app/x/id1")                                         // not found
	get(t, ts.URL+"/search?term=a")                                        // refused
	get(t, ts.URL+"/health")                                               // not counted

	st := decodeJSON[Stats](t, get(t, ts.URL+"/__stats").body)
	want := Stats{
		Served: 3, Refused: 1, NotFound: 2,
		ByRoute: map[string]RouteStats{
			routeLookup: {Served: 2, NotFound: 1},
			routePage:   {Served: 1, NotFound: 1},
			routeSearch: {Refused: 1},
			routeCharts: {},
		},
		ByHost: map[string]RouteStats{hostAPI: {Served: 2, Refused: 1, NotFound: 1}, hostStore: {Served: 1, NotFound: 1}},
		Config: Config{RatePerMin: 1, Burst: 3, OnExceed: 429},
	}
	if fmt.Sprint(st) != fmt.Sprint(want) {
		t.Fatalf("stats\n got %+v\nwant %+v", st, want)
	}

	r := do(t, http.MethodPost, ts.URL+"/__stats/reset", "")
	if r.status != http.StatusOK {
		t.Fatalf("reset: %d", r.status)
	}
	st = decodeJSON[Stats](t, get(t, ts.URL+"/__stats").body)
	if st.Served != 0 || st.Refused != 0 || st.NotFound != 0 || st.ByRoute[routeLookup] != (RouteStats{}) {
		t.Fatalf("not reset: %+v", st)
	}
}

// With store_rate_per_min the store host refuses on its own limit, and
// refusals on one host leave the other's bucket alone; without it both
// hosts share one bucket.
func TestEachHostHasItsOwnLimit(t *testing.T) {
	cfg := calmConfig()
	cfg.RatePerMin, cfg.Burst = 1, 2
	cfg.StoreRatePerMin, cfg.StoreBurst = 1, 3
	ts, _ := newTestServer(t, cfg)
	for range 4 {
		get(t, ts.URL+"/lookup?id=1")
		get(t, ts.URL+"/us/app/id1")
	}
	st := decodeJSON[Stats](t, get(t, ts.URL+"/__stats").body)
	if api, store := st.ByHost[hostAPI], st.ByHost[hostStore]; api.Served != 2 || api.Refused != 2 || store.Served != 3 || store.Refused != 1 {
		t.Fatalf("per-host limits: api %+v store %+v", api, store)
	}

	// One shared bucket of 2: four lookups, then pages, all from it.
	r := do(t, http.MethodPost, ts.URL+"/__config", `{"store_rate_per_min": 0}`)
	if r.status != http.StatusOK {
		t.Fatalf("config: %d %s", r.status, r.body)
	}
	do(t, http.MethodPost, ts.URL+"/__stats/reset", "")
	get(t, ts.URL+"/lookup?id=1")
	get(t, ts.URL+"/us/app/id1")
	get(t, ts.URL+"/us/app/id1")
	st = decodeJSON[Stats](t, get(t, ts.URL+"/__stats").body)
	if api, store := st.ByHost[hostAPI], st.ByHost[hostStore]; api.Served != 1 || store.Served != 1 || store.Refused != 1 {
		t.Fatalf("shared limit: api %+v store %+v", api, store)
	}
	if r := do(t, http.MethodPost, ts.URL+"/__config", `{"store_rate_per_min": -1}`); r.status != http.StatusBadRequest || !strings.Contains(string(r.body), "store_rate_per_min") {
		t.Fatalf("a negative store limit: %d %s", r.status, r.body)
	}
}

func TestConfigEndpoint(t *testing.T) {
	ts, _ := newTestServer(t, calmConfig())
	tests := []struct {
		method, body string
		wantStatus   int
		wantField    string
	}{
		{http.MethodPost, `{"rate_per_min":30,"on_exceed":403}`, http.StatusOK, ""},
		{http.MethodPost, `{"rate_per_min":30,"bogus":true}`, http.StatusBadRequest, "bogus"},
		{http.MethodPost, `{"latency_ms":-5}`, http.StatusBadRequest, "latency_ms"},
		{http.MethodPost, `{"on_exceed":"429"}`, http.StatusBadRequest, "on_exceed"},
		{http.MethodPost, `garbage`, http.StatusBadRequest, ""},
		{http.MethodGet, ``, http.StatusMethodNotAllowed, ""},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.body, func(t *testing.T) {
			r := do(t, tt.method, ts.URL+"/__config", tt.body)
			if r.status != tt.wantStatus {
				t.Fatalf("status %d, want %d: %s", r.status, tt.wantStatus, r.body)
			}
			if r.status == http.StatusBadRequest {
				if e := decodeJSON[FieldError](t, r.body); e.Field != tt.wantField || e.Msg == "" {
					t.Fatalf("error body %s, want field %q", r.body, tt.wantField)
				}
			}
		})
	}
	// Only the valid request took effect.
	st := decodeJSON[Stats](t, get(t, ts.URL+"/__stats").body)
	want := calmConfig()
	want.RatePerMin, want.OnExceed = 30, 403
	if st.Config != want {
		t.Fatalf("config %+v, want %+v", st.Config, want)
	}
}

func TestLatencyApplied(t *testing.T) {
	const latency = 40 * time.Millisecond
	cfg := calmConfig()
	cfg.LatencyMS = int(latency / time.Millisecond)
	ts, _ := newTestServer(t, cfg)
	start := time.Now()
	get(t, fmt.Sprintf("%s/lookup?id=%d", ts.URL, baseTrackID+1))
	if d := time.Since(start); d < latency {
		t.Fatalf("lookup took %v, want >= %v", d, latency)
	}
}

// Concurrent clients never get more than the burst with a frozen clock.
func TestConcurrentRequestsRespectBurst(t *testing.T) {
	const burst, clients = 10, 40
	ts, _ := newTestServer(t, Config{RatePerMin: 60, Burst: burst, OnExceed: 429})
	statuses := make(chan int, clients)
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			// Not get(): t.Fatal must not be called off the test goroutine.
			resp, err := http.Get(fmt.Sprintf("%s/lookup?id=%d", ts.URL, baseTrackID+1))
			if err != nil {
				statuses <- 0
				return
			}
			resp.Body.Close()
			statuses <- resp.StatusCode
		})
	}
	wg.Wait()
	close(statuses)
	counts := map[int]int{}
	for s := range statuses {
		counts[s]++
	}
	if counts[200] != burst || counts[429] != clients-burst {
		t.Fatalf("statuses %v, want %d×200 and %d×429", counts, burst, clients-burst)
	}
	st := decodeJSON[Stats](t, get(t, ts.URL+"/__stats").body)
	if st.Served != burst || st.Refused != clients-burst {
		t.Fatalf("stats %+v", st)
	}
}

func TestMarkupShares(t *testing.T) {
	ts, _ := newTestServer(t, calmConfig())
	cat := testCatalogue()
	pageOf := func(off int64) []byte {
		a, _ := cat.Get(baseTrackID + off)
		return get(t, fmt.Sprintf("%s/us/app/%s/id%d", ts.URL, a.Slug, a.ID)).body
	}
	if r := post(t, ts.URL+"/__config", `{"unknown_markup_pct": 100}`); r.status != http.StatusOK {
		t.Fatalf("config: %d %s", r.status, r.body)
	}
	for off := int64(1); off <= 5; off++ {
		if _, err := appstore.ParseStorePage(pageOf(off)); !errors.Is(err, appstore.ErrParse) || errors.Is(err, appstore.ErrSoftBlock) {
			t.Fatalf("an unknown markup is drift, not a challenge: %v", err)
		}
	}
	// A mix: each app keeps its markup; about the configured share is unknown.
	post(t, ts.URL+"/__config", `{"unknown_markup_pct": 30}`)
	unknown := 0
	for off := int64(1); off <= 200; off++ {
		if BrokenPage(baseTrackID + off) {
			continue
		}
		_, err := appstore.ParseStorePage(pageOf(off))
		if err != nil {
			unknown++
		}
		if _, again := appstore.ParseStorePage(pageOf(off)); (again == nil) != (err == nil) {
			t.Fatalf("app %d changed markup between two requests", off)
		}
	}
	if unknown < 40 || unknown > 80 {
		t.Fatalf("%d of ~196 pages unknown at 30%%", unknown)
	}
	for _, bad := range []string{`{"unknown_markup_pct": 101}`, `{"unknown_markup_pct": 60, "current_markup_pct": 50}`} {
		if r := post(t, ts.URL+"/__config", bad); r.status != http.StatusBadRequest {
			t.Fatalf("%s: %d", bad, r.status)
		}
	}
}

func ratingCount(r lookupResult) int64 {
	if r.UserRatingCount == nil {
		return 0
	}
	return *r.UserRatingCount
}

func TestBrokenPagesInBothMarkups(t *testing.T) {
	ts, _ := newTestServer(t, calmConfig())
	for _, cfg := range []string{`{"current_markup_pct": 0}`, `{"current_markup_pct": 100}`} {
		post(t, ts.URL+"/__config", cfg)
		r := get(t, fmt.Sprintf("%s/us/app/x/id%d", ts.URL, baseTrackID+brokenPageEvery))
		if _, err := appstore.ParseStorePage(r.body); r.status != 200 || !errors.Is(err, appstore.ErrParse) {
			t.Fatalf("%s: a truncated page has no product data: %d %v", cfg, r.status, err)
		}
	}
}

// An outage drops connections: the client gets no HTTP answer at all, as
// when the upstream is down, and /__stats counts the drops.
func TestOutageDropsConnections(t *testing.T) {
	cfg := calmConfig()
	cfg.OutagePct = 100
	ts, _ := newTestServer(t, cfg)
	resp, err := http.Get(ts.URL + "/lookup?id=100000001&country=us")
	if err == nil {
		resp.Body.Close()
		t.Fatalf("a full outage answered HTTP %d", resp.StatusCode)
	}
	var st Stats
	r, _ := http.Get(ts.URL + "/__stats")
	json.NewDecoder(r.Body).Decode(&st)
	r.Body.Close()
	if st.ByRoute[routeLookup].Dropped != 1 || st.Served != 0 {
		t.Fatalf("stats: %+v", st)
	}
	r, _ = http.Post(ts.URL+"/__config", "application/json", strings.NewReader(`{"outage_pct": 0}`))
	r.Body.Close()
	if resp, err = http.Get(ts.URL + "/lookup?id=100000001&country=us"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("after the outage: %v", err)
	}
	resp.Body.Close()
}
