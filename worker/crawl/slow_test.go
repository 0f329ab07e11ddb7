//go:build !js

package crawl

import (
	"context"
	"slices"
	"testing"
	"time"

	"storecrawl/internal/objects"
	"storecrawl/worker/d1/d1test"
	"storecrawl/worker/upstream"
)

// TestCostGuardSlowsTheCycle: slowed scans and searches are not started
// (their work stays due); what is not slowed runs as before.
func TestCostGuardSlowsTheCycle(t *testing.T) {
	now := time.Now()
	var urls []string
	fetch := func(_ context.Context, u string) upstream.Response {
		urls = append(urls, u)
		return upstream.Response{Class: objects.ClassOK, Body: []byte(`{"feed":{"results":[]},"results":[]}`), Remaining: -1}
	}
	run := func(slow Slow) Result {
		urls = nil
		f := &fakeDiscovery{due: map[string]bool{"high": true}, pending: []string{"chess"}}
		return CrawlCycle(WithSlow(context.Background(), slow), f, fetch, "http://up", "us", noSleep, 0.5, now)
	}
	if r := run(Slow{}); r.Action != "category_scan" || r.Side == nil || r.Side.Searches != 1 {
		t.Fatalf("nothing slowed: %+v", r)
	}
	if r := run(Slow{FirstSearches: true}); r.Action != "category_scan" || r.Side == nil || r.Side.Searches != 0 {
		t.Fatalf("first-time searches slowed: %+v", r)
	}
	if r := run(Slow{FirstSearches: true, ReSearches: true, Scans: true}); r.Action != "idle" || len(urls) != 0 {
		t.Fatalf("all slowed: %+v %v", r, urls)
	}
	if r := run(Slow{Scans: true}); r.Action != "keyword_mapping" || r.Searches != 1 {
		t.Fatalf("scans slowed: %+v", r)
	}
}

// TestPickKeywordsLeavesOutWhatIsSlowed: the pick reads no pending keyword
// while first-time searches are slowed, and no due one while re-searches
// are.
func TestPickKeywordsLeavesOutWhatIsSlowed(t *testing.T) {
	db, drv := d1test.New(t)
	s := D1Store{DB: db}
	drv.Exec(t, `INSERT INTO crawl_keywords (keyword, source, created_at, value) VALUES ('fresh', 'title', '2026-11-01T00:00:00Z', 5)`)
	drv.Exec(t, `INSERT INTO crawl_keywords (keyword, source, created_at, searched_at, value, due_value, next_search_at)
		VALUES ('again', 'title', '2026-10-01T00:00:00Z', '2026-10-02T00:00:00Z', 3, 3, '2026-10-09T00:00:00Z')`)
	ctx := context.Background()
	for _, c := range []struct {
		slow Slow
		want []string
	}{
		{Slow{}, []string{"fresh", "again"}},
		{Slow{FirstSearches: true}, []string{"again"}},
		{Slow{ReSearches: true}, []string{"fresh"}},
		{Slow{FirstSearches: true, ReSearches: true}, []string{}},
	} {
		got, err := s.PickKeywords(ctx, 10, c.slow)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%+v: picked %v, want %v", c.slow, got, c.want)
		}
	}
}
