//go:build !js

package segments

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"storecrawl/internal/objects"
	"storecrawl/worker/catalogue"
	"storecrawl/worker/crawl"
	"storecrawl/worker/d1"
	"storecrawl/worker/d1/d1test"
	"storecrawl/worker/enrichment"
	"storecrawl/worker/refresh"
	"storecrawl/worker/upstream"
)

var focusNow = time.Date(2026, 11, 23, 6, 0, 0, 0, time.UTC)

// focusFixture: segs live segments, segment i (from 1) of opportunity
// 100 − 5i, with apps i·1000+j (j from 1 to apps, leaders first) and
// keywords "s<i> k<jj>" (kws of them). Worse segments' apps have more
// ratings, so without the focus the enrichment pick (by ratings) takes
// them first. enriched: the apps are enriched, tiered cold. Every keyword
// was searched 40 days ago and its rest is over: equally stale.
func focusFixture(t *testing.T, segs, apps, kws int, enriched bool) (Store, *d1test.Driver) {
	t.Helper()
	db, drv := d1test.New(t)
	searched := d1.Time(focusNow.AddDate(0, 0, -40))
	for i := 1; i <= segs; i++ {
		var appsJSON []string
		for j := 1; j <= apps; j++ {
			id := i*1000 + j
			appsJSON = append(appsJSON, fmt.Sprintf(`{"track_id":%d,"keywords":1,"ratings":%d,"share":0}`, id, i*100+j))
			if enriched {
				drv.Exec(t, `INSERT INTO app_registry (track_id, name, rating_count, enrichment_source, enriched_at, refresh_tier, discovered_at)
VALUES (?, 'app', ?, 'itunes+store', ?, 'cold', ?)`, id, i*100+j, searched, searched)
			} else {
				drv.Exec(t, `INSERT INTO app_registry (track_id, name, rating_count, discovered_at) VALUES (?, 'app', ?, ?)`, id, i*100+j, searched)
			}
		}
		drv.Exec(t, `INSERT INTO segments (id, name, keyword_count, app_count, total_ratings, avg_rating, demand, hhi, fragmentation, quality_gap,
  opportunity, apps, created_at, updated_at) VALUES (?, ?, ?, ?, 0, 4, 1, 0.1, 0.9, 0.5, ?, ?, ?, ?)`,
			i, fmt.Sprint("segment ", i), kws, apps, 100-5*i, "["+strings.Join(appsJSON, ",")+"]", searched, searched)
		for j := 1; j <= kws; j++ {
			kw := fmt.Sprintf("s%d k%02d", i, j)
			drv.Exec(t, `INSERT INTO segment_keywords (keyword, segment_id, top_sum) VALUES (?, ?, 0)`, kw, i)
			drv.Exec(t, `INSERT INTO crawl_keywords (keyword, source, created_at, searched_at, result_count, value, research_interval_s, next_search_at)
VALUES (?, 'title', ?, ?, 20, 0, 2592000, ?)`, kw, searched, searched, d1.Time(focusNow.AddDate(0, 0, -10)))
		}
	}
	return Store{DB: db}, drv
}

func focusPass(t *testing.T, s Store, drv *d1test.Driver, now time.Time) (FocusResult, d1.CostView, int64) {
	t.Helper()
	ctx, cost := d1.WithCost(context.Background())
	before := drv.TotalChanges(t)
	r, err := s.Focus(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	written := drv.TotalChanges(t) - before
	c := cost.View()
	t.Logf("focus pass: %+v; %d queries, %d rows read, %d rows written", r, c.Queries, c.RowsRead, written)
	return r, c, written
}

func TestFocusPolicyBounds(t *testing.T) {
	if !(0 < FocusAppPriority && FocusAppPriority < crawl.SeedAppPriority) {
		t.Fatal("a focus app goes after an operator's seeds and before the rest")
	}
	if FocusAppsPerSegment > MaxSegmentApps || MaxFocusApps != TopSegments*FocusAppsPerSegment {
		t.Fatal("the focus apps are a segment's kept apps")
	}
	// A focus keyword's searches a day (each rests a day) are a small
	// share of the day's bound.
	if day := crawl.SearchesPerDay(crawl.KeywordSearchesPerCycle); MaxFocusKeywords*20 > day {
		t.Fatalf("%d focus keywords of %d searches a day: over 5%%", MaxFocusKeywords, day)
	}
	if n, ch := FocusPriority(true, 0, true); n != FocusAppPriority || !ch {
		t.Fatal("a queued app enters at the focus priority")
	}
	if _, ch := FocusPriority(true, crawl.SeedAppPriority, true); ch {
		t.Fatal("a seed stays above the focus")
	}
	if _, ch := FocusPriority(false, 0, true); ch {
		t.Fatal("an enriched app has no queue priority to raise")
	}
	if n, ch := FocusPriority(true, FocusAppPriority, false); n != 0 || !ch {
		t.Fatal("a leaving app returns to the default")
	}
	if _, ch := FocusPriority(true, crawl.SeedAppPriority, false); ch {
		t.Fatal("a leaving app keeps an operator's priority")
	}
}

func TestTargetOrderDedupAndBounds(t *testing.T) {
	var tops []TopSegment
	for i := 1; i <= TopSegments+2; i++ {
		ts := TopSegment{ID: int64(i)}
		for j := 1; j <= FocusAppsPerSegment+5; j++ {
			ts.Apps = append(ts.Apps, int64(i*1000+j))
			ts.Keywords = append(ts.Keywords, fmt.Sprintf("s%d k%d", i, j))
		}
		tops = append(tops, ts)
	}
	tops[1].Apps[0], tops[1].Keywords[0] = tops[0].Apps[0], tops[0].Keywords[0] // shared with the best segment
	apps, kws := Target(tops)
	if len(apps) > MaxFocusApps || len(kws) > MaxFocusKeywords {
		t.Fatalf("%d apps, %d keywords", len(apps), len(kws))
	}
	if apps[0] != (Member[int64]{1001, 1}) || kws[0] != (Member[string]{"s1 k1", 1}) {
		t.Fatalf("the best segment's leader first: %v %v", apps[0], kws[0])
	}
	seen := map[int64]bool{}
	for _, a := range apps {
		if seen[a.Key] {
			t.Fatalf("app %d twice", a.Key)
		}
		seen[a.Key] = true
		if a.Segment > TopSegments {
			t.Fatalf("app %d of segment %d, not a top one", a.Key, a.Segment)
		}
	}
}

// TestPlanChangesBoundsAndConverges: every pass changes at most its bound,
// the set never passes its limit, and a full turnover converges.
func TestPlanChangesBoundsAndConverges(t *testing.T) {
	const limit, changes = 10, 4
	target := func(from int) []Member[int] {
		var out []Member[int]
		for k := from; k < from+limit; k++ {
			out = append(out, Member[int]{k, 1})
		}
		return out
	}
	cur := map[int]bool{}
	for _, tg := range [][]Member[int]{target(0), target(100), target(105)} {
		for pass := 0; ; pass++ {
			in, out := PlanChanges(cur, tg, limit, changes)
			if len(in)+len(out) > changes {
				t.Fatalf("pass %d: %d changes", pass, len(in)+len(out))
			}
			if len(in)+len(out) == 0 {
				break
			}
			for _, k := range out {
				delete(cur, k)
			}
			for _, m := range in {
				cur[m.Key] = true
			}
			if len(cur) > limit {
				t.Fatalf("pass %d: %d in the set", pass, len(cur))
			}
			if pass > 2*limit {
				t.Fatal("no convergence")
			}
		}
		for _, m := range tg {
			if !cur[m.Key] {
				t.Fatalf("%d missing after convergence", m.Key)
			}
		}
	}
	// Entries go in the target's order.
	in, _ := PlanChanges(map[int]bool{}, target(0), limit, 3)
	if len(in) != 3 || in[0].Key != 0 || in[2].Key != 2 {
		t.Fatalf("%v", in)
	}
}

// TestFocusEnrichesTopSegmentAppsFirst: before the pass the enrichment's
// pick takes the most-rated apps (the worst segments'); after it, the top
// segments' apps, best segment first, and an operator's seed before them.
func TestFocusEnrichesTopSegmentAppsFirst(t *testing.T) {
	s, drv := focusFixture(t, TopSegments+2, 5, 2, false)
	drv.Exec(t, `UPDATE app_registry SET enrich_priority = ? WHERE track_id = 12001`, crawl.SeedAppPriority)
	q := enrichment.D1Store{DB: s.DB}
	pick := func(n int) []int64 {
		t.Helper()
		items, err := q.PickQueued(context.Background(), n, false, focusNow)
		if err != nil {
			t.Fatal(err)
		}
		var ids []int64
		for _, it := range items {
			ids = append(ids, it.TrackID)
		}
		return ids
	}
	if got := pick(2); got[0] != 12001 || got[1] != 12005 {
		t.Fatalf("before: %v", got)
	}
	r, _, _ := focusPass(t, s, drv, focusNow)
	if r.Segments != TopSegments || r.AppsIn != 5*TopSegments || r.Raised != 5*TopSegments {
		t.Fatalf("%+v", r)
	}
	got := pick(1 + 5*TopSegments)
	if got[0] != 12001 {
		t.Fatalf("the seed first: %v", got)
	}
	for _, id := range got[1:] {
		if id/1000 > TopSegments {
			t.Fatalf("app %d of segment %d before every top segment's app: %v", id, id/1000, got)
		}
	}
	// The same segments again: nothing written.
	if _, _, w := focusPass(t, s, drv, focusNow.Add(time.Hour)); w != 0 {
		t.Fatalf("an unchanged focus wrote %d rows", w)
	}
	// Segment 1 falls out of the top: its apps leave, return to the
	// default priority, and segment 11's enter.
	drv.Exec(t, `UPDATE segments SET opportunity = 1 WHERE id = 1`)
	r, _, _ = focusPass(t, s, drv, focusNow.Add(2*time.Hour))
	if r.AppsOut != 5 || r.Lowered != 5 || r.AppsIn != 5 {
		t.Fatalf("%+v", r)
	}
	if n := drv.Int(t, `SELECT count(*) FROM app_registry WHERE track_id BETWEEN 1001 AND 1005 AND enrich_priority = 0`); n != 5 {
		t.Fatalf("%d of segment 1's apps back at 0", n)
	}
	if n := drv.Int(t, `SELECT enrich_priority FROM app_registry WHERE track_id = 12001`); n != crawl.SeedAppPriority {
		t.Fatalf("the seed's priority %d", n)
	}
}

// TestFocusRefreshesTopSegmentAppsSooner: enriched cold apps of the top
// segments are made hot at once, so the refresh pick takes them within a
// hot round while the others wait out the cold one; the catalogue sweep
// keeps them hot, and tiers them back once they leave.
func TestFocusRefreshesTopSegmentAppsSooner(t *testing.T) {
	s, drv := focusFixture(t, TopSegments+2, 5, 1, true)
	r, _, _ := focusPass(t, s, drv, focusNow)
	if r.Hot != 5*TopSegments || r.Raised != 0 {
		t.Fatalf("%+v", r)
	}
	if r.NextLook.After(focusNow.Add(refresh.HotInterval)) {
		t.Fatalf("next look %v, past a hot round", r.NextLook)
	}
	if n := drv.Int(t, `SELECT count(*) FROM app_registry WHERE refresh_tier = 'hot'`); n != 5*TopSegments {
		t.Fatalf("%d hot", n)
	}
	// The refresh pick a hot round later (cursors starting now).
	es := enrichment.D1Store{DB: s.DB}
	cursors, _, err := es.RefreshCursors(context.Background(), focusNow)
	if err != nil {
		t.Fatal(err)
	}
	var stmts []d1.Stmt
	stmts = append(stmts, enrichment.AdvanceRefreshStatements(cursors, nil, focusNow)...)
	if _, err := s.DB.Exec(context.Background(), stmts...); err != nil {
		t.Fatal(err)
	}
	p, err := es.DueRefreshes(context.Background(), 1000, focusNow.Add(refresh.HotInterval+time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	due := map[int64]bool{}
	for _, it := range p.Items {
		due[it.TrackID] = true
	}
	for seg := 1; seg <= TopSegments+2; seg++ {
		for j := 1; j <= 5; j++ {
			id := int64(seg*1000 + j)
			if seg <= TopSegments && !due[id] {
				t.Fatalf("top segment %d's app %d not refreshed within a hot round", seg, id)
			}
			if seg > TopSegments && due[id] && refresh.NextLook(refresh.TierCold, refresh.Slot(id), focusNow).After(focusNow.Add(refresh.HotInterval+time.Minute)) {
				t.Fatalf("app %d refreshed before its cold round", id)
			}
		}
	}
	// The catalogue sweep keeps them hot.
	cs := catalogue.D1Store{DB: s.DB}
	if res := catalogue.Sweep(context.Background(), cs, focusNow.Add(time.Hour)); res.Error != "" {
		t.Fatal(res.Error)
	}
	if n := drv.Int(t, `SELECT count(*) FROM app_registry WHERE refresh_tier = 'hot'`); n != 5*TopSegments {
		t.Fatalf("%d hot after the sweep", n)
	}
	// Segment 1 leaves the top: the sweep tiers its apps back.
	drv.Exec(t, `UPDATE segments SET opportunity = 1 WHERE id = 1`)
	focusPass(t, s, drv, focusNow.Add(2*time.Hour))
	drv.Exec(t, `DELETE FROM sweep_cursors`)
	if res := catalogue.Sweep(context.Background(), cs, focusNow.Add(3*time.Hour)); res.Error != "" {
		t.Fatal(res.Error)
	}
	if n := drv.Int(t, `SELECT count(*) FROM app_registry WHERE track_id BETWEEN 1001 AND 1005 AND refresh_tier = 'cold'`); n != 5 {
		t.Fatalf("%d of segment 1's apps back to cold", n)
	}
	if n := drv.Int(t, `SELECT count(*) FROM app_registry WHERE track_id BETWEEN 11001 AND 11005 AND refresh_tier = 'hot'`); n != 5 {
		t.Fatalf("%d of segment 11's apps hot", n)
	}
}

// TestFocusKeywordsSearchedFirstWithinTheBound: equally stale keywords;
// after the pass the steering makes them due and the pick takes the top
// segments' first, never more than it is asked for; a search rests a top
// segment's keyword a day, another a month.
func TestFocusKeywordsSearchedFirstWithinTheBound(t *testing.T) {
	s, drv := focusFixture(t, TopSegments+2, 1, 3, false)
	focusPass(t, s, drv, focusNow)
	if n := drv.Int(t, `SELECT count(*) FROM segment_focus_keywords`); n != 3*TopSegments {
		t.Fatalf("%d focus keywords", n)
	}
	cs := crawl.D1Store{DB: s.DB}
	ctx := context.Background()
	if _, err := cs.Steer(ctx, focusNow, true); err != nil {
		t.Fatal(err)
	}
	dv := func(kw string) float64 {
		return drv.Rows(t, `SELECT due_value FROM crawl_keywords WHERE keyword = ?`, kw)[0]["due_value"].(float64)
	}
	if dv("s1 k01") != crawl.TopSegmentValue(0, 0, true) || dv("s12 k01") != crawl.TopSegmentValue(0, 0, false) {
		t.Fatalf("due values %v, %v: the SQL's differ from the policy's", dv("s1 k01"), dv("s12 k01"))
	}
	n := 3*TopSegments + 2 // a bound short of every due keyword
	got, err := cs.PickKeywords(ctx, n, crawl.Slow{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != n {
		t.Fatalf("picked %d of a bound of %d", len(got), n)
	}
	for i, kw := range got {
		var seg int
		fmt.Sscanf(kw, "s%d", &seg)
		if i < 3*TopSegments && seg > TopSegments {
			t.Fatalf("%q (segment %d) picked before a top segment's keyword: %v", kw, seg, got)
		}
	}
	// Searched: a top segment's keyword rests a day, another its month.
	for _, kw := range []string{"s1 k01", "s12 k01"} {
		if err := cs.SaveRankings(ctx, kw, nil, focusNow); err != nil {
			t.Fatal(err)
		}
	}
	iv := func(kw string) int64 {
		return drv.Int(t, `SELECT research_interval_s FROM crawl_keywords WHERE keyword = ?`, kw)
	}
	if iv("s1 k01") != int64(crawl.TopSegmentInterval(0, true)/time.Second) || iv("s12 k01") != int64(crawl.TopSegmentInterval(0, false)/time.Second) {
		t.Fatalf("intervals %d, %d", iv("s1 k01"), iv("s12 k01"))
	}
	if crawl.TopSegmentValue(0, 0, true) <= crawl.PendingKeywordValue(crawl.MaxOpportunityScore, crawl.KeywordCarrierCap) ||
		crawl.TopSegmentValue(crawl.MaxOpportunityScore, crawl.KeywordCarrierCap, true) >= crawl.SeedKeywordValue {
		t.Fatal("a top segment's keyword goes before any other, after an operator's seed")
	}
}

// TestFocusWritesBoundedAndChangeOnly: a first pass over more than the
// bound writes at most FocusRowsPerPass rows; passes converge, then write
// nothing; a turnover of the top is bounded again.
func TestFocusWritesBoundedAndChangeOnly(t *testing.T) {
	s, drv := focusFixture(t, TopSegments+TopSegments/2, FocusAppsPerSegment, FocusKeywordsPerSegment, false)
	var passes []int64
	at := focusNow
	for pass := 0; pass < 10; pass++ {
		_, c, w := focusPass(t, s, drv, at)
		at = at.Add(time.Hour)
		if w > FocusRowsPerPass {
			t.Fatalf("pass %d wrote %d rows, over %d", pass, w, FocusRowsPerPass)
		}
		if c.RowsRead > 20_000 {
			t.Fatalf("pass %d read %d rows", pass, c.RowsRead)
		}
		passes = append(passes, w)
		if w == 0 {
			break
		}
	}
	if passes[len(passes)-1] != 0 || len(passes) < 3 {
		t.Fatalf("rows written by pass: %v", passes)
	}
	if n := drv.Int(t, `SELECT count(*) FROM segment_focus_apps`); n != MaxFocusApps {
		t.Fatalf("%d focus apps", n)
	}
	if n := drv.Int(t, `SELECT count(*) FROM app_registry WHERE enrich_priority = ?`, FocusAppPriority); n != MaxFocusApps {
		t.Fatalf("%d raised", n)
	}
	// The bottom half of the top falls out.
	drv.Exec(t, `UPDATE segments SET opportunity = 100 - opportunity`)
	for pass := 0; pass < 10; pass++ {
		_, _, w := focusPass(t, s, drv, at)
		at = at.Add(time.Hour)
		if w > FocusRowsPerPass {
			t.Fatalf("turnover pass %d wrote %d rows", pass, w)
		}
		if w == 0 {
			break
		}
	}
	var ids []int64
	for _, r := range drv.Rows(t, `SELECT DISTINCT segment_id FROM segment_focus_apps ORDER BY segment_id`) {
		ids = append(ids, int64(r["segment_id"].(float64)))
	}
	want := []int64{6, 7, 8, 9, 10, 11, 12, 13, 14, 15}
	if !slices.Equal(ids, want) {
		t.Fatalf("focus segments %v, want %v", ids, want)
	}
	if n := drv.Int(t, `SELECT count(*) FROM app_registry WHERE enrich_priority = ?`, FocusAppPriority); n != MaxFocusApps {
		t.Fatalf("%d raised after the turnover", n)
	}
}

// TestFocusCycleSearchesTopSegmentsWithinTheCycleBound: a real crawl
// cycle over more due keywords than its bound, the top segments' more
// than the bound too: it sends exactly KeywordSearchesPerCycle searches,
// every one a top segment's keyword.
func TestFocusCycleSearchesTopSegmentsWithinTheCycleBound(t *testing.T) {
	perSeg := crawl.KeywordSearchesPerCycle/TopSegments + 2
	s, drv := focusFixture(t, TopSegments+5, 1, perSeg, false)
	focusPass(t, s, drv, focusNow)
	if n := drv.Int(t, `SELECT count(*) FROM segment_focus_keywords`); n <= int64(crawl.KeywordSearchesPerCycle) {
		t.Fatalf("%d focus keywords: the test needs more than a cycle's bound", n)
	}
	var mu sync.Mutex
	var searched []string
	fetch := func(ctx context.Context, u string) upstream.Response {
		if strings.Contains(u, "/search?") {
			p, _ := url.Parse(u)
			mu.Lock()
			searched = append(searched, p.Query().Get("term"))
			mu.Unlock()
			return upstream.Response{Class: objects.ClassOK, Body: []byte(`{"resultCount":0,"results":[]}`), Remaining: -1}
		}
		return upstream.Response{Class: objects.ClassOK, Body: []byte(`{"feed":{"results":[]}}`), Remaining: -1}
	}
	r := crawl.CrawlCycle(context.Background(), crawl.D1Store{DB: s.DB}, fetch, "http://up", "us", func(time.Duration) {}, 0.1, focusNow)
	t.Logf("cycle: %s, %d searches", r.Action, len(searched))
	if len(searched) != crawl.KeywordSearchesPerCycle {
		t.Fatalf("%d searches, the cycle's bound is %d (%+v)", len(searched), crawl.KeywordSearchesPerCycle, r)
	}
	for _, kw := range searched {
		var seg int
		fmt.Sscanf(kw, "s%d", &seg)
		if seg < 1 || seg > TopSegments {
			t.Fatalf("searched %q (segment %d) while top segments' keywords were due", kw, seg)
		}
	}
}
