//go:build !js

package segments

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"storecrawl/worker/d1"
	"storecrawl/worker/d1/d1test"
)

// storeFixture: 6 niches of 8 keywords, each ranking its niche's 12
// apps (top TopN of them, rotating), with ratings.
func storeFixture(t *testing.T) (Store, *d1test.Driver) {
	db, drv := d1test.New(t)
	drv.Exec(t, `INSERT INTO app_registry (track_id, name, rating_count, average_rating, competitiveness_score, rating_velocity_7d, rating_velocity_30d)
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 200)
SELECT i, 'app', 100 + i * 37 % 1000, 3 + (i % 20) / 10.0, 50, 2, 1 FROM n`)
	for niche := range 6 {
		for w := range 8 {
			kw := fmt.Sprintf("niche%d term%d", niche, w)
			drv.Exec(t, `INSERT INTO crawl_keywords (keyword, source, created_at, searched_at) VALUES (?, 'title', '2026-11-01T00:00:00.000Z', '2026-11-01T00:00:00.000Z')`, kw)
			for r := range 20 {
				app := niche*12 + (w+r)%12 + 1
				if r >= 12 {
					app = 100 + (niche*8+w+r)%90 // the long tail, under the top
				}
				drv.Exec(t, `INSERT OR IGNORE INTO crawl_rankings (keyword, track_id, rank, seen_at) VALUES (?, ?, ?, '2026-11-01T00:00:00.000Z')`, kw, app, r+1)
			}
		}
	}
	return Store{DB: db}, drv
}

func run(t *testing.T, drv *d1test.Driver, what string, f func(ctx context.Context) (RunResult, error)) (RunResult, d1.CostView, int64) {
	t.Helper()
	ctx, cost := d1.WithCost(context.Background())
	before := drv.TotalChanges(t)
	r, err := f(ctx)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	written := drv.TotalChanges(t) - before
	c := cost.View()
	t.Logf("%s: %+v; %d queries, %d rows read, %d rows written", what, r, c.Queries, c.RowsRead, written)
	return r, c, written
}

// TestFullPassIncrementalAndStableIds: a full pass finds the six niches;
// the same rankings again write only the day's nothing-new; a search that
// moves a keyword to another niche marks it, and the incremental run
// re-partitions only around it, keeping every id; a later day snapshots.
func TestFullPassIncrementalAndStableIds(t *testing.T) {
	s, drv := storeFixture(t)
	now := time.Date(2026, 11, 23, 6, 0, 0, 0, time.UTC)
	r, _, _ := run(t, drv, "first full pass", func(ctx context.Context) (RunResult, error) { return s.Full(ctx, now) })
	if r.Segments != 6 || r.New != 6 || r.Keywords != 48 {
		t.Fatalf("%+v", r)
	}
	ids := map[string]int64{}
	for _, row := range drv.Rows(t, `SELECT keyword, segment_id FROM segment_keywords`) {
		ids[row["keyword"].(string)] = int64(row["segment_id"].(float64))
	}
	for n := range 6 {
		for w := range 8 {
			if ids[fmt.Sprintf("niche%d term%d", n, w)] != ids[fmt.Sprintf("niche%d term0", n)] {
				t.Fatalf("niche %d split: %v", n, ids)
			}
		}
	}
	if got := drv.Int(t, `SELECT count(*) FROM segment_snapshots`); got != 6 {
		t.Fatalf("%d snapshots", got)
	}
	// Same rankings, same day: nothing written.
	_, _, written := run(t, drv, "same rankings", func(ctx context.Context) (RunResult, error) { return s.Full(ctx, now.Add(time.Hour)) })
	if written != 0 {
		t.Fatalf("an unchanged full pass wrote %d rows", written)
	}
	// A search of an unchanged keyword marks nothing.
	ctx := context.Background()
	if err := s.Mark(ctx, []string{"niche0 term0", "niche1 term1"}, now); err != nil {
		t.Fatal(err)
	}
	if n := drv.Int(t, `SELECT count(*) FROM segment_dirty`); n != 0 {
		t.Fatalf("%d marked for unchanged tops", n)
	}
	if r, _, w := run(t, drv, "nothing marked", func(ctx context.Context) (RunResult, error) { return s.Update(ctx, now) }); w != 0 || r.Keywords != 0 {
		t.Fatalf("%+v, %d written", r, w)
	}
	// niche0 term7 now ranks niche 1's apps: marked, moved, ids kept.
	moved := "niche0 term7"
	drv.Exec(t, `UPDATE crawl_rankings SET track_id = track_id + 12 WHERE keyword = ? AND rank <= 12`, moved)
	if err := s.Mark(ctx, []string{moved, "niche3 term3"}, now); err != nil {
		t.Fatal(err)
	}
	if n := drv.Int(t, `SELECT count(*) FROM segment_dirty`); n != 1 {
		t.Fatalf("%d marked, want the one keyword whose top changed", n)
	}
	r, c, written := run(t, drv, "incremental", func(ctx context.Context) (RunResult, error) { return s.Update(ctx, now.Add(30*time.Minute)) })
	// The marked keyword re-placed: the segment it left and the one it
	// entered updated, no other read or written.
	if r.Keywords != 1 || r.Segments != 2 || r.New != 0 || r.Retired != 0 {
		t.Fatalf("incremental %+v", r)
	}
	if got := drv.Int(t, `SELECT segment_id FROM segment_keywords WHERE keyword = ?`, moved); got != ids["niche1 term0"] {
		t.Fatalf("moved keyword in segment %d, want niche 1's %d", got, ids["niche1 term0"])
	}
	if a, b := drv.Int(t, `SELECT keyword_count FROM segments WHERE id = ?`, ids["niche0 term0"]), drv.Int(t, `SELECT keyword_count FROM segments WHERE id = ?`, ids["niche1 term0"]); a != 7 || b != 9 {
		t.Fatalf("keyword counts %d and %d, want 7 and 9", a, b)
	}
	// Rows: the two segments' rows, the moved keyword's row (+ its index
	// entry is D1's, not SQLite's count), the mark deleted.
	if written != 4 || c.Queries > 10 || c.RowsRead > 130 {
		t.Fatalf("incremental wrote %d rows in %d queries", written, c.Queries)
	}
	if n := drv.Int(t, `SELECT count(*) FROM segment_dirty`); n != 0 {
		t.Fatalf("%d marks left", n)
	}
	// The next day's pass: a snapshot a segment, ids all kept.
	// The update left the segments' figures as the full pass makes them:
	// the next day's pass writes its 6 snapshots and renames the segment
	// that took the keyword (names are the full pass's), nothing else.
	before := drv.Rows(t, `SELECT * FROM segments ORDER BY id`)
	if _, _, w := run(t, drv, "next day", func(ctx context.Context) (RunResult, error) { return s.Full(ctx, now.AddDate(0, 0, 1)) }); w != 7 {
		t.Fatalf("the next day's pass wrote %d rows, want its 6 snapshots and a name", w)
	}
	after := drv.Rows(t, `SELECT * FROM segments ORDER BY id`)
	for i := range before {
		for k, v := range before[i] {
			if fmt.Sprint(after[i][k]) != fmt.Sprint(v) && k != "name" && k != "updated_at" {
				t.Fatalf("segment %v's %s: %v after the update, %v after the full pass", v, k, v, after[i][k])
			}
		}
	}
	if got := drv.Int(t, `SELECT count(*) FROM segment_snapshots`); got != 12 {
		t.Fatalf("%d snapshots after two days", got)
	}
	if got := drv.Int(t, `SELECT count(DISTINCT segment_id) FROM segment_keywords`); got != 6 {
		t.Fatalf("%d segments", got)
	}
	// Read side.
	page, next, err := s.List(ctx, "opportunity", 4, "")
	if err != nil || len(page) != 4 || next == "" {
		t.Fatalf("page %d, next %q, %v", len(page), next, err)
	}
	rest, next2, err := s.List(ctx, "opportunity", 4, next)
	if err != nil || len(rest) != 2 || next2 != "" {
		t.Fatalf("rest %d, next %q, %v", len(rest), next2, err)
	}
	if _, _, err := s.List(ctx, "trend", 4, "nope!"); err != ErrBadCursor {
		t.Fatalf("bad cursor: %v", err)
	}
	raw, found, err := s.Get(ctx, ids["niche1 term0"])
	if err != nil || !found {
		t.Fatal(found, err)
	}
	var seg struct {
		Name      string            `json:"name"`
		Keywords  []string          `json:"keywords"`
		Apps      []SegmentApp      `json:"apps"`
		Snapshots []json.RawMessage `json:"snapshots"`
		Relations []Relation        `json:"relations"`
		Scores    Scores            `json:"scores"`
		Trend     string            `json:"trend"`
	}
	if err := json.Unmarshal(raw, &seg); err != nil {
		t.Fatal(err, string(raw))
	}
	if len(seg.Keywords) != 9 || len(seg.Apps) == 0 || len(seg.Snapshots) != 2 || seg.Scores.Opportunity <= 0 || seg.Trend == "" || seg.Name == "" {
		t.Fatalf("%s", raw)
	}
	if _, found, _ := s.Get(ctx, 9999); found {
		t.Fatal("unknown id found")
	}
}

// TestSplitIsRecordedInLineage: a niche whose keywords divide into two
// groups of apps becomes two segments; the larger keeps the id, the other
// is new, with a split recorded from the first.
func TestSplitIsRecordedInLineage(t *testing.T) {
	s, drv := storeFixture(t)
	now := time.Date(2026, 11, 23, 6, 0, 0, 0, time.UTC)
	run(t, drv, "first", func(ctx context.Context) (RunResult, error) { return s.Full(ctx, now) })
	old := drv.Int(t, `SELECT segment_id FROM segment_keywords WHERE keyword = 'niche2 term0'`)
	// niche 2's terms 5–7 now rank a new set of apps (150–161) together.
	drv.Exec(t, `UPDATE crawl_rankings SET track_id = 150 + (track_id % 12) WHERE keyword IN ('niche2 term5', 'niche2 term6', 'niche2 term7') AND rank <= 12`)
	r, _, _ := run(t, drv, "split", func(ctx context.Context) (RunResult, error) { return s.Full(ctx, now.Add(time.Hour)) })
	if r.New != 1 || r.Lineage != 1 {
		t.Fatalf("%+v", r)
	}
	rows := drv.Rows(t, `SELECT parent_id, child_id, kind, keywords FROM segment_lineage`)
	if len(rows) != 1 || int64(rows[0]["parent_id"].(float64)) != old || rows[0]["kind"] != KindSplit || rows[0]["keywords"] != 3.0 {
		t.Fatalf("lineage %v (old %d)", rows, old)
	}
	if got := drv.Int(t, `SELECT segment_id FROM segment_keywords WHERE keyword = 'niche2 term0'`); got != old {
		t.Fatalf("the larger part lost its id: %d, want %d", got, old)
	}
}

// TestFullPassExpiresOldSnapshots: the day's pass deletes each live
// segment's snapshots older than SnapshotRetention, reading only them by
// the primary key's prefix, and keeps the rest.
func TestFullPassExpiresOldSnapshots(t *testing.T) {
	s, drv := storeFixture(t)
	now := time.Date(2026, 11, 23, 6, 0, 0, 0, time.UTC)
	run(t, drv, "first full pass", func(ctx context.Context) (RunResult, error) { return s.Full(ctx, now) })
	ids := drv.Rows(t, `SELECT id FROM segments ORDER BY id`)
	if len(ids) != 6 {
		t.Fatalf("%d segments", len(ids))
	}
	next := now.AddDate(0, 0, 1)
	old, kept := Day(next.Add(-SnapshotRetention).AddDate(0, 0, -1)), Day(next.Add(-SnapshotRetention))
	for _, row := range ids {
		for _, day := range []string{old, kept} {
			drv.Exec(t, `INSERT INTO segment_snapshots (segment_id, day, keyword_count, total_ratings, demand, opportunity, apps) VALUES (?, ?, 8, 100, 1, 1, '[]')`, row["id"], day)
		}
	}
	_, cost, written := run(t, drv, "next day", func(ctx context.Context) (RunResult, error) { return s.Full(ctx, next) })
	if got := drv.Int(t, `SELECT count(*) FROM segment_snapshots WHERE day = ?`, old); got != 0 {
		t.Fatalf("%d snapshots past the retention kept", got)
	}
	if got := drv.Int(t, `SELECT count(*) FROM segment_snapshots WHERE day = ?`, kept); got != 6 {
		t.Fatalf("%d snapshots within the retention kept, want 6", got)
	}
	// The day's 6 snapshots and the 6 deletions; the segments' names may
	// change with the day's pass (TestFullPassIncrementalAndStableIds).
	if written < 12 || written > 18 {
		t.Fatalf("the next day's pass wrote %d rows, want its 6 snapshots and 6 deletions", written)
	}
	t.Logf("next day: %d rows read, %d written", cost.RowsRead, written)
}

// TestSnapshotRetentionIsItsReadersLongestLookBack: the snapshots stay as
// long as a reader looks back (the trend's month, the detail page, the
// sparkline) and no longer.
func TestSnapshotRetentionIsItsReadersLongestLookBack(t *testing.T) {
	longest := max(TrendMonthDays, SnapshotKeep, SparklineDays)
	if SnapshotRetention != time.Duration(longest)*24*time.Hour {
		t.Fatalf("SnapshotRetention %v, want the readers' %d days", SnapshotRetention, longest)
	}
	// The full pass keeps the day the trend's month reads (its delete is
	// of days before the retention's).
	now := time.Date(2026, 11, 23, 6, 0, 0, 0, time.UTC)
	if cut, month := Day(now.Add(-SnapshotRetention)), Day(now.AddDate(0, 0, -TrendMonthDays)); month < cut {
		t.Fatalf("the trend's month %s is before the kept days from %s", month, cut)
	}
}
