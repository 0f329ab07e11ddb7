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

	"storecrawl/worker/d1/d1test"
	"storecrawl/worker/markets"
	"storecrawl/worker/segments"
)

// TestCatalogueMarketsMatchTheirRankings: the filled catalogue is a
// steady state for the markets stage. Each cluster's members are its
// keyword's rankings at their ranks and its app count theirs, and a
// keyword without a cluster ranks fewer apps than make a market, so the
// clustering cron's check (markets' driftSQL) finds nothing to repair and
// the bench measures its steady cost, not a catch-up.
func TestCatalogueMarketsMatchTheirRankings(t *testing.T) {
	ctx := context.Background()
	const n = 11_000
	db := migratedCatalogue(t, n)
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

// TestCatalogueSegmentsAreSteady: the catalogue carries the segments a
// running deployment has (the product's own passes over its rankings, a
// day ago), so the measured day's full pass writes a steady day's rows:
// the day's snapshot of each live segment and what changed, not a first
// build of every segment and keyword.
func TestCatalogueSegmentsAreSteady(t *testing.T) {
	ctx := context.Background()
	const n = 11_000
	db := migratedCatalogue(t, n)
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := fillTables(ctx, tx, ShapeOf(n), now, 10); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := seedSegments(ctx, d1test.Over(db), now); err != nil {
		t.Fatal(err)
	}
	count := func(q string) int64 {
		var c int64
		if err := db.QueryRow(q).Scan(&c); err != nil {
			t.Fatalf("%v\n%s", err, q)
		}
		return c
	}
	live := count(`SELECT count(*) FROM segments WHERE retired_at IS NULL`)
	kws := count(`SELECT count(*) FROM segment_keywords`)
	if live == 0 || kws == 0 || count(`SELECT count(*) FROM segment_snapshots`) != live {
		t.Fatalf("seeded: %d live segments, %d keywords, %d snapshots", live, kws, count(`SELECT count(*) FROM segment_snapshots`))
	}
	before := count(`SELECT total_changes()`)
	if _, err := (segments.Store{DB: d1test.Over(db)}).Full(ctx, now); err != nil {
		t.Fatal(err)
	}
	written := count(`SELECT total_changes()`) - before
	t.Logf("%d live segments over %d keywords; the next day's full pass wrote %d rows", live, kws, written)
	// The day's snapshots, and each segment's trend and relations at most.
	if written > 2*live {
		t.Fatalf("the next day's full pass wrote %d rows: more than the day's %d snapshots and their trends", written, live)
	}
	if got := count(`SELECT count(*) FROM segment_snapshots`); got != 2*live {
		t.Fatalf("snapshots after a day: %d, want %d", got, 2*live)
	}
}

// migratedCatalogue is a SQLite file with the project's migrations and n
// apps of the simulator's ids, closed with the test.
func migratedCatalogue(t *testing.T, n int) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "scale.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
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
	if _, err := db.Exec(`INSERT INTO app_registry (track_id, name, rating_count, average_rating)
WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < ?) SELECT ? + i, 'app ' || i, i, 4.0 FROM s`, n, simBaseTrackID); err != nil {
		t.Fatal(err)
	}
	return db
}
