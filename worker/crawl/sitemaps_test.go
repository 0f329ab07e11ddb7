//go:build !js

package crawl

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"storecrawl/internal/objects"
	"storecrawl/worker/d1"
	"storecrawl/worker/d1/d1test"
	"storecrawl/worker/upstream"
)

func TestSitemapPass(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, p := range []SitemapPass{{Started: t0, Next: 3}, {Started: t0, Done: true}, {Started: t0}} {
		if got := ParseSitemapPass(p.String()); got != p {
			t.Fatalf("%+v read back as %+v", p, got)
		}
	}
	for _, bad := range []string{"", "0", "x:1", "12:-1", "12", "12:y"} {
		if p := ParseSitemapPass(bad); !p.Started.IsZero() {
			t.Fatalf("%q read as %+v", bad, p)
		}
	}
	// No pass: one starts. Under way: it goes on. Done: it rests until
	// every has passed since it started.
	if p, ok := (SitemapPass{}).Due(t0, time.Hour); !ok || p != (SitemapPass{Started: t0}) {
		t.Fatalf("first: %+v %v", p, ok)
	}
	going := SitemapPass{Started: t0, Next: 2}
	if p, ok := going.Due(t0.Add(30*24*time.Hour), time.Hour); !ok || p != going {
		t.Fatalf("under way: %+v %v", p, ok)
	}
	done := SitemapPass{Started: t0, Done: true}
	if _, ok := done.Due(t0.Add(59*time.Minute), time.Hour); ok {
		t.Fatal("a done pass is due within its rest")
	}
	if p, ok := done.Due(t0.Add(time.Hour), time.Hour); !ok || p != (SitemapPass{Started: t0.Add(time.Hour)}) {
		t.Fatalf("after its rest: %+v %v", p, ok)
	}
}

// sitemapStore answers the two indexes and their files from ids by file
// name, and records what was asked; refuseAfter > 0 refuses every request
// past that many.
type sitemapStore struct {
	full, fresh map[string][]int64 // file name → ids, in index order
	fullOrder   []string
	freshOrder  []string
	asked       []string
	refuseAfter int
}

func gzURLSet(ids []int64) []byte {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	fmt.Fprint(zw, `<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:xhtml="http://www.w3.org/1999/xhtml">`)
	for _, id := range ids {
		u := fmt.Sprintf("https://apps.apple.com/us/app/app-%d/id%d", id, id)
		fmt.Fprintf(zw, `<url><loc>%s</loc><xhtml:link rel="alternate" hreflang="en-us" href="%s"/></url>`, u, u)
	}
	fmt.Fprint(zw, `</urlset>`)
	zw.Close()
	return b.Bytes()
}

func (s *sitemapStore) get(_ context.Context, u string) upstream.Response {
	s.asked = append(s.asked, u)
	if s.refuseAfter > 0 && len(s.asked) > s.refuseAfter {
		return upstream.Response{Class: objects.ClassRateLimit, Err: fmt.Errorf("429"), Remaining: -1}
	}
	name := strings.TrimPrefix(u, "http://store/")
	index := func(names []string) upstream.Response {
		var b strings.Builder
		b.WriteString(`<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">`)
		for _, n := range names {
			fmt.Fprintf(&b, "<sitemap><loc>https://apps.apple.com/%s</loc></sitemap>", n)
		}
		b.WriteString(`</sitemapindex>`)
		return upstream.Response{Class: objects.ClassOK, Body: []byte(b.String()), Remaining: -1}
	}
	switch name {
	case "sitemaps_apps_index_app_1.xml":
		return index(s.fullOrder)
	case "sitemaps_apps_index_new-app_1.xml":
		return index(s.freshOrder)
	}
	if ids, ok := s.full[name]; ok {
		return upstream.Response{Class: objects.ClassOK, Body: gzURLSet(ids), Remaining: -1}
	}
	if ids, ok := s.fresh[name]; ok {
		return upstream.Response{Class: objects.ClassOK, Body: gzURLSet(ids), Remaining: -1}
	}
	return upstream.Response{Class: objects.ClassNotFound, Err: fmt.Errorf("404"), Remaining: -1}
}

func idRange(from, n int64) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = from + int64(i)
	}
	return out
}

// TestScanSitemapsOnD1: the new apps' index first, then the full index's
// files SitemapFilesPerRun a run from the cursor; only unknown apps are
// inserted (queued, no lookup fields), a known one is not written; a
// finished pass rests until its period; a refusal keeps the file due.
func TestScanSitemapsOnD1(t *testing.T) {
	db, drv := d1test.New(t)
	ctx := context.Background()
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	// Known: 1001 (queued) and 1002 (enriched, named).
	drv.Exec(t, `INSERT INTO app_registry (track_id) VALUES (1001)`)
	drv.Exec(t, `INSERT INTO app_registry (track_id, name, enrichment_source, enriched_at) VALUES (1002, 'kept', 'itunes+store', ?)`, d1.Time(t0))
	st := &sitemapStore{
		full: map[string][]int64{
			"sitemaps_apps_app_1_1.xml.gz": idRange(1001, 10),
			"sitemaps_apps_app_1_2.xml.gz": idRange(2001, 10),
			"sitemaps_apps_app_1_3.xml.gz": idRange(3001, 5),
		},
		fullOrder:  []string{"sitemaps_apps_app_1_1.xml.gz", "sitemaps_apps_app_1_2.xml.gz", "sitemaps_apps_app_1_3.xml.gz"},
		fresh:      map[string][]int64{"sitemaps_apps_new-app_1_1.xml.gz": {9001, 9002, 1001}},
		freshOrder: []string{"sitemaps_apps_new-app_1_1.xml.gz"},
	}
	run := func(at time.Time) SitemapResult {
		t.Helper()
		st.asked = nil
		r := ScanSitemaps(ctx, db, st.get, "http://store", at)
		if r.Error != "" {
			t.Fatalf("run at %v: %+v", at, r)
		}
		return r
	}
	// Run 1: the new apps' index and its file.
	r := run(t0)
	if r.Index != "new-app" || r.Files != 1 || r.IDs != 3 || r.NewApps != 2 || r.Requests != 2 || len(st.asked) != 2 {
		t.Fatalf("run 1: %+v %v", r, st.asked)
	}
	// Run 2: the full index's first two files; 1001 and 1002 known.
	before := drv.TotalChanges(t)
	r = run(t0.Add(10 * time.Minute))
	if r.Index != "app" || r.Files != 2 || r.IDs != 20 || r.NewApps != 18 || r.Pass != fmt.Sprintf("%d:2", t0.Add(10*time.Minute).Unix()) {
		t.Fatalf("run 2: %+v", r)
	}
	// 18 new apps, a row and a counter row each, and the cursor's row
	// with each file's batch.
	if w := drv.TotalChanges(t) - before; w != 18*2+2 {
		t.Fatalf("run 2 wrote %d rows, want %d", w, 18*2+2)
	}
	if name := drv.Rows(t, `SELECT name FROM app_registry WHERE track_id = 1002`)[0]["name"]; name != "kept" {
		t.Fatalf("a known app was written: %v", name)
	}
	if n := drv.Int(t, `SELECT count(*) FROM app_registry WHERE track_id BETWEEN 2001 AND 2010 AND lookup_at IS NULL AND enriched_at IS NULL AND discovered_at IS NOT NULL`); n != 10 {
		t.Fatalf("queued sitemap apps: %d, want 10", n)
	}
	// Run 3: a refusal after the index: the third file stays due.
	st.refuseAfter = 1
	st.asked = nil
	r = ScanSitemaps(ctx, db, st.get, "http://store", t0.Add(20*time.Minute))
	if !r.RateLimited || r.Files != 0 || r.Pass != fmt.Sprintf("%d:2", t0.Add(10*time.Minute).Unix()) {
		t.Fatalf("run 3 (refused): %+v", r)
	}
	st.refuseAfter = 0
	// Run 4: the third file; its batch ends the pass (one cursor write).
	before = drv.TotalChanges(t)
	r = run(t0.Add(30 * time.Minute))
	if r.Files != 1 || r.NewApps != 5 || !strings.HasSuffix(r.Pass, ":done") || drv.TotalChanges(t)-before != 5*2+1 {
		t.Fatalf("run 4: %+v, %d rows written", r, drv.TotalChanges(t)-before)
	}
	// Run 5: both rest: no request, no write.
	before = drv.TotalChanges(t)
	if r = run(t0.Add(40 * time.Minute)); r.Index != "" || len(st.asked) != 0 || drv.TotalChanges(t) != before {
		t.Fatalf("run 5 (resting): %+v %v", r, st.asked)
	}
	// An hour after the first: the new apps' index again; a new app in it.
	st.fresh["sitemaps_apps_new-app_1_1.xml.gz"] = append(st.fresh["sitemaps_apps_new-app_1_1.xml.gz"], 9003)
	if r = run(t0.Add(time.Hour)); r.Index != "new-app" || r.NewApps != 1 {
		t.Fatalf("the next hour: %+v", r)
	}
	// A week after the full pass started, it starts again from file 1:
	// every app known, nothing written but the cursor, with each file.
	for _, at := range []time.Duration{2 * time.Hour, 3 * time.Hour} { // the new apps' index, hourly, first
		run(t0.Add(at))
	}
	week := t0.Add(10*time.Minute + SitemapFullEvery)
	run(week) // the new apps' index is due again by then
	before = drv.TotalChanges(t)
	if r = run(week.Add(10 * time.Minute)); r.Index != "app" || r.Files != 2 || r.NewApps != 0 || drv.TotalChanges(t)-before != 2 {
		t.Fatalf("a new full pass over known apps: %+v, %d rows written", r, drv.TotalChanges(t)-before)
	}
	// A file gone since the index was read is passed, with its error.
	st.fullOrder = append(st.fullOrder[:2], "sitemaps_apps_app_1_9.xml.gz", st.fullOrder[2])
	r = ScanSitemaps(ctx, db, st.get, "http://store", week.Add(20*time.Minute))
	if r.Error == "" || r.Files != 2 || r.IDs != 5 || !strings.HasSuffix(r.Pass, ":done") {
		t.Fatalf("a missing file: %+v", r)
	}
}

// TestSitemapFileCost counts a full file's D1 work: appstore's
// MaxSitemapURLs ids are MaxSitemapURLs / SitemapIDsPerStmt statements,
// one batch with the cursor's, each id one probe of the primary key and
// no walk; a known app writes nothing, a new one its row and its counter
// row. `go test -run TestSitemapFileCost -v ./worker/crawl/`
func TestSitemapFileCost(t *testing.T) {
	db, drv := d1test.New(t)
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	const file, known = 50_000, 40_000
	for i := 0; i < known; i += SitemapIDsPerStmt {
		stmts := SitemapStatements(idRange(int64(1_000_000+i), SitemapIDsPerStmt), now)
		if _, err := db.Exec(context.Background(), stmts...); err != nil {
			t.Fatal(err)
		}
	}
	// One statement of new apps, measured: no walk of app_registry.
	one := SitemapStatements(idRange(5_000_000, SitemapIDsPerStmt), now)[0]
	if w := drv.Measure(t, one.SQL, one.Args...); w.Walked > SitemapIDsPerStmt || w.Changes != 2*SitemapIDsPerStmt {
		t.Fatalf("a statement of new apps: %+v", w)
	}
	stmts := SitemapStatements(idRange(1_000_000, file), now)
	if len(stmts) != file/SitemapIDsPerStmt || len(stmts)+1 > d1.MaxBatch {
		t.Fatalf("%d statements for a file of %d ids", len(stmts), file)
	}
	// The file, as a run saves it: one batch with the cursor.
	ctx, cost := d1.WithCost(context.Background())
	before := drv.TotalChanges(t)
	cur := d1.Cursor{Name: sitemapFullCursor}
	n, err := db.ExecAtomic(ctx, append(stmts, cur.Write("1:1", now)...)...)
	if err != nil {
		t.Fatal(err)
	}
	const fresh = file - known
	written := drv.TotalChanges(t) - before
	if q := cost.View().Queries; n != fresh || written != 2*fresh+1 || q != int64(len(stmts)+1) {
		t.Fatalf("%d new, %d rows written, %d queries; want %d, %d, %d", n, written, q, fresh, 2*fresh+1, len(stmts)+1)
	}
	t.Logf("a file of %d ids (%d known): %d inserts and the cursor's write in 1 batch (%d queries), %d rows written (%d new apps × 2 + the cursor), %d primary-key probes",
		file, known, len(stmts), len(stmts)+1, written, fresh, file)
}
