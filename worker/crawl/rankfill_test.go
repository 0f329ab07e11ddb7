//go:build !js

package crawl

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"storecrawl/internal/objects"
	"storecrawl/worker/appstore"
	"storecrawl/worker/d1"
	"storecrawl/worker/d1/d1test"
	"storecrawl/worker/upstream"
)

// TestCrawlCycleFillAddsNoKeyword: the fill values known terms (no
// request of its own) and queues none; keyword mapping searches the
// keywords pending, not the apps' title words.
func TestCrawlCycleFillAddsNoKeyword(t *testing.T) {
	f := &fakeDiscovery{due: map[string]bool{}, pending: []string{"budget planner"}, fillApps: []FillApp{
		{TrackID: 1, Name: "Budget Planner", Subtitle: "Track spending"},
		{TrackID: 2, Name: "Planner Pro"},
	}}
	var calls atomic.Int64
	fetch := func(_ context.Context, u string) upstream.Response {
		calls.Add(1)
		return upstream.Response{Class: objects.ClassOK, Body: []byte(`{"resultCount":1,"results":[{"trackId":9,"trackName":"x","artistId":70,"artistName":"Dev"}]}`), Remaining: -1}
	}
	r := CrawlCycle(context.Background(), f, fetch, "http://up", "us", noSleep, 0.5, time.Now())
	// Budget Planner: budget, budget planner, planner, spending, track,
	// track spending; Planner Pro: planner, planner pro (7 distinct terms).
	if r.Action != "keyword_mapping" || r.Fill == nil || r.Fill.Action != "ranking_fill" || r.Fill.Filled != 2 || r.Fill.Found != 7 {
		t.Fatalf("%+v fill %+v", r, r.Fill)
	}
	if !reflect.DeepEqual(f.filled, []int64{1, 2}) || r.Found != 1 || calls.Load() != 1 {
		t.Fatalf("filled %v, mapped %d, searches %d", f.filled, r.Found, calls.Load())
	}
	// Nothing else due: the fill alone, no request.
	g := &fakeDiscovery{due: map[string]bool{}, fillApps: []FillApp{{TrackID: 3, Name: "Chess Clock"}}}
	calls.Store(0)
	if r := CrawlCycle(context.Background(), g, fetch, "http://up", "us", noSleep, 0.5, time.Now()); r.Action != "ranking_fill" || r.Filled != 1 || calls.Load() != 0 {
		t.Fatalf("a fill alone: %+v, %d searches", r, calls.Load())
	}
}

// TestRankingFillRowsAndCover fills a catalogue's enriched apps on the
// real SQL and counts the rows: an app's mark, and a known pending
// keyword among its terms revalued when its markets make it worth more;
// no keyword is added, a searched one or one worth more already is not
// rewritten; a filled app is not due again until its title changes; one
// cycle covers RankingFillApps apps, so the whole catalogue of enriched
// apps at 1.1M (935,000) within RankingRefreshAge.
func TestRankingFillRowsAndCover(t *testing.T) {
	db, drv := d1test.New(t)
	s := D1Store{DB: db}
	ctx := context.Background()
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	const apps = 40
	// Each app: "<word i%10> planner" with subtitle "<color i%4>": words
	// shared between apps, as a store's titles are.
	words := []string{"budget", "chess", "garden", "recipe", "weather", "sleep", "yoga", "piano", "travel", "camera"}
	colors := []string{"red notes", "blue notes", "green notes", "gold notes"}
	for i := range apps {
		drv.Exec(t, `INSERT INTO app_registry (track_id, name, subtitle, enrichment_source, enriched_at) VALUES (?, ?, ?, 'itunes+store', ?)`,
			i+1, words[i%10]+" planner", colors[i%4], d1.Time(now.Add(time.Duration(i)*time.Minute)))
	}
	// App 1 is in a market scored 80. Known keywords (the hints'): 'chess'
	// searched, 'budget' pending at 5, 'yoga planner' pending at 200.
	drv.Exec(t, `INSERT INTO crawl_rankings (keyword, track_id, rank, seen_at) VALUES ('m', 1, 1, '2026-11-01T00:00:00.000Z')`)
	drv.Exec(t, `INSERT INTO opportunity_scores (cluster_id, score, computed_at) VALUES ('m', 80, ?)`, d1.Time(now))
	drv.Exec(t, `INSERT INTO crawl_keywords (keyword, source, created_at, searched_at, value) VALUES ('chess', 'hints', ?1, ?1, 5)`, d1.Time(now))
	drv.Exec(t, `INSERT INTO crawl_keywords (keyword, source, created_at, value) VALUES ('budget', 'hints', ?1, 5), ('yoga planner', 'hints', ?1, 200)`, d1.Time(now))
	kwBefore := drv.Int(t, `SELECT count(*) FROM crawl_keywords`)

	g, err := s.Gaps(ctx, now)
	if err != nil || !g.RankingFill {
		t.Fatalf("gaps %+v %v", g, err)
	}
	before := drv.TotalChanges(t)
	r := fillRankings(ctx, s, now)
	written := drv.TotalChanges(t) - before
	newKeywords := drv.Int(t, `SELECT count(*) FROM crawl_keywords`) - kwBefore
	t.Logf("a fill of %d apps: %d rows written (%d marks, %d keywords revalued, %d new), %.2f an app; %d terms looked up",
		apps, written, apps, written-apps, newKeywords, float64(written)/apps, r.Found)
	if r.Error != "" || r.Filled != apps || written != apps+1 || newKeywords != 0 {
		t.Fatalf("fill %+v wrote %d rows (%d new keywords), want %d marks and 'budget' revalued", r, written, newKeywords, apps)
	}
	distinct := map[string]bool{}
	for i := range apps {
		for _, kw := range appstore.DeriveKeywords(words[i%10]+" planner", colors[i%4]) {
			distinct[kw] = true
		}
	}
	if r.Found != len(distinct) {
		t.Fatalf("terms %d, the apps carry %d", r.Found, len(distinct))
	}
	// Valued from its carriers: 'budget' is carried by apps 1, 11, 21, 31
	// (4 enriched), app 1 in the 80 market.
	if v := drv.Rows(t, `SELECT value, source, searched_at FROM crawl_keywords WHERE keyword = 'budget'`)[0]; v["value"] != PendingKeywordValue(80, 4) || v["source"] != KeywordSourceHints || v["searched_at"] != nil {
		t.Fatalf("budget valued as %v", v)
	}
	for kw, want := range map[string]float64{"chess": 5, "yoga planner": 200} {
		if v := drv.Rows(t, `SELECT value FROM crawl_keywords WHERE keyword = ?`, kw)[0]["value"]; v != want {
			t.Fatalf("%s was rewritten: %v", kw, v)
		}
	}
	if g, _ := s.Gaps(ctx, now); g.RankingFill {
		t.Fatal("every app filled, yet the fill is due")
	}
	// Renamed: due again; its fill writes its mark alone ('chess' is searched).
	drv.Exec(t, `UPDATE app_registry SET name = name WHERE track_id = 2`)
	if g, _ := s.Gaps(ctx, now); g.RankingFill {
		t.Fatal("an unchanged name made the app due")
	}
	drv.Exec(t, `UPDATE app_registry SET name = 'chess clock' WHERE track_id = 2`)
	before = drv.TotalChanges(t)
	if r := fillRankings(ctx, s, now.Add(time.Hour)); r.Filled != 1 {
		t.Fatalf("refill %+v", r)
	}
	if w := drv.TotalChanges(t) - before; w != 1 {
		t.Fatalf("a renamed app's fill wrote %d rows", w)
	}
	// Cover: RankingFillApps a cycle, 288 cycles a day.
	const enrichedAt11M = 935_000
	perDay := RankingFillApps * int(24*time.Hour/CyclePeriod)
	cover := float64(enrichedAt11M) / float64(perDay)
	t.Logf("ranking fill: %d apps a cycle, %d a day: the 935,000 enriched apps at 1.1M in %.1f days (was 4 a cycle: ~810 days)", RankingFillApps, perDay, cover)
	if cover > RankingRefreshAge.Hours()/24 || perDay < 182_400 {
		t.Fatalf("the fill covers the catalogue in %.1f days, %d apps a day", cover, perDay)
	}
}

// TestFillStatementsFitOneBatch: a full fill is two statements (one
// batch, one subrequest), whatever the number of apps and keywords.
func TestFillStatementsFitOneBatch(t *testing.T) {
	apps := make([]FillApp, RankingFillApps)
	for i := range apps {
		apps[i] = FillApp{TrackID: int64(i + 1), Name: fmt.Sprintf("word%d planner pro max", i), Subtitle: "track your spending daily"}
	}
	stmts, kws := FillStatements(apps, time.Now())
	if len(stmts) != 2 || kws == 0 || !strings.Contains(stmts[1].SQL, "rankings_filled_at") {
		t.Fatalf("%d statements, %d keywords", len(stmts), kws)
	}
	// D1 bounds a bound string at 2 MB; the pairs stay well under it.
	if n := len(stmts[0].Args[0].(string)); n > 1<<20 {
		t.Fatalf("the pairs are %d bytes", n)
	}
	var got []string
	for _, kw := range appstore.DeriveKeywords(apps[0].Name, apps[0].Subtitle) {
		got = append(got, kw)
	}
	sort.Strings(got)
	if len(got) == 0 || len(got) > appstore.MaxKeywordsPerApp {
		t.Fatalf("keywords of one app: %q", got)
	}
}
