//go:build !js

package catalogue

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"storecrawl/worker/d1"
	"storecrawl/worker/d1/d1test"
)

// historyBytesSQL is each history table's pages in use (SQLite's dbstat,
// its indexes' included: it has none), as cmd/bench's tableSizesSQL
// counts them.
const historyBytesSQL = `SELECT s.tbl_name AS tbl, sum(d.pgsize) AS bytes
FROM dbstat d JOIN sqlite_schema s ON s.name = d.name
WHERE s.tbl_name IN ('app_snapshots', 'app_version_history', 'app_price_history', 'keyword_rank_history')
GROUP BY s.tbl_name`

// historyBytesApps apps each change their ratings, version and price once
// (two rows a table: the first values and the new ones), and as many
// rankings move: enough rows that the pages fill as random inserts fill
// them.
const historyBytesApps = 10_000

// TestHistoryBytesPerRow writes history rows through the real write paths
// (the schema's triggers on app_registry, a search's rank changes) in
// random app order, and measures each table's bytes a row. It prints them
// (go test -run TestHistoryBytesPerRow -v ./worker/catalogue/) and holds
// them at the compact schema's (migrations/0035) figures.
func TestHistoryBytesPerRow(t *testing.T) {
	db, drv := d1test.New(t)
	ctx := context.Background()
	r := rand.New(rand.NewPCG(3, 5))
	t0 := time.Date(2026, 10, 1, 9, 30, 15, 123_000_000, time.UTC)
	ids := make([]int64, historyBytesApps)
	for i := range ids {
		ids[i] = 300_000_000 + r.Int64N(1_500_000_000)
		drv.Exec(t, `INSERT OR IGNORE INTO app_registry (track_id, name, rating_count, average_rating, version, current_version_release_date,
  release_notes, price, currency, enrichment_source, enriched_at, updated_at, discovered_at, values_at, page_status)
VALUES (?1, 'Budget Planner', ?2, 4.61234, '3.12.1', '2026-09-01T07:00:00Z', 'Bug fixes and performance improvements.', 0.99, 'USD',
  'itunes+store', ?3, ?3, ?3, ?3, 'parsed')`, ids[i], 100+r.Int64N(100_000), d1.Time(t0.Add(-time.Duration(r.Int64N(1e6))*time.Second)))
	}
	r.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	before := drv.TotalChanges(t)
	for i, id := range ids {
		drv.Exec(t, `UPDATE app_registry SET rating_count = rating_count + 7, average_rating = 4.61789, version = '3.13.0',
  current_version_release_date = '2026-10-01T07:00:00Z', release_notes = 'New: budgets by week. Bug fixes.', price = 1.99,
  observed_at = ?2 WHERE track_id = ?1`, id, d1.Time(t0.Add(time.Duration(i)*time.Second)))
	}
	// Rows written a change (the history tables are WITHOUT ROWID with no
	// other index: a row is its one b-tree entry): the app's row, and each
	// series' first values and new value (2 each), as before migrations/0035.
	if n := drv.TotalChanges(t) - before; n != historyBytesApps*(1+3*2) {
		t.Fatalf("the changes wrote %d rows, want %d", n, historyBytesApps*(1+3*2))
	}
	var rankRows int64
	// Keywords of ten results each, ranked a day before: a search that
	// reverses each keyword's order moves every result (two rows: the
	// rank held since the ranking, and the new one).
	const perKeyword = 10
	for k := 0; k < historyBytesApps/perKeyword; k++ {
		kw := fmt.Sprintf("budget planner %d", k)
		drv.Exec(t, `INSERT INTO crawl_keywords (keyword, source, created_at) VALUES (?, 'title', ?)`, kw, d1.Time(t0.Add(-2*day)))
		res := ids[k*perKeyword : (k+1)*perKeyword]
		for i, id := range res {
			drv.Exec(t, `INSERT INTO crawl_rankings (keyword, track_id, rank, seen_at) VALUES (?, ?, ?, ?)`, kw, id, i+1, d1.Time(t0.Add(-day)))
		}
		rev := make([]int64, len(res))
		for i, id := range res {
			rev[len(res)-1-i] = id
		}
		before := drv.TotalChanges(t)
		if _, err := db.Exec(ctx, KeywordRankStmt(kw, rev, t0)...); err != nil {
			t.Fatal(err)
		}
		rankRows += drv.TotalChanges(t) - before
	}
	if rankRows != 2*historyBytesApps {
		t.Fatalf("the searches wrote %d rows, want %d (two a result that moved)", rankRows, 2*historyBytesApps)
	}
	// Bytes a row, before migrations/0035 (the same test on 0034's schema):
	// snapshots 63.5, versions 123.9, prices 62.5, keyword ranks 46.1.
	// After (this test, printed with -v): 33.6, 73.1, 33.4, 19.0.
	maxBytesARow := map[string]float64{
		"app_snapshots": 34, "app_version_history": 74, "app_price_history": 34, "keyword_rank_history": 19.5,
	}
	got := map[string]float64{}
	for _, row := range drv.Rows(t, historyBytesSQL) {
		tbl, bytes := row["tbl"].(string), row["bytes"].(float64)
		rows := drv.Int(t, `SELECT count(*) FROM `+tbl)
		if rows != 2*historyBytesApps {
			t.Fatalf("%s: %d rows, want %d", tbl, rows, 2*historyBytesApps)
		}
		got[tbl] = bytes / float64(rows)
		t.Logf("%-22s %6d rows %9.0f bytes %6.1f bytes a row", tbl, rows, bytes, got[tbl])
	}
	for tbl, limit := range maxBytesARow {
		if got[tbl] == 0 || got[tbl] > limit {
			t.Errorf("%s: %.1f bytes a row, want at most %.1f", tbl, got[tbl], limit)
		}
	}
}
