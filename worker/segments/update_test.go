//go:build !js

package segments

import (
	"context"
	"testing"
	"time"

	"storecrawl/worker/crawl"
	"storecrawl/worker/d1/d1test"
)

// TestUpdateReadsTheMarkedKeywordsNeighbourhoodOnly: segments of 500
// keywords, 40 keywords of one moved to another's apps. The run re-places
// them into the other segment without re-reading either segment's
// keywords: its rows read stay under the bound its constants give
// (docs/markets.md), far under the tops of the two segments, and it writes
// the two segments, the 40 keywords and their marks. Ids are kept and each
// segment's keyword count is its keywords'.
func TestUpdateReadsTheMarkedKeywordsNeighbourhoodOnly(t *testing.T) {
	db, drv := d1test.New(t)
	st := synth(7, synthShape{niches: 8, keywordsPerNiche: 500, appsPerNiche: 300, noise: 0.05})
	loadSynth(t, drv, st)
	s := Store{DB: db}
	now := time.Date(2026, 11, 23, 6, 0, 0, 0, time.UTC)
	run(t, drv, "first full pass", func(ctx context.Context) (RunResult, error) { return s.Full(ctx, now) })
	segOf := func(k string) int64 {
		return drv.Int(t, `SELECT COALESCE(segment_id, 0) FROM segment_keywords WHERE keyword = ?`, k)
	}
	from, to := segOf(st.keywords[0]), segOf(st.keywords[500])
	if from == 0 || to == 0 || from == to {
		t.Fatalf("niches 0 and 1 in segments %d and %d", from, to)
	}
	segsBefore := drv.Int(t, `SELECT count(*) FROM segments WHERE retired_at IS NULL`)
	// Keywords 0–39 of niche 0 now rank niche 1's keyword 500+k's apps.
	const moved = 40
	var kws []string
	for k := range moved {
		kw := st.keywords[k]
		drv.Exec(t, `DELETE FROM crawl_rankings WHERE keyword = ?`, kw)
		drv.Exec(t, `INSERT INTO crawl_rankings (keyword, track_id, rank, seen_at) SELECT ?1, track_id, rank, seen_at FROM crawl_rankings WHERE keyword = ?2`, kw, st.keywords[500+k])
		kws = append(kws, kw)
	}
	if err := s.Mark(context.Background(), kws, now); err != nil {
		t.Fatal(err)
	}
	r, c, written := run(t, drv, "update", func(ctx context.Context) (RunResult, error) { return s.Update(ctx, now.Add(30*time.Minute)) })
	in := 0
	for _, kw := range kws {
		if segOf(kw) == to {
			in++
		}
	}
	if in < moved*9/10 || r.Keywords != moved || r.Segments != 2 || r.New != 0 || r.Retired != 0 {
		t.Fatalf("%d of %d moved keywords in segment %d; %+v", in, moved, to, r)
	}
	if n := drv.Int(t, `SELECT count(*) FROM segments WHERE retired_at IS NULL`); n != segsBefore {
		t.Fatalf("%d live segments, were %d", n, segsBefore)
	}
	if bad := drv.Int(t, `SELECT count(*) FROM segments s WHERE retired_at IS NULL
  AND keyword_count != (SELECT count(*) FROM segment_keywords k WHERE k.segment_id = s.id)`); bad != 0 {
		t.Fatalf("%d segments whose keyword count is not their keywords'", bad)
	}
	// The bound: a marked keyword's rankings, its top apps' keywords, its
	// neighbours' segments, its row and mark; two segments and their apps.
	bound := int64(moved)*int64(crawl.KeywordSearchSize+TopN*(MaxAppKeywords+1)+MaxNeighbours+2) + 2*(1+MaxSegmentApps+TopN*moved)
	segmentTops := int64(1000 * TopN)
	t.Logf("update: %d rows read (bound %d; the two segments' tops alone %d), %d written", c.RowsRead, bound, segmentTops, written)
	if c.RowsRead > bound || c.RowsRead >= segmentTops {
		t.Fatalf("update read %d rows, bound %d, the segments' tops %d", c.RowsRead, bound, segmentTops)
	}
	if written != 2+2*moved {
		t.Fatalf("update wrote %d rows, want 2 segments, %d keywords and their marks", written, moved)
	}
}
