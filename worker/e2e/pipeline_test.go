//go:build integration

package e2e

import (
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"storecrawl/worker/guard"
)

// cronRunView is the subset of one /v1/system/cron entry the tests read.
type cronRunView struct {
	Result string `json:"result"`
	RanAt  string `json:"ran_at"`
	Error  string `json:"error"`
	Crawl  *struct {
		Action   string `json:"action"`
		Found    int    `json:"found"`
		Filled   int    `json:"filled"`
		Keywords []any  `json:"keywords"`
		Revalued int    `json:"revalued"`
		Promoted int    `json:"promoted"`
		Side     *struct {
			Action string `json:"action"`
			Found  int    `json:"found"`
			Filled int    `json:"filled"`
		} `json:"side"`
		Fill *struct {
			Action string `json:"action"`
			Found  int    `json:"found"`
			Filled int    `json:"filled"`
		} `json:"fill"`
	} `json:"crawl"`
	Daily *struct {
		Quality struct {
			CheckedAt string `json:"checked_at"`
			Apps      int    `json:"apps"`
		} `json:"quality"`
		Windows int `json:"windows"`
	} `json:"daily"`
	D1 struct {
		RowsRead    int64 `json:"rows_read"`
		RowsWritten int64 `json:"rows_written"`
		Queries     int64 `json:"queries"`
	} `json:"d1"`
}

// fireCron triggers expr and returns the run it recorded.
func fireCron(t *testing.T, w *worker, expr string) cronRunView {
	t.Helper()
	var before map[string]cronRunView
	doJSON(t, "GET", w.base+"/v1/system/cron", "", nil, &before)
	if code := doJSON(t, "GET", w.base+"/__scheduled?cron="+strings.ReplaceAll(expr, " ", "+"), "", nil, nil); code != 200 {
		t.Fatalf("scheduled %q: HTTP %d", expr, code)
	}
	var run cronRunView
	eventually(t, 60*time.Second, "cron "+expr+" recorded", func() (bool, string) {
		var runs map[string]cronRunView
		doJSON(t, "GET", w.base+"/v1/system/cron", "", nil, &runs)
		r, ok := runs[expr]
		run = r
		return ok && r.RanAt != before[expr].RanAt, jsonString(runs)
	})
	return run
}

// market is one item of /v1/opportunities.
type market struct {
	ClusterID     string   `json:"cluster_id"`
	Score         float64  `json:"opportunity_score"`
	Fragmentation float64  `json:"fragmentation"`
	HHI           *float64 `json:"hhi"`
	AppCount      int      `json:"app_count"`
	Members       []struct {
		TrackID float64 `json:"track_id"`
	} `json:"members"`
}

// TestPipelineEndToEnd runs the event-driven pipeline on one stack:
//   - a crawl cycle fills an enriched app's rankings (values the known
//     keywords among its terms) and maps the pending keywords; rankings-updated →
//     clustering → clusters-ready → fragmentation → fragmentation-done → opportunity scores on the API;
//   - the daily cron runs the data-quality check: a sample read, no D1
//     write, its result in /v1/pipeline/counts;
//   - an idle crawl cycle reads at most idleCycleMaxRows rows and writes none:
//     its cron run adds only the cost guard's controller sample
//     (guard.SampleRowsRead, guard.SampleRowsWritten);
//   - a message no handler accepts is retried, then recorded from the
//     dead-letter queue.
func TestPipelineEndToEnd(t *testing.T) {
	t.Parallel()
	dir := outputDir(t)
	s := startSim(t, dir, "-apps", "3000", "-rate-per-min", "6000", "-burst", "100")
	persist := filepath.Join(dir, "state")
	prepareDB(t, persist, dir, 0)
	// No category is due (so keyword mapping is the primary task), three
	// pending keywords (one a term of the app), and one enriched app never
	// ranking-filled.
	seed := `UPDATE category_scans SET last_scanned_at = strftime('%Y-%m-%dT%H:%M:%fZ','now');
INSERT INTO crawl_keywords (keyword, source, created_at) VALUES ('budget','title','2026-01-01T00:00:00.000Z'), ('chess','title','2026-01-01T00:00:00.000Z'), ('garden','hints','2026-01-01T00:00:00.000Z');
INSERT INTO app_registry (track_id, name, subtitle, rating_count, average_rating, enrichment_source, enriched_at)
  VALUES (300000001, 'Zen Garden', 'Relax, breathe & sleep better', 1200, 4.1, 'itunes+store', '2026-01-01T00:00:00.000Z');
`
	seedSQL(t, persist, seed)

	w := &worker{persist: persist, simBase: s.base, dir: dir, vars: []string{"TEST_ROUTES:1"}, owner: t}
	w.start(t, "wrangler-1.log")

	t.Run("rankings flow to fragmentation and opportunities", func(t *testing.T) {
		run := fireCron(t, w, "*/5 * * * *")
		// Ranking fill ran first: it looked up the enriched app's
		// title+subtitle terms and added no keyword; the mapping searched
		// the three pending ones.
		if run.Crawl == nil {
			t.Fatalf("crawl: %s", jsonString(run))
		}
		fill := run.Crawl.Fill
		if fill == nil || fill.Action != "ranking_fill" || fill.Found < 5 || fill.Filled != 1 {
			t.Fatalf("ranking fill: %s", jsonString(run))
		}
		if run.Crawl.Action != "keyword_mapping" || run.Crawl.Found != 3 {
			t.Fatalf("crawl: %s", jsonString(run))
		}
		var app map[string]any
		doJSON(t, "GET", w.base+"/v1/apps/300000001", "", nil, &app)
		if app["rankings_filled_at"] == nil {
			t.Fatalf("app not marked filled: %v", app)
		}
		var page struct {
			Items []market `json:"items"`
		}
		found := map[string]market{}
		eventually(t, 90*time.Second, "budget and chess markets scored from their fragmentation", func() (bool, string) {
			page.Items = nil
			doJSON(t, "GET", w.base+"/v1/opportunities?limit=100", "", nil, &page)
			for _, m := range page.Items {
				found[m.ClusterID] = m
			}
			b, c := found["budget"], found["chess"]
			return b.HHI != nil && c.HHI != nil, jsonString(page)
		})
		for _, id := range []string{"budget", "chess", "garden"} {
			m, ok := found[id]
			if !ok || m.HHI == nil {
				t.Fatalf("market %q missing: %s", id, jsonString(page))
			}
			// The score used the stored Herfindahl analysis: fragmentation = 1 − HHI.
			if m.AppCount < 3 || len(m.Members) != m.AppCount || *m.HHI <= 0 || *m.HHI > 1 ||
				math.Abs(m.Fragmentation-(1-*m.HHI)) > 0.0011 || m.Score <= 0 || m.Score > 100 {
				t.Fatalf("market %q: %s", id, jsonString(m))
			}
		}
		log := w.log.String()
		for _, ev := range []string{`"event":"queue.clustered"`, `"event":"queue.fragmentation_analyzed"`, `"event":"queue.opportunities_scored"`} {
			if !strings.Contains(log, ev) {
				t.Fatalf("no %s in the worker log", ev)
			}
		}
	})

	t.Run("daily data-quality check", func(t *testing.T) {
		first := fireCron(t, w, "0 3 * * *")
		if first.Daily == nil || first.Daily.Quality.Apps < 1 || first.Daily.Quality.CheckedAt == "" || first.Error != "" {
			t.Fatalf("daily: %s", jsonString(first))
		}
		// wrangler dev prints the Worker's log lines a little after the answer.
		eventually(t, 10*time.Second, "the pipeline.data_quality event", func() (bool, string) {
			return strings.Contains(w.log.String(), `"event":"pipeline.data_quality"`), ""
		})
		// The check reads a sample and writes no D1 row; its result is
		// what /v1/pipeline/counts serves as quality. Beside the sampled
		// apps D1 counts a fixed overhead: the windows' list (json_each,
		// materialized, scanned) and the enriched ids' two ends, measured
		// 63 rows.
		const qualityOverheadRows = 64
		var counts struct {
			Quality map[string]any `json:"quality"`
		}
		doJSON(t, "GET", w.base+"/v1/pipeline/counts", "", nil, &counts)
		lang, _ := counts.Quality["languages"].(map[string]any)
		if first.D1.RowsWritten != 0 || first.D1.Queries != 2 || first.D1.RowsRead > int64(first.Daily.Quality.Apps)+qualityOverheadRows || counts.Quality["checked_at"] != first.Daily.Quality.CheckedAt || lang["threshold"] != 0.85 {
			t.Fatalf("daily: %s; counts' quality %v", jsonString(first), counts.Quality)
		}
		t.Logf("daily: %d apps sampled, %d rows read in %d queries; quality %v", first.Daily.Quality.Apps, first.D1.RowsRead, first.D1.Queries, counts.Quality)
	})

	// An idle cycle's cost: a row at most for each of its 12 probes, none
	// of which walks a table: the existence checks (three tiers, ranking
	// fill; three for the keyword check's pending, due and waiting), the
	// steering step's cursor and re-scored-clusters reads, and the
	// discovery lookups' cursor with its probes of
	// idx_app_registry_unlooked, after the cursor and, once a pass has
	// moved it (the catch-up's lookups of the apps the sitemaps queued),
	// from the start again. With no keyword waiting, the promote write
	// (four rows read for nothing) is skipped. Measured 12 rows (and the
	// cost guard's sample) in 13 queries with the cursor moved, 11 before
	// any lookup; a cycle that read a table would read hundreds.
	const idleCycleMaxRows = 12
	t.Run("idle cycle reads at most 12 rows", func(t *testing.T) {
		// Make nothing due. The controller may still be enriching apps the
		// searches found; stamping every app (not only the enriched ones) as
		// ranking-filled keeps those out of the fill check whenever their
		// enrichment lands.
		doJSON(t, "POST", w.base+"/v1/enrichment/stop", adminToken, nil, nil)
		wrangler(t, persist, "d1", "execute", "DB", "--local", "--command",
			"UPDATE category_scans SET last_scanned_at = strftime('%Y-%m-%dT%H:%M:%fZ','now'); "+
				"UPDATE crawl_keywords SET searched_at = strftime('%Y-%m-%dT%H:%M:%fZ','now') WHERE searched_at IS NULL; "+
				"UPDATE app_registry SET rankings_filled_at = strftime('%Y-%m-%dT%H:%M:%fZ','now')")
		// The steering step catches up on the clusters scored since its
		// cursor (the pipeline may still be re-scoring what the controller
		// enriched before it stopped): cycles until one finds none.
		// A page the stopped controller's last tick saved after the stamp
		// may rename an app (its fill is redone, app_registry_refill_on_rename):
		// the catch-up fills it too. The apps the sitemaps queued without
		// lookup fields are looked up by the catch-up's discovery lookups.
		for i := 0; ; i++ {
			catchUp := fireCron(t, w, "*/5 * * * *")
			if catchUp.Crawl == nil || (catchUp.Crawl.Action != "idle" && catchUp.Crawl.Action != "ranking_fill" && catchUp.Crawl.Action != "discovery_lookups") || i == 10 {
				t.Fatalf("catch-up cycle %d: %s", i, jsonString(catchUp))
			}
			if catchUp.Crawl.Action == "idle" && catchUp.Crawl.Revalued == 0 && catchUp.Crawl.Promoted == 0 {
				break
			}
		}
		run := fireCron(t, w, "*/5 * * * *")
		if run.Crawl == nil || run.Crawl.Action != "idle" || run.D1.RowsRead > idleCycleMaxRows+guard.SampleRowsRead || run.D1.RowsWritten != guard.SampleRowsWritten {
			t.Fatalf("idle cycle: %s", jsonString(run))
		}
		t.Logf("idle cycle: %d rows read in %d queries", run.D1.RowsRead, run.D1.Queries)
	})

	t.Run("a failing message lands in the dead-letter queue", func(t *testing.T) {
		var out map[string]any
		if code := doJSON(t, "POST", w.base+"/__test/events", "", `{"type":"e2e-poison"}`, &out); code != 401 {
			t.Fatalf("unauthenticated injection: %d %v", code, out)
		}
		if code := doJSON(t, "POST", w.base+"/__test/events", adminToken, `{"type":"e2e-poison","note":"no handler accepts this"}`, &out); code != 202 {
			t.Fatalf("inject: %d %v", code, out)
		}
		var page struct {
			Items []struct {
				MessageID string `json:"message_id"`
				Queue     string `json:"queue"`
				EventType string `json:"event_type"`
				Body      string `json:"body"`
			} `json:"items"`
		}
		eventually(t, 90*time.Second, "the poison message recorded from the dead-letter queue", func() (bool, string) {
			page.Items = nil
			doJSON(t, "GET", w.base+"/v1/system/dead-letters?limit=10", "", nil, &page)
			for _, it := range page.Items {
				if it.EventType == "e2e-poison" {
					return true, ""
				}
			}
			return false, jsonString(page)
		})
		it := page.Items[0]
		if it.Queue != "storecrawl-events-dlq" || !strings.Contains(it.Body, "no handler accepts this") || it.MessageID == "" {
			t.Fatalf("dead letter: %s", jsonString(page))
		}
		log := w.log.String()
		// max_retries 3: four failed deliveries, then the dead letter is logged once.
		if n := strings.Count(log, `unknown type \"e2e-poison\"`); n != 4 {
			t.Fatalf("want 4 failed deliveries of the poison message, got %d", n)
		}
		if !strings.Contains(log, `"event":"queue.dead_letter"`) {
			t.Fatal("no queue.dead_letter event")
		}
		if code := doJSON(t, "GET", w.base+"/v1/system/dead-letters?offset=x", "", nil, &out); code != 400 || out["field"] != "offset" {
			t.Fatalf("bad offset: %d %v", code, out)
		}
	})
}
