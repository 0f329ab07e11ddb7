package sim

import (
	"testing"
	"time"

	"storecrawl/durable/pacing"
)

// A peer's gap is the requests paid for at its rate, as its next wake:
// aimd at 60 a minute, 10 requests sent by a tick at t0.
func TestPeersAreSpacers(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a := NewAIMD(pacing.Config{SubrequestsPerItem: 1})
	plan := a.Plan(t0)
	if got, want := a.TickGap(plan.Items), a.NextAt(t0, a.Limit, plan.Items).Sub(t0); got != want || got != 10*time.Second {
		t.Errorf("aimd: gap %s, next wake after %s", got, want)
	}
	for _, c := range []pacing.Algorithm{NewAWSAdaptive(pacing.Config{SubrequestsPerItem: 1})} {
		if sp, ok := c.(pacing.Spacer); !ok || sp.TickGap(10) <= 0 {
			t.Errorf("%T is no Spacer with a positive gap", c)
		}
	}
}
