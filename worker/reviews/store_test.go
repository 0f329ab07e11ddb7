//go:build !js

package reviews

import (
	"context"
	"fmt"
	"testing"
	"time"

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
