package limiter

import (
	"testing"
	"time"
)

func TestLedgerTalliesMinutesAndClosesThem(t *testing.T) {
	t0 := time.UnixMilli(1_800_000_000_000).Truncate(time.Minute)
	var l Ledger
	if l.Count(t0, true, false) != nil || l.Count(t0.Add(10*time.Second), false, false) != nil || l.Count(t0.Add(59*time.Second), true, true) != nil {
		t.Fatal("closed a period early")
	}
	if l.OpenUntil() != t0.Add(time.Minute).UnixMilli() || l.Roll(t0.Add(59999*time.Millisecond)) != nil {
		t.Fatalf("open until %d", l.OpenUntil())
	}
	closed := l.Count(t0.Add(61*time.Second), true, false)
	if closed == nil || *closed != (Tally{Start: t0.UnixMilli(), Allowed: 2, Refused: 1, Waited: 1}) {
		t.Fatalf("closed %+v", closed)
	}
	if l.Closed != (Counters{Allowed: 2, Refused: 1, Waited: 1}) || l.Open.Allowed != 1 || l.Open.Start != t0.Add(time.Minute).UnixMilli() {
		t.Fatalf("ledger %+v", l)
	}
	// An idle key's open minute is closed by the alarm's Roll.
	if c := l.Roll(t0.Add(5 * time.Minute)); c == nil || c.Allowed != 1 || l.OpenUntil() != 0 || l.Closed.Allowed != 3 {
		t.Fatalf("roll %+v %+v", c, l)
	}
}
