//go:build unix

package main

import (
	"regexp"
	"strconv"
	"time"

	"storecrawl/worker/registry"
)

// RetryFailedDayFigures is retry-failed's day: the requeues and what
// each one writes.
type RetryFailedDayFigures struct {
	Requeues, RowsPerRequeue float64
}

// GiveUpRetriesInMonth is how many times the retry-failed task requeues an
// app that fails for good in the month after its first give-up: its waits
// (age, then age plus each of registry.GiveUpExtraWaitDays) as long as
// they add up to at most the month. The first month is the costliest: a
// later one holds one requeue at most.
func GiveUpRetriesInMonth(age time.Duration) int {
	n, at := 0, 0.0
	for i := 0; ; i++ {
		extra := registry.GiveUpExtraWaitDays[min(i, len(registry.GiveUpExtraWaitDays)-1)]
		at += age.Hours()/24 + float64(extra)
		if at > daysPerMonth {
			return n
		}
		n++
	}
}

// RetryFailedDay is retry-failed's day from its measured runs (rows
// written a run, apps requeued a run) and the catalogue's given-up apps:
// each fails for good (an upper bound) and is in its first month
// (GiveUpRetriesInMonth), so a day requeues failed × that ÷ the month's
// days. Not ok when the runs requeued nothing (no rows a requeue).
func RetryFailedDay(writtenPerRun, requeuedPerRun, failed float64, age time.Duration) (RetryFailedDayFigures, bool) {
	if requeuedPerRun <= 0 {
		return RetryFailedDayFigures{}, false
	}
	return RetryFailedDayFigures{
		Requeues:       failed * float64(GiveUpRetriesInMonth(age)) / daysPerMonth,
		RowsPerRequeue: writtenPerRun / requeuedPerRun,
	}, true
}

var requeuedRE = regexp.MustCompile(`requeued (\d+) given-up items`)

// requeuedOf is the apps a retry-failed run's summary says it requeued
// (0 when it says none).
func requeuedOf(summary string) float64 {
	m := requeuedRE.FindStringSubmatch(summary)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return float64(n)
}
