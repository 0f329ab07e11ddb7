//go:build !js

package reviews

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"storecrawl/internal/objects"
	"storecrawl/worker/d1/d1test"
	"storecrawl/worker/upstream"
)

// The refresh fetches page 1 of the feed of the top clusters' apps that
// are due, leaders first, stores their reviews with the fetch, stops at a
// refusal, and leaves an app whose fetch failed due.
func TestRefreshFetchesTheTopClustersApps(t *testing.T) {
	db, drv := d1test.New(t)
	ctx := context.Background()
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	// Two clusters: "photo" (score 80) led by 389801252, "budget" (score 20).
	drv.Exec(t, `INSERT INTO opportunity_scores (cluster_id, score, computed_at) VALUES ('photo', 80, 'x'), ('budget', 20, 'x')`)
	drv.Exec(t, `INSERT INTO crawl_rankings (keyword, track_id, rank, seen_at) VALUES
  ('photo', 389801252, 1, '2026-11-01T00:00:00.000Z'), ('photo', 415458524, 2, '2026-11-01T00:00:00.000Z'), ('budget', 595068606, 1, '2026-11-01T00:00:00.000Z'), ('budget', 389801252, 3, '2026-11-01T00:00:00.000Z')`)
	feeds := map[int64]string{389801252: "us_389801252_p1_2025.json", 415458524: "us_415458524_p1_2025.json", 595068606: "us_595068606_p1_2025.json"}
	var asked []string
	broken := int64(415458524)
	fetch := func(_ context.Context, url string) upstream.Response {
		asked = append(asked, url)
		for id, name := range feeds {
			if strings.Contains(url, "/id="+itoa(id)+"/") {
				if id == broken {
					return upstream.Response{Status: 503, Class: objects.ClassServerError, Remaining: -1}
				}
				return upstream.Response{Status: 200, Class: objects.ClassOK, Body: fixture(t, name), Remaining: -1}
			}
		}
		return upstream.Response{Status: 404, Class: objects.ClassNotFound, Remaining: -1}
	}
	st := D1Store{DB: db}
	res := Refresh(ctx, st, fetch, "http://up", "us", now)
	if res.Apps != 2 || res.Failed != 1 || res.RateLimited || len(asked) != 3 ||
		asked[0] != "http://up/us/rss/customerreviews/page=1/id=389801252/sortby=mostrecent/json" {
		t.Fatalf("first run %+v, asked %v", res, asked)
	}
	stored := drv.Int(t, `SELECT COUNT(*) FROM app_reviews`)
	if stored == 0 || int(stored) != res.Reviews || drv.Int(t, `SELECT COUNT(*) FROM review_fetches`) != 2 {
		t.Fatalf("%d reviews stored, %d reported", stored, res.Reviews)
	}
	// Only the failed app is due again the same day; a refusal stops the run.
	asked, broken = nil, 0
	refused := func(_ context.Context, url string) upstream.Response {
		asked = append(asked, url)
		return upstream.Response{Status: 429, Class: objects.ClassRateLimit, RetryAfterS: 30, Remaining: -1}
	}
	if res := Refresh(ctx, st, refused, "http://up", "us", now.Add(time.Hour)); !res.RateLimited || res.RetryAfterS != 30 || len(asked) != 1 || !strings.Contains(asked[0], "/id=415458524/") {
		t.Fatalf("refused run %+v, asked %v", res, asked)
	}
	if res := Refresh(ctx, st, fetch, "http://up", "us", now.Add(time.Hour)); res.Apps != 1 || res.Failed != 0 {
		t.Fatalf("retry %+v", res)
	}
	// A day later every member is due again.
	asked = nil
	if res := Refresh(ctx, st, fetch, "http://up", "us", now.Add(RefreshAge+2*time.Hour)); res.Apps != 3 || len(asked) != 3 {
		t.Fatalf("a day later %+v, asked %v", res, asked)
	}
	if n := drv.Int(t, `SELECT COUNT(*) FROM app_reviews`); n != stored+int64(len(mustParse(t, feeds[415458524], 415458524, "us").Reviews)) {
		t.Fatalf("refetching duplicated reviews: %d rows", n)
	}
}

// The API's reads: an app's reviews by page, most recent first, and a
// cluster's complaint themes from its members' reviews (their names
// excluded); an unknown cluster is not found.
func TestReviewReadsForTheAPI(t *testing.T) {
	db, drv := d1test.New(t)
	ctx := context.Background()
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	drv.Exec(t, `INSERT INTO market_clusters (cluster_id, app_count, total_ratings, computed_at) VALUES ('photo', 1, 1, 'x')`)
	drv.Exec(t, `INSERT INTO crawl_rankings (keyword, track_id, rank, seen_at) VALUES ('photo', 389801252, 1, '2026-11-01T00:00:00.000Z')`)
	drv.Exec(t, `INSERT INTO app_registry (track_id, name, developer_name) VALUES (389801252, 'Instagram', 'Instagram, Inc.')`)
	st := D1Store{DB: db}
	page := mustParse(t, "us_389801252_p1_2025.json", 389801252, "us")
	if err := st.SaveFetch(ctx, 389801252, "us", page.Reviews, now); err != nil {
		t.Fatal(err)
	}
	first, _, err := st.AppReviews(ctx, 389801252, 10, "")
	if err != nil || len(first) != min(10, len(page.Reviews)) {
		t.Fatalf("first page: %d %v", len(first), err)
	}
	var a, b struct {
		ID         string  `json:"id"`
		ReviewedAt string  `json:"reviewed_at"`
		Sentiment  float64 `json:"sentiment"`
		Truncated  bool    `json:"truncated"`
	}
	json.Unmarshal(first[0], &a)
	json.Unmarshal(first[1], &b)
	if a.ID == "" || a.ReviewedAt < b.ReviewedAt {
		t.Fatalf("not most recent first: %s then %s", first[0], first[1])
	}
	themes, n, found, err := st.ClusterThemes(ctx, "photo")
	if err != nil || !found || n != len(page.Reviews) || len(themes) == 0 {
		t.Fatalf("themes %+v of %d reviews, found %v, %v", themes, n, found, err)
	}
	for _, th := range themes {
		if strings.Contains(th.Key, "instagram") || th.Share <= 0 || len(th.ExampleIDs) == 0 {
			t.Fatalf("theme %+v", th)
		}
	}
	if _, _, found, err := st.ClusterThemes(ctx, "nope"); found || err != nil {
		t.Fatalf("unknown cluster: found %v %v", found, err)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
