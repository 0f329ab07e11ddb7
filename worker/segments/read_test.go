//go:build !js

package segments

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"storecrawl/worker/d1/d1test"
)

// TestListSparklineIsBounded: a listed segment carries its newest
// SparklineDays daily demand values, oldest first; the listing reads no
// more for a longer history, and walks no table.
func TestListSparklineIsBounded(t *testing.T) {
	db, drv := d1test.New(t)
	const segs, page = 8, 5
	day0 := time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC)
	addDays := func(from, to int) {
		for id := 1; id <= segs; id++ {
			for d := from; d < to; d++ {
				drv.Exec(t, `INSERT INTO segment_snapshots (segment_id, day, keyword_count, total_ratings, demand, opportunity, apps) VALUES (?, ?, 2, 100, ?, 10, '[]')`,
					id, day0.AddDate(0, 0, d).Format(time.DateOnly), float64(id*1000+d))
			}
		}
	}
	for id := 1; id <= segs; id++ {
		drv.Exec(t, `INSERT INTO segments (id, name, keyword_count, app_count, total_ratings, avg_rating, demand, hhi, fragmentation, quality_gap,
  opportunity, apps, created_at, updated_at) VALUES (?, ?, 2, 2, 100, 4.1, 2, 0.5, 0.5, 0.1, ?, '[]', '2026-11-01T00:00:00.000Z', '2026-11-01T00:00:00.000Z')`, id, fmt.Sprint("s", id), float64(id))
	}
	addDays(0, 3)
	s := Store{DB: db}
	items, _, err := s.List(context.Background(), "opportunity", page, "")
	if err != nil || len(items) != page {
		t.Fatalf("%d items, %v", len(items), err)
	}
	var first struct {
		ID        int64     `json:"id"`
		Sparkline []float64 `json:"sparkline"`
	}
	json.Unmarshal(items[0], &first)
	if first.ID != segs || len(first.Sparkline) != 3 || first.Sparkline[0] != segs*1000 || first.Sparkline[2] != segs*1000+2 {
		t.Fatalf("three days: %s", items[0])
	}

	addDays(3, 2*SparklineDays)
	short := drv.Measure(t, listSQL("opportunity"), 1e308, 0, page)
	items, _, _ = s.List(context.Background(), "opportunity", page, "")
	json.Unmarshal(items[0], &first)
	if len(first.Sparkline) != SparklineDays || first.Sparkline[0] != segs*1000+SparklineDays || first.Sparkline[SparklineDays-1] != segs*1000+2*SparklineDays-1 {
		t.Fatalf("%d days: want the newest %d, oldest first: %v", 2*SparklineDays, SparklineDays, first.Sparkline)
	}
	addDays(2*SparklineDays, 4*SparklineDays)
	long := drv.Measure(t, listSQL("opportunity"), 1e308, 0, page)
	t.Logf("a page of %d segments with %d and %d snapshot days each: %+v, %+v", page, 2*SparklineDays, 4*SparklineDays, short, long)
	if long.Walked != 0 || long.Rows != page || long.VMSteps != short.VMSteps {
		t.Fatalf("the listing grew with the snapshots: %+v then %+v", short, long)
	}
}
