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

// TestShorterTallyPeriodClosesSooner: a ledger with a shorter period
// (LIMITER_TALLY_S) tallies and closes periods of that span, aligned on it,
// and an Objects hands its period to every key it makes, so an idle client
// key is retired at the end of its short period, not of its minute.
func TestShorterTallyPeriodClosesSooner(t *testing.T) {
	t0 := time.UnixMilli(1_800_000_000_000).Truncate(time.Minute)
	l := Ledger{Period: 10 * time.Second}
	if l.Count(t0.Add(12*time.Second), true, false) != nil || l.OpenUntil() != t0.Add(20*time.Second).UnixMilli() {
		t.Fatalf("open until %d", l.OpenUntil())
	}
	if l.Roll(t0.Add(19999*time.Millisecond)) != nil {
		t.Fatal("closed a period early")
	}
	if c := l.Roll(t0.Add(20 * time.Second)); c == nil || c.Start != t0.Add(10*time.Second).UnixMilli() || c.Allowed != 1 || l.OpenUntil() != 0 {
		t.Fatalf("roll %+v %+v", c, l)
	}

	o := Objects{TallyPeriod: 5 * time.Second}
	c := Call{Method: "POST", Path: "/acquire", Body: `{"key":"client:short","limit":1,"windowInSeconds":1}`}
	at := t0.Add(time.Second)
	a := o.Handle("s", c, at)
	o.Restore("s", Stored{Policy: *a.Restore, Key: a.Key}, at)
	if a = o.Handle("s", c, at); a.OpenUntil != t0.Add(5*time.Second).UnixMilli() {
		t.Fatalf("acquire: %+v", a)
	}
	if r := o.Roll("s", t0.Add(5*time.Second)); r.Fact == nil || r.Fact.Counters["allowed"] != 1 || !r.Retire {
		t.Fatalf("roll at the short period's end: %+v", r)
	}
	if f := o.Retire("s", 1, t0.Add(5*time.Second)); f == nil {
		t.Fatal("the idle key was not retired at its short period's end")
	}
}
