package worker

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"storecrawl/durable/enrichment"
	"storecrawl/worker/appstore"
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
	due     map[string]bool
	saved   map[string][]appstore.ChartEntry
	dueErr  error
	scanned int
}

func (f *fakeDiscovery) DueTiers(context.Context, time.Time) (map[string]bool, error) {
	return f.due, f.dueErr
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
		return upstream.Response{Class: enrichment.ClassOK, Body: []byte(`{"feed":{"entry":[{"id":1,"name":"a","rank":1},{"id":2,"name":"b","rank":2}]}}`), Remaining: -1}
	}
	idle := &fakeDiscovery{due: map[string]bool{}}
	if r := CrawlCycle(context.Background(), idle, fetch, "http://up", "us", 0.5, now); r.Action != "idle" || len(urls) != 0 {
		t.Fatalf("no work must mean no upstream call: %+v %v", r, urls)
	}
	f := &fakeDiscovery{due: map[string]bool{"high": true}}
	r := CrawlCycle(context.Background(), f, fetch, "http://up", "us", 0.5, now)
	if r.Action != "category_scan" || r.GenreID != 6014 || r.Found != 6 || r.Apps != 2 || len(urls) != 3 || !strings.Contains(urls[0], "genre=6014") {
		t.Fatalf("%+v %v", r, urls)
	}
	failing := func(context.Context, string) upstream.Response {
		return upstream.Response{Class: enrichment.ClassRateLimit, Err: errors.New("429"), Remaining: -1}
	}
	f = &fakeDiscovery{due: map[string]bool{"high": true}}
	if r := CrawlCycle(context.Background(), f, failing, "http://up", "us", 0.5, now); r.Action != "error" || f.scanned != 0 {
		t.Fatalf("a refused scan must not mark the category scanned: %+v", r)
	}
}

func TestScanStatementsDedupeAndMark(t *testing.T) {
	charts := map[string][]appstore.ChartEntry{
		"topfreeapplications": {{TrackID: 1, Rank: 1}, {TrackID: 2, Rank: 2}},
		"toppaidapplications": {{TrackID: 2, Rank: 1}},
	}
	stmts := ScanStatements(6014, "us", charts, time.Now())
	apps := 0
	for _, s := range stmts {
		if strings.HasPrefix(s.SQL, "INSERT INTO app_registry") {
			apps++
		}
		if strings.Count(s.SQL, "?") != len(s.Args) {
			t.Fatalf("placeholders in %q", s.SQL)
		}
	}
	last := stmts[len(stmts)-1]
	if apps != 2 || len(stmts) != 2+3*2+1 || !strings.HasPrefix(last.SQL, "UPDATE category_scans") || last.Args[1] != 2 {
		t.Fatalf("%d apps, %d statements, last %q %v", apps, len(stmts), last.SQL, last.Args)
	}
}
