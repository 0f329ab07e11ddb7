package ledgerdb

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	"storecrawl/durable/ledger"
	"storecrawl/internal/objects"
	"storecrawl/worker/d1"
	"storecrawl/worker/logx"
	"storecrawl/worker/ratelimit"
)

// LedgerReports asks the writer objects (Durable Objects) for their side of
// reconciliation; the wasm wiring implements it over their namespaces.
type LedgerReports interface {
	// LedgerReport asks the writer object for its counters and unsent facts.
	LedgerReport(ctx context.Context, source string) (ledger.Report, error)
}

// LedgerWriters are the writer objects as reconciliation reaches them:
// their reports, and their repairs.
type LedgerWriters interface {
	LedgerReports
	LedgerRepairs
}

// LedgerSources is where reconciliation reads both sides.
type LedgerSources interface {
	// FactTotals reads D1's per-counter sums of a writer's facts.
	FactTotals(ctx context.Context, source string) (map[string]int64, error)
	LedgerReports
	// SourcesAfter lists up to n writers D1 has facts from (ad-hoc limiter
	// keys too), after `after` in source order.
	SourcesAfter(ctx context.Context, after string, n int) ([]string, error)
}

// Statuses of reconciliation besides the comparison's (ledger.Status*).
const (
	// StatusError is a writer that could not be read.
	StatusError = "error"
	// StatusRetired is a writer whose totals in D1 are all zero: its
	// retirement (ledger.KindRetired) took back every fact it sent, and its
	// storage is gone, so its object is not called (it would only answer
	// zeros). A key used again after it is compared as soon as one of its
	// new facts reaches D1.
	StatusRetired = "retired"
)

// ReconcileBatch bounds the writers one ledger-reconcile run, or one
// GET /v1/ledger page, reads besides the configured ones. Each costs a D1
// read and a Durable Object call (two subrequests), so a run stays a few
// dozen subrequests and a few seconds however many limiter keys D1 has
// seen; the task walks the others across runs from a cursor.
const ReconcileBatch = 25

// reconcileCursorName names the task's cursor in sweep_cursors: the last
// writer the last run read, "" when it reached the end.
const reconcileCursorName = "ledger-reconcile"

// LedgerSourceNames are the configured ledger writers: the controller of
// each crawl target, the scheduler, and the limiter of each internal key.
// Every run reads them (and the first page of /v1/ledger shows them), with
// facts in D1 or not yet.
func LedgerSourceNames() []string {
	out := []string{objects.SourceControllerPrefix + objects.DefaultTarget, objects.SourceScheduler}
	var keys []string
	for k := range ratelimit.Limits {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out = append(out, objects.SourceLimiterPrefix+k)
	}
	return out
}

// Page is one page of reconciliation.
type Page struct {
	Writers []ledger.Result `json:"writers"`
	// Next is the last writer D1 listed when more may follow (the next page
	// starts after it), "" when the list is done.
	Next string `json:"next_after"`
}

// ReconcilePage compares a page of writers with D1: the configured ones
// when withConfigured, then up to n of the writers D1 knows after `after`
// (in source order; the configured among them are skipped, being read
// already). Each is logged: one `ledger.mismatch` event per writer that
// differs. D1 is read before the writer (see ledger.Reconcile). A writer
// that cannot be read is reported with status "error", not skipped. err is
// a failed listing (the configured writers are still read).
func ReconcilePage(ctx context.Context, src LedgerSources, after string, n int, withConfigured bool, now func() time.Time) (Page, error) {
	var p Page
	configured := LedgerSourceNames()
	if withConfigured {
		for _, name := range configured {
			p.Writers = append(p.Writers, reconcileOne(ctx, src, name, true, now))
		}
	}
	if n <= 0 {
		return p, nil
	}
	listed, err := src.SourcesAfter(ctx, after, n)
	if err != nil {
		logx.Err("ledger.reconcile_sources_failed", err, nil)
		return p, err
	}
	for _, name := range listed {
		if !slices.Contains(configured, name) {
			p.Writers = append(p.Writers, reconcileOne(ctx, src, name, false, now))
		}
	}
	if len(listed) == n {
		p.Next = listed[len(listed)-1]
	}
	return p, nil
}

// reconcileOne compares one writer with D1 (a configured one is always
// asked, even with nothing in D1).
func reconcileOne(ctx context.Context, src LedgerSources, name string, configured bool, now func() time.Time) ledger.Result {
	totals, err := src.FactTotals(ctx, name)
	if err == nil && !configured && allZero(totals) {
		logx.Event("ledger.reconciled", map[string]any{"source": name, "status": StatusRetired})
		return ledger.Result{Source: name, Status: StatusRetired}
	}
	var rep ledger.Report
	if err == nil {
		rep, err = src.LedgerReport(ctx, name)
	}
	if err != nil {
		logx.Err("ledger.reconcile_failed", err, map[string]any{"source": name})
		return ledger.Result{Source: name, Status: StatusError}
	}
	r := ledger.Reconcile(rep, totals, now())
	r.Source = name
	fields := map[string]any{"source": name, "status": r.Status, "facts_in_d1": r.FactsInD1, "appended": r.Appended, "pending_facts": r.PendingFacts}
	if r.Status == ledger.StatusMismatch {
		fields["level"] = logx.Error
		fields["diff"] = r.Diff
		logx.Event("ledger.mismatch", fields)
	} else {
		logx.Event("ledger.reconciled", fields)
	}
	return r
}

func allZero(totals map[string]int64) bool {
	for _, v := range totals {
		if v != 0 {
			return false
		}
	}
	return true
}

// ReconcileStore is what a ledger-reconcile run needs: both sides, and the
// cursor it keeps in D1.
type ReconcileStore interface {
	LedgerSources
	LedgerRepairs
	MismatchStore
	// ReconcileCursor reads the writer the last run stopped after ("" for none).
	ReconcileCursor(ctx context.Context) (d1.Cursor, error)
	// SaveReconcileCursor moves it to source (a write only when it moved).
	SaveReconcileCursor(ctx context.Context, c d1.Cursor, source string, at time.Time) error
}

// RunResult is what one ledger-reconcile run did.
type RunResult struct {
	Writers []ledger.Result `json:"writers"`
	From    string          `json:"from"` // the cursor the run started after
	Next    string          `json:"next"` // where the next run starts after; "" = from the first writer
	// Mismatches counts the mismatches the run opened, repaired and cleared.
	Mismatches MismatchCounts `json:"mismatches"`
	Error      string         `json:"error,omitempty"`
}

// ReconcileRun is one ledger-reconcile run: the configured writers, then
// the next ReconcileBatch writers D1 knows after the cursor the last run
// saved, which it moves on (back to the start once the list is done). So
// every writer is read within a bounded number of runs, and no run reads
// them all. The run keeps the mismatch record of the writers it read: a
// writer whose counters differ from its facts is repaired by it
// (ledger.Repair), one that cannot be stays open (trackMismatches).
func ReconcileRun(ctx context.Context, st ReconcileStore, now func() time.Time) RunResult {
	var r RunResult
	cur, err := st.ReconcileCursor(ctx)
	cursor := cur.Text()
	if err != nil {
		// The configured writers are still read; the others wait for D1.
		r.Error = "cursor: " + err.Error()
		p, _ := ReconcilePage(ctx, st, "", 0, true, now)
		r.Writers = p.Writers
		r.track(ctx, st, now)
		return r
	}
	r.From = cursor
	p, err := ReconcilePage(ctx, st, cursor, ReconcileBatch, true, now)
	r.Writers, r.Next = p.Writers, p.Next
	r.track(ctx, st, now)
	if err != nil {
		r.Error, r.Next = joinErr(r.Error, "writers: "+err.Error()), cursor
		return r
	}
	if r.Next != cursor {
		if err := st.SaveReconcileCursor(ctx, cur, r.Next, now()); err != nil {
			r.Error = joinErr(r.Error, "cursor: "+err.Error())
		}
	}
	return r
}

// track keeps the mismatch record of the run's writers (an error is the
// run's, the comparisons stand).
func (r *RunResult) track(ctx context.Context, st ReconcileStore, now func() time.Time) {
	c, err := trackMismatches(ctx, st, st, r.Writers, now())
	r.Mismatches = c
	if err != nil {
		logx.Err("ledger.mismatch_record_failed", err, nil)
		r.Error = joinErr(r.Error, err.Error())
	}
}

func joinErr(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// Summary is the task's one line; ok is false when a writer or the list of
// writers could not be read (a mismatch is reported, not a failure: the
// check ran).
func (r RunResult) Summary() (summary string, ok bool) {
	summary, ok = ReconcileSummary(r.Writers)
	if m := r.Mismatches; m != (MismatchCounts{}) {
		summary += fmt.Sprintf("; mismatches %d repaired, %d opened, %d cleared", m.Repaired, m.Opened, m.Cleared)
	}
	if r.Next != "" {
		summary += "; next run continues after " + r.Next
	}
	if r.Error != "" {
		summary += "; " + r.Error
	}
	return summary, ok && r.Error == ""
}

// ReconcileSummary is the scheduler task's one-line result; ok is false
// when a writer could not be read (a mismatch is reported, not a failure:
// the check ran).
func ReconcileSummary(rs []ledger.Result) (summary string, ok bool) {
	counts := map[string]int{}
	for _, r := range rs {
		counts[r.Status]++
	}
	summary = fmt.Sprintf("%d writers: %d ok, %d settling, %d mismatch, %d error",
		len(rs), counts[ledger.StatusOK], counts[ledger.StatusSettling], counts[ledger.StatusMismatch], counts[StatusError])
	if n := counts[StatusRetired]; n > 0 {
		summary += fmt.Sprintf(", %d retired", n)
	}
	return summary, counts[StatusError] == 0
}
