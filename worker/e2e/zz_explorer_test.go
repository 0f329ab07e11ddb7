//go:build integration

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"storecrawl/internal/devstack"
)

// explorerBrowserTimeout bounds the explorer's browser script; its steps
// time out after 30 s each (explorer.mjs --timeout).
const explorerBrowserTimeout = 3 * time.Minute

// explorerSettle is how long /v1/opportunities must stay the same before
// the browser compares the pages with it: the pipeline re-scores markets
// from queue messages after each enrichment and clustering run.
const explorerSettle = 4 * time.Second

// TestExplorerInBrowser builds markets from crawled data (a crawl cycle
// searches pending keywords and fills an enriched app's rankings, the
// controller enriches what the searches found, the clustering cron
// re-publishes the markets, segments-full builds the market segments),
// then runs worker/e2e/browser/explorer.mjs: headless Chromium opens the
// markets list (segments), a market (segment), an app, a keyword
// and a search as a person does, checks each against the API's answer,
// that the app's charts are drawn and that no request left the Worker's
// origin, and saves a screenshot of each page in this test's output folder
// (.test-output/TestExplorerInBrowser/*.png; docs/img/explorer-*.png are
// copies of them).
func TestExplorerInBrowser(t *testing.T) {
	t.Parallel()
	node := browserNode(t)
	dir := outputDir(t)
	s := startSim(t, dir, "-apps", "3000", "-rate-per-min", "6000", "-burst", "100")
	persist := filepath.Join(dir, "state")
	prepareDB(t, persist, dir, 0)
	// No category is due, so the crawl cycle maps the pending keywords and
	// fills the enriched app's rankings.
	seedSQL(t, persist, `UPDATE category_scans SET last_scanned_at = strftime('%Y-%m-%dT%H:%M:%fZ','now');
INSERT INTO crawl_keywords (keyword, source, created_at) VALUES ('budget','title','2026-01-01T00:00:00.000Z'), ('chess','title','2026-01-01T00:00:00.000Z'), ('garden','hints','2026-01-01T00:00:00.000Z');
INSERT INTO app_registry (track_id, name, subtitle, rating_count, average_rating, enrichment_source, enriched_at)
  VALUES (300000001, 'Zen Garden', 'Relax, breathe & sleep better', 1200, 4.1, 'itunes+store', '2026-01-01T00:00:00.000Z');
`)
	// A short idle poll, so the controller sees the apps the crawl cycle finds.
	w := &worker{persist: persist, simBase: s.base, dir: dir, vars: []string{"ENRICHMENT_IDLE_S:2"}, owner: t}
	w.start(t, "wrangler-1.log")

	prep := time.Now()
	getStatus(t, w) // first use starts the controller
	if code := doJSON(t, "POST", w.base+"/v1/enrichment/tune", adminToken, `{"rate_per_min": 600}`, nil); code != 200 {
		t.Fatalf("tune: %d", code)
	}
	if run := fireCron(t, w, "*/5 * * * *"); run.Crawl == nil || run.Crawl.Action != "keyword_mapping" || run.Crawl.Found != 3 {
		t.Fatalf("crawl cycle: %s", jsonString(run))
	}
	var page struct {
		Items []market `json:"items"`
	}
	eventually(t, 90*time.Second, "markets scored", func() (bool, string) {
		page.Items = nil
		doJSON(t, "GET", w.base+"/v1/opportunities?limit=50", "", nil, &page)
		return len(page.Items) >= 2, jsonString(page)
	})
	// The searches' apps enriched, then the markets clustered again from them.
	eventually(t, 90*time.Second, "the markets' apps enriched", func() (bool, string) {
		st := getStatus(t, w)
		return st.Totals.Completed >= 20, jsonString(st.Totals)
	})
	doJSON(t, "POST", w.base+"/v1/enrichment/stop", adminToken, nil, nil)
	fireCron(t, w, "0 */6 * * *")
	var last string
	stableSince := time.Now()
	eventually(t, 60*time.Second, "the markets settled", func() (bool, string) {
		var raw map[string]any
		doJSON(t, "GET", w.base+"/v1/opportunities?limit=50", "", nil, &raw)
		now := jsonString(raw)
		if now != last {
			last, stableSince = now, time.Now()
		}
		return time.Since(stableSince) >= explorerSettle, now
	})
	// The market segments built from the same rankings (the daily full
	// pass, run now). A segment takes at least segments.MinSegmentKeywords
	// keywords sharing top apps: each crawled keyword gets two longer
	// forms ranking its apps (what the searches of "budget app" and
	// "budget pro" find), so each niche is one. Each segment is given
	// three earlier days of snapshots (what the daily pass leaves over
	// time), so the list has sparklines to draw.
	wrangler(t, persist, "d1", "execute", "DB", "--local", "--command", `
INSERT INTO crawl_keywords (keyword, source, created_at, searched_at, result_count)
  SELECT k.keyword || ' ' || n.s, 'title', k.created_at, k.searched_at, k.result_count FROM crawl_keywords k, (SELECT 'app' AS s UNION ALL SELECT 'pro') n
  WHERE k.searched_at IS NOT NULL AND k.keyword IN ('budget', 'chess', 'garden');
INSERT INTO crawl_rankings (keyword, track_id, rank, seen_at)
  SELECT r.keyword || ' ' || n.s, r.track_id, r.rank, r.seen_at FROM crawl_rankings r, (SELECT 'app' AS s UNION ALL SELECT 'pro') n
  WHERE r.keyword IN ('budget', 'chess', 'garden');`)
	var run struct {
		OK      bool   `json:"ok"`
		Summary string `json:"summary"`
	}
	if code := doJSON(t, "POST", w.base+"/v1/scheduler/run", adminToken, map[string]any{"task": "segments-full", "wait": true}, &run); code != 200 || !run.OK {
		t.Fatalf("segments-full: %d %s", code, jsonString(run))
	}
	var segs struct {
		Items []struct {
			ID int64 `json:"id"`
		} `json:"items"`
	}
	if doJSON(t, "GET", w.base+"/v1/segments?limit=50", "", nil, &segs); len(segs.Items) == 0 {
		t.Fatalf("segments-full built %s: %s", run.Summary, jsonString(segs))
	}
	var days []string
	for _, g := range segs.Items {
		for d := 3; d >= 1; d-- {
			days = append(days, fmt.Sprintf("(%d, '%s', 2, %d, %.2f, %d, '[]')", g.ID, time.Now().AddDate(0, 0, -d).UTC().Format(time.DateOnly), 100*d, 2.0+0.3*float64(g.ID%5)-0.2*float64(d), 10*d))
		}
	}
	wrangler(t, persist, "d1", "execute", "DB", "--local", "--command",
		"INSERT OR IGNORE INTO segment_snapshots (segment_id, day, keyword_count, total_ratings, demand, opportunity, apps) VALUES "+strings.Join(days, ", "))
	// The top segment's first app gets weeks of rating observations (what
	// the rating sweep leaves over time), so its page has a line to draw.
	var top struct {
		Apps []struct {
			TrackID int64 `json:"track_id"`
		} `json:"apps"`
	}
	if doJSON(t, "GET", fmt.Sprintf("%s/v1/segments/%d", w.base, segs.Items[0].ID), "", nil, &top) != 200 || len(top.Apps) == 0 {
		t.Fatalf("top segment %d: %s", segs.Items[0].ID, jsonString(top))
	}
	app := top.Apps[0].TrackID
	var rec struct {
		RatingCount   float64 `json:"rating_count"`
		AverageRating float64 `json:"average_rating"`
	}
	doJSON(t, "GET", fmt.Sprintf("%s/v1/apps/%d", w.base, app), "", nil, &rec)
	var snaps []string
	for i, daysAgo := range []int{21, 14, 7} {
		snaps = append(snaps, fmt.Sprintf("(%d, %d, %d, %.2f, 2)", app, time.Now().Add(-time.Duration(daysAgo)*24*time.Hour).UnixMilli(),
			int64(rec.RatingCount*(0.94+0.02*float64(i))), rec.AverageRating-0.05*float64(2-i)))
	}
	wrangler(t, persist, "d1", "execute", "DB", "--local", "--command",
		"INSERT INTO app_snapshots (track_id, taken_at, rating_count, average_rating, source) VALUES "+strings.Join(snaps, ", "))
	t.Logf("stack ready in %s: %d markets, %d segments (%s); app %d has 3 rating observations", time.Since(prep).Round(time.Second), strings.Count(last, `"cluster_id"`), len(segs.Items), run.Summary, app)

	started := time.Now()
	out, err := devstack.RunBounded(node, []string{filepath.Join(root, "worker", "e2e", "browser", "explorer.mjs"),
		"--base", w.base, "--out", dir, "--chromium", chromiumPath}, root, toolEnv(), explorerBrowserTimeout)
	os.WriteFile(filepath.Join(dir, "browser.log"), out, 0o644)
	if err != nil {
		t.Fatalf("browser test failed (%v) after %s; screenshots and log in %s:\n%s", err, time.Since(started).Round(time.Second), dir, out)
	}
	t.Logf("browser test passed in %s:\n%s", time.Since(started).Round(time.Second), strings.TrimSpace(string(out)))
	for _, p := range []string{"markets", "market", "app", "keyword", "search"} {
		if fi, err := os.Stat(filepath.Join(dir, p+".png")); err != nil || fi.Size() < 10_000 {
			t.Fatalf("screenshot of %s missing or empty: %v", p, err)
		}
	}
}
