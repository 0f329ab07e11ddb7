package pacing_test

import (
	"testing"
	"time"

	"storecrawl/durable/pacing"
)

func TestProbeBurstUnderTheConnectionsBoundsWhatIsInFlight(t *testing.T) {
	// Slow start's first chunk at 1 request an item is six requests at
	// once; a burst-5 bucket, full at the start, serves five and refuses
	// one: from then on at most five are in flight, so a latency-bound
	// tick keeps five connections busy instead of refusing one a round.
	p := pacing.NewProbe(pacing.Config{SubrequestsPerItem: 1})
	if plan := p.Plan(t0); plan.MaxInFlight != 0 {
		t.Fatalf("before any evidence: MaxInFlight %d, want 0 (the connections)", plan.MaxInFlight)
	}
	out := tickOf(6, 1, pacing.KindOK, t0, 300*time.Millisecond)
	out[5].Kind = pacing.KindThrottled
	p.Done(t0.Add(300*time.Millisecond), out)
	rate := 2000.0 // over what six connections carry at 300 ms (1,200/min)
	p.Tune(pacing.TuneRequest{RatePerMin: &rate})
	plan := p.Plan(t0.Add(time.Minute))
	if plan.MaxInFlight != 5 {
		t.Fatalf("after a burst of 5 met six at once: MaxInFlight %d, want 5", plan.MaxInFlight)
	}
	if plan.ChunkItems != plan.Items || plan.ChunkPause != 0 {
		t.Fatalf("latency-bound plan %+v, want one chunk that keeps the five busy", plan)
	}
	// Stored and restored, the bound stays.
	if plan := restart(t, p, 1, fields{}).Plan(t0.Add(2 * time.Minute)); plan.MaxInFlight != 5 {
		t.Fatalf("restored: MaxInFlight %d, want 5", plan.MaxInFlight)
	}
}

func TestProbeRefusalInALaterWaveSetsNoInFlightBound(t *testing.T) {
	// A probe above the ceiling refused in a chunk of two (one served, one
	// refused) met a bucket drained by the rate, not a small burst: the
	// connections stay the bound.
	p := probeWith(t, 1, fields{"rate": 550, "ceiling": 290, "phase": pacing.PhaseProbe, "latency_ms": 120, "plan_chunk": 2})
	p.Plan(t0)
	out := tickOf(2, 1, pacing.KindOK, t0, 120*time.Millisecond)
	out[1].Kind = pacing.KindThrottled
	p.Done(t0.Add(time.Second), out)
	if !stateOf(t, p).Smooth {
		t.Fatal("the refusal was not read as a small burst; the test proves nothing")
	}
	if plan := p.Plan(t0.Add(time.Minute)); plan.MaxInFlight != 0 {
		t.Fatalf("a refusal at a drained bucket bounded what is in flight: %d", plan.MaxInFlight)
	}
}

func TestProbeLatencyBoundPlanWhereRefusalsCostIsBusyOnlyWhereTheConnectionsBind(t *testing.T) {
	// At 500 ms six connections carry 720 requests a minute. A busy chunk
	// goes at their pace, above the rate: where a refusal costs a hold or
	// a block, or the upstream paces clients itself, only if even that
	// pace keeps under the rate cruised at (BusyPacedShare of it); where
	// the upstream paces clients, only at one request an item too.
	for _, tc := range []struct {
		name               string
		sub                int
		careful, penalized bool
		ceiling            float64
		busy               bool
	}{
		{"Retry-After, ceiling far above the connections", 1, true, true, 1000, true}, // cruise 970; 0.8 × 970 = 776 ≥ 720
		{"Retry-After, ceiling near the connections", 1, true, true, 800, false},      // cruise 776; 0.8 × 776 = 621 < 720
		{"Retry-After, two requests an item", 2, true, true, 2000, false},             // an item started sends its second after a refusal
		{"Retry-After, no ceiling learned", 1, true, true, 0, false},
		{"blocked before, ceiling near the connections", 1, false, true, 800, false},
		{"blocked before, ceiling far above, two requests an item", 2, false, true, 2000, true},
		{"a refusal costs an item", 1, false, false, 800, true}, // a busy chunk refused costs a few items
	} {
		p := probeWith(t, tc.sub, fields{"rate": 700, "ceiling": tc.ceiling, "phase": pacing.PhaseRecover,
			"careful": tc.careful, "penalized": tc.penalized, "hold_ms": 30_000, "latency_ms": 500})
		plan := p.Plan(t0)
		if busy := plan.ChunkItems == plan.Items && plan.ChunkPause == 0 && plan.Items*tc.sub >= 720; busy != tc.busy {
			t.Errorf("%s: plan %+v, busy %v, want %v", tc.name, plan, busy, tc.busy)
		}
		if !tc.busy && tc.careful && plan.ChunkItems*tc.sub > pacing.MaxConnections {
			t.Errorf("%s: chunks of %d items at %d requests each, want one round of the connections", tc.name, plan.ChunkItems, tc.sub)
		}
	}
}
