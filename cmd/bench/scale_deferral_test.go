//go:build unix

package main

import (
	"testing"

	"storecrawl/worker/refresh"
)

// The fill's backlog defers the changed refreshes its page share cannot
// take, each written once and again a day until the backlog ends; a month
// with no catalogue to fill defers none.
// go test -run TestDeferralOpsBillTheFillsBacklog -v ./cmd/bench/
func TestDeferralOpsBillTheFillsBacklog(t *testing.T) {
	const apps, pagesPerDay, seen = 1_100_000, designAppsPerHour * 24, 62_218.0
	share := refresh.RefreshPageShareWhileBacklog
	if ops := DeferralOps(0, apps, seen, pagesPerDay, share); ops != nil {
		t.Fatalf("a steady month deferred pages: %+v", ops)
	}
	ops := DeferralOps(apps, apps, seen, pagesPerDay, share)
	if len(ops) != 1 {
		t.Fatalf("ops %+v", ops)
	}
	month := ops[0].PerDay(ops[0].RowsWritten) * daysPerMonth
	backlogDays := apps / (pagesPerDay * (1 - share))
	// The changes of a catalogue growing to apps over the backlog, less
	// the share's pages, each deferred once and then once a day at most.
	deferredAtMost := seen * backlogDays / 2
	if month <= 0 || month > deferredAtMost*(1+backlogDays) {
		t.Fatalf("%.0f rows for a backlog of %.1f days: want between 0 and %.0f", month, backlogDays, deferredAtMost*(1+backlogDays))
	}
	half := DeferralOps(apps, apps, seen/2, pagesPerDay, share)
	if h := half[0].PerDay(half[0].RowsWritten) * daysPerMonth; h >= month/2 {
		t.Fatalf("half the changes wrote %.0f rows, the whole %.0f: the share's pages are a fixed amount", h, month)
	}
	t.Logf("a fill of %d apps, a backlog of %.1f days: %.0f rows written (%s)", apps, backlogDays, month, ops[0].Note)
}
