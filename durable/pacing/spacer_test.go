package pacing

import (
	"testing"
	"time"
)

// Every controller the product can run says what its pace puts between
// ticks (the status's interval_ms), as its Done decides it.
func TestEveryControllerIsASpacer(t *testing.T) {
	for _, name := range Names() {
		a, _ := New(name, Config{SubrequestsPerItem: 1})
		sp, ok := a.(Spacer)
		if !ok {
			t.Errorf("%s is no Spacer", name)
			continue
		}
		if gap := sp.TickGap(10); gap <= 0 {
			t.Errorf("%s: gap %s", name, gap)
		}
	}
	// A rate controller's gap is the requests paid for at its rate, as its
	// next wake: aimd at 60 a minute, 10 requests sent by a tick at t0.
	a := NewAIMD(Config{SubrequestsPerItem: 1})
	plan := a.Plan(t0)
	if got, want := a.TickGap(plan.Items), a.next(t0, a.Limit, plan.Items).Sub(t0); got != want || got != 10*time.Second {
		t.Errorf("aimd: gap %s, next wake after %s", got, want)
	}
	s := NewSeed(Config{})
	if s.TickGap(3) != SeedStartInterval {
		t.Errorf("seed: gap %s", s.TickGap(3))
	}
}
