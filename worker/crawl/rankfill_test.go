package crawl

import (
	"context"
	"errors"
	"reflect"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"storecrawl/internal/objects"
	"storecrawl/worker/upstream"
)

func TestPlanRankingFillPicksStaleAndUnknownKeywordsWithinBudget(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	// A: budget, budget planner, planner, spending, track, track spending.
	a := FillApp{TrackID: 1, Name: "Budget Planner", Subtitle: "Track spending"}
	// B: planner, planner pro.
	b := FillApp{TrackID: 2, Name: "Planner Pro"}
	// C has no keywords at all: complete at once, never stuck.
	c := FillApp{TrackID: 3}
	searched := map[string]time.Time{
		"budget":  now.Add(-24 * time.Hour),                   // fresh
		"planner": now.Add(-RankingRefreshAge - time.Minute),  // stale
		"track":   {},                                         // pending: keyword mapping's work
		"spendin": now.Add(-RankingRefreshAge - 48*time.Hour), // unrelated
	}
	p := PlanRankingFill([]FillApp{a, b, c}, searched, now, 12)
	want := []string{"budget planner", "planner", "spending", "track spending", "planner pro"}
	if !reflect.DeepEqual(p.Searches, want) || len(p.Deferred) != 0 {
		t.Fatalf("searches %q deferred %v", p.Searches, p.Deferred)
	}
	if got := p.Waiting[2]; !reflect.DeepEqual(got, []string{"planner", "planner pro"}) {
		t.Fatalf("B waits on %q", got)
	}
	if got := p.Filled(nil); !reflect.DeepEqual(got, []int64{1, 2, 3}) {
		t.Fatalf("all searches ok: filled %v", got)
	}
	// A failed search holds back exactly the apps that wait on it.
	if got := p.Filled(map[string]bool{"planner": true}); !reflect.DeepEqual(got, []int64{3}) {
		t.Fatalf("planner failed: filled %v", got)
	}
	if got := p.Filled(map[string]bool{"planner pro": true}); !reflect.DeepEqual(got, []int64{1, 3}) {
		t.Fatalf("planner pro failed: filled %v", got)
	}

	// Over budget: the app is deferred (stays due), the budget is never exceeded.
	p = PlanRankingFill([]FillApp{a, b, c}, searched, now, 3)
	if !reflect.DeepEqual(p.Searches, []string{"budget planner", "planner", "spending"}) || !reflect.DeepEqual(p.Deferred, []int64{1, 2}) {
		t.Fatalf("budget 3: searches %q deferred %v", p.Searches, p.Deferred)
	}
	if got := p.Filled(nil); !reflect.DeepEqual(got, []int64{3}) {
		t.Fatalf("budget 3: filled %v", got)
	}
	// Next cycle the searched keywords are fresh: the deferred apps complete.
	for _, kw := range p.Searches {
		searched[kw] = now
	}
	p = PlanRankingFill([]FillApp{a, b}, searched, now.Add(time.Minute), 3)
	if !reflect.DeepEqual(p.Searches, []string{"track spending", "planner pro"}) || len(p.Deferred) != 0 {
		t.Fatalf("second cycle: searches %q deferred %v", p.Searches, p.Deferred)
	}
	// Exactly at the refresh age a keyword is stale again.
	p = PlanRankingFill([]FillApp{b}, map[string]time.Time{"planner": now, "planner pro": now}, now.Add(RankingRefreshAge), 12)
	if len(p.Searches) != 2 {
		t.Fatalf("at the refresh age: %q", p.Searches)
	}
}

func searchFetch(inflight, peak *atomic.Int64, calls *atomic.Int64, fail string) func(context.Context, string) upstream.Response {
	return func(_ context.Context, u string) upstream.Response {
		calls.Add(1)
		n := inflight.Add(1)
		defer inflight.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(5 * time.Millisecond)
		if fail != "" && strings.Contains(u, "term="+fail) {
			return upstream.Response{Class: objects.ClassServerError, Err: errors.New("503"), Remaining: -1}
		}
		return upstream.Response{Class: objects.ClassOK, Body: []byte(`{"resultCount":1,"results":[{"trackId":9,"trackName":"x","artistId":70,"artistName":"Dev"}]}`), Remaining: -1}
	}
}

func TestCrawlCycleFillsRankingsWhenNothingElseIsDue(t *testing.T) {
	var inflight, peak, calls atomic.Int64
	f := &fakeDiscovery{due: map[string]bool{}, fillApps: []FillApp{
		{TrackID: 1, Name: "Budget Planner", Subtitle: "Track spending"},
		{TrackID: 2, Name: "Planner Pro"},
	}, searchedAt: map[string]time.Time{"budget": time.Now()}}
	r := CrawlCycle(context.Background(), f, searchFetch(&inflight, &peak, &calls, "planner+pro"), "http://up", "us", noSleep, 0.5, time.Now())
	sort.Strings(f.fillSaved)
	if r.Action != "ranking_fill" || calls.Load() != 6 || len(f.fillSaved) != 5 || r.Found != 5 || len(r.Keywords) != 5 {
		t.Fatalf("%+v calls %d saved %q", r, calls.Load(), f.fillSaved)
	}
	// The failed search keeps app 2 due; app 1 is filled.
	if !reflect.DeepEqual(f.filled, []int64{1}) || r.Filled != 1 || !strings.Contains(r.Error, "planner pro") {
		t.Fatalf("filled %v, result %+v", f.filled, r)
	}
	if peak.Load() > KeywordChunk || f.developers != 1 {
		t.Fatalf("peak %d developers %d", peak.Load(), f.developers)
	}
}

func TestRankingFillRunsBesideKeywordMappingWithinTheConnectionLimit(t *testing.T) {
	var inflight, peak, calls atomic.Int64
	f := &fakeDiscovery{due: map[string]bool{}, pending: []string{"alpha", "bravo", "charlie", "delta", "echoes", "foxtrot"},
		fillApps: []FillApp{{TrackID: 1, Name: "Budget Planner", Subtitle: "Track spending"}}}
	r := CrawlCycle(context.Background(), f, searchFetch(&inflight, &peak, &calls, ""), "http://up", "us", noSleep, 0.5, time.Now())
	if r.Action != "keyword_mapping" || r.Side == nil || r.Side.Action != "ranking_fill" || r.Side.Filled != 1 {
		t.Fatalf("%+v side %+v", r, r.Side)
	}
	// 6 mapped + 6 filled keywords, all announced in one rankings-updated round.
	if len(r.Keywords) != 12 || calls.Load() != 12 || len(f.rankings) != 6 || len(f.fillSaved) != 6 {
		t.Fatalf("keywords %q calls %d", r.Keywords, calls.Load())
	}
	// A Worker invocation may hold 6 connections open.
	if peak.Load() > 2*KeywordChunk || 2*KeywordChunk > 6 {
		t.Fatalf("peak in-flight searches %d", peak.Load())
	}
}

func TestFillStatementsAreIdempotentUpserts(t *testing.T) {
	now := time.Now()
	stmts := FillRankingStatements("budget", nil, now)
	if !strings.HasPrefix(stmts[0].SQL, "INSERT OR IGNORE INTO crawl_keywords") || stmts[0].Args[1] != KeywordSourceFill ||
		stmts[len(stmts)-1].SQL != searchedSQL() {
		t.Fatalf("%+v", stmts)
	}
	m := MarkFilledStatements([]int64{4, 5}, now)
	if len(m) != 2 || m[1].Args[1] != int64(5) || strings.Count(m[0].SQL, "?") != len(m[0].Args) {
		t.Fatalf("%+v", m)
	}
}
