package ledgerdb

import (
	"context"
	"strings"
	"testing"
	"time"

	"storecrawl/durable/ledger"
	"storecrawl/worker/module"
)

func ledgerTask(t *testing.T, r Reconciler, p FactsPruner, name string) module.Task {
	t.Helper()
	for _, tk := range Tasks(r, p) {
		if tk.Name == name {
			return tk
		}
	}
	t.Fatalf("no task %q", name)
	return module.Task{}
}

type fixedPruner struct {
	r    PruneResult
	runs int
}

func (p *fixedPruner) PruneFacts(context.Context) PruneResult { p.runs++; return p.r }

func TestFactsPruneTaskReportsItsRun(t *testing.T) {
	ok := &fixedPruner{r: PruneResult{Facts: 1200, Minutes: 60, Statements: 5, Writers: 3}}
	res := ledgerTask(t, nil, ok, "facts-prune").RunIsolated(context.Background(), time.Now)
	if !res.OK || ok.runs != 1 || res.Summary != "pruned 1200 facts and 60 rollup minutes in 5 statements; 3 writers done" {
		t.Fatalf("%+v", res)
	}
	failed := &fixedPruner{r: PruneResult{Facts: 10, Error: "limiter:a: D1 unavailable"}}
	if res := ledgerTask(t, nil, failed, "facts-prune").RunIsolated(context.Background(), time.Now); res.OK || res.Error != "limiter:a: D1 unavailable" {
		t.Fatalf("a failed run: %+v", res)
	}
}

type fixedReconciler struct {
	r    RunResult
	runs int
}

func (f *fixedReconciler) ReconcileRun(context.Context) RunResult { f.runs++; return f.r }

// TestLedgerReconcileTaskReportsItsBatch: the task runs one bounded batch
// (ReconcileRun) and says where the next run goes on; a writer or the list
// of writers it could not read fails the run.
func TestLedgerReconcileTaskReportsItsBatch(t *testing.T) {
	ok := &fixedReconciler{r: RunResult{
		Writers: []ledger.Result{{Source: "controller:main", Status: ledger.StatusOK}, {Source: "limiter:client:a", Status: StatusRetired}},
		Next:    "limiter:client:a",
	}}
	res := ledgerTask(t, ok, nil, "ledger-reconcile").RunIsolated(context.Background(), time.Now)
	if !res.OK || ok.runs != 1 || res.Summary != "2 writers: 1 ok, 0 settling, 0 mismatch, 0 error, 1 retired; next run continues after limiter:client:a" {
		t.Fatalf("%+v", res)
	}
	failed := &fixedReconciler{r: RunResult{Error: "writers: D1 unavailable"}}
	if res := ledgerTask(t, failed, nil, "ledger-reconcile").RunIsolated(context.Background(), time.Now); res.OK || !strings.Contains(res.Error, "writers: D1 unavailable") {
		t.Fatalf("a failed run: %+v", res)
	}
}
