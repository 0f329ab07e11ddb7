//go:build unix

package main

import (
	"math"
	"testing"
)

// The shape at a small size keeps the design's shares exactly.
func TestShapeOfKeepsTheDesignShares(t *testing.T) {
	s := ShapeOf(11_000)
	want := ScaleShape{Apps: 11_000, Enriched: 9_350, Queued: 1_210, NotFound: 220, Failed: 220,
		Developers: 2_750, Keywords: 1_000, Rankings: 16_400, Clusters: 900, Members: 16_200}
	if s != want {
		t.Fatalf("ShapeOf(11000) = %+v, want %+v", s, want)
	}
	if d := ShapeOf(designApps); d.Keywords != designKeywords || d.Clusters != designClusters || d.Rankings != 1_640_000 || d.Developers != 275_000 {
		t.Fatalf("design shape %+v", d)
	}
}

// Every cluster member is an enriched app inside the catalogue.
func TestMembersAreEnrichedApps(t *testing.T) {
	const n = 5_000
	s := ShapeOf(n)
	for k := range s.Clusters {
		for j := range membersPerCluster {
			off := memberOffset(n, k, j)
			if off < 1 || off > n || appState(off) != stateEnriched {
				t.Fatalf("cluster %d member %d: offset %d (state %d)", k, j, off, appState(off))
			}
		}
	}
}

func TestOverageIsPastTheInclusionOnly(t *testing.T) {
	if got := D1RowsWritten.Overage(49e6); got != 0 {
		t.Fatalf("under the inclusion: %v", got)
	}
	if got := D1RowsWritten.Overage(350e6); math.Abs(got-300) > 1e-9 {
		t.Fatalf("350M rows written: $%v, want $300", got)
	}
	if got := D1RowsRead.Overage(26e9); math.Abs(got-1) > 1e-9 {
		t.Fatalf("26B rows read: $%v, want $1", got)
	}
	if got := D1StorageGB.Overage(7); math.Abs(got-1.5) > 1e-9 {
		t.Fatalf("7 GB: $%v, want $1.50", got)
	}
}

// The month multiplies per-run costs by runs a day and 30 days, bills
// each meter past its inclusion and names the biggest writer.
func TestMonthOf(t *testing.T) {
	ops := []ScaleOp{
		{Name: "cycle", RunsPerDay: 288, RowsRead: 1000, RowsWritten: 100, DORequests: 2, QueueMessages: 1, KVWrites: 1},
		{Name: "enrich", RunsPerDay: 10_000, RowsRead: 200, RowsWritten: 200, R2ClassA: 1},
	}
	m := MonthOf(ops, 4e9, 50e6, 1000)
	if want := (288*1000 + 10_000*200) * 30.0; m.D1RowsRead != want {
		t.Fatalf("rows read %v, want %v", m.D1RowsRead, want)
	}
	if want := (288*100 + 10_000*200) * 30.0; m.D1RowsWritten != want {
		t.Fatalf("rows written %v, want %v", m.D1RowsWritten, want)
	}
	if m.QueueOps != 288*30*3 || m.DORequests != 288*2*30 || m.R2ClassA != 300_000 || m.KVWrites != 288*30 || m.WorkersRequests != 30_000 {
		t.Fatalf("usage %+v", m)
	}
	if m.D1BytesAfterYr != 4e9+365*50e6 {
		t.Fatalf("after a year %v", m.D1BytesAfterYr)
	}
	// 60.864M written: $10.864 over; storage mean 4.75 GB: none.
	if want := math.Round((m.D1RowsWritten-50e6)/1e6*100) / 100; m.OverageUSD != want {
		t.Fatalf("overage $%v, want $%v (%v)", m.OverageUSD, want, m.Overage)
	}
	if m.TotalUSD != PlanBaseUSD+m.OverageUSD || m.TopWriter != "enrich" || m.TopReader != "enrich" {
		t.Fatalf("total %v, top writer %q reader %q", m.TotalUSD, m.TopWriter, m.TopReader)
	}
}
