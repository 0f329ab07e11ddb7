//go:build !js

package api_test

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"storecrawl/worker/analyst"
	"storecrawl/worker/api"
	"storecrawl/worker/catalogue"
	"storecrawl/worker/d1"
	"storecrawl/worker/d1/d1test"
	"storecrawl/worker/enrichment"
	"storecrawl/worker/markets"
	"storecrawl/worker/module"
	"storecrawl/worker/reviews"
	"storecrawl/worker/search"
	"storecrawl/worker/segments"
)

// explorerCatalogue is a d1test catalogue: apps (every third by one
// developer, names starting "photo" or "budget"), keywords with their
// rankings, markets and scores, reviews, a brief; and what grows with the apps,
// of apps from growingFrom on: a market a tenth of the apps (each ranking
// ten apps, scored under the fixed three) and two reviews an app, a
// twentieth of them undated.
func explorerCatalogue(t *testing.T, apps int) (*d1.DB, *d1test.Driver) {
	db, drv := d1test.New(t)
	drv.Exec(t, `WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM s WHERE i < ?)
INSERT INTO app_registry (track_id, name, developer_name, subtitle, enrichment_source, enriched_at, rating_count, average_rating, similar_app_ids)
SELECT i, CASE WHEN i % 2 = 0 THEN 'Photo Studio ' ELSE 'Budget Planner ' END || i,
  CASE WHEN i % 3 = 0 THEN 'Acme Apps' ELSE 'Dev ' || i END, 'Edit and share ' || i,
  'itunes+store', '2026-01-01T00:00:00.000Z', i * 10, 3.5 + (i % 10) / 10.0, '[1,2]' FROM s`, apps)
	for k, kw := range []string{"photo editor", "photo collage", "budget"} {
		drv.Exec(t, `INSERT INTO crawl_keywords (keyword, source, created_at, searched_at, result_count) VALUES (?, 'title', '2026-01-01', '2026-01-02', 50)`, kw)
		drv.Exec(t, `WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM s WHERE i < 30)
INSERT INTO crawl_rankings (keyword, track_id, rank, seen_at) SELECT ?, i * 2 + ?, i, '2026-01-02' FROM s`, kw, k%2)
		drv.Exec(t, `INSERT INTO market_clusters (cluster_id, app_count, total_ratings, avg_rating, top_share, hhi, fragmentation, computed_at) VALUES (?, 30, 10000, 4.1, 0.2, 0.1, 0.9, '2026-01-02')`, kw)
		drv.Exec(t, `INSERT INTO opportunity_scores (cluster_id, score, demand, fragmentation, quality_gap, computed_at) VALUES (?, ?, 4, 0.9, 0.2, '2026-01-02')`, kw, 50+k)
	}
	drv.Exec(t, `WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM s WHERE i < 40)
INSERT INTO app_reviews (id, app_id, country, rating, title, body, version, author_hash, reviewed_at, sentiment, fetched_at)
SELECT 'r' || i, 2, 'us', 1 + i % 5, 'crashes on export', 'it crashes when I export ' || i, '1.0', 'h' || i, '2026-01-0' || (1 + i % 9) || 'T00:00:00.000Z', -0.5, '2026-01-10T00:00:00.000Z' FROM s`)
	drv.Exec(t, `INSERT INTO analyst_briefs (brief_id, cluster_id, state, trigger, headline, brief_json, created_at, updated_at)
VALUES ('b1', 'photo editor', 'done', 'schedule', 'Editors crash on export', '{"summary":"x"}', '2026-01-03T00:00:00.000Z', '2026-01-03T00:00:00.000Z')`)
	// Market segments with 40 days of snapshots each; the first holds the
	// photo keywords and twelve apps.
	drv.Exec(t, `WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM s WHERE i < 60)
INSERT INTO segments (id, name, keyword_count, app_count, total_ratings, avg_rating, demand, hhi, fragmentation, quality_gap, opportunity, apps, relations, created_at, updated_at)
SELECT i, CASE WHEN i = 1 THEN 'photo editor' ELSE 'segment ' || i END, 2, 12, 10000, 4.1, 4, 0.1, 0.9, 0.2, 100 - i,
  (SELECT json_group_array(json_object('track_id', 2 * j, 'keywords', 1, 'ratings', 20 * j, 'share', 0.08)) FROM (SELECT value AS j FROM json_each('[1,2,3,4,5,6,7,8,9,10,11,12]'))),
  '[{"segment_id":2,"shared_apps":3}]', '2026-01-01', '2026-01-02' FROM s`)
	drv.Exec(t, `WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i+1 FROM s WHERE i < 60 * 40 - 1)
INSERT INTO segment_snapshots (segment_id, day, keyword_count, total_ratings, demand, opportunity, apps)
SELECT 1 + i / 40, date('2025-11-01', '+' || (i % 40) || ' days'), 2, 10000, 4 + (i % 40) / 100.0, 50, '[]' FROM s`)
	drv.Exec(t, `INSERT INTO segment_keywords (keyword, segment_id, top_sum) VALUES ('photo editor', 1, 1), ('photo collage', 1, 1), ('budget', 2, 1)`)
	if apps <= growingFrom {
		return db, drv
	}
	drv.Exec(t, `WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i+1 FROM s WHERE i+1 < ?1 / 10)
INSERT INTO crawl_keywords (keyword, source, created_at, searched_at, result_count) SELECT 'kw ' || i, 'title', '2026-01-01', '2026-01-02', 50 FROM s`, apps)
	drv.Exec(t, `WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i+1 FROM s WHERE i+1 < ?1 / 10 * 10)
INSERT INTO crawl_rankings (keyword, track_id, rank, seen_at) SELECT 'kw ' || (i / 10), ?2 + (i * 7919) % (?1 - ?2), 1 + i % 10, '2026-01-02' FROM s`, apps, growingFrom)
	drv.Exec(t, `INSERT INTO market_clusters (cluster_id, app_count, total_ratings, avg_rating, top_share, hhi, fragmentation, computed_at)
SELECT keyword, 10, 100 + rowid, 4.0, 0.2, 0.1, 0.9, '2026-01-02' FROM crawl_keywords WHERE keyword LIKE 'kw %'`)
	drv.Exec(t, `INSERT INTO opportunity_scores (cluster_id, score, demand, fragmentation, quality_gap, computed_at)
SELECT cluster_id, (total_ratings % 400) / 10.0, 3, 0.9, 0.2, '2026-01-02' FROM market_clusters WHERE cluster_id LIKE 'kw %'`)
	drv.Exec(t, `WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i+1 FROM s WHERE i+1 < (?1 - ?2) * 2)
INSERT INTO app_reviews (id, app_id, country, rating, title, body, version, author_hash, reviewed_at, sentiment, fetched_at)
SELECT 'g' || i, ?2 + i % (?1 - ?2), 'us', 1 + i % 5, 'fine', 'works', '1.0', 'h', CASE WHEN i % 20 > 0 THEN '2026-01-0' || (1 + i % 9) || 'T00:00:00.000Z' END,
  0.5, '2026-01-10T00:00:00.000Z' FROM s`, apps, growingFrom)
	return db, drv
}

// growingFrom is the first app of the part of explorerCatalogue that
// grows with it: the pages measured read apps below it.
const growingFrom = 100

func explorerServer(db *d1.DB, readToken string) *api.Server {
	m := &markets.Markets{DB: db}
	v, _ := module.Load(analyst.Settings, func(string) string { return "" })
	cfg := analyst.ConfigFrom(v)
	return api.NewServer(&api.Server{
		Analyst: &analyst.Analyst{Store: analyst.Store{DB: db}, Config: cfg, Model: cfg.Model},
		Markets: m, MarketDetail: m, Segments: segments.Store{DB: db}, Apps: enrichment.D1Store{DB: db}, Reviews: reviews.D1Store{DB: db},
		AppHistory: catalogue.D1Store{DB: db}, Search: search.Store{DB: db},
		AdminToken: func() string { return "secret" }, ReadToken: func() string { return readToken },
	})
}

// get serves one request, counting its D1 rows read and queries.
func get(s *api.Server, target string, hdr ...string) (*httptest.ResponseRecorder, d1.CostView) {
	ctx, cost := d1.WithCost(context.Background())
	r := httptest.NewRequest("GET", target, nil).WithContext(ctx)
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Set(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	return w, cost.View()
}

type searchPage struct {
	Items []struct {
		TrackID int64  `json:"track_id"`
		Name    string `json:"name"`
		Matched string `json:"matched"`
		Keyword string `json:"keyword"`
	} `json:"items"`
	NextCursor *string `json:"next_cursor"`
}

func TestSearchPagesAppsByNameDeveloperAndSubtitleReadingOnlyItsPage(t *testing.T) {
	db, _ := explorerCatalogue(t, 2000)
	s := explorerServer(db, "")
	for _, c := range []struct {
		q, matched string
		want       int
	}{{"photo studio", "name", 1000}, {"acme", "developer", 666}, {"edit and share 19", "subtitle", 111}} {
		seen := map[int64]bool{}
		cursor, pages := "", 0
		for {
			w, cost := get(s, "/v1/search?limit=50&q="+url.QueryEscape(c.q)+"&cursor="+cursor)
			if w.Code != 200 {
				t.Fatalf("%q: %d %s", c.q, w.Code, w.Body)
			}
			var p searchPage
			json.Unmarshal(w.Body.Bytes(), &p)
			// A page reads its terms and their apps: never more than twice its size.
			if cost.RowsRead > 2*50 || cost.Queries != 1 {
				t.Fatalf("%q page %d read %d rows in %d queries, want ≤ 100 in 1", c.q, pages, cost.RowsRead, cost.Queries)
			}
			for _, it := range p.Items {
				if it.Matched != c.matched || seen[it.TrackID] {
					t.Fatalf("%q: %+v (matched %q, seen %v)", c.q, it, c.matched, seen[it.TrackID])
				}
				seen[it.TrackID] = true
			}
			pages++
			if p.NextCursor == nil {
				break
			}
			cursor = url.QueryEscape(*p.NextCursor)
		}
		if len(seen) != c.want {
			t.Errorf("%q: %d apps over %d pages, want %d", c.q, len(seen), pages, c.want)
		}
	}
	w, _ := get(s, "/v1/search?kind=keywords&q=photo")
	var p searchPage
	json.Unmarshal(w.Body.Bytes(), &p)
	if len(p.Items) != 2 || p.Items[0].Keyword != "photo collage" || p.Items[1].Keyword != "photo editor" {
		t.Errorf("keywords by prefix: %s", w.Body)
	}
}

func TestSearchTermsFollowRenamesAndWriteNothingOnAnUnchangedSave(t *testing.T) {
	db, drv := explorerCatalogue(t, 10)
	before := drv.TotalChanges(t)
	drv.Exec(t, `UPDATE app_registry SET name = name, subtitle = subtitle, developer_name = developer_name WHERE track_id = 2`)
	if got := drv.TotalChanges(t) - before; got != 1 {
		t.Errorf("an unchanged save wrote %d rows, want 1 (the app's)", got)
	}
	drv.Exec(t, `UPDATE app_registry SET name = 'Zebra Notes' WHERE track_id = 2`)
	s := explorerServer(db, "")
	for q, want := range map[string]int{"zebra": 1, "photo studio 2": 0} {
		w, _ := get(s, "/v1/search?q="+url.QueryEscape(q))
		var p searchPage
		json.Unmarshal(w.Body.Bytes(), &p)
		n := 0
		for _, it := range p.Items {
			if it.TrackID == 2 {
				n++
			}
		}
		if n != want {
			t.Errorf("after the rename, %q finds app 2 %d times, want %d", q, n, want)
		}
	}
}

func TestExplorerRoutesNameTheFieldAtFault(t *testing.T) {
	db, _ := explorerCatalogue(t, 10)
	s := explorerServer(db, "")
	for target, field := range map[string]string{
		"/v1/search": "q",
		"/v1/search?q=" + strings.Repeat("a", 101): "q",
		"/v1/search?q=a&kind=devs":                 "kind",
		"/v1/search?q=a&limit=51":                  "limit",
		"/v1/search?q=a&cursor=%21%21":             "cursor",
		"/v1/search?q=a&format=xml":                "format",
		"/v1/opportunities?format=xlsx":            "format",
		"/v1/clusters?cursor=-1":                   "cursor",
		"/v1/apps/2/reviews?format=pdf":            "format",
	} {
		w, _ := get(s, target)
		var e struct{ Field string }
		json.Unmarshal(w.Body.Bytes(), &e)
		if w.Code != 400 || e.Field != field {
			t.Errorf("%s: %d %s, want 400 naming %s", target, w.Code, w.Body, field)
		}
	}
	if w, _ := get(s, "/v1/clusters/nope"); w.Code != 404 {
		t.Errorf("unknown market: %d", w.Code)
	}
}

// manyMarkets is a MarketReader of n markets; its cursor is the index
// of the next.
type manyMarkets int

func (n manyMarkets) List(_ context.Context, _ bool, limit int, cursor string) ([]json.RawMessage, string, error) {
	from := 0
	if cursor != "" {
		var err error
		if from, err = strconv.Atoi(cursor); err != nil {
			return nil, "", d1.ErrBadCursor
		}
	}
	var out []json.RawMessage
	for i := from; i < min(from+limit, int(n)); i++ {
		out = append(out, json.RawMessage(fmt.Sprintf(`{"cluster_id":"kw,%d","opportunity_score":%d.5,"members":[{"track_id":%d}],"note":null}`, i, i, i)))
	}
	next := ""
	if from+limit < int(n) {
		next = strconv.Itoa(from + limit)
	}
	return out, next, nil
}

func TestListsExportAsCSVAndNDJSONPageByPageAndACursorResumes(t *testing.T) {
	s := api.NewServer(&api.Server{Markets: manyMarkets(api.ExportMaxRows + 250)})
	w, _ := get(s, "/v1/opportunities?format=ndjson")
	sc := bufio.NewScanner(w.Body)
	lines := 0
	var last map[string]any
	for sc.Scan() {
		lines++
		last = nil
		json.Unmarshal(sc.Bytes(), &last)
	}
	if ct := w.Header().Get("Content-Type"); ct != "application/x-ndjson" || lines != api.ExportMaxRows+1 || last["next_cursor"] != fmt.Sprint(api.ExportMaxRows) {
		t.Fatalf("ndjson: %s, %d lines, last %v", ct, lines, last)
	}
	w, _ = get(s, "/v1/opportunities?cursor=5000", "Accept", "text/csv")
	recs, err := csv.NewReader(w.Body).ReadAll()
	if err != nil || w.Header().Get("Content-Type") != "text/csv; charset=utf-8" {
		t.Fatalf("csv: %v %s", err, w.Header())
	}
	if len(recs) != 251 || strings.Join(recs[0], ",") != "cluster_id,opportunity_score,members,note" ||
		strings.Join(recs[1], "|") != `kw,5000|5000.5|[{"track_id":5000}]|` {
		t.Errorf("csv resumed at 5000: %d records, %q %q", len(recs), recs[0], recs[1])
	}
	// JSON stays one page, with the cursor of the next.
	w, _ = get(s, "/v1/opportunities?limit=10&cursor=20")
	var page struct {
		Items      []json.RawMessage
		NextCursor string `json:"next_cursor"`
	}
	json.Unmarshal(w.Body.Bytes(), &page)
	if len(page.Items) != 10 || page.NextCursor != "30" {
		t.Errorf("json page: %s", w.Body)
	}
	// A cursor the list did not hand out is a 400 naming cursor, in every
	// format; an unknown format names format; an offset names offset.
	for _, target := range []string{"/v1/opportunities?cursor=x", "/v1/opportunities?format=csv&cursor=x", "/v1/opportunities?format=xml", "/v1/clusters?offset=10"} {
		w, _ := get(s, target)
		var e struct{ Field string }
		json.Unmarshal(w.Body.Bytes(), &e)
		want := map[bool]string{true: "format", false: "cursor"}[strings.Contains(target, "xml")]
		if strings.Contains(target, "offset") {
			want = "offset"
		}
		if w.Code != 400 || e.Field != want {
			t.Errorf("%s: %d %s, want 400 naming %s", target, w.Code, w.Body, want)
		}
	}
}

func TestReadTokenGuardsThePagesAndTheirReads(t *testing.T) {
	db, _ := explorerCatalogue(t, 10)
	s := explorerServer(db, "reader")
	for _, c := range []struct {
		target string
		hdr    []string
		want   int
	}{
		{"/v1/opportunities", nil, 401},
		{"/app/markets", nil, 401},
		{"/app/alerts", nil, 401},
		{"/v1/opportunities", []string{"Authorization", "Bearer reader"}, 200},
		{"/v1/opportunities", []string{"Authorization", "Bearer secret"}, 200},
		{"/v1/search?q=photo", []string{"Cookie", api.ReadCookie + "=reader"}, 200},
		{"/app/apps/2", []string{"Cookie", api.ReadCookie + "=reader"}, 200},
		{"/v1/apps/2", []string{"Cookie", api.ReadCookie + "=wrong"}, 401},
		{"/app/static/app.js", nil, 200},
		{"/health", nil, 200},
	} {
		if w, _ := get(s, c.target, c.hdr...); w.Code != c.want {
			t.Errorf("%s %v: %d, want %d", c.target, c.hdr, w.Code, c.want)
		}
	}
	open := explorerServer(db, "")
	if w, _ := get(open, "/v1/opportunities"); w.Code != 200 {
		t.Errorf("READ_TOKEN unset: %d", w.Code)
	}
	w, _ := get(open, "/app/")
	if w.Code != 200 || !strings.Contains(w.Header().Get("Content-Security-Policy"), "script-src 'self'") || !strings.Contains(w.Body.String(), "/app/static/app.js") {
		t.Errorf("page: %d %v", w.Code, w.Header())
	}
	if w, _ := get(open, "/app/nowhere"); w.Code != 404 {
		t.Errorf("unknown page: %d", w.Code)
	}
}

// segmentApps are the market page's name look-ups of a segment's first n
// apps (app.js MaxNamedApps).
func segmentApps(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("/v1/apps/%d", 2*(i+1))
	}
	return out
}

// measuring is a d1.Driver that also measures each read natively
// (d1test.Work): the rows a page view returns and the rows its queries
// walk, summed.
type measuring struct {
	*d1test.Driver
	t    testing.TB
	work d1test.Work
}

func (m *measuring) All(ctx context.Context, q string, args []any) ([]byte, d1.Meta, error) {
	w := m.Measure(m.t, q, args...)
	m.work.Walked += w.Walked
	m.work.VMSteps += w.VMSteps
	m.work.Rows += w.Rows
	return m.Driver.All(ctx, q, args)
}

// ExplorerPageCatalogues are the two catalogue sizes a page view is
// measured on: it must cost the same on both.
var ExplorerPageCatalogues = []int{1_000, 10_000}

// TestAPageViewCostsTheSameRowsAt1kAnd10kApps sums the D1 rows each page's
// API calls read (app.js's calls for it: "{next}" is the next_cursor of
// the call before, the "more" button) on d1test catalogues of 1,000 and
// 10,000 apps whose markets, rankings and reviews grow with the apps: a
// view reads what it shows, never a table, so both cost the same rows,
// and no query walks a table (d1test.Work.Walked).
func TestAPageViewCostsTheSameRowsAt1kAnd10kApps(t *testing.T) {
	pages := []struct {
		name  string
		calls []string
		max   int64
	}{
		// d1test counts the rows a query returns: a listed segment's
		// sparkline reads up to segments.SparklineDays snapshot rows more
		// (segments' TestListSparklineIsBounded measures it), so the list's
		// 50 rows are up to 1,550 in D1.
		{"markets", []string{"/v1/segments?sort=opportunity&limit=50"}, 60},
		{"markets, more", []string{"/v1/segments?sort=opportunity&limit=50", "/v1/segments?sort=opportunity&limit=50&cursor={next}"}, 120},
		{"markets (fallback)", []string{"/v1/opportunities?limit=50"}, 200},
		{"markets (fallback), more", []string{"/v1/opportunities?limit=50", "/v1/opportunities?limit=50&cursor={next}"}, 200},
		{"market", append([]string{"/v1/segments/1", "/v1/segments/1/evaluation", "/v1/clusters/photo%20editor", "/v1/clusters/photo%20editor/themes", "/v1/opportunities/photo%20editor/brief", "/v1/apps/2/reviews?limit=100"}, segmentApps(10)...), 1200},
		{"market (keyword)", []string{"/v1/clusters/photo%20editor", "/v1/clusters/photo%20editor/themes", "/v1/opportunities/photo%20editor/brief", "/v1/apps/2/reviews?limit=100"}, 1200},
		{"app", []string{"/v1/apps/2", "/v1/apps/2/history?days=365&limit=500", "/v1/apps/2/reviews?limit=20"}, 300},
		{"app, more reviews", []string{"/v1/apps/2/reviews?limit=20", "/v1/apps/2/reviews?limit=20&cursor={next}"}, 300},
		{"keyword", []string{"/v1/keywords/photo%20editor", "/v1/clusters/photo%20editor", "/v1/search?kind=keywords&limit=1&q=photo%20editor",
			"/v1/apps/2/history?days=30", "/v1/apps/4/history?days=30", "/v1/apps/6/history?days=30", "/v1/apps/8/history?days=30", "/v1/apps/10/history?days=30"}, 600},
		{"search", []string{"/v1/search?kind=apps&q=photo", "/v1/search?kind=keywords&q=photo"}, 100},
		{"search, more", []string{"/v1/search?kind=apps&q=photo", "/v1/search?kind=apps&q=photo&cursor={next}"}, 100},
	}
	type cost struct{ rows, queries, walked int64 }
	at := map[int][]cost{}
	for _, apps := range ExplorerPageCatalogues {
		db, drv := explorerCatalogue(t, apps)
		m := &measuring{Driver: drv, t: t}
		db.Driver = m
		s := explorerServer(db, "")
		for _, p := range pages {
			var c cost
			m.work = d1test.Work{}
			next := ""
			for _, call := range p.calls {
				if strings.Contains(call, "{next}") && next == "" {
					t.Fatalf("%s at %d apps: no next_cursor to follow", p.name, apps)
				}
				w, v := get(s, strings.ReplaceAll(call, "{next}", url.QueryEscape(next)))
				if w.Code >= 500 {
					t.Fatalf("%s: %s: %d %s", p.name, call, w.Code, w.Body)
				}
				var page struct {
					Next *string `json:"next_cursor"`
				}
				json.Unmarshal(w.Body.Bytes(), &page)
				next = ""
				if page.Next != nil {
					next = *page.Next
				}
				c.rows += v.RowsRead
				c.queries += v.Queries
			}
			c.walked = m.work.Walked
			at[apps] = append(at[apps], c)
			t.Logf("%6d apps, %-17s page view: %d D1 rows read in %d queries (%d API calls), %d rows walked, %d VM steps",
				apps, p.name, c.rows, c.queries, len(p.calls), c.walked, m.work.VMSteps)
			if c.rows > p.max {
				t.Errorf("%s page view at %d apps read %d rows, want ≤ %d", p.name, apps, c.rows, p.max)
			}
			if c.walked != 0 {
				t.Errorf("%s page view at %d apps walked %d rows of a table", p.name, apps, c.walked)
			}
		}
	}
	small, large := ExplorerPageCatalogues[0], ExplorerPageCatalogues[1]
	for i, p := range pages {
		if at[small][i] != at[large][i] {
			t.Errorf("%s page view: %+v at %d apps, %+v at %d: it grows with the catalogue", p.name, at[small][i], small, at[large][i], large)
		}
	}
}
