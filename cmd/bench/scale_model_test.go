//go:build unix

package main

import (
	"context"
	"math"
	"storecrawl/worker/crawl"
	"testing"
	"time"

	"storecrawl/worker/catalogue"
	"storecrawl/worker/d1/d1test"
	"storecrawl/worker/events"
	"storecrawl/worker/pagebatch"
)

// The controller's Refreshed counts every stored refresh, the unchanged
// ones among them: a window's refreshes are Refreshed, and the split of
// two windows gives a refresh its own cost only when counted so.
func TestRefreshesCountUnchangedOnce(t *testing.T) {
	// 6 rows a new app, 0.5 a refresh; half the refreshes unchanged.
	w1 := enrichWindow{completed: 300, refreshed: 250, unchanged: 125, written: 300*6 + 250*0.5}
	w2 := enrichWindow{completed: 40, refreshed: 800, unchanged: 400, written: 40*6 + 800*0.5}
	if w1.refreshes() != 250 || w2.refreshes() != 800 {
		t.Fatalf("refreshes %v %v, want 250 and 800", w1.refreshes(), w2.refreshes())
	}
	n, r, ok := SplitCosts(w1.completed, w1.refreshes(), w1.written, w2.completed, w2.refreshes(), w2.written)
	if !ok || math.Abs(n-6) > 1e-9 || math.Abs(r-0.5) > 1e-9 {
		t.Fatalf("split %v %v %v, want 6 and 0.5", n, r, ok)
	}
}

// Two windows of the controller: window 1 at about four times the fill
// month's pace (17 new apps a tick), window 2 refreshes alone. Both send
// one facts message a tick; window 1 one app-enriched message a tick.
func scaleWindows() (w1, w2 enrichWindow) {
	w1 = enrichWindow{mins: 6, ticks: 36, completed: 36 * 17, refreshed: 300, pages: 36 * 17, puts: 36, limiterCalls: 12,
		tickMs: 36 * 1500, tickSamples: 36,
		q0: queueSum{batches: 10, messages: 100, facts: 50, read: 1000, written: 500},
		q1: queueSum{batches: 10 + 36, messages: 100 + 72, facts: 50 + 36, read: 1000 + 36*17*7 + 36*2, written: 500 + 36*17*1.8 + 36*1}}
	w2 = enrichWindow{mins: 6, ticks: 36, refreshed: 3000, unchanged: 3000, limiterCalls: 6, tickMs: 36 * 500, tickSamples: 36,
		q0: w1.q1,
		q1: queueSum{batches: w1.q1.batches + 36, messages: w1.q1.messages + 36, facts: w1.q1.facts + 36,
			read: w1.q1.read + 36*2, written: w1.q1.written + 36*1}}
	return w1, w2
}

// A tick's cost comes from every window, window 2's queue traffic
// included, and the queue consumer's rows split between a tick's facts
// and a new app's app-enriched message.
func TestTickCostCountsEveryWindow(t *testing.T) {
	w1, w2 := scaleWindows()
	tc, perNew := TickCostOf(w1, w2)
	if tc.PerDay != 72.0/12*1440 || tc.FactsMessages != 1 || tc.QueueBatches != 1 {
		t.Fatalf("ticks %v a day, %v facts and %v batches a tick, want 8640, 1, 1", tc.PerDay, tc.FactsMessages, tc.QueueBatches)
	}
	if tc.LimiterCalls != 18.0/72 || tc.PutsPerPageTick != 1 || tc.DurationMs != 1000 {
		t.Fatalf("tick %+v", tc)
	}
	if math.Abs(perNew.read-7) > 1e-9 || math.Abs(perNew.written-1.8) > 1e-9 ||
		math.Abs(tc.QueueRowsRead-2) > 1e-9 || math.Abs(tc.QueueRowsWritten-1) > 1e-9 {
		t.Fatalf("queue rows: a new app %+v, a tick %v/%v", perNew, tc.QueueRowsRead, tc.QueueRowsWritten)
	}
}

// app-enriched messages: one per events.MaxTrackIDs apps, none for a
// tick that enriched none (Poisson apps a tick).
func TestAnnouncedMessagesPerTick(t *testing.T) {
	if got := AnnouncedMessagesPerTick(0, 8640); got != 0 {
		t.Fatalf("no apps: %v messages", got)
	}
	// Many apps a minute: nearly every message full (apps/50), far under
	// a message a tick.
	if got, full := AnnouncedMessagesPerTick(100_000, 8640), 100_000.0/8640/events.MaxTrackIDs; got < full || got > full+1/(8640.0/1440) {
		t.Errorf("100,000 apps a day: %v messages a tick, want about %v", got, full)
	}
	// Few apps: at most one message a minute of ticks (AnnounceWithin),
	// and at most one an app.
	perMinute := 8640.0 / 1440
	if got := AnnouncedMessagesPerTick(1_000, 8640); got > 1/perMinute || got > 1_000.0/8640 || got <= 0 {
		t.Errorf("1,000 apps a day: %v messages a tick, want at most one a minute (%v)", got, 1/perMinute)
	}
	if got := AnnouncedMessagesPerTick(50_000, 8640); got > 50_000.0/8640/events.MaxTrackIDs+1/perMinute {
		t.Errorf("50,000 apps a day: %v messages a tick, over the full ones and one a minute", got)
	}
}

func testModel() Model {
	w1, w2 := scaleWindows()
	tc, perNew := TickCostOf(w1, w2)
	return Model{
		Ops: []ScaleOp{
			{Name: "enrichment: new app", PerNewApp: 1, RowsWritten: 6},
			{Name: "queue consumer: new apps", PerNewApp: 1, RowsRead: perNew.read, RowsWritten: perNew.written},
			{Name: "crawl: a new keyword", PerNewKeyword: 1, RowsWritten: 110},
			{Name: "reviews-refresh", RunsPerDay: 144, WallMs: 100, DOActiveMs: 100, DORequests: 2},
		},
		Tick: tc, PagesPerNewApp: 1,
		Storage: StorageInputs{Apps: 1_100_000, Enriched: 935_000, Now: Sizes{"keyword_rank_history": {}, "app_snapshots": {}},
			Sample:       Sizes{"keyword_rank_history": {Bytes: 1900, Rows: 100}, "app_snapshots": {Bytes: 3400, Rows: 100}},
			RefreshTiers: []TierApps{{N: 935_000, IntervalDays: 1}}, KeywordTiers: []TierApps{{N: 100_000, IntervalDays: 7}},
			ResultsPerSearch: 50, RatingDays: 400, RankDays: 90},
	}
}

// Per-tick costs are billed as ticks a day × the cost of a tick, not per
// new app of a window that ran at another pace: a fill month of 37,767
// new apps a day at 8,640 ticks sends the windows' facts messages a tick
// and the app-enriched ones the controller's rule gives, puts a tick's
// pages once a tick, and takes a tick's acquires. Window 1's 36 ticks for
// 612 new apps, per new app, would bill about a quarter of the puts.
func TestTickCostsAreBilledPerTick(t *testing.T) {
	m := testModel()
	r := DefaultRates()
	r.ChangesPerAppDay = 0 // new apps alone
	fill := m.Month(37_767, r, false)
	ticks := 8640.0
	msgs := 1 + AnnouncedMessagesPerTick(37_767, ticks)
	if want := ticks * msgs * QueueOpsPerEvent * daysPerMonth; math.Abs(fill.QueueOps-want) > 1 {
		t.Fatalf("queue operations %v, want %v", fill.QueueOps, want)
	}
	if fill.QueueOps < ticks*daysPerMonth*QueueOpsPerEvent {
		t.Fatalf("queue operations %v: under one facts message a tick", fill.QueueOps)
	}
	// The old arithmetic: window 1's messages, puts and acquires per new app.
	w1, _ := scaleWindows()
	perNew := 37_767 * daysPerMonth / w1.completed
	puts := ticks * (1 - math.Exp(-37_767/ticks)) * daysPerMonth
	if math.Abs(fill.R2ClassA-puts) > 1 || fill.R2ClassA < 3*w1.puts*perNew {
		t.Fatalf("R2 Class A %v, want %v (per new app: %v)", fill.R2ClassA, puts, w1.puts*perNew)
	}
	do := (ticks*(1+18.0/72) + 144*2) * daysPerMonth
	if math.Abs(fill.DORequests-do) > 1 {
		t.Fatalf("Durable Object requests %v, want %v", fill.DORequests, do)
	}
}

// Durable Object duration: 128 MB × the time the objects are active,
// the controller's ticks at their wall time, a task's run at its wall
// time, and each request DORequestMs.
func TestDODurationIsTicksAndTasksWallTime(t *testing.T) {
	m := testModel()
	r := DefaultRates()
	month := m.Month(37_767, r, false)
	tickS := 8640 * (1000 + (1+18.0/72)*r.DORequestMs) / 1000
	taskS := 144 * (100 + 2*r.DORequestMs) / 1000
	if want := (tickS + taskS) * doGB * daysPerMonth; math.Abs(month.DOGBs-want) > 1e-6 {
		t.Fatalf("GB-s %v, want %v", month.DOGBs, want)
	}
	if month.Overage[DODurationGBs.Name] != DODurationGBs.Overage(month.DOGBs) {
		t.Fatalf("GB-s not billed: %v", month.Overage)
	}
	// An object active all month would be 128 MB × 30 days.
	if always := 86400.0 * doGB * daysPerMonth; month.DOGBs >= always {
		t.Fatalf("GB-s %v beyond an object always active (%v)", month.DOGBs, always)
	}
}

// R2 keeps each page the bucket's days (pagebatch.KeptDays): the pages a
// day (new apps' and the refreshes' that saw a change) × those days × a
// page's bytes (the real captures' members), billed past 10 GB.
func TestR2StorageIsTheBucketsDaysOfPages(t *testing.T) {
	if got := R2StoredBytes(1000, 20_000, 30); got != 6e8 {
		t.Fatalf("stored %v", got)
	}
	m := testModel()
	r := DefaultRates()
	if r.PageBytes < 5_000 || r.PageBytes > 30_000 {
		t.Fatalf("a real page's member: %v bytes", r.PageBytes)
	}
	month := m.Month(37_767, r, false)
	pages := 37_767 + month.SeenChanges
	if want := pages * pagebatch.KeptDays * r.PageBytes / 1e9; math.Abs(month.R2StorageGB-want) > 1e-9 || month.SeenChanges <= 0 {
		t.Fatalf("R2 %v GB, want %v (changes seen %v)", month.R2StorageGB, want, month.SeenChanges)
	}
	if want := R2StorageGB.Overage(month.R2StorageGB); month.Overage[R2StorageGB.Name] != want {
		t.Fatalf("R2 storage overage %v, want %v", month.Overage[R2StorageGB.Name], want)
	}
}

// The long-run steady month bills the pruners' deletes: each pruned
// table deletes a day what it adds a day, e.g. keyword ranks past 90 days.
func TestSteadyMonthBillsPruneDeletes(t *testing.T) {
	m := testModel()
	r := DefaultRates()
	plain, steady := m.Month(1100, r, false), m.Month(1100, r, true)
	rank := ResultRankRowsPerDay(m.Storage.KeywordTiers, 50, r.ChangesPerAppDay)
	snap := ChangeRowsPerDay(m.Storage.RefreshTiers, r.ChangesPerAppDay) + FirstChangeRows(935_000, r.ChangesPerAppDay, storageDays)/storageDays
	if want := (rank + snap) * daysPerMonth; math.Abs(steady.D1RowsWritten-plain.D1RowsWritten-want) > 1 || steady.PruneRows != rank+snap {
		t.Fatalf("prune deletes %v a month, want %v", steady.D1RowsWritten-plain.D1RowsWritten, want)
	}
	t.Logf("keyword ranks pruned: %.1fM rows a month", rank*daysPerMonth/1e6)
}

// history-prune writes a row a row it deletes (the history tables have no
// secondary index), and once a table holds its retention it deletes a day
// what a day adds: the product's own PruneRange, counted natively.
func TestPruneWritesARowARow(t *testing.T) {
	db, drv := d1test.New(t)
	ctx := context.Background()
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	const days = 200
	for d := days; d > 0; d-- {
		drv.Exec(t, `INSERT INTO keyword_rank_history (track_id, keyword_id, day, rank) VALUES (1, 7, ?, ?)`,
			catalogue.Day(now.Add(-time.Duration(d)*24*time.Hour)), d%10+1)
	}
	st := catalogue.D1Store{DB: db}
	before := drv.TotalChanges(t)
	n, err := st.PruneRange(ctx, 0, 10, now)
	if err != nil {
		t.Fatal(err)
	}
	retained := catalogue.RankHistoryRetention.Hours() / 24
	// Rows before the window go, but the one in effect when it opens.
	if want := int64(days - retained - 1); n != want || drv.TotalChanges(t)-before != n {
		t.Fatalf("pruned %d rows (%d changes), want %d", n, drv.TotalChanges(t)-before, want)
	}
	// A day later, a day's row more: the prune deletes one.
	drv.Exec(t, `INSERT INTO keyword_rank_history (track_id, keyword_id, day, rank) VALUES (1, 7, ?, 3)`, catalogue.Day(now))
	if n, err := st.PruneRange(ctx, 0, 10, now.Add(24*time.Hour)); err != nil || n != 1 {
		t.Fatalf("a day later: pruned %d (%v), want 1", n, err)
	}
	if pruneRowsPerRow != 1 {
		t.Fatalf("pruneRowsPerRow %v", pruneRowsPerRow)
	}
}

// A new app's keywords are run at the share the probe measured through
// the product's ranking fill (81 new keywords for 200 apps: 0.405), not
// the design's 100,000 keywords for 1.1M apps (0.091).
func TestNewKeywordsPerNewAppIsMeasured(t *testing.T) {
	if got := NewKeywordsPerNewApp(81, 200); got != 0.405 {
		t.Fatalf("measured %v, want 0.405", got)
	}
	if NewKeywordsPerNewApp(0, 200) != 0 || NewKeywordsPerNewApp(5, 0) != 0 {
		t.Fatal("no probe, no share")
	}
	if got := PerFirstSearch(1100, 10); got != 110 {
		t.Fatalf("per first search %v", got)
	}
	m := testModel()
	r := DefaultRates()
	r.NewKeywordsPerNewApp = NewKeywordsPerNewApp(81, 200)
	// Ranking fill's keywords, and keyword-hints' at the design's share up
	// to its daily bound: 3,400 at the fill month's pace, ~100 at the
	// store's 1,100 new apps a day.
	for pace, hints := range map[float64]float64{37_767: crawl.HintNewKeywordsPerDay, 1100: 1100 * 100_000.0 / 1_100_000} {
		if got := HintKeywordsPerDay(r, pace); math.Abs(got-hints) > 1e-6 {
			t.Fatalf("hint keywords at %v new apps a day: %v, want %v", pace, got, hints)
		}
		for _, o := range m.Month(pace, r, false).Ops {
			if want := 0.405*pace + hints; o.PerNewKeyword > 0 && math.Abs(o.RunsPerDay-want) > 1e-6 {
				t.Fatalf("%s: %v runs a day, want %v", o.Name, o.RunsPerDay, want)
			}
		}
	}
}

// Every assumption names its source; each uncertain one is billed at ½×
// and 2×, and a rate that drives writes moves the month with it.
func TestAssumptionsAndSensitivity(t *testing.T) {
	r := DefaultRates()
	r.NewKeywordsPerNewApp = 0.405
	as := Assumptions(r, 200, 81)
	names := map[string]bool{}
	for _, a := range as {
		if a.Name == "" || a.Source == "" || a.Value <= 0 {
			t.Errorf("assumption %+v", a)
		}
		names[a.Name] = true
	}
	for _, n := range []string{"catalogue_changes_per_app_day", "store_new_apps_per_day", "new_keywords_per_new_app", "r2_page_bytes", "do_request_active_ms"} {
		if !names[n] {
			t.Errorf("no assumption %s", n)
		}
	}
	sens := testModel().SensitivityOf(1_100_000, r, as)
	by := map[string]Sensitivity{}
	for _, s := range sens {
		by[s.Name] = s
	}
	for _, n := range []string{"catalogue_changes_per_app_day", "new_keywords_per_new_app", "store_new_apps_per_day", "hint_keywords_per_new_app"} {
		s, ok := by[n]
		if !ok || s.Half.FillRowsWritten >= s.Double.FillRowsWritten || s.Half.SteadyRowsWritten >= s.Double.SteadyRowsWritten {
			t.Errorf("%s: %+v", n, s)
		}
	}
	if _, ok := by["r2_pages_kept_days"]; ok {
		t.Error("a product setting is not varied")
	}
}
