package pacing

import "testing"

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
	s := NewSeed(Config{})
	if s.TickGap(3) != SeedStartInterval {
		t.Errorf("seed: gap %s", s.TickGap(3))
	}
}
