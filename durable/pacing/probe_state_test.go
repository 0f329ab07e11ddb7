package pacing_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"storecrawl/durable/pacing"
)

func TestPausesAreSizedByTheSlowestAnswer(t *testing.T) {
	// Answers averaging 120 ms but up to 160 ms: a chunk waits for its
	// slowest, so the pause after it is shorter by the difference.
	p := probeWith(t, sub, fields{"rate": 1200, "phase": pacing.PhaseRecover})
	out := append(tickOf(1, 4, pacing.KindOK, t0, 80*time.Millisecond), tickOf(1, 4, pacing.KindOK, t0, 160*time.Millisecond)...)
	p.Done(t0.Add(time.Second), out)
	if s := stateOf(t, p); s.SlowMs != 160 {
		t.Fatalf("slowest answer %v ms, want 160", s.SlowMs)
	}
	at := fields{"rate": 1200, "phase": pacing.PhaseRecover, "latency_ms": 120}
	slow := probeWith(t, sub, with(at, fields{"slow_ms": 160})).Plan(t0)
	mean := probeWith(t, sub, at).Plan(t0)
	if slow.ChunkItems != mean.ChunkItems || slow.ChunkPause >= mean.ChunkPause {
		t.Fatalf("pause %v with the slowest answer, %v with the mean: want shorter", slow.ChunkPause, mean.ChunkPause)
	}
	// An upstream that paces clients itself gets one-round chunks: the
	// mean latency sizes them.
	careful := probeWith(t, sub, with(at, fields{"careful": true, "slow_ms": 160})).Plan(t0)
	if again := probeWith(t, sub, with(at, fields{"careful": true})).Plan(t0); careful.ChunkPause != again.ChunkPause {
		t.Fatalf("careful pause %v, want %v (mean latency)", careful.ChunkPause, again.ChunkPause)
	}
}

// with is fs with more fields.
func with(fs, more fields) fields {
	out := fields{}
	for _, m := range []fields{fs, more} {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

func TestCarefulPausesAreSizedByEachChunksSlowestAnswer(t *testing.T) {
	// One-round chunks whose answers average 120 ms but whose slowest
	// takes 150 ms: each chunk lasts 150 ms, so the pause is 30 ms shorter
	// than the mean latency would make it, and the sent rate is the rate.
	p := probeWith(t, sub, fields{"rate": 1000, "phase": pacing.PhaseRecover, "careful": true, "latency_ms": 120})
	plan := p.Plan(t0)
	if plan.ChunkItems != 1 {
		t.Fatalf("careful chunks of %d items, want 1", plan.ChunkItems)
	}
	var out []pacing.Outcome
	for i := 0; i < plan.Items; i++ {
		at := t0.Add(time.Duration(i) * time.Second)
		for _, lat := range []time.Duration{90, 120, 120, 150} {
			out = append(out, pacing.Outcome{Item: i, SentAt: at, DoneAt: at.Add(lat * time.Millisecond), Kind: pacing.KindOK, Remaining: -1})
		}
	}
	p.Done(t0.Add(10*time.Second), out)
	if s := stateOf(t, p); s.RoundMs != 150 || s.Rate != 1000 {
		t.Fatalf("chunk span %v ms at %v/min, want 150 at 1000", s.RoundMs, s.Rate)
	}
	again := p.Plan(t0)
	spacing := time.Duration(4 / (1000.0 / 60) * float64(time.Second))
	if want := spacing - 150*time.Millisecond; again.ChunkPause != want {
		t.Fatalf("pause %v, want %v (spacing %v less the chunk's 150 ms)", again.ChunkPause, want, spacing)
	}
}

func TestProbeOldStateDecodes(t *testing.T) {
	// State stored by an older version (no newer fields) must still decode and run.
	old := `{"sub":4,"latency_ms":130,"not_before":0,"last_wake":0,"last_plan_requests":40,
		"rate":540,"ceiling":600,"phase":"plateau","phase_since":1,"last_throttle":1,"streak":0,
		"probe_ticks":0,"backoff_ms":0,"blocks":0,"penalized":false,"careful":false,"history":[{"end":1,"ok":40}]}`
	var p pacing.Probe // decoded without NewProbe: the default tuning
	if err := json.Unmarshal([]byte(old), &p); err != nil {
		t.Fatal(err)
	}
	if s := stateOf(t, &p); s.Rate != 540 || s.Ceiling != 600 || s.Phase != pacing.PhasePlateau || s.V != 1 {
		t.Fatalf("decoded %+v", s)
	}
	if plan := p.Plan(t0); plan.Items == 0 {
		t.Fatal("decoded old state plans nothing")
	}
	p.Done(t0.Add(10*time.Second), tickOf(1, 4, pacing.KindOK, t0, 100*time.Millisecond))
}

// capturedState is one state the previous release stored in a simulated
// run, with the plan it made from it at its next wake.
type capturedState struct {
	Scenario string          `json:"scenario"`
	State    json.RawMessage `json:"state"`
	WakeMs   int64           `json:"wake_unix_ms"`
	Plan     struct {
		Items        int   `json:"items"`
		ChunkItems   int   `json:"chunk_items"`
		ChunkPauseNs int64 `json:"chunk_pause_ns"`
		NotBeforeMs  int64 `json:"not_before_unix_ms"`
	} `json:"plan"`
}

func TestProbeCapturedOldStatesDecodeWhole(t *testing.T) {
	files, err := filepath.Glob("testdata/probe_state_v0/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no captured states (%v)", err)
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var c capturedState
		if err := json.Unmarshal(raw, &c); err != nil {
			t.Fatal(err)
		}
		p := pacing.NewProbe(pacing.Config{SubrequestsPerItem: sub})
		if err := json.Unmarshal(c.State, p); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		// Every stored field comes back as it was, with the version added.
		again, _ := json.Marshal(p)
		var was, now map[string]any
		_ = json.Unmarshal(c.State, &was)
		_ = json.Unmarshal(again, &now)
		if now["v"] != float64(1) {
			t.Errorf("%s: stored again as version %v, want 1", f, now["v"])
		}
		delete(now, "v")
		a, _ := json.Marshal(was)
		b, _ := json.Marshal(now)
		if !bytes.Equal(a, b) {
			t.Errorf("%s: stored again\n %s\nwas\n %s", f, b, a)
		}
		// And the plan at the next wake is the one the old release made.
		plan := p.Plan(time.UnixMilli(c.WakeMs))
		if plan.Items != c.Plan.Items || plan.ChunkItems != c.Plan.ChunkItems ||
			plan.ChunkPause.Nanoseconds() != c.Plan.ChunkPauseNs || plan.NotBefore.UnixMilli() != c.Plan.NotBeforeMs {
			t.Errorf("%s: plan %+v, the old release planned %+v", f, plan, c.Plan)
		}
	}
}

func TestProbeBlockStoredWithoutItsStartIsTimedFromThePhase(t *testing.T) {
	// A block stored before its start was: the probes are timed from when
	// the phase began, as that release did (15 s after it).
	p := probeWith(t, sub, fields{"rate": 200, "ceiling": 200, "phase": pacing.PhaseBlocked, "phase_since": ms(0),
		"last_throttle": ms(0), "streak": 1, "blocks": 1, "penalized": true})
	at := t0.Add(11 * time.Second)
	p.Plan(at)
	if next := p.Done(at.Add(150*time.Millisecond), tickOf(1, 4, pacing.KindThrottled, at, 100*time.Millisecond)); !next.Equal(t0.Add(15 * time.Second)) {
		t.Fatalf("next probe of the block %v after the phase began, want 15 s", next.Sub(t0))
	}
}

func TestProbeNewerStateIsRefused(t *testing.T) {
	p := pacing.NewProbe(pacing.Config{SubrequestsPerItem: sub})
	if err := json.Unmarshal([]byte(`{"v":2,"rate":5}`), p); err == nil {
		t.Fatal("a state of a newer version decoded")
	}
}
