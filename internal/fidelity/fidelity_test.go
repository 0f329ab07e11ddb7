package fidelity

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

var steps = Scenario{Name: "steps", DurationS: 360, Phases: []Phase{
	{AtS: 0, CapacityPerMin: 120, Burst: 20, LatencyMS: 20},
	{AtS: 180, CapacityPerMin: 480, Burst: 20, LatencyMS: 20},
}}

// A client served at exactly the limit, reaching the new one 90 s after
// the step, sampled every 5 s.
func perfectSamples() []Sample {
	var out []Sample
	var ok int64
	for s := 0; s <= 360; s += 5 {
		out = append(out, Sample{At: time.Duration(s) * time.Second, OK: ok})
		rate := int64(10) // 120/min
		if s >= 180+30 {
			rate = 40 // 480/min, from 30 s after the step
		}
		ok += rate
	}
	return out
}

func TestLiveGoodputAndRecovery(t *testing.T) {
	r := Live(steps, perfectSamples())
	if len(r.Phases) != 2 || r.Phases[0].OK != 360 || r.Phases[1].OK != 6*10+30*40 {
		t.Fatalf("phases %+v", r.Phases)
	}
	// Phase 0 allowed 120/min × 3 min + the 20 of the first burst.
	if got := r.Phases[0].Goodput; got < 0.94 || got > 0.95 {
		t.Fatalf("phase 0 goodput %.3f, want 360/380", got)
	}
	// The first 60 s window at ≥ 90% of 480/min ends 30 s + 60 s × (0.9...) after the step: 85 s.
	if len(r.RecoveryS) != 1 || r.RecoveryS[0] < 80 || r.RecoveryS[0] > 90 {
		t.Fatalf("recovery %v", r.RecoveryS)
	}
	// Refusals in every window: never recovered.
	samples := perfectSamples()
	for i := range samples {
		samples[i].Refused = int64(i)
	}
	if r := Live(steps, samples); r.RecoveryS[0] != -1 || r.Refused <= 0 {
		t.Fatalf("with refusals: recovery %v refused %.3f", r.RecoveryS, r.Refused)
	}
}

func TestSimulatedFromTraceAndWithin(t *testing.T) {
	out, _ := json.Marshal(map[string]any{"goodput_ratio": 0.9, "refused_ratio": 0.01, "recovery_s": []int{85},
		"trace": []map[string]any{{"minute": 0, "ok": 130}, {"minute": 1, "ok": 120}, {"minute": 2, "ok": 110, "refused": 3},
			{"minute": 3, "ok": 200}, {"minute": 4, "ok": 470}, {"minute": 5, "ok": 480}}})
	sim, err := Simulated(steps, out)
	if err != nil || sim.Phases[0].OK != 360 || sim.Phases[0].Refused != 3 || sim.Phases[1].OK != 1150 || sim.RecoveryS[0] != 85 {
		t.Fatalf("%+v %v", sim, err)
	}
	live := Live(steps, perfectSamples())
	live.Goodput = sim.Goodput * 1.1
	if !Within(live, sim) {
		t.Fatalf("within 15%%: live %+v sim %+v", live.Phases, sim.Phases)
	}
	live.Phases[1].Goodput = sim.Phases[1].Goodput * 0.8
	if Within(live, sim) {
		t.Fatal("a phase 20% off counted as within 15%")
	}
	var b bytes.Buffer
	Table(&b, steps, live, sim)
	if !strings.Contains(b.String(), "prediction holds") || !strings.Contains(b.String(), "no") {
		t.Fatalf("table:\n%s", b.String())
	}
	if _, err := Simulated(Scenario{DurationS: 100, Phases: []Phase{{AtS: 0}, {AtS: 90}}}, out); err == nil {
		t.Fatal("a phase off the minute grain accepted")
	}
}
