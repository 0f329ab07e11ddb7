//go:build integration

package e2e

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestClusteringCronPublishesMarkets seeds keyword rankings, fires the
// 6-hourly clustering cron, and reads the markets back over HTTP.
func TestClusteringCronPublishesMarkets(t *testing.T) {
	t.Parallel()
	dir := outputDir(t)
	s := startSim(t, dir)
	persist := filepath.Join(dir, "state")
	prepareDB(t, persist, dir, 0)
	var sql strings.Builder
	for i, kw := range []string{"budget", "budget planner", "chat"} {
		fmt.Fprintf(&sql, "INSERT INTO crawl_keywords (keyword, source, created_at, searched_at, result_count) VALUES ('%s','title','2026-01-01T00:00:00.000Z','2026-01-01T00:00:00.000Z',4);\n", kw)
		for j := 0; j < 4; j++ {
			id := 100000001 + i*10 + j // apps the simulator knows, for their reviews
			ratings := 1000 * (j + 1)
			if kw == "chat" && j == 0 {
				ratings = 5_000_000
			}
			fmt.Fprintf(&sql, "INSERT OR IGNORE INTO app_registry (track_id, name, rating_count, average_rating) VALUES (%d, 'App %d', %d, %.1f);\n", id, id, ratings, 3.5+float64(j)*0.2)
			fmt.Fprintf(&sql, "INSERT INTO crawl_rankings (keyword, track_id, rank, seen_at) VALUES ('%s', %d, %d, '2026-01-01T00:00:00.000Z');\n", kw, id, j+1)
		}
	}
	seedSQL(t, persist, sql.String())

	w := startWorker(t, dir, persist, s.base)
	var out map[string]any
	if code := doJSON(t, "GET", w.base+"/v1/opportunities?limit=0", "", nil, &out); code != 400 || out["field"] != "limit" {
		t.Fatalf("bad limit: %d %v", code, out)
	}
	if code := doJSON(t, "GET", w.base+"/v1/clusters?offset=-1", "", nil, &out); code != 400 || out["field"] != "offset" {
		t.Fatalf("bad offset: %d %v", code, out)
	}
	doJSON(t, "GET", w.base+"/__scheduled?cron="+strings.ReplaceAll("0 */6 * * *", " ", "+"), "", nil, nil)
	var page struct {
		Items []struct {
			ClusterID string  `json:"cluster_id"`
			Score     float64 `json:"opportunity_score"`
			Members   []struct {
				TrackID float64 `json:"track_id"`
				Name    string  `json:"name"`
			} `json:"members"`
		} `json:"items"`
		NextCursor any `json:"next_cursor"`
	}
	eventually(t, 20*time.Second, "markets published", func() (bool, string) {
		page.Items = nil
		doJSON(t, "GET", w.base+"/v1/opportunities?limit=2", "", nil, &page)
		return len(page.Items) == 2, jsonString(page)
	})
	if page.Items[0].Score < page.Items[1].Score || len(page.Items[0].Members) != 4 || page.Items[0].Members[0].Name == "" || page.NextCursor == nil {
		t.Fatalf("opportunities page: %s", jsonString(page))
	}
	for _, it := range page.Items {
		if it.ClusterID == "chat" {
			t.Fatalf("the concentrated chat market must rank last: %s", jsonString(page))
		}
	}
	top := page.Items[0]
	var bySize struct {
		Items []struct {
			ClusterID string `json:"cluster_id"`
		} `json:"items"`
	}
	doJSON(t, "GET", w.base+"/v1/clusters?limit=1", "", nil, &bySize)
	if len(bySize.Items) != 1 || bySize.Items[0].ClusterID != "chat" {
		t.Fatalf("clusters by size: %s", jsonString(bySize))
	}

	// Reviews-refresh fetches the top clusters' apps' customer
	// reviews from the simulator's feed, under their own global limit.
	doJSON(t, "POST", w.base+"/v1/scheduler/run-now", adminToken, `{"task":"reviews-refresh"}`, nil)
	eventually(t, 60*time.Second, "reviews fetched", func() (bool, string) {
		rows := d1Rows(t, persist, `SELECT COUNT(*) AS apps, COALESCE(SUM(reviews), 0) AS reviews FROM review_fetches`)
		return rows[0]["apps"].(float64) >= 5 && rows[0]["reviews"].(float64) > 0, jsonString(rows)
	})
	stored := 0
	for _, m := range top.Members {
		var revs struct {
			Items []map[string]any `json:"items"`
		}
		if code := doJSON(t, "GET", fmt.Sprintf("%s/v1/apps/%d/reviews?limit=100", w.base, int64(m.TrackID)), "", nil, &revs); code != 200 {
			t.Fatalf("reviews of %v: %d", m.TrackID, code)
		}
		for _, r := range revs.Items {
			if r["author_hash"] == "" || r["sentiment"] == nil || r["rating"].(float64) < 1 {
				t.Fatalf("stored review %v", r)
			}
		}
		stored += len(revs.Items)
		t.Logf("member %d: %d reviews", int64(m.TrackID), len(revs.Items))
	}
	var themes map[string]any
	if code := doJSON(t, "GET", w.base+"/v1/clusters/"+url.PathEscape(top.ClusterID)+"/themes", "", nil, &themes); code != 200 || stored == 0 || themes["reviews"].(float64) != float64(stored) || len(themes["themes"].([]any)) == 0 {
		t.Fatalf("themes of %s: %d %v (members hold %d reviews)", top.ClusterID, code, themes, stored)
	}
	// The run's feeds are one reservation of its own limit (one acquire).
	var lim map[string]any
	if code := doJSON(t, "GET", w.base+"/v1/limiter/status?namespace=internal&key=upstream-reviews", "", nil, &lim); code != 200 || lim["counters"].(map[string]any)["allowed"].(float64) < 1 {
		t.Fatalf("the reviews did not go through their own limit: %d %v", code, lim)
	}
	t.Logf("reviews: %d stored for the %d members of %q; themes %v", stored, len(top.Members), top.ClusterID, jsonString(themes["themes"]))
}
