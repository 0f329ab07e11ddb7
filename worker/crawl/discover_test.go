//go:build !js

package crawl

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"storecrawl/internal/objects"
	"storecrawl/worker/appstore"
	"storecrawl/worker/d1"
	"storecrawl/worker/d1/d1test"
	"storecrawl/worker/upstream"
)

// portfolioBody is a developer lookup in the real shape
// (appstore/testdata/lookup_us_developer_uber_built.json): the artist's
// wrapper, then its apps.
func portfolioBody(dev int64, ids ...int64) []byte {
	results := append([]map[string]any{{"wrapperType": "artist", "artistType": "Software Artist", "artistName": "Dev", "artistId": dev}},
		appResults(dev, ids)...)
	b, _ := json.Marshal(map[string]any{"resultCount": len(results), "results": results})
	return b
}

// appResults are the apps of ids in a lookup's shape, developer dev's.
func appResults(dev int64, ids []int64) []map[string]any {
	var out []map[string]any
	for _, id := range ids {
		out = append(out, map[string]any{"wrapperType": "software", "kind": "software", "trackId": id,
			"trackName": fmt.Sprintf("App %d", id), "artistId": dev, "artistName": "Dev", "primaryGenreId": 6007,
			"userRatingCount": 10 * id, "averageUserRating": 4.5, "version": "1.0", "price": 0, "currency": "USD"})
	}
	return out
}

// recordingUpstream records each URL asked in urls and answers a chart
// with one app, anything else with answer's body.
func recordingUpstream(urls *[]string, answer func(u string) []byte) func(context.Context, string) upstream.Response {
	return func(_ context.Context, u string) upstream.Response {
		*urls = append(*urls, u)
		if strings.Contains(u, "/rss/") {
			return upstream.Response{Class: objects.ClassOK, Body: []byte(`{"feed":{"results":[{"id":"1","name":"a"}]}}`), Remaining: -1}
		}
		return upstream.Response{Class: objects.ClassOK, Body: answer(u), Remaining: -1}
	}
}

// TestCrawlCycleLooksUpDuePortfolios: due developers are looked up after
// the primary task (entity=software, one lookup each), and not after a
// refusal.
func TestCrawlCycleLooksUpDuePortfolios(t *testing.T) {
	var urls []string
	fetch := recordingUpstream(&urls, func(string) []byte { return portfolioBody(70, 11, 12) })
	// An idle cycle does not probe for them (its reads stay its checks').
	f := &fakeDiscovery{due: map[string]bool{}, portfolios: []int64{70}}
	if r := CrawlCycle(context.Background(), f, fetch, "http://up", "us", noSleep, 0.5, time.Now()); r.Action != "idle" || len(urls) != 0 {
		t.Fatalf("idle: %+v %v", r, urls)
	}
	// Beside a fill, which is what makes developers due.
	f = &fakeDiscovery{due: map[string]bool{}, portfolios: []int64{70}, fillApps: []FillApp{{TrackID: 1, DeveloperID: 70}}}
	r := CrawlCycle(context.Background(), f, fetch, "http://up", "us", noSleep, 0.5, time.Now())
	p := r.Portfolios
	if p == nil || p.Searches != 1 || p.Found != 1 || p.Apps != 2 || p.NewApps != 2 || f.saved2[70] != 2 ||
		len(urls) != 1 || !strings.Contains(urls[0], "/lookup?") || !strings.Contains(urls[0], "entity=software") || !strings.Contains(urls[0], "id=70") {
		t.Fatalf("%+v %+v %v", r, p, urls)
	}
	urls = nil
	f = &fakeDiscovery{due: map[string]bool{"high": true}, portfolios: []int64{70, 71}}
	r = CrawlCycle(context.Background(), f, fetch, "http://up", "us", noSleep, 0.5, time.Now())
	if r.Action != "category_scan" || r.Portfolios == nil || r.Portfolios.Searches != 2 || len(urls) != 5 {
		t.Fatalf("beside a scan: %+v %+v %v", r, r.Portfolios, urls)
	}
	refused := func(_ context.Context, u string) upstream.Response {
		return upstream.Response{Class: objects.ClassRateLimit, Err: fmt.Errorf("429"), Remaining: -1}
	}
	f = &fakeDiscovery{due: map[string]bool{"high": true}, portfolios: []int64{70}}
	if r = CrawlCycle(context.Background(), f, refused, "http://up", "us", noSleep, 0.5, time.Now()); r.Portfolios != nil || f.saved2 != nil {
		t.Fatalf("a refusal stops the cycle's sends: %+v", r)
	}
}

// TestPortfolioDiscovery runs the portfolio path on the real schema: the
// ranking fill marks an enriched app's developer due, the cycle's pick
// finds it, the lookup's save queues the apps not known (with their
// lookup fields), and the developer is never looked up again. Its rows
// and its new apps per request are counted.
func TestPortfolioDiscovery(t *testing.T) {
	db, drv := d1test.New(t)
	s := D1Store{DB: db}
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	ts := d1.Time(now)
	// Developer 70 has one enriched app (1) and one queued (11); 12, 13
	// and 14 are unknown.
	drv.Exec(t, `INSERT INTO developers (developer_id, name, first_seen_at, updated_at) VALUES (70, 'Dev', ?1, ?1), (71, 'Other', ?1, ?1)`, ts)
	drv.Exec(t, `INSERT INTO app_registry (track_id, name, developer_id, enrichment_source, enriched_at) VALUES (1, 'Budget', 70, 'itunes+store', ?)`, ts)
	drv.Exec(t, `INSERT INTO app_registry (track_id, developer_id) VALUES (11, 70)`)

	before := drv.TotalChanges(t)
	apps, err := s.FillCandidates(context.Background(), RankingFillApps, now)
	if err != nil || len(apps) != 1 || apps[0].DeveloperID != 70 {
		t.Fatalf("fill candidates %+v %v", apps, err)
	}
	if _, err := s.SaveFill(context.Background(), apps, now); err != nil {
		t.Fatal(err)
	}
	if n := drv.Int(t, `SELECT count(*) FROM developers WHERE portfolio_due_at IS NOT NULL`); n != 1 {
		t.Fatalf("%d developers due, want 1 (70)", n)
	}
	fillRows := drv.TotalChanges(t) - before
	due, err := s.DuePortfolios(context.Background(), PortfolioLookupsPerCycle)
	if err != nil || len(due) != 1 || due[0] != 70 {
		t.Fatalf("due %v %v", due, err)
	}

	var requests int
	fetch := func(_ context.Context, u string) upstream.Response {
		requests++
		return upstream.Response{Class: objects.ClassOK, Body: portfolioBody(70, 1, 11, 12, 13, 14), Remaining: -1}
	}
	before = drv.TotalChanges(t)
	res := lookupPortfolios(context.Background(), s, fetch, "http://up", "us", due, now)
	written := drv.TotalChanges(t) - before
	if res.Error != "" || res.Searches != 1 || res.Apps != 5 || res.NewApps != 3 || requests != 1 {
		t.Fatalf("%+v", res)
	}
	if row := drv.Rows(t, `SELECT name, rating_count, lookup_at, enriched_at FROM app_registry WHERE track_id = 13`)[0]; row["name"] != "App 13" || row["rating_count"] != float64(130) || row["lookup_at"] != ts || row["enriched_at"] != nil {
		t.Fatalf("a new app is queued with its lookup fields: %v", row)
	}
	if n := drv.Int(t, `SELECT count(*) FROM developers WHERE portfolio_at = ?`, ts); n != 1 {
		t.Fatalf("developer not marked looked up")
	}
	if again, _ := s.DuePortfolios(context.Background(), PortfolioLookupsPerCycle); len(again) != 0 {
		t.Fatalf("a looked-up developer is due again: %v", again)
	}
	// Filled again (renamed), the app writes nothing for its developer.
	before = drv.TotalChanges(t)
	refill, _ := FillStatements(apps, now.Add(time.Hour))
	if _, err := db.Exec(context.Background(), refill...); err != nil {
		t.Fatal(err)
	}
	if n := drv.Int(t, `SELECT count(*) FROM developers WHERE portfolio_due_at = ?`, d1.Time(now.Add(time.Hour))); n != 0 {
		t.Fatalf("a looked-up developer was marked due again")
	}
	t.Logf("developer portfolio: %d new apps for %d request (%.1f new apps a request); fill with the due mark %d rows, portfolio save %d rows",
		res.NewApps, res.Searches, float64(res.NewApps)/float64(res.Searches), fillRows, written)
}

// TestSeedsQueueFirst: seeded keywords are searched first (a new one
// pending above every computed value, a searched one made due at once),
// and a repeated seed writes nothing.
func TestSeedsQueueFirst(t *testing.T) {
	db, drv := d1test.New(t)
	s := D1Store{DB: db}
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	ts := d1.Time(now)
	drv.Exec(t, `INSERT INTO crawl_keywords (keyword, source, created_at, value) VALUES ('budget', 'title', ?1, 140), ('chat', 'title', ?1, 50)`, ts)
	drv.Exec(t, `INSERT INTO crawl_keywords (keyword, source, created_at, value, searched_at, next_search_at) VALUES ('notes', 'title', ?1, 20, ?1, '2026-04-01T00:00:00.000Z')`, ts)
	before := drv.TotalChanges(t)
	got, err := s.Seed(context.Background(), []string{"zeta planner", "notes", "chat"}, []int64{555, 556}, now)
	if err != nil || got.Keywords != 3 || got.Apps != 2 || got.NewApps != 2 {
		t.Fatalf("%+v %v", got, err)
	}
	// A new keyword, a searched one made due, a pending one raised; two
	// new apps and their counter rows.
	if written := drv.TotalChanges(t) - before; written != 7 {
		t.Fatalf("seed wrote %d rows, want 7", written)
	}
	kws, err := s.PickKeywords(context.Background(), 3, Slow{})
	if err != nil || len(kws) != 3 || kws[2] == "budget" || !strings.Contains(strings.Join(kws, ","), "zeta planner") || !strings.Contains(strings.Join(kws, ","), "notes") {
		t.Fatalf("pick %v %v: the seeds first", kws, err)
	}
	if src := drv.Rows(t, `SELECT source FROM crawl_keywords WHERE keyword = 'zeta planner'`)[0]["source"]; src != KeywordSourceSeed {
		t.Fatalf("source %v", src)
	}
	before = drv.TotalChanges(t)
	if _, err := s.Seed(context.Background(), []string{"zeta planner", "notes"}, []int64{555}, now); err != nil || drv.TotalChanges(t) != before {
		t.Fatalf("a repeated seed wrote %d rows (%v)", drv.TotalChanges(t)-before, err)
	}
}

// TestCategoryScansCoverEveryGenre: the migrations list every genre of
// appstore.AllGenres for scanning, by its name, and nothing else.
func TestCategoryScansCoverEveryGenre(t *testing.T) {
	_, drv := d1test.New(t)
	rows := drv.Rows(t, `SELECT genre_id, name, tier FROM category_scans ORDER BY genre_id`)
	want := map[int]string{}
	for _, g := range appstore.AllGenres() {
		want[g.ID] = g.Name
	}
	if len(rows) != len(want) {
		t.Fatalf("%d categories, %d genres", len(rows), len(want))
	}
	for _, r := range rows {
		id := int(r["genre_id"].(float64))
		if want[id] != r["name"] {
			t.Fatalf("category %d %v, genre %q", id, r["name"], want[id])
		}
	}
}

// TestGenreScansFitTheCycles: scanning every genre on its tier's rescan
// interval needs fewer scans a day than the cycles the tier's weight
// gives it when every tier is due (a cycle scans one category: its
// len(appstore.ChartCollections) chart requests, one connection).
func TestGenreScansFitTheCycles(t *testing.T) {
	_, drv := d1test.New(t)
	cyclesPerDay := float64(24*time.Hour) / float64(CyclePeriod)
	total := 0
	for _, tr := range Tiers {
		total += tr.Weight
	}
	for _, tr := range Tiers {
		n := drv.Int(t, `SELECT count(*) FROM category_scans WHERE tier = ?`, tr.Name)
		need := float64(n) / (float64(tr.Rescan) / float64(24*time.Hour))
		share := cyclesPerDay * float64(tr.Weight) / float64(total)
		if need > share {
			t.Fatalf("tier %s: %d categories need %.1f scans a day, its weight gives %.1f", tr.Name, n, need, share)
		}
		t.Logf("tier %s: %d categories, %.2f scans a day needed (%d requests), %.1f cycles a day its share", tr.Name, n, need, int(need*float64(len(appstore.ChartCollections))+0.5), share)
	}
	if ScanConnections > ConnectionBudget {
		t.Fatalf("a scan takes more connections than a cycle has")
	}
}

// lookupBody is a lookup of several ids in the real shape: the apps
// found, in any order; missing ids are left out.
func lookupBody(ids ...int64) []byte {
	results := appResults(70, ids)
	b, _ := json.Marshal(map[string]any{"resultCount": len(results), "results": results})
	return b
}

// askedIDs are the ids of a lookup URL.
func askedIDs(t *testing.T, u string) []int64 {
	t.Helper()
	q, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, s := range strings.Split(q.Query().Get("id"), ",") {
		id, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("%s: %v", u, err)
		}
		ids = append(ids, id)
	}
	return ids
}

// TestCrawlCycleLooksUpUnlookedAppsFirst: apps queued without lookup
// fields are looked up first in the cycle, DiscoveryLookupIDs ids a call,
// at most MaxDiscoveryLookupsPerCycle calls; a refusal stops them and the
// cycle's searches.
func TestCrawlCycleLooksUpUnlookedAppsFirst(t *testing.T) {
	var urls []string
	fetch := recordingUpstream(&urls, func(u string) []byte { return lookupBody(askedIDs(t, u)...) })
	unlooked := make([]int64, MaxDiscoveryLookupsPerCycle*DiscoveryLookupIDs+7)
	for i := range unlooked {
		unlooked[i] = int64(1000 + i)
	}
	// The cycle's only work.
	f := &fakeDiscovery{due: map[string]bool{}, unlooked: unlooked}
	r := CrawlCycle(context.Background(), f, fetch, "http://up", "us", noSleep, 0.5, time.Now())
	if r.Action != "discovery_lookups" || r.Searches != MaxDiscoveryLookupsPerCycle || r.Found != MaxDiscoveryLookupsPerCycle*DiscoveryLookupIDs ||
		r.Apps != r.Found || f.looked != r.Found || len(urls) != MaxDiscoveryLookupsPerCycle {
		t.Fatalf("%+v, %d saved, %d requests", r, f.looked, len(urls))
	}
	for _, u := range urls {
		if n := len(askedIDs(t, u)); n != DiscoveryLookupIDs || strings.Contains(u, "entity=") {
			t.Fatalf("a lookup of %d ids: %s", n, u[:80])
		}
	}
	// Before a scan.
	urls = nil
	f = &fakeDiscovery{due: map[string]bool{"high": true}, unlooked: unlooked[:3]}
	r = CrawlCycle(context.Background(), f, fetch, "http://up", "us", noSleep, 0.5, time.Now())
	if r.Action != "category_scan" || r.Lookups == nil || r.Lookups.Apps != 3 || len(urls) != 4 || !strings.Contains(urls[0], "/lookup?id=1000,1001,1002") {
		t.Fatalf("beside a scan: %+v %+v %v", r, r.Lookups, urls)
	}
	// A refusal: no more lookups, no searches, no portfolios.
	urls = nil
	refused := func(_ context.Context, u string) upstream.Response {
		urls = append(urls, u)
		return upstream.Response{Class: objects.ClassRateLimit, Err: fmt.Errorf("429"), Remaining: -1}
	}
	f = &fakeDiscovery{due: map[string]bool{}, unlooked: unlooked, pending: []string{"budget"}, portfolios: []int64{70},
		fillApps: []FillApp{{TrackID: 1, DeveloperID: 70}}}
	r = CrawlCycle(context.Background(), f, refused, "http://up", "us", noSleep, 0.5, time.Now())
	if r.Lookups == nil || !r.Lookups.RateLimited || r.Lookups.Searches != 1 || len(urls) != 1 || r.Portfolios != nil || f.looked != 0 {
		t.Fatalf("a refusal stops the cycle's API sends: %+v %+v %v", r, r.Lookups, urls)
	}
}

// TestDiscoveryLookups runs the discovery lookups on the real schema:
// the pick reads only queued apps without lookup fields, from its cursor
// and on from the start; a lookup's save keeps their lookup fields (the
// app leaves the pick), passes an id the answer lacks, and moves the
// cursor. Its rows are counted.
func TestDiscoveryLookups(t *testing.T) {
	db, drv := d1test.New(t)
	s := D1Store{DB: db}
	ctx := context.Background()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	ts := d1.Time(now)
	// 21, 22, 23 met by id alone; 24 found by a search; 25 enriched.
	drv.Exec(t, `INSERT INTO app_registry (track_id) VALUES (21), (22), (23)`)
	drv.Exec(t, `INSERT INTO app_registry (track_id, name, lookup_at) VALUES (24, 'Found', ?)`, ts)
	drv.Exec(t, `INSERT INTO app_registry (track_id, name, enrichment_source, enriched_at) VALUES (25, 'Done', 'itunes+store', ?)`, ts)

	w := drv.Measure(t, unlookedSQL, 0, 1000)
	if w.Rows != 3 || w.Walked > 2 {
		t.Fatalf("the pick read %+v: only the 3 unlooked apps", w)
	}
	var requests int
	fetch := func(_ context.Context, u string) upstream.Response {
		requests++
		ids := askedIDs(t, u)
		return upstream.Response{Class: objects.ClassOK, Body: lookupBody(ids[0]), Remaining: -1} // the rest are missing
	}
	ids, cur, err := s.Unlooked(ctx, 2)
	if err != nil || fmt.Sprint(ids) != "[21 22]" {
		t.Fatalf("pick %v %v", ids, err)
	}
	before := drv.TotalChanges(t)
	res, _ := discoveryLookups(ctx, s, fetch, "http://up", "us", now)
	written := drv.TotalChanges(t) - before
	if res == nil || res.Error != "" || res.Searches != 1 || res.Found != 3 || res.Apps != 1 || requests != 1 {
		t.Fatalf("%+v", res)
	}
	if row := drv.Rows(t, `SELECT name, rating_count, lookup_at, enriched_at FROM app_registry WHERE track_id = 21`)[0]; row["name"] != "App 21" || row["rating_count"] != float64(210) || row["lookup_at"] != ts || row["enriched_at"] != nil {
		t.Fatalf("a looked-up app is queued with its lookup fields: %v", row)
	}
	// 22 and 23 were missing from the answer: still unlooked, queued for
	// their enrichment; the cursor passed them, so the next pick starts
	// over and finds them again (21 left the index).
	cur, _ = d1.ReadCursor(ctx, db, discoveryCursorName)
	if cur.Int() != 23 {
		t.Fatalf("cursor at %d, want 23 (the last id asked)", cur.Int())
	}
	ids, _, err = s.Unlooked(ctx, 5)
	if err != nil || fmt.Sprint(ids) != "[22 23]" {
		t.Fatalf("the next pass: %v %v", ids, err)
	}
	if n := drv.Int(t, `SELECT count(*) FROM app_registry WHERE lookup_at IS NULL AND enriched_at IS NULL`); n != 2 {
		t.Fatalf("%d unlooked, want 2", n)
	}
	t.Logf("discovery lookup: %d apps kept with their lookup fields for %d request; save %d rows written (the app, its history, the cursor)",
		res.Apps, res.Searches, written)
}

// TestDiscoveryShare: the base share while the apps waiting fit it, the
// searches untouched; beyond it the lookups grow with the backlog to their
// bound, taking the searches' calls, which keep BacklogKeywordSearches; the
// cycle's calls stay within BacklogCallsPerCycle during a fill.
func TestDiscoveryShare(t *testing.T) {
	base := DiscoveryLookupsPerCycle * DiscoveryLookupIDs
	for _, c := range []struct{ waiting, lookups, searches int }{
		{0, 0, KeywordSearchesPerCycle},
		{-1, 0, KeywordSearchesPerCycle},
		{1, 1, KeywordSearchesPerCycle},
		{DiscoveryLookupIDs, 1, KeywordSearchesPerCycle},
		{DiscoveryLookupIDs + 1, 2, KeywordSearchesPerCycle},
		{base, DiscoveryLookupsPerCycle, KeywordSearchesPerCycle},
		{base + 1, DiscoveryLookupsPerCycle + 1, BacklogCallsPerCycle - DiscoveryLookupsPerCycle - 1},
		{MaxDiscoveryLookupsPerCycle * DiscoveryLookupIDs, MaxDiscoveryLookupsPerCycle, BacklogKeywordSearches},
		{10 * MaxDiscoveryLookupsPerCycle * DiscoveryLookupIDs, MaxDiscoveryLookupsPerCycle, BacklogKeywordSearches},
	} {
		l, s := DiscoveryShare(c.waiting)
		if l != c.lookups || s != c.searches {
			t.Errorf("DiscoveryShare(%d) = %d lookups, %d searches; want %d, %d", c.waiting, l, s, c.lookups, c.searches)
		}
	}
	prev := 0
	for w := 0; w <= 2*MaxDiscoveryLookupsPerCycle*DiscoveryLookupIDs; w += 50 {
		l, s := DiscoveryShare(w)
		if l < prev {
			t.Fatalf("at %d waiting the lookups shrank: %d < %d", w, l, prev)
		}
		prev = l
		if l > DiscoveryLookupsPerCycle && l+s > BacklogCallsPerCycle {
			t.Fatalf("at %d waiting a fill's cycle sends %d + %d calls", w, l, s)
		}
	}
	if DiscoveryLookupsPerCycle >= MaxDiscoveryLookupsPerCycle || BacklogKeywordSearches < 1 || BacklogCallsPerCycle > KeywordSearchesPerCycle {
		t.Fatal("the backlog's share must grow the lookups, keep some searches, and stay within the searches' own bound")
	}
}

// TestCrawlCycleSearchesYieldToALookupBacklog: with a backlog, the cycle's
// lookups take the searches' calls (BacklogKeywordSearches searches sent);
// with few apps waiting, the searches keep their bound.
func TestCrawlCycleSearchesYieldToALookupBacklog(t *testing.T) {
	unlooked := make([]int64, 3*MaxDiscoveryLookupsPerCycle*DiscoveryLookupIDs)
	for i := range unlooked {
		unlooked[i] = int64(1000 + i)
	}
	var urls []string
	fetch := recordingUpstream(&urls, func(u string) []byte {
		if strings.Contains(u, "/lookup?") {
			return lookupBody(askedIDs(t, u)...)
		}
		return []byte(`{"resultCount":0,"results":[]}`)
	})
	f := &fakeDiscovery{due: map[string]bool{}, unlooked: unlooked, pending: manyKeywords(3 * KeywordSearchesPerCycle)}
	r := CrawlCycle(context.Background(), f, fetch, "http://up", "us", noSleep, 0.5, time.Now())
	if r.Lookups == nil || r.Lookups.Searches != MaxDiscoveryLookupsPerCycle || r.Searches != BacklogKeywordSearches ||
		len(urls) != MaxDiscoveryLookupsPerCycle+BacklogKeywordSearches {
		t.Fatalf("a fill's cycle: %+v lookups %+v, %d requests", r, r.Lookups, len(urls))
	}
	urls = nil
	f = &fakeDiscovery{due: map[string]bool{}, unlooked: unlooked[:3], pending: manyKeywords(3 * KeywordSearchesPerCycle)}
	r = CrawlCycle(context.Background(), f, fetch, "http://up", "us", noSleep, 0.5, time.Now())
	if r.Lookups == nil || r.Lookups.Searches != 1 || r.Searches != KeywordSearchesPerCycle {
		t.Fatalf("a few apps waiting: %+v lookups %+v", r, r.Lookups)
	}
}
