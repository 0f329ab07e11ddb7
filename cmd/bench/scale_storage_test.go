//go:build unix

package main

import (
	"context"
	"database/sql"
	"math"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*max(1, math.Abs(b)) }

// A refresh sees at most one change an interval: a tier refreshed far more
// often than its apps change writes a row a change; one refreshed monthly
// writes at most a row a month an app.
func TestChangeRowsPerDay(t *testing.T) {
	fast := ChangeRowsPerDay([]TierApps{{N: 1000, IntervalDays: 0.001}}, 0.1)
	if math.Abs(fast-100) > 0.01 {
		t.Fatalf("refreshed often: %v rows a day, want ~100 (a row a change)", fast)
	}
	slow := ChangeRowsPerDay([]TierApps{{N: 3000, IntervalDays: 30}}, 0.1)
	if want := 3000 * (1 - math.Exp(-3)) / 30; !near(slow, want) || slow > 100 {
		t.Fatalf("monthly: %v rows a day, want %v (under a row a month an app)", slow, want)
	}
	if ChangeRowsPerDay([]TierApps{{N: 10, IntervalDays: 0}}, 1) != 0 {
		t.Fatal("a tier without an interval refreshes nothing")
	}
	// Each app's first change writes its first value too, once.
	if got := FirstChangeRows(1000, 0.1, 365); !near(got, 1000*(1-math.Exp(-36.5))) {
		t.Fatalf("first changes %v", got)
	}
	// Re-searches: a result's rank moves when its ratings moved since.
	if got, want := ResultRankRowsPerDay([]TierApps{{N: 70, IntervalDays: 7}}, 50, 0.1), 10*50*(1-math.Exp(-0.7)); !near(got, want) {
		t.Fatalf("rank rows %v, want %v", got, want)
	}
}

// A pruned table holds its retention's growth at most; the others grow
// every day of the year.
func TestTableYearAfter(t *testing.T) {
	capped := TableYear{BytesNow: 100, BytesPerDay: 10, CapDays: 90}
	open := TableYear{BytesNow: 100, BytesPerDay: 10}
	if capped.After(365) != 100+900 || open.After(365) != 100+3650 || capped.After(30) != 400 {
		t.Fatalf("after: capped %v, open %v, capped a month %v", capped.After(365), open.After(365), capped.After(30))
	}
	total, by := StorageAfter([]TableYear{capped, {Table: "b", BytesNow: 5000}, open}, 365)
	if total != 1000+5000+3750 || by[0].Table != "b" || by[2].CapDays != 90 {
		t.Fatalf("total %v, order %+v", total, by)
	}
	st := StorageOf(6000, []TableYear{capped, open})
	if st.Now != 6000 || st.PerDay != 20 || st.AfterYear != 6000+900+3650 {
		t.Fatalf("storage %+v", st)
	}
}

// Each table is projected on its own basis: the catalogue's tables by the
// bytes an app, the history tables by the change rate and the sample's
// bytes a row up to their retention, the ledger's at the bench's pace up
// to its retention, the fixed ones not at all.
func TestProjectTables(t *testing.T) {
	in := StorageInputs{Apps: 1000, Enriched: 800,
		Now: Sizes{"app_registry": {Bytes: 2e6, Rows: 1000}, "app_snapshots": {}, "keyword_rank_history": {}, "facts": {Bytes: 1000},
			"sweep_cursors": {Bytes: 4096}, "app_reviews": {}, "segment_snapshots": {Bytes: 9000, Rows: 30}, "segment_focus_apps": {Bytes: 2000}},
		Run: Sizes{"facts": {Bytes: 5000, Rows: 50}, "sweep_cursors": {Bytes: 4096}, "segment_snapshots": {Bytes: 3000, Rows: 10},
			"segment_focus_apps": {Bytes: 100}}, MeasuredDays: 0.01,
		Sample:        Sizes{"app_snapshots": {Bytes: 8000, Rows: 100}, "keyword_rank_history": {Bytes: 4000, Rows: 100}},
		Reviews:       TableSize{Bytes: 7000, Rows: 10},
		NewAppsPerDay: 10, RefreshTiers: []TierApps{{N: 800, IntervalDays: 1}}, KeywordTiers: []TierApps{{N: 100, IntervalDays: 7}},
		ResultsPerSearch: 50, ReviewFetchesPerDay: 20, ReviewsKeptDays: 20, RatingDays: 400, RankDays: 90, FactsDays: 30,
		SnapshotDays: 90, Rates: DefaultRates()}
	by := map[string]TableYear{}
	for _, ty := range ProjectTables(in) {
		by[ty.Table] = ty
	}
	if len(by) != len(in.Now) {
		t.Fatalf("tables %v", by)
	}
	if got := by["app_registry"]; got.BytesPerDay != 2e6/1000*10 || got.CapDays != 0 {
		t.Fatalf("app_registry %+v", got)
	}
	r := appChangesPerAppDay
	wantSnap := (800*(1-math.Exp(-r)) + 800*(1-math.Exp(-r*365))/365) * 80
	if got := by["app_snapshots"]; !near(got.BytesPerDay, wantSnap) || got.CapDays != 400 {
		t.Fatalf("app_snapshots %+v, want %v a day", got, wantSnap)
	}
	if got := by["keyword_rank_history"]; !near(got.BytesPerDay, 100.0/7*50*(1-math.Exp(-7*r))*40) || got.CapDays != 90 {
		t.Fatalf("keyword_rank_history %+v", got)
	}
	if got := by["facts"]; got.BytesPerDay != 5000/0.01 || got.CapDays != 30 {
		t.Fatalf("facts %+v", got)
	}
	if got := by["app_reviews"]; got.BytesPerDay != 20*newReviewsPerFetch*700 || got.CapDays != 20 {
		t.Fatalf("app_reviews %+v", got)
	}
	if got := by["sweep_cursors"]; got.BytesPerDay != 0 || got.BytesNow != 4096 {
		t.Fatalf("sweep_cursors %+v", got)
	}
	// The daily pass's snapshots: the run's growth is one day's, not
	// scaled by the run's wall time, kept for their retention.
	if got := by["segment_snapshots"]; got.BytesPerDay != 3000 || got.RowsPerDay != 10 || got.CapDays != 90 {
		t.Fatalf("segment_snapshots %+v", got)
	}
	if got := by["segment_focus_apps"]; got.BytesPerDay != 0 {
		t.Fatalf("segment_focus_apps %+v", got)
	}
}

// A table's size holds its indexes' pages, and its rows are its own
// b-tree's leaf cells, for a rowid table and a WITHOUT ROWID one alike.
func TestReadSizesChargesIndexesToTheirTable(t *testing.T) {
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	ctx := context.Background()
	for _, q := range []string{
		`CREATE TABLE a (id INTEGER PRIMARY KEY, name TEXT)`,
		`CREATE TABLE b (k TEXT PRIMARY KEY, v INTEGER) WITHOUT ROWID`,
		`WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < 5000) INSERT INTO a SELECT i, printf('name %d', i) FROM s`,
		`INSERT INTO b SELECT name, id FROM a`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	before, err := readSizes(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `CREATE INDEX a_name ON a (name)`); err != nil {
		t.Fatal(err)
	}
	after, err := readSizes(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if before["a"].Rows != 5000 || before["b"].Rows != 5000 || after["a"].Rows != 5000 {
		t.Fatalf("rows: before %+v, after %+v", before, after)
	}
	if after["a"].Bytes <= before["a"].Bytes || after["b"] != before["b"] || len(after) != 2 {
		t.Fatalf("the index's pages: before %+v, after %+v", before, after)
	}
	// Its own b-tree's pages and payload leave the index out: a byte more
	// a row costs its pages a payload byte.
	if a := after["a"]; a.Tree != before["a"].Tree || a.Tree >= a.Bytes || a.Payload <= 5000*6 || a.Payload > a.Tree {
		t.Fatalf("tree and payload: before %+v, after %+v", before["a"], a)
	}
}

// At real text sizes an enriched app_registry row and a version row that
// keeps notes gain the real texts over the simulated ones, at the table's
// pages a payload byte; the catalogue's size now grows by the apps' texts,
// new apps bring them, and the total counts them once.
func TestProjectTablesAtRealText(t *testing.T) {
	text := TextSizing{Real: TextSizes{Description: 1200, DescriptionMax: 2000, ReleaseNotes: 200, VersionNotes: 300, Languages: 60},
		Sim: TextSizes{Description: 400, ReleaseNotes: 50, VersionNotes: 60, Languages: 20}, RegistryPerByte: 1.25, HistoryPerByte: 1.5,
		VersionNotesShare: 0.5}
	if d := text.RegistryRowDelta(); d != (800+150+40)*1.25 {
		t.Fatalf("registry row delta %v", d)
	}
	if d := text.VersionRowDelta(); d != 0.5*240*1.5 {
		t.Fatalf("version row delta %v", d)
	}
	if s := text.AsSimulated(); s.RegistryRowDelta() != 0 || s.VersionRowDelta() != 0 {
		t.Fatalf("as simulated %+v", s)
	}
	if d := text.ScaledReal(2).RegistryRowDelta(); d != (2000-400+400-50+120-20)*1.25 { // the description at its longest
		t.Fatalf("2x %v", d)
	}
	in := StorageInputs{Apps: 1000, Enriched: 800, Now: Sizes{"app_registry": {Bytes: 2e6, Rows: 1000}, "app_version_history": {}},
		Sample:        Sizes{"app_version_history": {Bytes: 10000, Rows: 100}},
		NewAppsPerDay: 10, RefreshTiers: []TierApps{{N: 800, IntervalDays: 1}}, ChangeDays: 730, Rates: DefaultRates()}
	sim := map[string]TableYear{}
	for _, ty := range ProjectTables(in) {
		sim[ty.Table] = ty
	}
	in.Text = text
	real := map[string]TableYear{}
	for _, ty := range ProjectTables(in) {
		real[ty.Table] = ty
	}
	reg, regSim := real["app_registry"], sim["app_registry"]
	gain := 800 * text.RegistryRowDelta()
	if reg.TextBytesNow != gain || reg.BytesNow != 2e6+gain || regSim.TextBytesNow != 0 || !near(reg.BytesPerDay, (2e6+gain)/1000*10) {
		t.Fatalf("app_registry %+v, as simulated %+v", reg, regSim)
	}
	v, vSim := real["app_version_history"], sim["app_version_history"]
	if v.RowsPerDay != vSim.RowsPerDay || !near(v.BytesPerDay, v.RowsPerDay*(100+text.VersionRowDelta())) || v.CapDays != 730 {
		t.Fatalf("app_version_history %+v, as simulated %+v", v, vSim)
	}
	stReal, stSim := StorageOf(5e6, []TableYear{reg, v}), StorageOf(5e6, []TableYear{regSim, vSim})
	if stReal.Now != 5e6+gain || !near(stReal.AfterYear-stSim.AfterYear, gain+(reg.BytesPerDay-regSim.BytesPerDay)*365+(v.BytesPerDay-vSim.BytesPerDay)*365) {
		t.Fatalf("storage %+v, as simulated %+v", stReal, stSim)
	}
}
