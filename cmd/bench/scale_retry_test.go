//go:build unix

package main

import (
	"testing"
	"time"
)

// An app that fails for good is requeued after 1, 2, 4, 8 and 16 days:
// four requeues in its first 30 days at a day's age, the fifth on day
// 31; with no backoff it would be thirty.
// go test -run TestRetryFailedDayBillsTheBackoff -v ./cmd/bench/
func TestRetryFailedDayBillsTheBackoff(t *testing.T) {
	if n := GiveUpRetriesInMonth(24 * time.Hour); n != 4 {
		t.Fatalf("%d requeues in the month, want 4", n)
	}
	if n := GiveUpRetriesInMonth(10 * 24 * time.Hour); n != 2 {
		t.Fatalf("at a 10-day age: %d requeues, want 2 (days 10 and 21)", n)
	}
	day, ok := RetryFailedDay(2500, requeuedOf("requeued 500 given-up items (more remain for the next run)"), 11_000, 24*time.Hour)
	if !ok || day.RowsPerRequeue != 5 || day.Requeues != 11_000*4.0/30 {
		t.Fatalf("%+v %v", day, ok)
	}
	if _, ok := RetryFailedDay(0, requeuedOf("requeued 0 given-up items"), 11_000, 24*time.Hour); ok {
		t.Fatal("no requeue measured, no rows a requeue")
	}
}
