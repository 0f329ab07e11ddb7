package pacing_test

import (
	"math"
	"testing"
	"time"

	"storecrawl/durable/pacing"
)

func TestProbeOneItemRefusedAfterAServedRefusalIsADrainedBucket(t *testing.T) {
	// At 1 request an item a tick right after a refused tick that served
	// some is one request; at a low capacity it meets the bucket that tick
	// emptied. Not a block: the next tick waits DrainGap for a token.
	p := probeWith(t, 1, fields{"rate": 180, "ceiling": 200, "phase": pacing.PhaseRecover, "streak": 1,
		"last_throttle": ms(-time.Second), "latency_ms": 100})
	plan := p.Plan(t0)
	out := tickOf(min(plan.ChunkItems, plan.Items), 1, pacing.KindThrottled, t0, 100*time.Millisecond)
	next := p.Done(t0.Add(100*time.Millisecond), out)
	if s := stateOf(t, p); s.Phase == pacing.PhaseBlocked || s.Penalized || s.Blocks != 0 {
		t.Fatalf("one refused item after a served refusal was taken for a block: %+v", s)
	}
	if next.Before(t0.Add(100*time.Millisecond + dp.DrainGap)) {
		t.Fatalf("next tick at %v, want DrainGap (%v) after the drained one", next.Sub(t0), dp.DrainGap)
	}
	// Refused again after the wait: a block after all. The cuts the
	// drained tick made measured nothing and are undone.
	plan = p.Plan(next)
	p.Done(next.Add(100*time.Millisecond), tickOf(min(plan.ChunkItems, plan.Items), 1, pacing.KindThrottled, next, 100*time.Millisecond))
	if s := stateOf(t, p); s.Phase != pacing.PhaseBlocked || s.Blocks != 1 || s.Ceiling != 200 || s.Rate != 180 {
		t.Fatalf("refused again after DrainGap: %+v, want blocked with ceiling 200 and rate 180 kept", s)
	}
}

func TestProbeRefusalsInARowBoundTheCapacity(t *testing.T) {
	// Refused 2 s after the last refusal with one request served since:
	// the bucket held under a token at both, so it refilled under two in
	// 2 s: the capacity is under 60/min, far under the ceiling of 200
	// that slow start's burst carried.
	p := probeWith(t, 1, fields{"rate": 180, "ceiling": 200, "phase": pacing.PhaseRecover, "streak": 1,
		"last_throttle": ms(-2 * time.Second), "latency_ms": 100,
		"history": []fields{{"end": ms(-2 * time.Second), "ok": 10}}})
	p.Plan(t0)
	out := tickOf(2, 1, pacing.KindOK, t0.Add(-200*time.Millisecond), 100*time.Millisecond)
	out[1].Kind = pacing.KindThrottled
	p.Done(t0, out)
	s := stateOf(t, p)
	if math.Abs(s.Ceiling-60) > 0.01 || math.Abs(s.Rate-60*dp.Beta) > 0.01 {
		t.Fatalf("ceiling %v rate %v, want 60 (two in 2 s) and %v", s.Ceiling, s.Rate, 60*dp.Beta)
	}
	// Near the ceiling the bound is not taken: a bucket that refusals
	// drained below empty makes it too low, and the usual cut is close.
	p = probeWith(t, 1, fields{"rate": 100, "ceiling": 110, "phase": pacing.PhaseRecover, "streak": 1,
		"last_throttle": ms(-2 * time.Second), "latency_ms": 100})
	p.Plan(t0)
	p.Done(t0, out)
	if s := stateOf(t, p); s.Ceiling != 100 {
		t.Fatalf("ceiling %v, want the refused rate (100): the bound (60) is over half of it", s.Ceiling)
	}
}

func TestProbeRefillBoundCountsWhatFailedAfterTheLimit(t *testing.T) {
	// A 5xx or a timeout passed the limit before it failed: it took a
	// token as a served request does. One served, two 5xx and a refusal
	// 14 s after the last refusal (as in steady-20#132 at 14.3/min under
	// a slow-start tick spacing): four tokens, 17/min, no bound under half
	// the ceiling of 20.2; the served one alone would bound it at 8.4
	// (≈ 2 in 14 s), far under the capacity.
	p := probeWith(t, 1, fields{"rate": 20.2, "ceiling": 20.2, "phase": pacing.PhaseRecover, "streak": 1,
		"last_throttle": ms(-14 * time.Second), "latency_ms": 100})
	p.Plan(t0)
	out := tickOf(4, 1, pacing.KindServerError, t0.Add(-9*time.Second), 3*time.Second)
	out[0].Kind, out[3].Kind = pacing.KindOK, pacing.KindThrottled
	p.Done(t0, out)
	if s := stateOf(t, p); s.Ceiling < 14 {
		t.Fatalf("ceiling %v: the 5xx answers were not counted as tokens taken", s.Ceiling)
	}
	// The same tick with the failures served as refusals leaves one
	// token taken besides this tick's: the bound holds.
	p = probeWith(t, 1, fields{"rate": 20.2, "ceiling": 20.2, "phase": pacing.PhaseRecover, "streak": 1,
		"last_throttle": ms(-14 * time.Second), "latency_ms": 100})
	p.Plan(t0)
	out = tickOf(2, 1, pacing.KindOK, t0.Add(-9*time.Second), 3*time.Second)
	out[1].Kind = pacing.KindThrottled
	p.Done(t0, out)
	if s := stateOf(t, p); s.Ceiling > 9 {
		t.Fatalf("ceiling %v, want the refill bound (2 in 14 s ≈ 8.6/min)", s.Ceiling)
	}
}
