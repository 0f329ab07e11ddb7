package crawl

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"storecrawl/internal/objects"
	"storecrawl/worker/appstore"
	"storecrawl/worker/d1"
	"storecrawl/worker/upstream"
)

func TestPickTierWeightsAndFallbacks(t *testing.T) {
	all := map[string]bool{"high": true, "medium": true, "low": true}
	counts := map[string]int{}
	for i := 0; i < 1000; i++ {
		counts[PickTier(all, float64(i)/1000)]++
	}
	if counts["high"] != 900 || counts["medium"] != 70 || counts["low"] != 30 {
		t.Fatalf("weights: %v", counts)
	}
	if got := PickTier(map[string]bool{"low": true}, 0.01); got != "low" {
		t.Fatalf("only low due: %q", got)
	}
	if got := PickTier(map[string]bool{}, 0.5); got != "" {
		t.Fatalf("nothing due: %q", got)
	}
}

type fakeDiscovery struct {
	mu         sync.Mutex // the fill side task runs next to keyword mapping
	due        map[string]bool
	pending    []string
	fillApps   []FillApp
	filled     []int64
	saved      map[string][]appstore.ChartEntry
	rankings   map[string]int
	developers int
	dueErr     error
	scanned    int
	portfolios []int64
	saved2     map[int64]int // developer → apps saved
	unlooked   []int64       // apps queued without lookup fields
	looked     int           // apps a discovery lookup saved
}

func (f *fakeDiscovery) DuePortfolios(_ context.Context, n int) ([]int64, error) {
	return f.portfolios[:min(n, len(f.portfolios))], nil
}

func (f *fakeDiscovery) SavePortfolio(_ context.Context, dev int64, apps []appstore.App, _ time.Time) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.saved2 == nil {
		f.saved2 = map[int64]int{}
	}
	f.saved2[dev] = len(apps)
	return len(apps), nil
}

func (f *fakeDiscovery) Unlooked(_ context.Context, n int) ([]int64, d1.Cursor, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.unlooked[:min(n, len(f.unlooked))], d1.Cursor{Name: "discovery-lookups"}, nil
}

func (f *fakeDiscovery) SaveLookups(_ context.Context, _ d1.Cursor, _ int64, apps []appstore.App, _ time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.looked += len(apps)
	return nil
}

func (f *fakeDiscovery) Gaps(context.Context, time.Time) (Gaps, error) {
	return Gaps{Tiers: f.due, DueKeywords: len(f.pending) > 0, RankingFill: len(f.fillApps) > 0}, f.dueErr
}
func (f *fakeDiscovery) Steer(context.Context, time.Time, bool) (SteerResult, error) {
	return SteerResult{}, nil
}
func (f *fakeDiscovery) FillCandidates(_ context.Context, n int, _ time.Time) ([]FillApp, error) {
	return f.fillApps[:min(n, len(f.fillApps))], nil
}
func (f *fakeDiscovery) SaveFill(_ context.Context, apps []FillApp, _ time.Time) (int, error) {
	kws := map[string]bool{}
	for _, a := range apps {
		f.filled = append(f.filled, a.TrackID)
		for _, kw := range appstore.DeriveKeywords(a.Name, a.Subtitle) {
			kws[kw] = true // terms only: the fill adds no keyword
		}
	}
	return len(kws), nil
}
func (f *fakeDiscovery) PickKeywords(_ context.Context, n int, slow Slow) ([]string, error) {
	if slow.FirstSearches {
		return nil, nil // the fake's keywords are all pending
	}
	return f.pending[:min(n, len(f.pending))], nil
}
func (f *fakeDiscovery) SaveDevelopers(_ context.Context, d map[int64]string, _ time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.developers += len(d)
	return nil
}

func (f *fakeDiscovery) SaveRankings(_ context.Context, kw string, apps []appstore.App, _ time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.rankings == nil {
		f.rankings = map[string]int{}
	}
	f.rankings[kw] = len(apps)
	return nil
}
func (f *fakeDiscovery) NextCategory(_ context.Context, tier string, _ time.Time) (int, string, error) {
	return 6014, "Games", nil
}
func (f *fakeDiscovery) SaveScan(_ context.Context, genre int, _ string, charts map[string][]appstore.ChartEntry, _ time.Time) (int, error) {
	f.saved, f.scanned = charts, genre
	return 2, nil
}

func TestCrawlCycle(t *testing.T) {
	now := time.Now()
	var urls []string
	fetch := func(_ context.Context, u string) upstream.Response {
		urls = append(urls, u)
		return upstream.Response{Class: objects.ClassOK, Body: []byte(`{"feed":{"results":[{"id":"1","name":"a"},{"id":"2","name":"b"}]}}`), Remaining: -1}
	}
	idle := &fakeDiscovery{due: map[string]bool{}}
	if r := CrawlCycle(context.Background(), idle, fetch, "http://up", "us", noSleep, 0.5, now); r.Action != "idle" || len(urls) != 0 {
		t.Fatalf("no work must mean no upstream call: %+v %v", r, urls)
	}
	f := &fakeDiscovery{due: map[string]bool{"high": true}}
	r := CrawlCycle(context.Background(), f, fetch, "http://up", "us", noSleep, 0.5, now)
	if r.Action != "category_scan" || r.GenreID != 6014 || r.Found != 6 || r.Apps != 2 || len(urls) != 3 || !strings.Contains(urls[0], "genre=6014") {
		t.Fatalf("%+v %v", r, urls)
	}
	failing := func(context.Context, string) upstream.Response {
		return upstream.Response{Class: objects.ClassRateLimit, Err: errors.New("429"), Remaining: -1}
	}
	f = &fakeDiscovery{due: map[string]bool{"high": true}}
	if r := CrawlCycle(context.Background(), f, failing, "http://up", "us", noSleep, 0.5, now); r.Action != "category_scan" || r.Error != "" || !r.RateLimited || f.scanned != 0 {
		t.Fatalf("a refused scan is no error and marks nothing scanned: %+v", r)
	}
}

func TestScanStatementsDedupeAndMark(t *testing.T) {
	charts := map[string][]appstore.ChartEntry{
		"topfreeapplications":     {{TrackID: 1, Rank: 1}, {TrackID: 2, Rank: 2}},
		"toppaidapplications":     {{TrackID: 2, Rank: 1}},
		"topgrossingapplications": {},
	}
	stmts := ScanStatements(6014, "us", charts, time.Now())
	apps := -1
	for _, s := range stmts {
		if strings.Contains(s.SQL, "INSERT INTO app_registry") {
			// One upsert for every app seen, each app once.
			var seen []map[string]any
			if err := json.Unmarshal([]byte(s.Args[0].(string)), &seen); err != nil {
				t.Fatal(err)
			}
			apps = len(seen)
			continue
		}
		if strings.Count(s.SQL, "?") != len(s.Args) {
			t.Fatalf("placeholders in %q", s.SQL)
		}
	}
	last := stmts[len(stmts)-1]
	if apps != 2 || !strings.HasPrefix(stmts[0].SQL, "WITH s AS") || !strings.HasPrefix(last.SQL, "UPDATE category_scans") || last.Args[1] != 2 {
		t.Fatalf("%d apps, %d statements, last %q %v", apps, len(stmts), last.SQL, last.Args)
	}
	// A chart missing (refused): the charts read are kept, the category stays due.
	delete(charts, "topgrossingapplications")
	for _, st := range ScanStatements(6014, "us", charts, time.Now()) {
		if strings.Contains(st.SQL, "category_scans") {
			t.Fatalf("a partial scan must leave the category due: %q", st.SQL)
		}
	}
}

// One chart refused (the pacing's business, not an operator's): the scan
// keeps the charts read before it, leaves the category due for the rest,
// and reports no error.
func TestChartRefusalKeepsTheScan(t *testing.T) {
	var urls []string
	fetch := func(_ context.Context, u string) upstream.Response {
		urls = append(urls, u)
		if strings.Contains(u, appstore.ChartCollections[1]) {
			return upstream.Response{Class: objects.ClassRateLimit, Err: errors.New("HTTP 429"), Remaining: -1}
		}
		return upstream.Response{Class: objects.ClassOK, Body: []byte(`{"feed":{"results":[{"id":"1","name":"a"},{"id":"2","name":"b"}]}}`), Remaining: -1}
	}
	f := &fakeDiscovery{due: map[string]bool{"high": true}}
	r := CrawlCycle(context.Background(), f, fetch, "http://up", "us", noSleep, 0.5, time.Now())
	if r.Action != "category_scan" || r.Error != "" || !r.RateLimited || len(r.Deferred) != 1 || r.Deferred[0] != appstore.ChartCollections[1] {
		t.Fatalf("a chart refusal is not an error: %+v", r)
	}
	if len(urls) != 2 || len(f.saved) != 1 || f.saved[appstore.ChartCollections[0]] == nil || r.Found != 2 {
		t.Fatalf("the chart read before the refusal is kept, none sent after it: urls %v saved %v", urls, f.saved)
	}
}

func TestCrawlCycleMapsKeywordsWhenNoScanIsDue(t *testing.T) {
	var urls []string
	var mu sync.Mutex
	fetch := func(_ context.Context, u string) upstream.Response {
		mu.Lock()
		urls = append(urls, u)
		mu.Unlock()
		if strings.Contains(u, "term=bad") {
			return upstream.Response{Class: objects.ClassServerError, Err: errors.New("503"), Remaining: -1}
		}
		if strings.Contains(u, "term=photo") {
			panic("a bug in a search") // costs that keyword, not the instance
		}
		return upstream.Response{Class: objects.ClassOK, Body: []byte(`{"resultCount":1,"results":[{"trackId":5,"trackName":"x","artistId":77,"artistName":"Dev"}]}`), Remaining: -1}
	}
	f := &fakeDiscovery{due: map[string]bool{}, pending: []string{"budget", "bad", "fitness", "photo"}}
	r := CrawlCycle(context.Background(), f, fetch, "http://up", "us", noSleep, 0.5, time.Now())
	if r.Action != "keyword_mapping" || r.Found != 2 || r.Apps != 2 || len(urls) != 4 || f.rankings["bad"] != 0 ||
		!strings.Contains(r.Error, "bad") || !strings.Contains(r.Error, "panic in keyword search") || f.developers != 1 {
		t.Fatalf("%+v %v %v", r, urls, f.rankings)
	}
	stmts := RankingStatements("budget", []appstore.App{{TrackID: 5}, {TrackID: 6}}, time.Now())
	// Upsert the apps, keep each one's lookup fields, the rank changes,
	// drop the apps gone from the keyword, the ranks in one, mark the keyword.
	if len(stmts) != 1+2+1+1+1+1 || stmts[len(stmts)-1].SQL != searchedSQL() {
		t.Fatalf("ranking statements: %d", len(stmts))
	}
}

func noSleep(time.Duration) {}
