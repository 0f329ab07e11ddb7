//go:build integration

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestClusteringCronPublishesMarkets seeds keyword rankings, fires the
// 6-hourly clustering cron, and reads the markets back over HTTP.
func TestClusteringCronPublishesMarkets(t *testing.T) {
	dir := outputDir(t)
	s := startSim(t, dir)
	persist := filepath.Join(dir, "state")
	prepareDB(t, persist, dir, 0)
	var sql strings.Builder
	for i, kw := range []string{"budget", "budget planner", "chat"} {
		fmt.Fprintf(&sql, "INSERT INTO crawl_keywords (keyword, source, created_at, searched_at, result_count) VALUES ('%s','title','2026-01-01T00:00:00.000Z','2026-01-01T00:00:00.000Z',4);\n", kw)
		for j := 0; j < 4; j++ {
			id := 200000000 + i*10 + j
			ratings := 1000 * (j + 1)
			if kw == "chat" && j == 0 {
				ratings = 5_000_000
			}
			fmt.Fprintf(&sql, "INSERT OR IGNORE INTO app_registry (track_id, name, rating_count, average_rating) VALUES (%d, 'App %d', %d, %.1f);\n", id, id, ratings, 3.5+float64(j)*0.2)
			fmt.Fprintf(&sql, "INSERT INTO crawl_rankings (keyword, track_id, rank, seen_at) VALUES ('%s', %d, %d, '2026-01-01T00:00:00.000Z');\n", kw, id, j+1)
		}
	}
	f := filepath.Join(dir, "markets.sql")
	os.WriteFile(f, []byte(sql.String()), 0o644)
	wrangler(t, persist, "d1", "execute", "DB", "--local", "--file", f)

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
		NextOffset any `json:"next_offset"`
	}
	eventually(t, 20*time.Second, "markets published", func() (bool, string) {
		page.Items = nil
		doJSON(t, "GET", w.base+"/v1/opportunities?limit=2", "", nil, &page)
		return len(page.Items) == 2, jsonString(page)
	})
	if page.Items[0].Score < page.Items[1].Score || len(page.Items[0].Members) != 4 || page.Items[0].Members[0].Name == "" || page.NextOffset != 2.0 {
		t.Fatalf("opportunities page: %s", jsonString(page))
	}
	for _, it := range page.Items {
		if it.ClusterID == "chat" {
			t.Fatalf("the concentrated chat market must rank last: %s", jsonString(page))
		}
	}
	doJSON(t, "GET", w.base+"/v1/clusters?limit=1", "", nil, &page)
	if len(page.Items) != 1 || page.Items[0].ClusterID != "chat" {
		t.Fatalf("clusters by size: %s", jsonString(page))
	}
}
