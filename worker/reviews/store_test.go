//go:build !js

package reviews

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"storecrawl/worker/d1"
	"storecrawl/worker/d1/d1test"
)

func TestUpsertIsIdempotent(t *testing.T) {
	db, drv := d1test.New(t)
	ctx := context.Background()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	p := mustParse(t, "us_389801252_p1_2025.json", 389801252, "us")
	old := mustParse(t, "al_382617920_p1_2018.json", 382617920, "al")  // no dates
	for _, rs := range [][]Review{p.Reviews, old.Reviews, p.Reviews} { // the first page twice
		for _, r := range rs {
			if _, err := db.Exec(ctx, UpsertStmt(r, ScoreReview(r.Title, r.Body), now)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n := drv.Int(t, "SELECT COUNT(*) FROM app_reviews"); n != int64(len(p.Reviews)+len(old.Reviews)) {
		t.Errorf("%d rows, want %d", n, len(p.Reviews)+len(old.Reviews))
	}
	// An edited review replaces its row.
	r := p.Reviews[0]
	r.Rating, r.Body = 5, "Fixed now, thanks!"
	if _, err := db.Exec(ctx, UpsertStmt(r, 0.5, now.Add(time.Hour))); err != nil {
		t.Fatal(err)
	}
	row := drv.Rows(t, "SELECT rating, body, reviewed_at, author_hash FROM app_reviews WHERE id = ?", r.ID)[0]
	if fmt.Sprint(row["rating"]) != "5" || row["body"] != "Fixed now, thanks!" || row["reviewed_at"] != "2025-09-28T18:55:46.000Z" || row["author_hash"] != r.AuthorHash {
		t.Errorf("row %v", row)
	}
	if n := drv.Int(t, "SELECT COUNT(*) FROM app_reviews WHERE app_id = 382617920 AND reviewed_at IS NULL"); n != int64(len(old.Reviews)) {
		t.Errorf("undated reviews stored with a date: %d", n)
	}
}

// page is n synthetic reviews of app, the newest first from the (day)th
// day, as a feed page lists them.
func page(app int64, day, n int) []Review {
	rs := make([]Review, n)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range rs {
		k := day*1000 + n - i
		rs[i] = Review{ID: fmt.Sprint(app*1_000_000 + int64(k)), AppID: app, Country: "us", Rating: 1 + k%5,
			Title: "Title", Body: "Crashes on launch since the update", Version: "1.0", AuthorHash: "0123456789abcdef",
			Date: base.Add(time.Duration(k) * time.Minute)}
	}
	return rs
}

// A fetch writes the reviews that are new or edited, not the page again:
// a page of 50 fetched a day later unchanged writes none of them. An app
// keeps its newest KeptPerApp reviews: a fetch past them deletes the
// oldest. D1 also bills each review stored or deleted its entry in
// app_reviews_by_app (total_changes() leaves it out), the table's one
// index: it is keyed by the review id (WITHOUT ROWID, migrations/0033),
// so a review is two rows billed, not three.
func TestSaveFetchWritesNewReviewsAndKeepsTheNewest(t *testing.T) {
	db, drv := d1test.New(t)
	st := D1Store{DB: db}
	ctx := context.Background()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	const app = 42
	if n := drv.Int(t, "SELECT count(*) FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'app_reviews'"); n != 1 {
		t.Fatalf("app_reviews has %d indexes, want 1 (app_reviews_by_app)", n)
	}
	save := func(rs []Review) int64 {
		before := drv.TotalChanges(t)
		if err := st.SaveFetch(ctx, app, "us", rs, now); err != nil {
			t.Fatal(err)
		}
		return drv.TotalChanges(t) - before - 1 // the fetch's row
	}
	if n := save(page(app, 0, 50)); n != 50 {
		t.Fatalf("first page: %d review rows, want 50", n)
	}
	now = now.Add(24 * time.Hour)
	if n := save(page(app, 0, 50)); n != 0 {
		t.Fatalf("the same page a day later: %d review rows, want 0", n)
	}
	edited := page(app, 0, 50)
	edited[3].Body = "Fixed now"
	if n := save(edited); n != 1 {
		t.Fatalf("one review edited: %d rows, want 1", n)
	}
	// Fill the app to its bound, then one page more: its oldest 50 go.
	for day := 1; drv.Int(t, "SELECT count(*) FROM app_reviews") < KeptPerApp; day++ {
		save(page(app, day, 50))
	}
	if n := drv.Int(t, "SELECT count(*) FROM app_reviews"); n != KeptPerApp {
		t.Fatalf("%d reviews stored, want %d", n, KeptPerApp)
	}
	oldest := drv.Int(t, "SELECT min(CAST(id AS INTEGER)) FROM app_reviews")
	if n := save(page(app, 99, 50)); n != 100 {
		t.Fatalf("a page past the bound: %d rows, want 100 (50 new, 50 oldest deleted)", n)
	}
	if n := drv.Int(t, "SELECT count(*) FROM app_reviews"); n != KeptPerApp {
		t.Fatalf("%d reviews stored past the bound, want %d", n, KeptPerApp)
	}
	if n := drv.Int(t, "SELECT count(*) FROM app_reviews WHERE CAST(id AS INTEGER) < ?", oldest+50); n != 0 {
		t.Fatalf("%d of the 50 oldest reviews kept", n)
	}
	if n := drv.Int(t, "SELECT count(*) FROM app_reviews WHERE id = ?", page(app, 99, 50)[0].ID); n != 1 {
		t.Fatal("the newest review is not stored")
	}
}

// TestAppReviewsPageByCursorThroughTiesAndUndated: pages of an app's
// reviews follow each other by their cursors, most recent first, through
// equal dates and then the undated ones, each review once; a page reads
// its own rows.
func TestAppReviewsPageByCursorThroughTiesAndUndated(t *testing.T) {
	db, drv := d1test.New(t)
	ctx := context.Background()
	// 7 reviews of app 1: three on one day, two on another, two undated;
	// and another app's, never listed.
	for i, at := range []any{"2026-01-02T00:00:00.000Z", "2026-01-02T00:00:00.000Z", "2026-01-02T00:00:00.000Z",
		"2026-01-05T00:00:00.000Z", "2026-01-05T00:00:00.000Z", nil, nil} {
		drv.Exec(t, `INSERT INTO app_reviews (id, app_id, country, rating, title, body, version, author_hash, reviewed_at, sentiment, fetched_at)
VALUES (?, 1, 'us', 3, 't', 'b', '1', 'h', ?, 0, '2026-01-10T00:00:00.000Z')`, fmt.Sprintf("r%d", i), at)
	}
	drv.Exec(t, `INSERT INTO app_reviews (id, app_id, country, rating, title, body, version, author_hash, reviewed_at, sentiment, fetched_at)
VALUES ('other', 2, 'us', 3, 't', 'b', '1', 'h', '2026-01-09T00:00:00.000Z', 0, '2026-01-10T00:00:00.000Z')`)
	st := D1Store{DB: db}
	var got []string
	for cursor, pages := "", 0; ; pages++ {
		ctx, cost := d1.WithCost(ctx)
		page, next, err := st.AppReviews(ctx, 1, 2, cursor)
		if err != nil || pages > 4 {
			t.Fatalf("page %d: %v", pages, err)
		}
		if v := cost.View(); v.RowsRead > 2 || v.Queries != 1 {
			t.Errorf("page %d cost %+v", pages, v)
		}
		for _, it := range page {
			var r struct {
				ID string `json:"id"`
			}
			json.Unmarshal(it, &r)
			got = append(got, r.ID)
		}
		if next == "" {
			break
		}
		cursor = next
	}
	if want := "r3,r4,r0,r1,r2,r5,r6"; strings.Join(got, ",") != want {
		t.Fatalf("paged %v, want %s", got, want)
	}
	if _, _, err := st.AppReviews(ctx, 1, 2, "10"); !errors.Is(err, d1.ErrBadCursor) {
		t.Fatalf("a cursor not handed out: %v", err)
	}
}
