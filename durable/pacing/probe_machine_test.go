package pacing

import "testing"

// Every event has a transition in every phase, and every phase a clean
// tick can grow in has its growth.
func TestProbeTransitionTableIsComplete(t *testing.T) {
	phases := []string{PhaseSlowStart, PhaseRecover, PhasePlateau, PhaseProbe, PhaseBlocked, PhaseBracket}
	for ev := evClean; ev <= evSmallBurst; ev++ {
		for _, ph := range phases {
			p := NewProbe(Config{SubrequestsPerItem: 4})
			p.phase = ph
			if p.transition(ev) == nil {
				t.Errorf("event %d has no transition in phase %s", ev, ph)
			}
		}
	}
	for _, ph := range phases {
		if _, ok := probeGrowth[ph]; !ok && ph != PhaseBlocked {
			t.Errorf("phase %s has no growth (a clean tick there would do nothing)", ph)
		}
	}
}
