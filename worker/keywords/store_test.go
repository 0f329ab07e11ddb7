//go:build !js

package keywords

import (
	"context"
	"fmt"
	"testing"
	"time"

	"storecrawl/worker/catalogue"
	"storecrawl/worker/d1"
	"storecrawl/worker/d1/d1test"
)

func TestHistoryWindowIsTheRankRetention(t *testing.T) {
	if HistoryWindow != catalogue.RankHistoryRetention {
		t.Fatalf("HistoryWindow %v, rank history kept %v", HistoryWindow, catalogue.RankHistoryRetention)
	}
}

// seedSlack stores the real "slack" search answer as the keyword's
// rankings and its apps as enriched, with rank history.
func seedSlack(t *testing.T, drv *d1test.Driver) {
	t.Helper()
	drv.Exec(t, `INSERT INTO crawl_keywords (id, keyword, source, created_at, searched_at, result_count) VALUES (7, 'slack', 'title', '2018-10-01T00:00:00.000Z', '2018-11-12T00:00:00.000Z', 6)`)
	for _, a := range slackTop(t) {
		drv.Exec(t, `INSERT INTO app_registry (track_id, name, rating_count, average_rating, current_version_release_date) VALUES (?, ?, NULLIF(?, 0), NULLIF(?, 0), ?)`,
			a.TrackID, a.Name, a.RatingCount, a.AverageRating, a.CurrentVersionReleaseDate)
		drv.Exec(t, `INSERT INTO crawl_rankings (keyword, track_id, rank, seen_at) VALUES ('slack', ?, ?, '2018-11-01T00:00:00.000Z')`, a.TrackID, a.Rank)
	}
	// Slack: 3rd from 2018-08-01 (before the window), 2nd on 10-01, 1st on
	// 11-01 (its ranking's day: its first change wrote the rank it left).
	// Ratstash left on 10-15 and came back 11-01 (its ranking, no row since).
	day := func(s string) int64 { tm, _ := time.Parse(time.DateOnly, s); return catalogue.Day(tm) }
	for _, r := range []struct {
		id   int64
		day  string
		rank any
	}{{803453959, "2018-08-01", 3}, {803453959, "2018-10-01", 2}, {803453959, "2018-11-01", 1}, {1406123151, "2018-10-15", nil}} {
		drv.Exec(t, `INSERT INTO keyword_rank_history (track_id, keyword_id, day, rank) VALUES (?, 7, ?, ?)`, r.id, day(r.day), r.rank)
	}
}

func TestKeywordReportFromStoredRankings(t *testing.T) {
	db, drv := d1test.New(t)
	seedSlack(t, drv)
	st := D1Store{DB: db}
	rep, found, err := st.Keyword(context.Background(), " Slack ", "us", slackCaptured)
	if err != nil || !found {
		t.Fatalf("%v %v", found, err)
	}
	if rep.Term != "slack" || rep.Difficulty != 25 || *rep.Results != 6 || rep.Popularity != nil || len(rep.TopApps) != 6 || rep.TopApps[0].Name == nil || *rep.TopApps[0].Name != "Slack" {
		t.Fatalf("report %+v", rep)
	}
	// Slack's history: the window opens 2018-08-15; the row in effect then
	// (3rd, from 08-01), 2nd on 10-01, 1st on 11-01, newest first.
	h := rep.TopApps[0].History
	if len(h) != 3 || h[0].Day != "2018-11-01" || *h[0].Rank != 1 || h[1].Day != "2018-10-01" || *h[1].Rank != 2 || h[2].Day != "2018-08-01" || *h[2].Rank != 3 {
		t.Fatalf("slack history %+v", h)
	}
	// Ratstash: left on 10-15, back 6th on 11-01 (its ranking).
	h = rep.TopApps[5].History
	if len(h) != 2 || h[0].Day != "2018-11-01" || *h[0].Rank != 6 || h[1].Day != "2018-10-15" || h[1].Rank != nil {
		t.Fatalf("ratstash history %+v", h)
	}
	// An app with no row: its ranking alone.
	if h := rep.TopApps[1].History; len(h) != 1 || h[0].Day != "2018-11-01" || *h[0].Rank != 2 {
		t.Fatalf("quickplan history %+v", h)
	}
	if _, found, err := st.Keyword(context.Background(), "slackers", "us", slackCaptured); found || err != nil {
		t.Fatalf("unknown term: %v %v", found, err)
	}
}

// TestKeywordReadDoesNotGrowWithTheCatalogue counts the read's work in
// SQLite (d1test.Measure): no walk of any table, and the same steps as the
// catalogue around it grows from 1,000 other keywords (50,000 rankings, a
// day of rank rows) to twice that (go test -run
// TestKeywordReadDoesNotGrowWithTheCatalogue -v ./worker/keywords/ prints
// them).
func TestKeywordReadDoesNotGrowWithTheCatalogue(t *testing.T) {
	_, drv := d1test.New(t)
	seedSlack(t, drv)
	since := catalogue.Day(slackCaptured.Add(-HistoryWindow))
	alone := drv.Measure(t, keywordSQL, "slack", since, DifficultyTopApps)
	drv.Exec(t, `INSERT INTO app_registry (track_id, name, rating_count) WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 10000) SELECT i, 'app ' || i, i FROM n`)
	grow := func(from int) d1test.Work {
		drv.Exec(t, `INSERT INTO crawl_keywords (keyword, source, created_at, searched_at, result_count) WITH RECURSIVE n(i) AS (SELECT ? UNION ALL SELECT i + 1 FROM n WHERE i < ? + 999) SELECT 'kw' || i, 'title', '2018-10-01T00:00:00.000Z', '2018-11-01T00:00:00.000Z', 50 FROM n`, from, from)
		drv.Exec(t, `INSERT INTO crawl_rankings (keyword, track_id, rank, seen_at) WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 49999) SELECT 'kw' || (? + i / 50), 1 + (? + i) % 10000, 1 + i % 50, '2018-11-01T00:00:00.000Z' FROM n`, from, from)
		drv.Exec(t, `INSERT OR IGNORE INTO keyword_rank_history (track_id, keyword_id, day, rank) SELECT r.track_id, k.id, ?, r.rank FROM crawl_rankings r JOIN crawl_keywords k ON k.keyword = r.keyword WHERE k.keyword LIKE 'kw%'`, since+10+int64(from))
		return drv.Measure(t, keywordSQL, "slack", since, DifficultyTopApps)
	}
	first, second := grow(1), grow(1001)
	t.Logf("keyword read: %d row returned, walked %d, VM steps %d alone, %d among 1,000 keywords, %d among 2,000",
		alone.Rows, alone.Walked+first.Walked+second.Walked, alone.VMSteps, first.VMSteps, second.VMSteps)
	if alone.Walked != 0 || first.Walked != 0 || second.Walked != 0 || second.VMSteps != first.VMSteps || second.Rows != 1 {
		t.Fatalf("the read grew: %+v, %+v, %+v", alone, first, second)
	}
}

// TestPopularityTaskStoresTheDueKeywordsOnce runs the task's refresh over
// the BUILT hints: the top clusters' keywords, each once.
func TestPopularityTaskStoresTheDueKeywordsOnce(t *testing.T) {
	db, drv := d1test.New(t)
	drv.Exec(t, `INSERT INTO crawl_keywords (keyword, source, created_at) VALUES ('photo editor', 'title', 'x'), ('phone', 'title', 'x'), ('zzz', 'title', 'x'), ('not a cluster', 'title', 'x')`)
	drv.Exec(t, `INSERT INTO opportunity_scores (cluster_id, score, computed_at) VALUES ('photo editor', 80, 'x'), ('phone', 70, 'x'), ('zzz', 10, 'x')`)
	f := &fetcher{hints: builtHints(t)}
	now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	ctx, cost := d1.WithCost(context.Background())
	w0 := drv.TotalChanges(t)
	res := RefreshPopularity(ctx, D1Store{DB: db}, f, now)
	written := drv.TotalChanges(t) - w0
	t.Logf("%s: %d queries, %d rows written", res.Summary(), cost.View().Queries, written)
	// photo editor at "pho" (3 requests), phone at "ph" (2), zzz never (3);
	// one read, one batch of a statement a keyword.
	if res.Err != "" || res.Keywords != 3 || res.Requests != 8 || written != 3 || cost.View().Queries != 1+3 {
		t.Fatalf("run %+v, %d written, %d queries", res, written, cost.View().Queries)
	}
	got := drv.Rows(t, `SELECT keyword, popularity, popularity_prefix, popularity_position, popularity_at FROM crawl_keywords ORDER BY keyword`)
	want := map[string]string{"photo editor": "87 3 0", "phone": "93 2 0", "zzz": "0 <nil> <nil>", "not a cluster": "<nil> <nil> <nil>"}
	for _, r := range got {
		if fmt.Sprint(r["popularity"], r["popularity_prefix"], r["popularity_position"]) != want[r["keyword"].(string)] {
			t.Errorf("%v: %v", r["keyword"], r)
		}
	}
	// Fresh now: the next run asks nothing and writes nothing.
	f.asked = nil
	if res := RefreshPopularity(ctx, D1Store{DB: db}, f, now.Add(time.Hour)); res.Keywords != 0 || len(f.asked) != 0 {
		t.Fatalf("second run: %+v, asked %q", res, f.asked)
	}
	// Past PopularityMaxAge they are due again.
	if res := RefreshPopularity(ctx, D1Store{DB: db}, f, now.Add(PopularityMaxAge+time.Hour)); res.Keywords != 3 {
		t.Fatalf("a month on: %+v", res)
	}
}

func TestPopularityRunStopsAtARefusalAndKeepsWhatItMeasured(t *testing.T) {
	db, drv := d1test.New(t)
	drv.Exec(t, `INSERT INTO crawl_keywords (keyword, source, created_at) VALUES ('photo editor', 'title', 'x'), ('phone', 'title', 'x')`)
	drv.Exec(t, `INSERT INTO opportunity_scores (cluster_id, score, computed_at) VALUES ('photo editor', 80, 'x'), ('phone', 70, 'x')`)
	f := &refusing{fetcher: fetcher{hints: builtHints(t)}, after: 3}
	res := RefreshPopularity(context.Background(), D1Store{DB: db}, f, time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC))
	if !res.RateLimited || res.RetryAfterS != 60 || res.Keywords != 1 {
		t.Fatalf("%+v", res)
	}
	if n := drv.Int(t, `SELECT count(*) FROM crawl_keywords WHERE popularity_at IS NOT NULL`); n != 1 {
		t.Fatalf("%d stored", n)
	}
}

// refusing answers after requests, then refuses.
type refusing struct {
	fetcher
	after int
}

func (r *refusing) Hints(ctx context.Context, p string) ([]string, error) {
	if len(r.asked) >= r.after {
		return nil, &RateLimited{RetryAfterS: 60}
	}
	return r.fetcher.Hints(ctx, p)
}
