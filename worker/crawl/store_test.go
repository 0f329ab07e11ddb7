//go:build !js

package crawl

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"storecrawl/internal/objects"
	"storecrawl/worker/appstore"
	"storecrawl/worker/catalogue"
	"storecrawl/worker/d1"
	"storecrawl/worker/d1/d1test"
	"storecrawl/worker/events"
	"storecrawl/worker/upstream"
)

type queue struct {
	mu     sync.Mutex
	events []events.Event
}

func (q *queue) Send(_ context.Context, body string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	var ev events.Event
	if err := json.Unmarshal([]byte(body), &ev); err != nil {
		return err
	}
	q.events = append(q.events, ev)
	return nil
}

// fakeUpstream answers charts (two apps per chart, shared between charts),
// searches (three apps per keyword, developer 70) and lookups of the
// charts' apps by id.
// chartPath is the iTunes RSS chart path a category scan must ask for.
var chartPath = regexp.MustCompile(`^/us/rss/top(free|paid|grossing)applications/limit=200/genre=\d+/json$`)

func fakeUpstream(ctx context.Context, raw string) upstream.Response {
	u, _ := url.Parse(raw)
	q := u.Query()
	var body string
	switch {
	case chartPath.MatchString(u.Path):
		// The iTunes RSS shape, trimmed to what the chart parser reads.
		body = `{"feed":{"entry":[{"im:name":{"label":"Budget Planner"},"id":{"label":"https://apps.apple.com/us/app/id100000001","attributes":{"im:id":"100000001"}}},` +
			`{"im:name":{"label":"Chat Pro"},"id":{"label":"https://apps.apple.com/us/app/id100000002","attributes":{"im:id":"100000002"}}}]}}`
	case u.Path == "/search":
		if q.Get("entity") != "software" {
			return upstream.Response{Status: 400, Class: objects.ClassParseError, Remaining: -1, Err: fmt.Errorf("search without entity=software: %s", raw)}
		}
		var rs []string
		for i := 1; i <= 3; i++ {
			rs = append(rs, fmt.Sprintf(`{"trackId":%d,"trackName":"%s %d","artistId":70,"artistName":"Dev","averageUserRating":4.1,"userRatingCount":%d,"primaryGenreId":6015}`, 200000000+i, q.Get("term"), i, i*10))
		}
		body = `{"resultCount":3,"results":[` + strings.Join(rs, ",") + `]}`
	case u.Path == "/lookup" && q.Get("entity") == "":
		// A lookup of the charts' apps by id (the discovery lookups).
		names := map[string]string{"100000001": "Budget Planner", "100000002": "Chat Pro"}
		var rs []string
		for _, id := range strings.Split(q.Get("id"), ",") {
			if name, ok := names[id]; ok {
				rs = append(rs, fmt.Sprintf(`{"wrapperType":"software","kind":"software","trackId":%s,"trackName":%q,"artistId":71,"artistName":"Chart Dev","averageUserRating":4.2,"userRatingCount":7,"primaryGenreId":6015}`, id, name))
			}
		}
		body = fmt.Sprintf(`{"resultCount":%d,"results":[%s]}`, len(rs), strings.Join(rs, ","))
	default:
		return upstream.Response{Status: 404, Class: objects.ClassNotFound, Remaining: -1, Err: fmt.Errorf("404")}
	}
	return upstream.Response{Status: 200, Class: objects.ClassOK, Body: []byte(body), Remaining: -1}
}

func TestCategoryScanThenKeywordMappingAgainstD1(t *testing.T) {
	db, drv := d1test.New(t)
	q := &queue{}
	c := &Crawler{Store: D1Store{DB: db}, Fetch: fakeUpstream, Events: q, APIBase: "http://up", Country: "us", Sleep: noSleep}
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

	// Every category is due (never scanned): a high-tier scan runs first.
	res := c.Run(context.Background(), 0.1, now)
	if res.Action != "category_scan" || res.Tier != "high" || res.Apps != 2 || res.Error != "" {
		t.Fatalf("scan: %+v", res)
	}
	if n := drv.Int(t, `SELECT COUNT(*) FROM app_registry WHERE enriched_at IS NULL`); n != 2 {
		t.Fatalf("queued apps: %d", n)
	}
	if n := drv.Int(t, `SELECT COUNT(*) FROM chart_positions WHERE genre_id = ?`, res.GenreID); n != 6 {
		t.Fatalf("chart positions (2 per chart × 3 charts): %d", n)
	}
	if n := drv.Int(t, `SELECT COUNT(*) FROM category_scans WHERE genre_id = ? AND last_scanned_at = ?`, res.GenreID, "2026-11-23T12:00:00.000Z"); n != 1 {
		t.Fatal("the scanned category must be marked")
	}
	// A scan queues no keyword (titles are the hints' seeds); the hints'
	// terms are what mapping searches.
	if n := drv.Int(t, `SELECT COUNT(*) FROM crawl_keywords`); n != 0 {
		t.Fatalf("a scan queued %d keywords", n)
	}
	drv.Exec(t, `INSERT INTO crawl_keywords (keyword, source, created_at, value) VALUES ('budget', 'hints', ?1, 20), ('budget planner', 'hints', ?1, 18)`, d1.Time(now))
	pending := drv.Int(t, `SELECT COUNT(*) FROM crawl_keywords WHERE searched_at IS NULL`)
	// With every category scanned, pending keywords are mapped.
	drv.Exec(t, `UPDATE category_scans SET last_scanned_at = ?`, "2026-11-23T12:00:00.000Z")
	res = c.Run(context.Background(), 0.1, now.Add(5*time.Minute))
	if res.Action != "keyword_mapping" || res.Error != "" || len(res.Keywords) == 0 {
		t.Fatalf("mapping: %+v", res)
	}
	if n := drv.Int(t, `SELECT COUNT(*) FROM crawl_rankings`); n != int64(3*len(res.Keywords)) {
		t.Fatalf("rankings: %d for %d keywords", n, len(res.Keywords))
	}
	if n := drv.Int(t, `SELECT COUNT(*) FROM crawl_keywords WHERE searched_at IS NULL`); n != pending-int64(len(res.Keywords)) {
		t.Fatalf("searched keywords must leave the pending set: %d left", n)
	}
	if n := drv.Int(t, `SELECT COUNT(*) FROM developers WHERE developer_id = 70`); n != 1 {
		t.Fatal("the developer must be upserted once")
	}
	if len(q.events) != 1 || q.events[0].Type != events.RankingsUpdated || len(q.events[0].Keywords) != len(res.Keywords) {
		t.Fatalf("rankings-updated: %+v", q.events)
	}
}

func TestD1FailureLeavesTheWorkDue(t *testing.T) {
	db, drv := d1test.New(t)
	c := &Crawler{Store: D1Store{DB: db}, Fetch: fakeUpstream, Events: &queue{}, APIBase: "http://up", Country: "us", Sleep: noSleep}
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	drv.FailNext.Store(1)
	if res := c.Run(context.Background(), 0.1, now); res.Action != "error" {
		t.Fatalf("a failed gap check is an error: %+v", res)
	}
	// The save fails (the gap checks and the pick pass): the category stays due.
	s := &failingSaves{D1Store: D1Store{DB: db}}
	c.Store = s
	if res := c.Run(context.Background(), 0.1, now); res.Action != "error" || !strings.Contains(res.Error, "save") {
		t.Fatalf("a failed save is an error: %+v", res)
	}
	if n := drv.Int(t, `SELECT COUNT(*) FROM category_scans WHERE last_scanned_at IS NOT NULL`); n != 0 {
		t.Fatalf("nothing may be marked scanned: %d", n)
	}
	if n := drv.Int(t, `SELECT COUNT(*) FROM app_registry`); n != 0 {
		t.Fatalf("a failed batch writes nothing: %d", n)
	}
}

type failingSaves struct{ D1Store }

func (f *failingSaves) SaveScan(ctx context.Context, genre int, country string, charts map[string][]appstore.ChartEntry, now time.Time) (int, error) {
	// The batch itself fails inside D1: the real statements plus one that cannot run.
	stmts := append(ScanStatements(genre, country, charts, now), badStmt)
	_, err := f.DB.Exec(ctx, stmts...)
	return 0, err
}

var badStmt = d1.Stmt{SQL: `INSERT INTO no_such_table VALUES (1)`}

// A search answers the lookup's own shape: its results' lookup fields are
// kept with lookup_at, for a new app and a queued one alike, so
// the controller can skip their lookups; an enriched app is not touched.
func TestSearchResultsKeepTheirLookupFields(t *testing.T) {
	db, drv := d1test.New(t)
	s := D1Store{DB: db}
	drv.Exec(t, `INSERT INTO app_registry (track_id, name, rating_count) VALUES (2, 'queued', 1)`)
	drv.Exec(t, `INSERT INTO app_registry (track_id, name, rating_count, enrichment_source, enriched_at) VALUES (3, 'enriched', 7, 'itunes+store', '2026-11-01T00:00:00.000Z')`)
	body, err := os.ReadFile("../appstore/testdata/search_us_software_tsubasa_2021.json")
	if err != nil {
		t.Fatal(err)
	}
	found, err := appstore.ParseSearch(body)
	if err != nil || len(found) != 1 {
		t.Fatalf("fixture: %v %d", err, len(found))
	}
	real := found[0]
	apps := []appstore.App{real, real, real}
	apps[1].TrackID, apps[2].TrackID = 2, 3
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	if err := s.SaveRankings(context.Background(), "tsubasa", apps, now); err != nil {
		t.Fatal(err)
	}
	rows := drv.Rows(t, `SELECT track_id, name, bundle_id, developer_id, version, rating_count, description, languages, lookup_at, enriched_at
FROM app_registry ORDER BY track_id`)
	if len(rows) != 3 {
		t.Fatalf("rows %v", rows)
	}
	langs, _ := json.Marshal(real.Languages)
	for _, r := range []map[string]any{rows[0], rows[2]} { // 2 (queued) and the new one
		if r["name"] != real.Name || r["bundle_id"] != real.BundleID || r["version"] != real.Version || r["description"] != real.Description ||
			fmt.Sprint(r["rating_count"]) != fmt.Sprint(real.RatingCount) || r["languages"] != string(langs) || r["lookup_at"] != d1.Time(now) || r["enriched_at"] != nil {
			t.Fatalf("search result kept as %v, want the lookup fields of %+v at %s", r, real, d1.Time(now))
		}
	}
	// An enriched app keeps its record: only the sighting's fields move
	// (rediscovery: its rating count), and no lookup_at.
	if e := drv.Rows(t, `SELECT name, rating_count, lookup_at FROM app_registry WHERE track_id = 3`)[0]; e["name"] != "enriched" ||
		fmt.Sprint(e["rating_count"]) != fmt.Sprint(real.RatingCount) || e["lookup_at"] != nil {
		t.Fatalf("an enriched app was rewritten by a search: %v", e)
	}
}

// TestRediscoveryUpdatesKnownApps: a category scan and a search see apps
// already known; they update last_seen_at and the fields the search
// carries, append history for what changed, and clear a stale mark.
func TestRediscoveryUpdatesKnownApps(t *testing.T) {
	db, drv := d1test.New(t)
	c := &Crawler{Store: D1Store{DB: db}, Fetch: fakeUpstream, Events: &queue{}, APIBase: "http://up", Country: "us", Sleep: noSleep}
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	old := "2026-09-01T00:00:00.000Z"
	// Chart app 100000001 and search app 200000001 are known and enriched,
	// with older values; the chart app is marked stale.
	// (Both ranking-filled: the fill would queue their keywords, and the
	// scan's cycle search them.)
	drv.Exec(t, `INSERT INTO app_registry (track_id, name, rating_count, average_rating, version, enrichment_source, enriched_at, updated_at, last_seen_at, stale_at, rankings_filled_at, discovered_at)
VALUES (100000001, 'Budget Planner', 50, 4.0, '1.0', 'itunes+store', ?1, ?1, ?1, ?1, ?1, ?1), (200000001, 'budget 1', 4, 3.9, '1.0', 'itunes+store', ?1, ?1, ?1, NULL, ?1, ?1)`, old)
	if res := c.Run(context.Background(), 0.1, now); res.Action != "category_scan" || res.Error != "" {
		t.Fatalf("scan: %+v", res)
	}
	row := drv.Rows(t, `SELECT last_seen_at, stale_at, rating_count, name FROM app_registry WHERE track_id = 100000001`)[0]
	if row["last_seen_at"] != d1.Time(now) || row["stale_at"] != nil || row["rating_count"] != 50.0 || row["name"] != "Budget Planner" {
		t.Fatalf("a chart sighting: %v", row)
	}
	// A search then shows the other app with 10 ratings (it had 4).
	drv.Exec(t, `UPDATE category_scans SET last_scanned_at = ?`, d1.Time(now))
	drv.Exec(t, `DELETE FROM crawl_keywords`)
	drv.Exec(t, `INSERT INTO crawl_keywords (keyword, source, created_at) VALUES ('budget', 'title', ?)`, d1.Time(now))
	later := now.Add(time.Hour)
	if res := c.Run(context.Background(), 0.1, later); res.Action != "keyword_mapping" || res.Error != "" {
		t.Fatalf("mapping: %+v", res)
	}
	row = drv.Rows(t, `SELECT last_seen_at, observed_at, rating_count, average_rating FROM app_registry WHERE track_id = 200000001`)[0]
	if row["last_seen_at"] != d1.Time(later) || row["observed_at"] != d1.Time(later) || row["rating_count"] != 10.0 || row["average_rating"] != 4.1 {
		t.Fatalf("a search sighting: %v", row)
	}
	if n := drv.Int(t, `SELECT COUNT(*) FROM app_snapshots WHERE track_id = 200000001 AND taken_at = ? AND rating_count = 10 AND source IS NOT NULL`, catalogue.Millis(later)); n != 1 {
		t.Fatalf("the rating change is an observation: %d", n)
	}
	// The ranks of the keyword's first search are its rankings' (their
	// seen_at): no history row until one changes.
	if n := drv.Int(t, `SELECT COUNT(*) FROM keyword_rank_history WHERE keyword_id = (SELECT id FROM crawl_keywords WHERE keyword = 'budget')`); n != 0 {
		t.Fatalf("the ranks of the keyword's first search wrote %d history rows", n)
	}
	if n := drv.Int(t, `SELECT COUNT(*) FROM crawl_rankings WHERE keyword = 'budget' AND seen_at = ?`, d1.Time(later)); n != 3 {
		t.Fatalf("the ranks of the keyword's first search: %d", n)
	}
	// Two observations: the stored 4 (the value it was inserted with,
	// written by its first change) and the 10.
	if n := drv.Int(t, `SELECT COUNT(*) FROM app_snapshots WHERE track_id = 200000001`); n != 2 {
		t.Fatalf("observations: %d", n)
	}
	// The same search again: nothing changed, no new history.
	drv.Exec(t, `UPDATE crawl_keywords SET searched_at = NULL`)
	c.Run(context.Background(), 0.1, later.Add(time.Hour))
	if n := drv.Int(t, `SELECT COUNT(*) FROM app_snapshots WHERE track_id = 200000001`); n != 2 {
		t.Fatalf("an unchanged sighting appends nothing: %d", n)
	}
}

// TestRepeatedSearchWritesOnlyWhatChanged: the same search again within
// catalogue.SightingGranularity changes no stored value, so it writes
// nothing but the keyword's own mark (and no history); one app moving
// rank rewrites its ranking row and nothing else of the others; an app
// that left the results loses its ranking row.
func TestRepeatedSearchWritesOnlyWhatChanged(t *testing.T) {
	db, drv := d1test.New(t)
	s := D1Store{DB: db}
	ctx := context.Background()
	drv.Exec(t, `INSERT INTO crawl_keywords (keyword, source, created_at) VALUES ('budget', 'title', '2026-11-01T00:00:00.000Z')`)
	drv.Exec(t, `INSERT INTO app_registry (track_id, name, rating_count, average_rating, version, price, enrichment_source, enriched_at, page_version, next_refresh_at)
VALUES (99, 'enriched', 7, 4.0, '1.0', 0, 'itunes+store', '2026-11-01T00:00:00.000Z', '1.0', '2026-12-01T00:00:00.000Z')`)
	apps := make([]appstore.App, 0, 10)
	for i := int64(1); i <= 10; i++ {
		apps = append(apps, appstore.App{TrackID: i, Name: fmt.Sprint("budget ", i), BundleID: fmt.Sprint("b.", i), DeveloperID: 70, DeveloperName: "Dev",
			RatingCount: 10 * i, AverageRating: 4.5, Price: 0.99, Currency: "USD", Version: "1.0", Description: "d", Languages: []string{"EN"}})
	}
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	if err := s.SaveRankings(ctx, "budget", apps, now); err != nil {
		t.Fatal(err)
	}
	history := func() int64 {
		return drv.Int(t, `SELECT (SELECT count(*) FROM app_snapshots) + (SELECT count(*) FROM app_version_history) + (SELECT count(*) FROM app_price_history)`)
	}
	h := history()
	// The same results a few minutes later: only the keyword's mark.
	before := drv.TotalChanges(t)
	if err := s.SaveRankings(ctx, "budget", apps, now.Add(5*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if n := drv.TotalChanges(t) - before; n > 1 {
		t.Fatalf("an identical search again wrote %d rows, want 1 (the keyword's mark)", n)
	}
	if history() != h {
		t.Fatalf("an unchanged search wrote history")
	}
	// App 99 (enriched, unchanged) joins at rank 2, app 10 leaves, app 1's
	// rating count moves: the rows that changed, a history row, the mark.
	moved := append([]appstore.App{apps[0], {TrackID: 99, Name: "enriched", RatingCount: 7, AverageRating: 4.0, Version: "1.0"}}, apps[1:9]...)
	moved[0].RatingCount = 11
	before = drv.TotalChanges(t)
	if err := s.SaveRankings(ctx, "budget", moved, now.Add(10*time.Minute)); err != nil {
		t.Fatal(err)
	}
	// App 1: its count (observe; its lookup fields are then the same) and
	// two snapshots (its first change: the count it was found with, which
	// its discovery no longer wrote, and the new one); app 99: its
	// sighting (never seen before), a ranking row and its entry in the
	// rank history; apps 2..9 shift a rank (8 ranking rows, and 8 rank
	// changes: today's rows move to the day's last rank); app 10's
	// ranking row deleted and its leaving recorded; the keyword's mark.
	if n := drv.TotalChanges(t) - before; n > 3+3+8+8+2+1 {
		t.Fatalf("a search with one change wrote %d rows", n)
	}
	ranks := drv.Rows(t, `SELECT track_id, rank FROM crawl_rankings WHERE keyword = 'budget' ORDER BY rank`)
	if len(ranks) != 10 {
		t.Fatalf("rankings %v", ranks)
	}
	for i, r := range ranks {
		want := moved[i].TrackID
		if fmt.Sprint(r["track_id"]) != fmt.Sprint(want) || fmt.Sprint(r["rank"]) != fmt.Sprint(i+1) {
			t.Fatalf("rank %d: %v, want app %d", i+1, r, want)
		}
	}
	if n := drv.Int(t, `SELECT count(*) FROM app_snapshots WHERE track_id = 1 AND rating_count = 11`); n != 1 {
		t.Fatalf("the rating change is kept: %d", n)
	}
	if got := drv.Rows(t, `SELECT rank FROM keyword_rank_history WHERE keyword_id = (SELECT id FROM crawl_keywords WHERE keyword = 'budget') AND track_id = 10`); len(got) != 1 || got[0]["rank"] != nil {
		t.Fatalf("app 10 left the results: %v", got)
	}
	// Past the granularity the sighting moves again (one write per app);
	// the queued apps' lookup fields, unchanged, are not rewritten.
	later := now.Add(catalogue.SightingGranularity + 11*time.Minute)
	before = drv.TotalChanges(t)
	if err := s.SaveRankings(ctx, "budget", moved, later); err != nil {
		t.Fatal(err)
	}
	if got := drv.Rows(t, `SELECT last_seen_at, lookup_at FROM app_registry WHERE track_id = 2`)[0]; got["last_seen_at"] != d1.Time(later) || got["lookup_at"] != d1.Time(now) {
		t.Fatalf("the sighting past the granularity: %v", got)
	}
	if n := drv.TotalChanges(t) - before; n > 10+1 {
		t.Fatalf("a search past the granularity wrote %d rows", n)
	}
}

// TestResearchAfterItsIntervalWritesOnlyWhatChanged: a keyword is
// re-searched after its interval (a day at the hottest,
// HotKeywordResearch), on another UTC day. With the same results it
// writes the keyword's mark alone: the sightings are within
// catalogue.SightingGranularity (a week), the ranks held write no rank
// history (rows are changes), the queued results' unchanged lookup fields
// are not rewritten. Before, each result cost its sighting and today's
// rank, a queued one its lookup_at too: 26 rows for these 10 results (5
// queued), 2.5 a result. Past the granularity (a warm keyword, a week)
// each result costs its sighting; results that moved, their ranks.
// The scale bench's crawl cycle charges this per re-search
// (docs/scale.md).
func TestResearchAfterItsIntervalWritesOnlyWhatChanged(t *testing.T) {
	db, drv := d1test.New(t)
	s := D1Store{DB: db}
	ctx := context.Background()
	drv.Exec(t, `INSERT INTO crawl_keywords (keyword, source, created_at) VALUES ('budget', 'title', '2026-11-01T00:00:00.000Z')`)
	const n = 10
	apps := make([]appstore.App, 0, n)
	for i := int64(1); i <= n; i++ {
		apps = append(apps, appstore.App{TrackID: i, Name: fmt.Sprint("budget ", i), BundleID: fmt.Sprint("b.", i), DeveloperID: 70, DeveloperName: "Dev",
			RatingCount: 10 * i, AverageRating: 4.5, Price: 0.99, Currency: "USD", Version: "1.0", Description: "d", Languages: []string{"EN"}})
	}
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	if err := s.SaveRankings(ctx, "budget", apps, now); err != nil {
		t.Fatal(err)
	}
	// Half of them enriched since: a search leaves their records alone.
	const enriched = n / 2
	drv.Exec(t, `UPDATE app_registry SET enrichment_source = 'itunes+store', enriched_at = ? WHERE track_id <= ?`, d1.Time(now), enriched)
	ranks := func() int64 { return drv.Int(t, `SELECT count(*) FROM keyword_rank_history`) }
	r0, before := ranks(), drv.TotalChanges(t)
	day := now.Add(HotKeywordResearch)
	if err := s.SaveRankings(ctx, "budget", apps, day); err != nil {
		t.Fatal(err)
	}
	w := drv.TotalChanges(t) - before
	t.Logf("re-search a day later, %d results unchanged: %d rows (%.1f a result; 26 before)", n, w, float64(w)/n)
	if w != 1 {
		t.Fatalf("a re-search a day later, same results, wrote %d rows, want 1 (the keyword's mark)", w)
	}
	if got := ranks() - r0; got != 0 {
		t.Fatalf("ranks held wrote %d history rows", got)
	}
	// A week later (a warm keyword's interval), apps 1 and 2 swapped: each
	// result's sighting, the two rank changes, each with the rank it
	// changed from (its first: an entry writes no row, migrations/0034),
	// two ranking rows, the mark.
	week := day.Add(WarmKeywordResearch)
	swapped := append([]appstore.App{apps[1], apps[0]}, apps[2:]...)
	before = drv.TotalChanges(t)
	if err := s.SaveRankings(ctx, "budget", swapped, week); err != nil {
		t.Fatal(err)
	}
	w = drv.TotalChanges(t) - before
	t.Logf("re-search a week later, %d results, 2 moved: %d rows (%.1f a result)", n, w, float64(w)/n)
	if want := int64(n + 2*2 + 2 + 1); w != want {
		t.Fatalf("a re-search a week later wrote %d rows, want %d", w, want)
	}
	if got := drv.Rows(t, `SELECT track_id, day, rank FROM keyword_rank_history WHERE day = ? ORDER BY track_id`, catalogue.Day(week)); len(got) != 2 ||
		fmt.Sprint(got[0]["rank"], got[1]["rank"]) != "2 1" {
		t.Fatalf("the week's rank changes: %v", got)
	}
	if got := drv.Rows(t, `SELECT track_id, rank FROM keyword_rank_history WHERE day = ? ORDER BY track_id`, catalogue.Day(now)); len(got) != 2 ||
		fmt.Sprint(got[0]["rank"], got[1]["rank"]) != "1 2" {
		t.Fatalf("the ranks they changed from, on their first day: %v", got)
	}
}

// TestRepeatedScanWritesOnlyWhatChanged: a category scanned again within
// catalogue.SightingGranularity, its charts unchanged, writes its chart
// positions and their per-scan history and the category's mark; not the
// apps (seen within the granularity) nor their derived keywords (pending
// with the same value).
func TestRepeatedScanWritesOnlyWhatChanged(t *testing.T) {
	db, drv := d1test.New(t)
	s := D1Store{DB: db}
	ctx := context.Background()
	charts := map[string][]appstore.ChartEntry{}
	entries := 0
	for _, coll := range appstore.ChartCollections {
		for r := 1; r <= 5; r++ {
			charts[coll] = append(charts[coll], appstore.ChartEntry{Rank: r, TrackID: int64(1000 + r), Name: fmt.Sprint("Budget Planner ", r)})
			entries++
		}
	}
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	if _, err := s.SaveScan(ctx, 6014, "us", charts, now); err != nil {
		t.Fatal(err)
	}
	keywords := drv.Int(t, `SELECT count(*) FROM crawl_keywords`)
	before := drv.TotalChanges(t)
	if _, err := s.SaveScan(ctx, 6014, "us", charts, now.Add(5*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if n := drv.TotalChanges(t) - before; n > int64(2*entries+1) {
		t.Fatalf("the same scan again wrote %d rows, want ≤ %d (positions, their history, the mark)", n, 2*entries+1)
	}
	if drv.Int(t, `SELECT count(*) FROM crawl_keywords`) != keywords || keywords != 0 {
		t.Fatalf("keywords: %d", keywords)
	}
}

// TestSearchResultTouchesNoIndex: searchResultSQL's update sets no column
// any index of app_registry reads (key or partial WHERE), so a queued app's
// refresh writes its row alone; SQLite rewrites an index's entry whenever
// the update sets one of its columns, changed or not.
func TestSearchResultTouchesNoIndex(t *testing.T) {
	_, drv := d1test.New(t)
	set := searchResultSQL()[strings.Index(searchResultSQL(), "DO UPDATE SET")+len("DO UPDATE SET") : strings.Index(searchResultSQL(), "\nWHERE")]
	var cols []string
	for _, a := range strings.Split(set, ",") {
		cols = append(cols, strings.TrimSpace(strings.SplitN(a, "=", 2)[0]))
	}
	if len(cols) < 5 {
		t.Fatalf("set columns %v", cols)
	}
	for _, ix := range drv.Rows(t, `SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'app_registry' AND sql IS NOT NULL`) {
		for _, c := range cols {
			if ix["name"] == "idx_app_registry_unlooked" && c == "lookup_at" {
				// It holds only apps whose lookup_at is NULL: an update
				// setting it has no entry to rewrite, but for the one
				// removal of an app getting its lookup fields (the
				// discovery lookups' work done).
				continue
			}
			if regexp.MustCompile(`\b` + c + `\b`).MatchString(ix["sql"].(string)) {
				t.Errorf("index %s reads %s, which a search result's update sets", ix["name"], c)
			}
		}
	}
}

// TestReSearchCycleRows counts a crawl cycle's re-search writes at the
// scale bench's steady pace: 38 keywords re-searched a day after their
// last search (HotKeywordResearch), 50 results each, 85 % of the apps
// enriched and the rest queued, the results unchanged, then the
// steering's revalue step over their clusters re-scored within their
// tier (the markets stage re-scores what a cycle searched).
func TestReSearchCycleRows(t *testing.T) {
	db, drv := d1test.New(t)
	s := D1Store{DB: db}
	ctx := context.Background()
	const keywords, results = 38, 50
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	answers := make([][]appstore.App, keywords)
	for k := range keywords {
		kw := fmt.Sprint("kw", k)
		drv.Exec(t, `INSERT INTO crawl_keywords (keyword, source, created_at) VALUES (?, 'title', '2026-11-01T00:00:00.000Z')`, kw)
		for i := range results {
			// Apps shared between keywords, as a store's are.
			id := int64(1 + (k*results+i*7)%(keywords*results/2))
			answers[k] = append(answers[k], appstore.App{TrackID: id, Name: fmt.Sprint("app ", id), BundleID: fmt.Sprint("b.", id), DeveloperID: 70,
				DeveloperName: "Dev", RatingCount: 10 * id, AverageRating: 4.5, Price: 0, Currency: "USD", Version: "1.0", Description: "d", Languages: []string{"EN"}})
		}
		if err := s.SaveRankings(ctx, kw, answers[k], t0); err != nil {
			t.Fatal(err)
		}
		drv.Exec(t, `INSERT INTO opportunity_scores (cluster_id, score, computed_at) VALUES (?, 40, ?)`, kw, d1.Time(t0))
	}
	drv.Exec(t, `UPDATE app_registry SET enrichment_source = 'itunes+store', enriched_at = ? WHERE track_id % 100 < 85`, d1.Time(t0))
	if _, err := s.Steer(ctx, t0.Add(time.Minute), false); err != nil {
		t.Fatal(err)
	}
	day := t0.Add(HotKeywordResearch)
	before := drv.TotalChanges(t)
	for k := range keywords {
		if err := s.SaveRankings(ctx, fmt.Sprint("kw", k), answers[k], day); err != nil {
			t.Fatal(err)
		}
	}
	searches := drv.TotalChanges(t) - before
	drv.Exec(t, `UPDATE opportunity_scores SET score = 41, computed_at = ?`, d1.Time(day.Add(time.Minute)))
	before = drv.TotalChanges(t)
	if _, err := s.Steer(ctx, day.Add(2*time.Minute), false); err != nil {
		t.Fatal(err)
	}
	steer := drv.TotalChanges(t) - before
	t.Logf("a cycle of %d re-searches (%d results, unchanged, a day later): %d rows (%.2f a result); the revalue of their %d clusters: %d rows",
		keywords, keywords*results, searches, float64(searches)/(keywords*results), keywords, steer)
	// The keywords' marks; the revalue step's cursor.
	if searches != keywords || steer != 1 {
		t.Fatalf("the re-searches wrote %d rows, the revalue %d", searches, steer)
	}
}
