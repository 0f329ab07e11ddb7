package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"storecrawl/internal/upstreammodel"
)

// livingApps: 20 niches of ~100 apps, 2 new apps a day.
const livingApps = 2000

var livingRates = func() upstreammodel.Rates {
	r := upstreammodel.DefaultRates()
	r.RemovalsPerDayPerMillion = 20_000 // 2% a day: removals within a test's month
	return r
}()

var livingCatalogue = sync.OnceValue(func() *Catalogue {
	return NewLivingCatalogue(livingApps, 1, defaultEpoch, livingRates)
})

// newLivingServer serves the living catalogue on a fake clock at its epoch.
func newLivingServer(t *testing.T, cfg Config) (*httptest.Server, *fakeClock) {
	t.Helper()
	clock := &fakeClock{now: defaultEpoch}
	ts := httptest.NewServer(NewServer(livingCatalogue(), Options{Config: cfg, Seed: 1, Now: clock.Now}))
	t.Cleanup(ts.Close)
	return ts, clock
}

func lookupIDs(t *testing.T, base string, ids ...int64) []lookupResult {
	t.Helper()
	var parts []string
	for _, id := range ids {
		parts = append(parts, fmt.Sprint(id))
	}
	r := get(t, base+"/lookup?id="+strings.Join(parts, ","))
	if r.status != http.StatusOK {
		t.Fatalf("lookup: %d %s", r.status, r.body)
	}
	return decodeJSON[lookupResponse](t, r.body).Results
}

func search(t *testing.T, base, term string) []lookupResult {
	t.Helper()
	r := get(t, base+"/search?limit=200&term="+url.QueryEscape(term))
	if r.status != http.StatusOK {
		t.Fatalf("search %q: %d %s", term, r.status, r.body)
	}
	return decodeJSON[lookupResponse](t, r.body).Results
}

func hasID(rs []lookupResult, id int64) bool {
	return slices.ContainsFunc(rs, func(r lookupResult) bool { return r.TrackID == id })
}

func TestLivingNewAppsAppearAndAreFound(t *testing.T) {
	ts, clock := newLivingServer(t, calmConfig())
	w := livingCatalogue().living.w
	off := int64(livingApps) + 1
	s := w.Static(off)
	id := baseTrackID + off
	if got := lookupIDs(t, ts.URL, id); len(got) != 0 {
		t.Fatalf("a new app is served before it appears: %+v", got)
	}
	if r := get(t, fmt.Sprintf("%s/us/app/id%d", ts.URL, id)); r.status != http.StatusNotFound {
		t.Fatalf("its page before it appears: %d", r.status)
	}
	clock.Advance(s.Appear.Sub(defaultEpoch))
	got := lookupIDs(t, ts.URL, id)
	if len(got) != 1 || got[0].Version != "1.0" || got[0].ReleaseDate != s.Appear.Format(time.RFC3339) || got[0].UserRatingCount != nil {
		t.Fatalf("the new app at its appearance: %+v", got)
	}
	if !hasID(search(t, ts.URL, got[0].TrackName), id) {
		t.Fatalf("search for %q does not find the new app", got[0].TrackName)
	}
	if r := get(t, fmt.Sprintf("%s/us/app/id%d", ts.URL, id)); r.status != http.StatusOK {
		t.Fatalf("its page: %d", r.status)
	}
}

func TestLivingRemovedApps404(t *testing.T) {
	ts, clock := newLivingServer(t, calmConfig())
	w := livingCatalogue().living.w
	var s upstreammodel.Static
	for off := int64(1); ; off++ {
		if s = w.Static(off); !s.Removed.IsZero() && s.Removed.Before(defaultEpoch.Add(30*24*time.Hour)) && !BrokenPage(baseTrackID+off) {
			break
		}
	}
	id := baseTrackID + s.Off
	name := lookupIDs(t, ts.URL, id)[0].TrackName
	clock.Advance(s.Removed.Sub(defaultEpoch))
	if r := get(t, fmt.Sprintf("%s/us/app/id%d", ts.URL, id)); r.status != http.StatusNotFound {
		t.Fatalf("a removed app's page: %d", r.status)
	}
	if got := lookupIDs(t, ts.URL, id); len(got) != 0 {
		t.Fatalf("a removed app is looked up: %+v", got)
	}
	if hasID(search(t, ts.URL, name), id) {
		t.Fatal("search finds a removed app")
	}
}

// A month on, apps have gained ratings and some shipped versions, and the
// answers show it.
func TestLivingAppsChangeOverAMonth(t *testing.T) {
	ts, clock := newLivingServer(t, calmConfig())
	var ids []int64
	for off := int64(1); off <= 200; off++ {
		ids = append(ids, baseTrackID+off)
	}
	before := lookupIDs(t, ts.URL, ids...)
	clock.Advance(30 * 24 * time.Hour)
	after := lookupIDs(t, ts.URL, ids...)
	byID := map[int64]lookupResult{}
	for _, r := range after {
		byID[r.TrackID] = r
	}
	var grew, shipped int
	for _, b := range before {
		a, ok := byID[b.TrackID]
		if !ok {
			continue // removed
		}
		if ratingCount(a) > ratingCount(b) {
			grew++
		}
		if a.Version != b.Version {
			shipped++
			if a.CurrentVersionReleaseDate <= b.CurrentVersionReleaseDate {
				t.Fatalf("app %d shipped %s without a later date", a.TrackID, a.Version)
			}
		}
	}
	if grew < len(before)/4 || shipped == 0 { // small apps gain under a rating a month
		t.Fatalf("a month: %d of %d apps gained ratings, %d shipped", grew, len(before), shipped)
	}
}

func TestLivingSearchIsRelevanceOrdered(t *testing.T) {
	ts, _ := newLivingServer(t, calmConfig())
	ix := livingCatalogue().living.ix
	n := ix.World().Niches[0]
	term := n.Vocab[0] + " " + n.Vocab[1]
	got := search(t, ts.URL, term)
	want := ix.Search(term, defaultEpoch, 200)
	if len(got) == 0 || len(got) != len(want) {
		t.Fatalf("search %q: %d results, the index has %d", term, len(got), len(want))
	}
	for i := range got {
		if got[i].TrackID != baseTrackID+want[i].Off || ratingCount(got[i]) != want[i].Ratings {
			t.Fatalf("result %d: app %d (%d ratings), want %d (%d)", i, got[i].TrackID, ratingCount(got[i]), baseTrackID+want[i].Off, want[i].Ratings)
		}
	}
	if len(search(t, ts.URL, "the")) != 0 {
		t.Fatal("a filler word found apps")
	}
}

func TestLivingSameSeedSameAnswers(t *testing.T) {
	a, _ := newLivingServer(t, calmConfig())
	c2 := NewLivingCatalogue(livingApps, 1, defaultEpoch, livingRates)
	b := httptest.NewServer(NewServer(c2, Options{Config: calmConfig(), Seed: 1, Now: (&fakeClock{now: defaultEpoch}).Now}))
	defer b.Close()
	term := livingCatalogue().living.w.Niches[3].Vocab[0]
	for _, path := range []string{"/search?limit=200&term=" + term, "/lookup?id=100000001,100000002", "/us/rss/topfreeapplications/limit=50/json"} {
		x, y := get(t, a.URL+path), get(t, b.URL+path)
		if x.status != 200 || string(x.body) != strings.ReplaceAll(string(y.body), strings.TrimPrefix(b.URL, "http://"), strings.TrimPrefix(a.URL, "http://")) {
			t.Fatalf("%s: the same seed answered differently", path)
		}
	}
}

func TestLivingChartsForEveryGenre(t *testing.T) {
	ts, _ := newLivingServer(t, calmConfig())
	w := livingCatalogue().living.w
	for _, n := range w.Niches[:5] {
		g := n.Genre.ID
		if n.SubGenre.ID != 0 {
			g = n.SubGenre.ID
		}
		r := get(t, fmt.Sprintf("%s/us/rss/topfreeapplications/limit=200/genre=%d/json", ts.URL, g))
		var feed struct {
			Feed struct {
				Entry []rssEntry `json:"entry"`
			} `json:"feed"`
		}
		if err := json.Unmarshal(r.body, &feed); err != nil || len(feed.Feed.Entry) < 2 {
			t.Fatalf("genre %d: %d entries, %v", g, len(feed.Feed.Entry), err)
		}
		for _, e := range feed.Feed.Entry {
			var id int64
			fmt.Sscan(e.ID.Attributes["im:id"], &id)
			a := lookupIDs(t, ts.URL, id)[0]
			if !slices.Contains(a.GenreIDs, fmt.Sprint(g)) || a.Price != 0 {
				t.Fatalf("genre %d top free holds %d (%v, %v)", g, id, a.GenreIDs, a.Price)
			}
		}
	}
}

// lookup?id=ARTIST&entity=software: the developer's wrapper first, then
// its apps; without entity the wrapper alone. Both catalogues.
func TestDeveloperLookup(t *testing.T) {
	living, _ := newLivingServer(t, calmConfig())
	static, _ := newTestServer(t, calmConfig())
	for name, base := range map[string]string{"living": living.URL, "static": static.URL} {
		dev := int64(baseDeveloperID + 3)
		r := get(t, fmt.Sprintf("%s/lookup?id=%d&entity=software", base, dev))
		var body struct {
			ResultCount int               `json:"resultCount"`
			Results     []json.RawMessage `json:"results"`
		}
		if err := json.Unmarshal(r.body, &body); err != nil || r.status != 200 || body.ResultCount != len(body.Results) || len(body.Results) < 2 {
			t.Fatalf("%s: %d %s", name, r.status, r.body)
		}
		var artist map[string]any
		json.Unmarshal(body.Results[0], &artist)
		if artist["wrapperType"] != "artist" || artist["artistType"] != "Software Artist" || artist["artistId"] != float64(dev) || artist["artistName"] != developerNameOf(dev) {
			t.Fatalf("%s: the first result is %v", name, artist)
		}
		for _, raw := range body.Results[1:] {
			var app lookupResult
			json.Unmarshal(raw, &app)
			if app.WrapperType != "software" || app.ArtistID != dev || app.TrackID == 0 {
				t.Fatalf("%s: a developer's result %+v", name, app)
			}
		}
		alone := decodeJSON[struct {
			ResultCount int `json:"resultCount"`
		}](t, get(t, fmt.Sprintf("%s/lookup?id=%d", base, dev)).body)
		if alone.ResultCount != 1 {
			t.Fatalf("%s: a developer lookup without entity answered %d results", name, alone.ResultCount)
		}
		if r := get(t, fmt.Sprintf("%s/lookup?id=%d&entity=software&limit=x", base, dev)); r.status != http.StatusBadRequest {
			t.Fatalf("%s: a bad limit: %d", name, r.status)
		}
	}
}

func TestSimClock(t *testing.T) {
	ts, _ := newLivingServer(t, calmConfig())
	type clock struct {
		Now     string  `json:"now"`
		OffsetS float64 `json:"offset_s"`
		Epoch   string  `json:"epoch"`
	}
	c := decodeJSON[clock](t, get(t, ts.URL+"/__sim/clock").body)
	if c.Now != defaultEpoch.Format(time.RFC3339Nano) || c.Epoch != defaultEpoch.Format(time.RFC3339) || c.OffsetS != 0 {
		t.Fatalf("clock %+v", c)
	}
	r := post(t, ts.URL+"/__sim/clock", `{"advance_s": 86400}`)
	if c = decodeJSON[clock](t, r.body); r.status != 200 || c.OffsetS != 86400 {
		t.Fatalf("advance: %d %s", r.status, r.body)
	}
	r = post(t, ts.URL+"/__sim/clock", `{"now": "2025-06-10T00:00:00Z"}`)
	if c = decodeJSON[clock](t, r.body); r.status != 200 || c.Now != "2025-06-10T00:00:00Z" {
		t.Fatalf("set: %d %s", r.status, r.body)
	}
	// The world follows: the apps of nine days are there.
	if got := lookupIDs(t, ts.URL, baseTrackID+livingApps+17); len(got) != 1 {
		t.Fatal("the clock moved but the world did not")
	}
	for body, field := range map[string]string{`{"advance_s": -1}`: "advance_s", `{"now": "2025-06-02T00:00:00Z"}`: "now",
		`{}`: "advance_s", `{"now": "soon"}`: "now", `{"advance_s": 1, "now": "2026-01-01T00:00:00Z"}`: "advance_s"} {
		r := post(t, ts.URL+"/__sim/clock", body)
		if e := decodeJSON[FieldError](t, r.body); r.status != http.StatusBadRequest || e.Field != field {
			t.Fatalf("%s: %d %s", body, r.status, r.body)
		}
	}
	if c = decodeJSON[clock](t, get(t, ts.URL+"/__sim/clock").body); c.Now != "2025-06-10T00:00:00Z" {
		t.Fatalf("a refused change moved the clock: %+v", c)
	}
}

// Charts refuse on their own limit when they have one, and leave the
// API's bucket alone.
func TestChartsHaveTheirOwnLimit(t *testing.T) {
	cfg := calmConfig()
	cfg.RatePerMin, cfg.Burst = 1, 2
	cfg.ChartRatePerMin, cfg.ChartBurst = 1, 3
	ts, _ := newTestServer(t, cfg)
	for range 4 {
		get(t, ts.URL+"/lookup?id=100000001")
		get(t, ts.URL+"/us/rss/topfreeapplications/limit=1/json")
	}
	st := decodeJSON[Stats](t, get(t, ts.URL+"/__stats").body)
	if l, c := st.ByRoute[routeLookup], st.ByRoute[routeCharts]; l.Served != 2 || l.Refused != 2 || c.Served != 3 || c.Refused != 1 {
		t.Fatalf("lookup %+v charts %+v", l, c)
	}
}

func TestRealLimitsFlag(t *testing.T) {
	rl := RealLimits(DefaultConfig())
	if rl.RatePerMin != 20 || rl.StoreRatePerMin != 127 || rl.ChartRatePerMin != 20 || rl.Validate() != nil {
		t.Fatalf("real limits %+v", rl)
	}
	// 7,600 pages an hour is 127 a minute.
	if got := (7600 + 59) / 60; got != realStoreRatePerMin {
		t.Fatalf("the store's pace %d a minute, want %d", realStoreRatePerMin, got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	go func() {
		_ = run(ctx, []string{"-addr", "127.0.0.1:0", "-apps", "50", "-living", "-real-limits", "-burst", "7", "-latency-ms", "0", "-latency-jitter-ms", "0"}, pw, io.Discard)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, pr)
	var ann map[string]string
	json.Unmarshal([]byte(line), &ann)
	st := decodeJSON[Stats](t, get(t, "http://"+ann["addr"]+"/__stats").body)
	if c := st.Config; c.RatePerMin != 20 || c.Burst != 7 || c.StoreRatePerMin != 127 || c.ChartRatePerMin != 20 {
		t.Fatalf("-real-limits -burst 7: %+v", c)
	}
	c := decodeJSON[struct{ Now string }](t, get(t, "http://"+ann["addr"]+"/__sim/clock").body)
	if now, _ := time.Parse(time.RFC3339Nano, c.Now); now.Sub(defaultEpoch) < 0 || now.Sub(defaultEpoch) > time.Minute {
		t.Fatalf("-living starts the clock at the epoch: %s", c.Now)
	}
}
