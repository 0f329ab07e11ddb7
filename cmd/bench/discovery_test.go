//go:build unix

package main

import (
	"context"
	"image/png"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"storecrawl/worker/appstore"
	"storecrawl/worker/crawl"
	"storecrawl/worker/d1"
	"storecrawl/worker/d1/d1test"
	"storecrawl/worker/enrichment"
)

// Milestones: the day a count is first reached, linear between the
// samples around it; the first sample when it is there already; never
// when no sample reaches it.
func TestMilestoneDayInterpolatesBetweenSamples(t *testing.T) {
	curve := []discoSample{{Day: 0, Lookup: 0}, {Day: 1, Lookup: 400}, {Day: 2, Lookup: 1000}, {Day: 3, Lookup: 1000}}
	for _, c := range []struct {
		n    int
		want float64
		ok   bool
	}{{0, 0, true}, {200, 0.5, true}, {400, 1, true}, {700, 1.5, true}, {1000, 2, true}, {1001, 0, false}} {
		got, ok := milestoneDay(curve, lookupField, c.n)
		if ok != c.ok || (ok && got != c.want) {
			t.Errorf("milestone %d: got %v (reached %v), want %v (%v)", c.n, got, ok, c.want, c.ok)
		}
	}
	if d := days(curve, lookupField, 1001); d != nil {
		t.Errorf("an unreached milestone is %v, want null", *d)
	}
	// A count that stays flat across the threshold's samples is reached
	// at the sample that shows it.
	flat := []discoSample{{Day: 0, Enriched: 5}, {Day: 1, Enriched: 5}}
	if got, ok := milestoneDay(flat, enrichedField, 5); !ok || got != 0 {
		t.Errorf("reached at the start: got %v %v", got, ok)
	}
}

// The milestones scale with -apps; the page floor is pages ÷ 127 a minute.
func TestMilestonesAndFloorScaleWithTheCatalogue(t *testing.T) {
	got := scaledMilestones(110_000)
	want := []int{10_000, 50_000, 100_000, 110_000}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("scaled milestones %v, want %v", got, want)
		}
	}
	if f := pageFloorDays(designApps); f < 6.01 || f > 6.02 {
		t.Errorf("floor at 1.1M: %.3f days, want 6.01 (1.1M ÷ 182,880 a day)", f)
	}
}

// Requests are told apart by the product's own URL shapes.
func TestRequestKindsFromTheProductsURLs(t *testing.T) {
	base := "http://127.0.0.1:1"
	r := &enrichment.Runner{APIBase: base, StoreBase: base, Country: "us"}
	q := url.Values{"term": {"photo editor"}, "country": {"us"}, "entity": {crawl.SearchEntity}, "limit": {"50"}}
	for url, want := range map[string]string{
		base + "/search?" + q.Encode():                                         kindSearch,
		appstore.ChartURL(base, "us", appstore.ChartCollections[0], 6014, 200): kindChart,
		appstore.ChartURL(base, "us", appstore.ChartCollections[1], 0, 50):     kindChart,
		r.LookupURL([]int64{1, 2, 3}):                                          kindLookup,
		base + "/lookup?id=200000001&entity=software&country=us":               kindDeveloper,
		crawl.PortfolioURL(base, "us", 200000001):                              kindDeveloper,
		appstore.HintsURL(base, "photo"):                                       kindHints,
		appstore.SitemapIndexURL(base, true):                                   kindSitemap,
		base + "/sitemaps_apps_app_1_3.xml.gz":                                 kindSitemap,
		r.PageURL(100000001):                                                   kindPage,
		base + "/us/rss/customerreviews/id=1/json":                             kindChart,
		base + "/health":                                                       kindOther,
	} {
		if got := requestKind(url); got != want {
			t.Errorf("%s: %s, want %s", url, got, want)
		}
	}
}

func app(id int64) appstore.App {
	return appstore.App{TrackID: id, Name: "App " + strings.Repeat("x", int(id%5)), DeveloperID: 900 + id%3, DeveloperName: "Dev", Version: "1.0"}
}

// Each save credits its source with the apps the catalogue did not hold
// before it, once: a search's results, a scan's charts (an app in two
// charts once), an app seen again nothing; the other source is the
// catalogue's growth the wrapped saves do not explain.
func TestCountingStoreCreditsEachNewAppToOneSource(t *testing.T) {
	ctx := context.Background()
	db, _ := d1test.New(t)
	s := newCountingStore(crawl.D1Store{DB: db}, db)
	now := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	if err := s.SaveRankings(ctx, "photo", []appstore.App{app(1), app(2), app(3)}, now); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveRankings(ctx, "editor", []appstore.App{app(2), app(3), app(4)}, now); err != nil {
		t.Fatal(err)
	}
	charts := map[string][]appstore.ChartEntry{
		appstore.ChartCollections[0]: {{TrackID: 4, Name: "App 4", Rank: 1}, {TrackID: 5, Name: "App 5", Rank: 2}},
		appstore.ChartCollections[1]: {{TrackID: 5, Name: "App 5", Rank: 1}, {TrackID: 6, Name: "App 6", Rank: 2}},
		appstore.ChartCollections[2]: {{TrackID: 1, Name: "App 1", Rank: 1}},
	}
	if _, err := s.SaveScan(ctx, 6014, "us", charts, now); err != nil {
		t.Fatal(err)
	}
	if got := s.newBy(sourceSearches); got != 4 {
		t.Errorf("searches brought %d new apps, want 4 (1, 2, 3, then 4)", got)
	}
	if got := s.newBy(sourceCharts); got != 2 {
		t.Errorf("charts brought %d new apps, want 2 (5 and 6; 4 and 1 were known)", got)
	}
	// A developer's portfolio: 6 known, 7 new.
	if n, err := s.SavePortfolio(ctx, 900, []appstore.App{app(6), app(7)}, now); err != nil || n != 1 {
		t.Fatalf("portfolio: %d new, %v", n, err)
	}
	if got := s.newBy(sourcePortfolios); got != 1 {
		t.Errorf("portfolios brought %d new apps, want 1 (7)", got)
	}
	reqs, enrich, tasks := newRequestLedger(), newRequestLedger(), newRequestLedger()
	tasks.add(kindSitemap, false, false)
	tasks.add(kindSitemap, false, false)
	tasks.add(kindHints, false, false)
	reqs.add(kindSearch, false, false)
	reqs.add(kindSearch, true, false) // refused: sent all the same
	reqs.add(kindChart, false, false)
	reqs.add(kindDeveloper, false, false)
	reqs.add(kindLookup, false, false)
	enrich.add(kindPage, false, false)
	enrich.add(kindPage, false, false)
	// 3 similar apps the pages brought, 5 the sitemaps did, and four apps
	// more than every counted source: a source the bench does not tell
	// apart.
	figs := sourceFigures(reqs, enrich, tasks, s, 3, 5, 19)
	want := map[string]sourceFigure{
		sourceSearches:   {Source: sourceSearches, NewApps: 4, Requests: 2, Refused: 1, PerReq: 2},
		sourceCharts:     {Source: sourceCharts, NewApps: 2, Requests: 1, PerReq: 2},
		sourcePortfolios: {Source: sourcePortfolios, NewApps: 1, Requests: 1, PerReq: 1},
		sourceSimilar:    {Source: sourceSimilar, NewApps: 3, Requests: 2, PerReq: 1.5},
		sourceSitemaps:   {Source: sourceSitemaps, NewApps: 5, Requests: 2, PerReq: 2.5},
		sourceOther:      {Source: sourceOther, NewApps: 4, Requests: 1, PerReq: 4},
	}
	if len(figs) != len(want) {
		t.Fatalf("figures %+v", figs)
	}
	for _, f := range figs {
		if f != want[f.Source] {
			t.Errorf("%s: %+v, want %+v", f.Source, f, want[f.Source])
		}
	}
}

// The bench's driver answers as d1test does: the same rows, the same JSON,
// the same returned-row counts, a failed batch rolled back whole.
func TestFastD1AnswersAsD1Test(t *testing.T) {
	ctx := context.Background()
	fast, _, err := openFastD1()
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := d1test.New(t)
	now := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	stmts := crawl.RankingStatements("photo", []appstore.App{app(1), app(2)}, now)
	for _, db := range []*d1.DB{fast, ref} {
		if _, err := db.Exec(ctx, stmts...); err != nil {
			t.Fatal(err)
		}
		// A batch failing at its second statement leaves nothing.
		_, err := db.Exec(ctx, d1.Stmt{SQL: `INSERT INTO app_registry (track_id) VALUES (?)`, Args: []any{int64(77)}},
			d1.Stmt{SQL: `INSERT INTO no_such_table VALUES (1)`})
		if err == nil {
			t.Fatal("a batch with a bad statement succeeded")
		}
	}
	for _, q := range []string{
		`SELECT track_id, name, developer_id, lookup_at, rating_count, price FROM app_registry ORDER BY track_id`,
		`SELECT keyword, track_id, rank FROM crawl_rankings ORDER BY track_id`,
		`SELECT count(*) AS n, 1.5 AS r, NULL AS z FROM app_registry WHERE track_id = 77`,
	} {
		a, _, err := fast.Driver.All(ctx, q, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _, err := ref.Driver.All(ctx, q, nil)
		if err != nil {
			t.Fatal(err)
		}
		if string(a) != string(b) {
			t.Errorf("%s:\nfast %s\nd1test %s", q, a, b)
		}
	}
	// Returned rows count as d1test counts them.
	ra, err := fast.Exec(ctx, d1.Stmt{SQL: `SELECT track_id FROM app_registry WHERE track_id IN (?, ?)`, Args: []any{int64(1), int64(2)}})
	if err != nil {
		t.Fatal(err)
	}
	rb, _ := ref.Exec(ctx, d1.Stmt{SQL: `SELECT track_id FROM app_registry WHERE track_id IN (?, ?)`, Args: []any{int64(1), int64(2)}})
	if ra != 2 || ra != rb {
		t.Errorf("returned %d and %d rows, want 2", ra, rb)
	}
}

// The curve's PNG decodes at its size, with the series drawn.
func TestCurvePNGDrawsTheSeries(t *testing.T) {
	path := filepath.Join(t.TempDir(), "curve.png")
	curve := []discoSample{{Day: 0}, {Day: 1, Known: 500, Lookup: 400, Enriched: 100, Parsed: 99}, {Day: 3, Known: 1000, Lookup: 1000, Enriched: 900, Parsed: 890}}
	if err := writeCurvePNG(path, curve, 1000, pageFloorDays(1000)); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != plotW || b.Dy() != plotH {
		t.Fatalf("size %v", b)
	}
	seen := map[string]int{}
	for y := 0; y < plotH; y++ {
		for x := 0; x < plotW; x++ {
			r, g, b, _ := img.At(x, y).RGBA()
			switch [3]uint8{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8)} {
			case [3]uint8{colKnown.R, colKnown.G, colKnown.B}:
				seen["known"]++
			case [3]uint8{colEnrich.R, colEnrich.G, colEnrich.B}:
				seen["enriched"]++
			}
		}
	}
	if seen["known"] < 100 || seen["enriched"] < 100 {
		t.Errorf("series pixels %v", seen)
	}
	for r, g := range glyphs3x5 {
		if len(g) != glyphW*glyph {
			t.Errorf("glyph %q has %d pixels", r, len(g))
		}
	}
}
