package pacing_test

import (
	"math"
	"testing"
	"time"

	"storecrawl/durable/pacing"
)

func TestProbeBlockProbesOnWholeMinutesSinceItBegan(t *testing.T) {
	// The first refusal ends its tick at t0; everything is refused from
	// then on (a 5-minute block). The probes are timed from t0, not from
	// when the block was recognised: 15 s, 30 s, 1 min, then every whole
	// minute, so the block's end is found the moment it lifts.
	p := probeWith(t, sub, fields{"rate": 300, "ceiling": 300, "phase": pacing.PhaseProbe,
		"history": []fields{{"end": ms(-30 * time.Second), "ok": 100}, {"end": ms(-10 * time.Second), "ok": 100}}})
	refused := func(at time.Time) time.Time {
		p.Plan(at)
		return p.Done(at.Add(150*time.Millisecond), tickOf(1, 4, pacing.KindThrottled, at, 100*time.Millisecond))
	}
	p.Plan(t0.Add(-time.Second))
	next := p.Done(t0, tickOf(1, 4, pacing.KindThrottled, t0.Add(-time.Second), 100*time.Millisecond))
	var got []time.Duration
	for i := 0; i < 7; i++ {
		next = refused(next)
		got = append(got, next.Sub(t0))
	}
	want := []time.Duration{15, 30, 60, 120, 180, 240, 300}
	for i, w := range want {
		if got[i] != w*time.Second {
			t.Fatalf("probes at %v after the first refusal, want %v seconds", got, want)
		}
	}
	if h := p.HoldUntil(); !h.Equal(next) {
		t.Fatalf("hold until %v, want the next probe %v", h.Sub(t0), next.Sub(t0))
	}
	// The block lifts at 5 min: the probe then is served, and the block's
	// length is measured from its first refusal.
	p.Plan(next)
	p.Done(next.Add(150*time.Millisecond), tickOf(1, 4, pacing.KindOK, next, 100*time.Millisecond))
	if s := stateOf(t, p); s.Phase != pacing.PhaseRecover || s.HoldMs != (5*time.Minute+150*time.Millisecond).Milliseconds() {
		t.Fatalf("after the block: phase %s hold %d ms", s.Phase, s.HoldMs)
	}
}

// bracketStepAfter starts p in a bracket at ceiling (a step to 2×ceiling
// just refused at t0) and runs clean ticks: how long until the next step up.
func bracketStepAfter(t *testing.T, ceiling float64) time.Duration {
	t.Helper()
	p := probeWith(t, sub, fields{"rate": ceiling, "ceiling": ceiling, "refused": 2 * ceiling,
		"phase": pacing.PhaseBracket, "streak": 1, "last_throttle": ms(0)})
	now := t0
	for i := 0; i < 100; i++ {
		_, next := runTick(p, now, pacing.KindOK)
		if stateOf(t, p).Rate > ceiling {
			return now.Sub(t0)
		}
		now = next
	}
	t.Fatalf("no bisection step at ceiling %v: %+v", ceiling, stateOf(t, p))
	return 0
}

func TestProbeBracketRestScalesWithTheRefusalsShare(t *testing.T) {
	// At 1200/min one refused item (4 requests) is 2% of 12 s of traffic:
	// the next bisection step comes after about a tick, not half a minute.
	if d := bracketStepAfter(t, 1200); d >= 2*pacing.TickInterval {
		t.Errorf("ceiling 1200/min: next bisection step after %v, want about a tick", d)
	}
	// At 240/min the rest stays BracketRest: refusals must not bunch.
	if d := bracketStepAfter(t, 240); d < dp.BracketRest {
		t.Errorf("ceiling 240/min: next bisection step after %v, want ≥ %v", d, dp.BracketRest)
	}
}

func TestProbeRefusalAtTheFloorAfterARefusedStepEndsTheBracket(t *testing.T) {
	p := probeWith(t, sub, fields{"rate": 1400, "ceiling": 1000, "refused": 2000, "phase": pacing.PhaseBracket})
	_, now := runTick(p, t0, pacing.KindThrottled) // the step at 1400 is refused
	if s := stateOf(t, p); s.Phase != pacing.PhaseBracket || s.Rate != 1000 || s.Refused != 1400 {
		t.Fatalf("refused bisection step: %+v", s)
	}
	// The next tick at the floor is refused too: the step drained the
	// bucket. The bracket ends at the floor; no cut for a falling capacity.
	p.Plan(now)
	p.Done(now.Add(time.Second), append(tickOf(2, 4, pacing.KindOK, now, 100*time.Millisecond),
		tickOf(1, 4, pacing.KindThrottled, now, 100*time.Millisecond)...))
	if s := stateOf(t, p); s.Phase != pacing.PhaseRecover || s.Refused != 0 || s.Ceiling != 1000 || math.Abs(s.Rate-1000*dp.Beta) > 1e-9 {
		t.Fatalf("refused at the floor after a refused step: phase %s ceiling %v rate %v refused %v, want recover at %v under 1000",
			s.Phase, s.Ceiling, s.Rate, s.Refused, 1000*dp.Beta)
	}
}

func TestProbeOutageKeepsAnItemATickAndClimbsBackToTheCeiling(t *testing.T) {
	// An outage (every answer a 5xx) in the middle of a probe: the rate is
	// cut, but no lower than an item a tick, so its end is seen within a
	// tick; once served, the rate climbs back to the ceiling at once
	// rather than probing up from the bottom.
	p := probeWith(t, sub, fields{"rate": 630, "ceiling": 600, "phase": pacing.PhaseProbe})
	now := t0
	for i := 0; i < 40; i++ {
		_, now = runTick(p, now, pacing.KindServerError)
	}
	s := stateOf(t, p)
	if floor := 4 * 6.0; s.Rate != floor {
		t.Fatalf("after a long outage: rate %v, want an item a tick (%v/min)", s.Rate, floor)
	}
	if s.Ceiling != 600 || s.Phase != pacing.PhaseRecover || len(s.History) != 0 {
		t.Fatalf("after an outage: ceiling %v phase %s history %v, want 600, recover and no history", s.Ceiling, s.Phase, s.History)
	}
	runTick(p, now, pacing.KindOK)
	if r := stateOf(t, p).Rate; r < dp.Beta*600 {
		t.Fatalf("first served tick after the outage: rate %v, want back near the ceiling 600", r)
	}
	// A refusal among an overloaded tick's answers is not a rate signal.
	q := probeWith(t, sub, fields{"rate": 600, "ceiling": 600, "phase": pacing.PhasePlateau})
	q.Plan(t0)
	q.Done(t0.Add(time.Second), append(tickOf(5, 4, pacing.KindServerError, t0, 100*time.Millisecond), tickOf(1, 4, pacing.KindThrottled, t0, 100*time.Millisecond)...))
	if s := stateOf(t, q); s.Ceiling != 600 || s.Streak != 0 {
		t.Fatalf("refusal in an overloaded tick: ceiling %v streak %d, want 600 and no streak", s.Ceiling, s.Streak)
	}
}

func TestProbeOutageInSlowStartKeepsAnItemATick(t *testing.T) {
	// An outage before any refusal (no ceiling learned): the floor is an
	// item a tick too, not the slowest rate, so the outage's end is seen
	// within a tick and slow start climbs back from there (outage#168 at 1
	// request per item: at an item a minute it took 314 s to get back,
	// 0.80 of the best; 166 s and 0.92 now).
	p := probeWith(t, sub, fields{"rate": 2000, "phase": pacing.PhaseSlowStart})
	now := t0
	for i := 0; i < 40; i++ {
		_, now = runTick(p, now, pacing.KindServerError)
	}
	s := stateOf(t, p)
	if floor := sub * 6.0; s.Rate != floor || s.Phase != pacing.PhaseSlowStart || s.Ceiling != 0 {
		t.Fatalf("after a long outage in slow start: rate %v phase %s ceiling %v, want an item a tick (%v/min), slow start, none", s.Rate, s.Phase, s.Ceiling, floor)
	}
	if plan, _ := runTick(p, now, pacing.KindOK); plan.Items != 1 {
		t.Fatalf("the tick after the outage sends %d items, want one", plan.Items)
	}
	if r := stateOf(t, p).Rate; r != sub*6*dp.SlowStartGrow {
		t.Fatalf("first served tick after the outage: rate %v, want slow start's next step %v", r, sub*6*dp.SlowStartGrow)
	}
}

func TestProbeBurstAwareStepsAndRefusals(t *testing.T) {
	// With the burst known (20 requests), the first probe step asks a
	// burst beyond the ceiling over a tick (20 in 10 s at 300/min: +40%),
	// the next grows from there.
	p := probeWith(t, sub, fields{"rate": 300, "ceiling": 300, "burst": 20, "phase": pacing.PhaseProbe, "phase_since": ms(0)})
	_, now := runTick(p, t0, pacing.KindOK)
	if r := stateOf(t, p).Rate; math.Abs(r-420) > 1e-9 {
		t.Fatalf("first burst-aware step to %v, want 420", r)
	}
	runTick(p, now, pacing.KindOK)
	if r := stateOf(t, p).Rate; math.Abs(r-840) > 1e-9 {
		t.Fatalf("second step to %v, want 840 (the step tripled, capped at ×2)", r)
	}

	// Refused with nothing proven above the ceiling: no bracket (the step
	// was sized beyond the burst, not near the capacity); the ceiling
	// moves at most a first step up; the probe measured the burst (served
	// since it began beyond the 300/min it began from: 170 - 150).
	q := probeWith(t, sub, fields{"rate": 420, "ceiling": 300, "burst": 15, "phase": pacing.PhaseProbe, "probe_ticks": 1,
		"probe_at": ms(-30 * time.Second), "probe_from": 300, "probe_ok": 162,
		"history": []fields{{"end": ms(-20 * time.Second), "ok": 50}, {"end": ms(-10 * time.Second), "ok": 50}}})
	out := append(tickOf(2, 4, pacing.KindOK, t0.Add(-5*time.Second), 100*time.Millisecond),
		tickOf(1, 4, pacing.KindThrottled, t0.Add(-time.Second), 100*time.Millisecond)...)
	q.Done(t0, out)
	if s := stateOf(t, q); s.Phase != pacing.PhaseRecover || s.Ceiling != 300*(1+dp.FirstStep) || math.Abs(s.Burst-20) > 1e-9 {
		t.Fatalf("refused burst-sized step: phase %s ceiling %v burst %v, want recover, %v, 20",
			s.Phase, s.Ceiling, s.Burst, 300*(1+dp.FirstStep))
	}

	// Refused after serving 100 requests in 5 s: beyond the burst that
	// proves 960/min, far above the ceiling of 300: the capacity rose, and
	// the bracket starts from what was proven.
	r := probeWith(t, sub, fields{"rate": 2000, "ceiling": 300, "burst": 20, "phase": pacing.PhaseProbe, "probe_ticks": 3})
	out = append(tickOf(25, 4, pacing.KindOK, t0, 100*time.Millisecond), tickOf(1, 4, pacing.KindThrottled, t0, 100*time.Millisecond)...)
	r.Done(t0.Add(5*time.Second), out)
	if s := stateOf(t, r); s.Phase != pacing.PhaseBracket || math.Abs(s.Ceiling-960) > 1e-6 || s.Refused != 2000 {
		t.Fatalf("refused after proving 960/min: phase %s ceiling %v refused %v, want the bracket [960, 2000]",
			s.Phase, s.Ceiling, s.Refused)
	}
}

func TestProbeSmallBurstSmoothsBeforeCuttingTheRate(t *testing.T) {
	// Slow start at 60/min sends 3 items (12 requests) at once; a burst-5
	// bucket serves 5 and refuses the rest. That is too many at once, not
	// too fast: the rate is kept, no ceiling is learned, and from then on
	// a chunk is one item, the next tick a chunk's spacing after the last.
	p := pacing.NewProbe(pacing.Config{SubrequestsPerItem: sub})
	plan := p.Plan(t0)
	if plan.ChunkItems != 3 {
		t.Fatalf("slow start: chunks of %d items, want 3", plan.ChunkItems)
	}
	out := tickOf(2, 4, pacing.KindOK, t0, 100*time.Millisecond)
	for i := 5; i < len(out); i++ {
		out[i].Kind = pacing.KindThrottled
	}
	next := p.Done(t0.Add(100*time.Millisecond), out)
	if s := stateOf(t, p); !s.Smooth || s.Ceiling != 0 || s.Rate != dp.StartRate || s.Phase != pacing.PhaseSlowStart || s.Streak != 0 {
		t.Fatalf("a burst-sized refusal was read as the rate: %+v", s)
	}
	if earliest := t0.Add(4 * time.Second); next.Before(earliest) { // 4 requests at 1/s after the last chunk
		t.Fatalf("next tick at %v, want no earlier than %v", next.Sub(t0), earliest.Sub(t0))
	}
	if plan := p.Plan(next); plan.ChunkItems != 1 {
		t.Fatalf("smooth: chunks of %d items, want 1", plan.ChunkItems)
	}
	// Refused again, now smooth: a rate signal as before.
	p.Done(next.Add(100*time.Millisecond), tickOf(1, 4, pacing.KindThrottled, next, 100*time.Millisecond))
	if s := stateOf(t, p); s.Ceiling == 0 || s.Phase != pacing.PhaseRecover {
		t.Fatalf("a refusal once smooth is a rate signal: ceiling %v phase %s", s.Ceiling, s.Phase)
	}
}
