//go:build !js

package ledgerdb

import (
	"maps"
	"reflect"
	"testing"
	"time"

	"storecrawl/durable/ledger"
	"storecrawl/worker/d1"
	"storecrawl/worker/d1/d1test"
)

// TestReconcileRepairsACorruptedCounter: a writer whose cached counter
// drifted from its facts (completed 6 in its facts, 11 in its counters) is
// repaired by the ledger-reconcile run: the writer's counter goes back to
// its facts and it appends one ledger.mismatch fact (writer, delta, first
// seen, duration), and /v1/ledger's record shows the mismatch repaired. A
// writer that cannot take the repair keeps its mismatch open across runs,
// first seen and all, with one row, not one per run. The D1 rows each run
// reads and writes are counted.
func TestReconcileRepairsACorruptedCounter(t *testing.T) {
	db, drv := d1test.New(t)
	const src = "controller:main"
	store(t, db, ticks(3)...) // completed 6, ticks 3, three facts
	rep := &reports{bySource: map[string]ledger.Report{}}
	for _, name := range LedgerSourceNames() {
		rep.bySource[name] = ledger.Report{Source: name, Counters: map[string]int64{}}
	}
	// The writer's cached counter is corrupted: 5 more completions than its facts.
	rep.bySource[src] = ledger.Report{Source: src, Counters: map[string]int64{"completed": 11, "ticks": 3}, Appended: 3}
	now := t0.Add(time.Hour)
	svc := &Service{Store: D1Store{DB: db}, Reports: rep, Now: func() time.Time { return now }}
	run := func() (RunResult, d1.CostView) {
		t.Helper()
		cctx, cost := d1.WithCost(ctx)
		r := svc.ReconcileRun(cctx)
		if r.Error != "" {
			t.Fatalf("run: %+v", r)
		}
		return r, cost.View()
	}
	configured := int64(len(LedgerSourceNames()))
	delta := map[string]int64{"completed": 5}

	// Run 1: the object cannot take the repair: the mismatch is recorded open.
	firstSeen := now
	rep.refuse = true
	r, cost := run()
	if r.Mismatches != (MismatchCounts{Opened: 1}) {
		t.Fatalf("run 1: %+v", r.Mismatches)
	}
	// Reads: the cursor (none yet), each configured writer's totals (the
	// controller's 3 rows), the writers page (one row: the whole list, so
	// the cursor stays), the open mismatches (none). Writes: the open mismatch.
	if cost.Queries != configured+4 || cost.RowsRead != 3+1 || cost.RowsWritten != 1 {
		t.Fatalf("run 1 D1 cost: %+v", cost)
	}
	m, err := svc.Mismatches(ctx)
	if err != nil || len(m.Open) != 1 || len(m.Repaired) != 0 ||
		!reflect.DeepEqual(m.Open[0], ledger.Mismatch{Source: src, Delta: delta, FirstSeen: firstSeen.UnixMilli()}) {
		t.Fatalf("after run 1: %+v %v", m, err)
	}

	// Run 2, the same delta: nothing written (one record per mismatch), the open one read.
	now = now.Add(15 * time.Minute)
	r, cost = run()
	if r.Mismatches != (MismatchCounts{}) || cost.RowsRead != 3+1+1 || cost.RowsWritten != 0 {
		t.Fatalf("run 2: %+v, D1 cost %+v", r.Mismatches, cost)
	}
	if n := drv.Int(t, `SELECT COUNT(*) FROM ledger_mismatches`); n != 1 {
		t.Fatalf("%d mismatch rows after two runs, want 1", n)
	}

	// Run 3: the writer takes the repair.
	now = now.Add(15 * time.Minute)
	rep.refuse, rep.now = false, now
	r, cost = run()
	if r.Mismatches != (MismatchCounts{Repaired: 1}) {
		t.Fatalf("run 3: %+v", r.Mismatches)
	}
	// Reads as run 2; writes: the mismatch closed, and the closed ones
	// past retention deleted (none; one statement).
	if cost.RowsRead != 3+1+1 || cost.RowsWritten != 2 {
		t.Fatalf("run 3 D1 cost: %+v", cost)
	}
	// The counter is repaired from the facts.
	if got := rep.bySource[src].Counters; !maps.Equal(got, map[string]int64{"completed": 6, "ticks": 3}) {
		t.Fatalf("repaired counters %v, want completed 6 (its facts)", got)
	}
	// One ledger.mismatch fact, no counters, in the writer's ledger.
	duration := now.Sub(firstSeen).Milliseconds()
	if len(rep.appended) != 1 {
		t.Fatalf("facts appended %v", rep.appended)
	}
	f := rep.appended[0]
	wantData := map[string]any{"writer": src, "delta": delta, "first_seen": firstSeen.UnixMilli(), "duration_ms": duration, "resolution": "repaired"}
	if f.Kind != ledger.KindMismatch || f.Source != src || f.Counters != nil || f.At != now.UnixMilli() || !reflect.DeepEqual(f.Data, wantData) {
		t.Fatalf("mismatch fact %+v, want data %v", f, wantData)
	}
	m, err = svc.Mismatches(ctx)
	want := ledger.Mismatch{Source: src, Delta: delta, FirstSeen: firstSeen.UnixMilli(), ClosedAt: now.UnixMilli(),
		DurationMs: duration, Resolution: ledger.ResolutionRepaired, FactID: f.ID}
	if err != nil || len(m.Open) != 0 || len(m.Repaired) != 1 || !reflect.DeepEqual(m.Repaired[0], want) {
		t.Fatalf("after the repair: %+v %v, want repaired %+v", m, err, want)
	}

	// The fact reaches D1; the writer is in step and nothing more is written.
	store(t, db, f)
	rep.bySource[src] = ledger.Report{Source: src, Counters: rep.bySource[src].Counters, Appended: 4}
	now = now.Add(15 * time.Minute)
	r, cost = run()
	if r.Mismatches != (MismatchCounts{}) || cost.RowsWritten != 0 || len(rep.repairs) != 1 {
		t.Fatalf("run 4: %+v, D1 cost %+v, repairs %v", r.Mismatches, cost, rep.repairs)
	}
	for _, w := range r.Writers {
		if w.Status != ledger.StatusOK {
			t.Fatalf("run 4: %+v", w)
		}
	}
}
