package pacing

import (
	"encoding/json"
	"testing"
	"time"
)

// tickOf builds a tick of n items × sub requests of kind k, each taking lat.
func tickOf(n, sub int, k Kind, at time.Time, lat time.Duration) []Outcome {
	var out []Outcome
	for i := 0; i < n; i++ {
		for j := 0; j < sub; j++ {
			out = append(out, Outcome{Item: i, SentAt: at, DoneAt: at.Add(lat), Kind: k, Remaining: -1})
		}
	}
	return out
}

func TestProbeLatencyBoundPlanKeepsConnectionsBusy(t *testing.T) {
	p := NewProbe(Config{SubrequestsPerItem: 6})
	p.LatencyMs = 2500 // six connections carry 144 requests a minute
	p.Rate = 200
	plan := p.Plan(t0)
	// A minute of the connections' work (144 requests = 24 items) in one chunk.
	if plan.Items != 24 || plan.ChunkItems != 24 || plan.ChunkPause != 0 {
		t.Fatalf("latency-bound plan %+v, want 24 items in one chunk", plan)
	}
	// Well under what the connections carry, the rate paces as before.
	p.Rate = 60
	if plan := p.Plan(t0); plan.Items != 2 || plan.ChunkItems != 1 {
		t.Fatalf("rate-bound plan %+v, want 2 items (60/min × 10 s / 6) in chunks of 1", plan)
	}
}

func TestProbeOldStateDecodes(t *testing.T) {
	// State stored before issue 18 (no newer fields) must still decode and run.
	old := `{"sub":4,"latency_ms":130,"not_before":0,"last_wake":0,"last_plan_requests":40,
		"rate":540,"ceiling":600,"phase":"plateau","phase_since":1,"last_throttle":1,"streak":0,
		"probe_ticks":0,"backoff_ms":0,"blocks":0,"penalized":false,"careful":false,"history":[{"end":1,"ok":40}]}`
	var p Probe
	if err := json.Unmarshal([]byte(old), &p); err != nil {
		t.Fatal(err)
	}
	if p.Rate != 540 || p.Ceiling != 600 || p.Phase != PhasePlateau || p.Sub != 4 {
		t.Fatalf("decoded %+v", p)
	}
	if plan := p.Plan(t0); plan.Items == 0 {
		t.Fatal("decoded old state plans nothing")
	}
	p.Done(t0.Add(10*time.Second), tickOf(1, 4, KindOK, t0, 100*time.Millisecond))
}
