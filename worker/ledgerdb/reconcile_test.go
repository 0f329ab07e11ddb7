//go:build !js

package ledgerdb

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"storecrawl/durable/ledger"
	"storecrawl/worker/d1/d1test"
)

// TestReconcileRunsReadBoundedBatchesFromACursor: with more writers than a
// batch (sixty limiter client keys), each ledger-reconcile run reads the
// configured writers and at most ReconcileBatch others, from the cursor the
// last run saved, so every writer is read within three runs and then the
// walk starts over (one run called every writer's object,
// which breaks at a few hundred keys).
func TestReconcileRunsReadBoundedBatchesFromACursor(t *testing.T) {
	db, _ := d1test.New(t)
	now := t0.Add(time.Hour)
	rep := &reports{bySource: map[string]ledger.Report{}}
	var facts []ledger.Fact
	var clients []string
	for i := 0; i < 60; i++ {
		src := fmt.Sprintf("limiter:client:k%02d", i)
		clients = append(clients, src)
		facts = append(facts, ledger.New(src, "limiter.minute", t0, map[string]int64{"allowed": int64(i + 1)}, nil))
		rep.bySource[src] = ledger.Report{Counters: map[string]int64{"allowed": int64(i + 1)}, Appended: 1}
	}
	for _, src := range LedgerSourceNames() {
		facts = append(facts, ledger.New(src, "limiter.minute", t0, map[string]int64{"allowed": 1}, nil))
		rep.bySource[src] = ledger.Report{Counters: map[string]int64{"allowed": 1}, Appended: 1}
	}
	store(t, db, facts...)
	svc := &Service{Store: D1Store{DB: db}, Reports: rep, Now: func() time.Time { return now }}

	configured := LedgerSourceNames()
	var read []string
	runs := 0
	for next := "-"; next != ""; {
		if runs++; runs > 3 {
			t.Fatalf("more than three runs to read 63 writers 25 at a time")
		}
		rep.asked = nil
		r := svc.ReconcileRun(ctx)
		summary, ok := r.Summary()
		if !ok || len(rep.asked) > len(configured)+ReconcileBatch {
			t.Fatalf("run %d: %s, %d objects asked", runs, summary, len(rep.asked))
		}
		if !slices.Equal(rep.asked[:len(configured)], configured) {
			t.Fatalf("run %d must read the configured writers first: %v", runs, rep.asked)
		}
		if saved, _ := (D1Store{DB: db}).ReconcileCursor(ctx); saved.Text() != r.Next {
			t.Fatalf("run %d: cursor saved %q, next %q", runs, saved, r.Next)
		}
		read = append(read, rep.asked[len(configured):]...)
		next = r.Next
	}
	if !slices.Equal(read, clients) {
		t.Fatalf("the runs read %d client writers %v, want each of the 60 once, in order", len(read), read)
	}
	rep.asked = nil
	if r := svc.ReconcileRun(ctx); r.From != "" || rep.asked[len(configured)] != clients[0] {
		t.Fatalf("the run after the last must start over: %+v", r)
	}
}

// TestRetiredWriterNetsToZeroInD1: a retired limiter client key's last
// fact takes its totals back out of fact_totals (migration 0015), in any
// order and once however often it is delivered; reconciliation then calls
// no object for it, its minutes stay in the history, and the key used again
// is compared from zero.
func TestRetiredWriterNetsToZeroInD1(t *testing.T) {
	db, drv := d1test.New(t)
	const src = "limiter:client:idle"
	minutes := []ledger.Fact{
		ledger.New(src, "limiter.minute", t0, map[string]int64{"allowed": 3, "refused": 1}, nil),
		ledger.New(src, "limiter.minute", t0.Add(time.Minute), map[string]int64{"allowed": 2, "waited": 1}, nil),
	}
	retired := ledger.Retired(src, t0.Add(3*time.Minute), map[string]int64{"allowed": 5, "refused": 1, "waited": 1}, 2)
	// The retirement arrives first, then the minutes, then the retirement again.
	store(t, db, retired)
	store(t, db, minutes...)
	store(t, db, retired)
	zero := map[string]int64{"allowed": 0, "refused": 0, "waited": 0, ledger.FactsCounter: 0}
	if got := totals(t, drv, src); !reflect.DeepEqual(got, zero) {
		t.Fatalf("retired totals %v, want %v", got, zero)
	}
	lims, err := D1Store{DB: db}.LimiterTotals(ctx, t0.UnixMilli(), t0.Add(time.Hour).UnixMilli())
	if err != nil || len(lims) != 1 || lims[0] != (LimiterSummary{Key: "client:idle", Allowed: 5, Refused: 1, Waited: 1}) {
		t.Fatalf("history of the retired key: %+v %v", lims, err)
	}

	// Its storage is gone, so its object would answer zeros: it is not asked.
	rep := &reports{bySource: map[string]ledger.Report{}}
	svc := &Service{Store: D1Store{DB: db}, Reports: rep, Now: func() time.Time { return t0.Add(time.Hour) }}
	page, err := svc.LedgerPage(ctx, "limiter:client:", ReconcileBatch)
	if err != nil || len(page.Writers) != 1 || page.Writers[0].Status != StatusRetired || len(rep.asked) != 0 {
		t.Fatalf("retired writer: %+v %v, asked %v", page, err, rep.asked)
	}
	if summary, _ := ReconcileSummary(page.Writers); summary != "1 writers: 0 ok, 0 settling, 0 mismatch, 0 error, 1 retired" {
		t.Fatalf("summary %q", summary)
	}

	// Used again: a new object counts from zero, and so does D1.
	store(t, db, ledger.New(src, "limiter.minute", t0.Add(2*time.Hour), map[string]int64{"allowed": 4}, nil))
	rep.bySource[src] = ledger.Report{Counters: map[string]int64{"allowed": 4}, Appended: 1}
	page, err = svc.LedgerPage(ctx, "limiter:client:", ReconcileBatch)
	if err != nil || len(page.Writers) != 1 || page.Writers[0].Status != ledger.StatusOK || page.Writers[0].FactsInD1 != 1 {
		t.Fatalf("the key used again: %+v %v", page, err)
	}
}
