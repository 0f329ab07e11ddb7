//go:build unix

package main

import (
	"encoding/json"
	"io"
	"testing"
)

// TestSegmentsBenchSmallWorld runs the segments bench on a world of 1,100
// apps (11 hidden niches, 100 keywords): the segments' tasks run on the
// searches, the figures come out and the JSON carries the contract's keys.
func TestSegmentsBenchSmallWorld(t *testing.T) {
	rep, err := benchSegments(1_100, 1, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", rep)
	if rep.Keywords != 100 || rep.Niches != 11 {
		t.Fatalf("%d keywords, %d niches: want the plan's share (100) of 1,100 apps in 11 niches", rep.Keywords, rep.Niches)
	}
	if rep.Segments < 2 || rep.ARI <= 0 || rep.ARI > 1 || rep.Coverage <= 0 || rep.Coverage > 1 || rep.RankedApps == 0 {
		t.Fatalf("segments %d, ari %.3f, coverage %.3f of %d apps", rep.Segments, rep.ARI, rep.Coverage, rep.RankedApps)
	}
	// The day's new keywords were never partitioned: each is marked.
	if d := rep.DayPasses; d.NewKeywords == 0 || d.MarkRows < int64(d.NewKeywords) || d.Updates != 48 {
		t.Fatalf("day %+v", d)
	}
	if rep.FirstPass.RowsWritten == 0 || rep.RowsWrittenDay == 0 || rep.RowsReadDay == 0 {
		t.Fatalf("rows: first pass %d written, a day %d written, %d read", rep.FirstPass.RowsWritten, rep.RowsWrittenDay, rep.RowsReadDay)
	}
	b, _ := json.Marshal(rep)
	var m map[string]any
	json.Unmarshal(b, &m)
	for _, k := range []string{"ari", "segments", "coverage", "rows_written_day", "peak_memory_mb"} {
		if _, ok := m[k]; !ok {
			t.Errorf("JSON has no %q: %s", k, b)
		}
	}
}

// TestSegmentsBenchBulkLoadMatches: the first day's searches written by
// bulk statements give the segments the same keywords as the crawl's
// store does.
func TestSegmentsBenchBulkLoadMatches(t *testing.T) {
	segBulkLoad = true
	defer func() { segBulkLoad = false }()
	bulk, err := benchSegments(1_100, 1, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	segBulkLoad = false
	crawled, err := benchSegments(1_100, 1, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if bulk.FirstPass.Summary != crawled.FirstPass.Summary || bulk.Segments != crawled.Segments || bulk.RankedApps != crawled.RankedApps {
		t.Fatalf("bulk: %q, %d segments, %d ranked apps; crawl's store: %q, %d, %d",
			bulk.FirstPass.Summary, bulk.Segments, bulk.RankedApps, crawled.FirstPass.Summary, crawled.Segments, crawled.RankedApps)
	}
}
