package history

import (
	"context"
	"fmt"
	"sort"
	"time"

	"storecrawl/durable/enrichment"
	"storecrawl/durable/ledger"
	"storecrawl/worker/logx"
	"storecrawl/worker/ratelimit"
)

// LedgerReports asks the writer objects (Durable Objects) for their side of
// reconciliation; the wasm wiring implements it over their namespaces.
type LedgerReports interface {
	// LedgerReport asks the writer object for its counters and unsent facts.
	LedgerReport(ctx context.Context, source string) (ledger.Report, error)
}

// LedgerSources is where reconciliation reads both sides.
type LedgerSources interface {
	// FactTotals reads D1's per-counter sums of a writer's facts.
	FactTotals(ctx context.Context, source string) (map[string]int64, error)
	LedgerReports
	// SourcesInD1 lists every writer D1 has facts from (ad-hoc limiter keys too).
	SourcesInD1(ctx context.Context) ([]string, error)
}

// StatusError is the status of a writer that could not be read (ledger's
// statuses are the outcomes of a comparison).
const StatusError = "error"

// LedgerSourceNames are every ledger writer: the controller of each crawl
// target, the scheduler, and the limiter of each configured key.
func LedgerSourceNames() []string {
	out := []string{enrichment.DefaultConfig().Source(), ledger.SourceScheduler}
	var keys []string
	for k := range ratelimit.Limits {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out = append(out, ledger.SourceLimiterPrefix+k)
	}
	return out
}

// ReconcileLedgers compares every writer with D1, logging one
// `ledger.mismatch` event per writer that differs. D1 is read before the
// writer (see ledger.Reconcile). A writer that cannot be read is reported
// with status "error", not skipped.
func ReconcileLedgers(ctx context.Context, src LedgerSources, now func() time.Time) []ledger.Result {
	var out []ledger.Result
	names := LedgerSourceNames()
	if inD1, err := src.SourcesInD1(ctx); err != nil {
		logx.Err("ledger.reconcile_sources_failed", err, nil)
	} else {
		names = mergeSources(names, inD1)
	}
	for _, name := range names {
		totals, err := src.FactTotals(ctx, name)
		var rep ledger.Report
		if err == nil {
			rep, err = src.LedgerReport(ctx, name)
		}
		if err != nil {
			logx.Err("ledger.reconcile_failed", err, map[string]any{"source": name})
			out = append(out, ledger.Result{Source: name, Status: StatusError})
			continue
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
		out = append(out, r)
	}
	return out
}

// mergeSources adds the writers D1 knows to the configured ones, in order.
func mergeSources(configured, inD1 []string) []string {
	seen := map[string]bool{}
	for _, s := range configured {
		seen[s] = true
	}
	out := configured
	for _, s := range inD1 {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
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
	return summary, counts[StatusError] == 0
}
