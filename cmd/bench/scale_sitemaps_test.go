//go:build unix

package main

import (
	"math"
	"testing"

	"storecrawl/worker/crawl"
)

// TestSitemapDayBillsTheSchedule: a day of sitemap-scan is the cursors of
// every run, the new apps' index hourly and the full index's ids once a
// week, at the rows a listed id the full index's runs measured; not every
// run a full one.
func TestSitemapDayBillsTheSchedule(t *testing.T) {
	idx, files, ids, ok := ParseSitemapSummary(crawl.SitemapResult{Index: "app", Files: 2, IDs: 100000, NewApps: 3, Pass: "x"}.Summary())
	if !ok || idx != "app" || files != 2 || ids != 100000 {
		t.Fatalf("summary: %q %d %d %v", idx, files, ids, ok)
	}
	if _, _, _, ok := ParseSitemapSummary(crawl.SitemapResult{}.Summary()); ok {
		t.Fatal("a resting run parsed as a read")
	}
	runs := []SitemapRun{
		{Index: "new-app", Files: 0, IDs: 0, Read: 2, Written: 1},
		{Index: "app", Files: 2, IDs: 100000, Read: 100002, Written: 2},
	}
	read, written, ok := SitemapDay(runs, 144, 1_100_000, 1100)
	if !ok {
		t.Fatal("no full-index run found")
	}
	// 144 runs' cursors, 24 reads of a week's 7,700 new apps, 1.1M ids a
	// week: one row an id.
	want := 144*2 + 24*7700 + 1_100_000/7.0
	if math.Abs(read-want) > 1 {
		t.Fatalf("read %.0f a day, want %.0f", read, want)
	}
	if wantW := 24 + 22/7.0; math.Abs(written-wantW) > 0.01 {
		t.Fatalf("written %.2f a day, want %.2f", written, wantW)
	}
	// The runs measured: a full run each time would bill 144 × 100,002.
	if read > 144*100002/10 {
		t.Fatalf("read %.0f: billed as full runs", read)
	}
	if _, _, ok := SitemapDay(runs[:1], 144, 1_100_000, 1100); ok {
		t.Fatal("billed without a full-index run")
	}
}

// TestCycleAtDueBillsTheSteadyRate: six cycles that searched 486
// keywords (a slow build left more due than a steady cycle's 37.9) bill
// a cycle at 37.9 searches, not at their mean of 81.
func TestCycleAtDueBillsTheSteadyRate(t *testing.T) {
	got := CycleAtDue(16572, 0, 6, 486, 37.9)
	if want := 16572.0 / 486 * 37.9; math.Abs(got-want) > 1e-9 {
		t.Fatalf("%v, want %v", got, want)
	}
	// Two idle cycles of 2 rows: their cost is a cycle's floor.
	if got := CycleAtDue(9380, 2, 6, 352, 37.9); math.Abs(got-(2+(9380-12)/352.0*37.9)) > 1e-9 {
		t.Fatalf("with idle cycles: %v", got)
	}
	if got := CycleAtDue(12, 2, 6, 0, 37.9); got != 2 {
		t.Fatalf("no search: %v", got)
	}
}
