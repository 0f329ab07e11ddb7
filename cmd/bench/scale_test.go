//go:build unix

package main

import (
	"math"
	"testing"
	"time"

	"storecrawl/worker"
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
	m := MonthOf(ops, Storage{Now: 4e9, PerDay: 50e6, AfterYear: 6e9}, 1000)
	if want := (288*1000 + 10_000*200) * 30.0; m.D1RowsRead != want {
		t.Fatalf("rows read %v, want %v", m.D1RowsRead, want)
	}
	if want := (288*100 + 10_000*200) * 30.0; m.D1RowsWritten != want {
		t.Fatalf("rows written %v, want %v", m.D1RowsWritten, want)
	}
	if m.QueueOps != 288*30*3 || m.DORequests != 288*2*30 || m.R2ClassA != 300_000 || m.KVWrites != 288*30 || m.WorkersRequests != 30_000 {
		t.Fatalf("usage %+v", m)
	}
	if m.D1BytesAfterYr != 6e9 || m.D1BytesNow != 4e9 {
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

// New-app operations follow the pace a month is billed at; the others
// keep their runs a day. The fill month crawls the catalogue once.
func TestWithNewAppsScalesOnlyNewAppOps(t *testing.T) {
	ops := []ScaleOp{{Name: "cycle", RunsPerDay: 288, RowsWritten: 10}, {Name: "new", PerNewApp: 1, RowsWritten: 5},
		{Name: "queue", PerNewApp: 2, RowsWritten: 1}}
	got := WithNewApps(ops, 1000)
	if got[0].RunsPerDay != 288 || got[1].RunsPerDay != 1000 || got[2].RunsPerDay != 2000 || ops[1].RunsPerDay != 0 {
		t.Fatalf("runs a day %v %v %v (input %v)", got[0].RunsPerDay, got[1].RunsPerDay, got[2].RunsPerDay, ops[1].RunsPerDay)
	}
	fill, steady, design := MonthPaces(1_100_000)
	if fill*daysPerMonth != 1_100_000+storeNewAppsPerDay*daysPerMonth || steady != storeNewAppsPerDay || design != 182_400 {
		t.Fatalf("paces %v %v %v", fill, steady, design)
	}
	m := MonthOf(got, Storage{}, 0)
	if want := (288*10 + 1000*5 + 2000*1) * 30.0; m.D1RowsWritten != want {
		t.Fatalf("rows written %v, want %v", m.D1RowsWritten, want)
	}
}

// The passes over the catalogue cover it within a day at the design's
// size, at their registered cadences (the cover days the scale bench's
// table prints for them).
func TestPassesCoverTheDesignCatalogueWithinADay(t *testing.T) {
	every := map[string]time.Duration{}
	for _, task := range worker.SchedulerRegistry(worker.DeclaredTasks()) {
		every[task.Name] = task.Every
	}
	for name, runs := range coverRuns(ShapeOf(designApps)) {
		days := runs / (24 * float64(time.Hour) / float64(every[name]))
		t.Logf("%s: %.2f cover days at %d apps", name, days, designApps)
		if name != "catalogue-sweep" && days > 1 { // catalogue-sweep: refresh scheduling's own bounds
			t.Errorf("%s covers %d apps in %.2f days", name, designApps, days)
		}
	}
}

// Two mixed windows give each operation's own cost; a window 2 that
// enriched new apps too does not charge them to refreshes.
func TestSplitCostsSolvesMixedWindows(t *testing.T) {
	// 6 rows a new app, 0.5 a refresh.
	n, r, ok := SplitCosts(300, 250, 300*6+250*0.5, 40, 800, 40*6+800*0.5)
	if !ok || math.Abs(n-6) > 1e-9 || math.Abs(r-0.5) > 1e-9 {
		t.Fatalf("split %v %v %v", n, r, ok)
	}
	// Window 2 pure refreshes: the usual subtraction.
	n, r, ok = SplitCosts(300, 250, 1925, 0, 800, 400)
	if !ok || math.Abs(n-6) > 1e-9 || math.Abs(r-0.5) > 1e-9 {
		t.Fatalf("pure window 2: %v %v", n, r)
	}
	if _, _, ok := SplitCosts(10, 20, 1, 20, 40, 2); ok {
		t.Fatal("proportional windows cannot be told apart")
	}
}

// R2 Class A is a put a tick's pages, not a put a page: an app's pages
// over the pages a put carried; with no put counted, a put a page.
func TestClassAPerAppIsAPutATick(t *testing.T) {
	// 1.06 pages a new app; window 1 fetched 636 pages in 24 puts (ticks
	// of ~26 pages): 0.04 puts a new app, 1.1M new apps ≈ 44k puts.
	if got := ClassAPerApp(1.06, 636, 24); math.Abs(got-0.04) > 1e-9 {
		t.Fatalf("per new app %v, want 0.04", got)
	}
	if got := ClassAPerApp(1.06, 636, 0); got != 1.06 {
		t.Fatalf("no puts counted: %v, want a put a page", got)
	}
	if got := ClassAPerApp(0, 0, 0); got != 0 {
		t.Fatalf("no pages: %v", got)
	}
	ops := []ScaleOp{{Name: "enrichment: new app", PerNewApp: 1, R2ClassA: ClassAPerApp(1.06, 636, 24)}}
	if m := MonthOf(WithNewApps(ops, 37_767), Storage{}, 0); math.Abs(m.R2ClassA-37_767*30*0.04) > 1e-6 || m.Overage[R2ClassA.Name] != 0 {
		t.Fatalf("fill month R2 Class A %v (overage %v)", m.R2ClassA, m.Overage)
	}
}
