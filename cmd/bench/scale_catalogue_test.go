//go:build unix

package main

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
	"time"

	"storecrawl/worker/markets"
)

// TestCatalogueMarketsMatchTheirRankings: the filled catalogue is a
// steady state for the markets stage. Each cluster's members are its
// keyword's rankings at their ranks and its app count theirs, and a
// keyword without a cluster ranks fewer apps than make a market, so the
// clustering cron's check (markets' driftSQL) finds nothing to repair and
// the bench measures its steady cost, not a catch-up.
func TestCatalogueMarketsMatchTheirRankings(t *testing.T) {
	ctx := context.Background()
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "scale.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	files, _ := filepath.Glob("../../migrations/[0-9]*.sql")
	sort.Strings(files)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(string(b)); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
	const n = 11_000
	if _, err := db.Exec(`INSERT INTO app_registry (track_id, name, rating_count, average_rating)
WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < ?) SELECT ? + i, 'app ' || i, i, 4.0 FROM s`, n, simBaseTrackID); err != nil {
		t.Fatal(err)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := ShapeOf(n)
	if err := fillTables(ctx, tx, s, time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC), 10); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	count := func(q string) int {
		var c int
		if err := db.QueryRow(q).Scan(&c); err != nil {
			t.Fatalf("%v\n%s", err, q)
		}
		return c
	}
	if got := count(`SELECT count(*) FROM crawl_rankings r JOIN market_clusters c ON c.cluster_id = r.keyword`); got != s.Members {
		t.Errorf("members: %d, want %d", got, s.Members)
	}
	if got := count(`SELECT count(*) FROM crawl_rankings`); got != s.Rankings {
		t.Errorf("rankings: %d, want %d", got, s.Rankings)
	}
	for what, q := range map[string]string{
		"clusters not measured over their rankings": `SELECT count(*) FROM market_clusters c
  WHERE c.member_sum IS NOT (SELECT sum(track_id) FROM crawl_rankings r WHERE r.keyword = c.cluster_id)`,
		"clusters whose app count is not their rankings'": `SELECT count(*) FROM market_clusters c
  WHERE c.app_count != (SELECT count(*) FROM crawl_rankings r WHERE r.keyword = c.cluster_id)`,
		"keywords without a cluster ranking a market's apps": `SELECT count(*) FROM crawl_keywords k
  WHERE NOT EXISTS (SELECT 1 FROM market_clusters c WHERE c.cluster_id = k.keyword)
    AND (SELECT count(*) FROM crawl_rankings r WHERE r.keyword = k.keyword) >= ` + strconv.Itoa(markets.MinClusterApps),
	} {
		if got := count(q); got != 0 {
			t.Errorf("%s: %d", what, got)
		}
	}
}
