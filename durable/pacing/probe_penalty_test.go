package pacing_test

import (
	"math"
	"testing"
	"time"

	"storecrawl/durable/pacing"
)

// penalised is a stored state where refusals cost a 30 s hold.
func penalised(fs fields) fields {
	out := fields{"careful": true, "penalized": true, "hold_ms": 30_000}
	for k, v := range fs {
		out[k] = v
	}
	return out
}

func TestProbePenalisedCycleTimedByTheRefusalsCost(t *testing.T) {
	p := probeWith(t, sub, fields{"rate": 200, "ceiling": 215, "phase": pacing.PhasePlateau, "careful": true})
	now := t0
	// A refusal carrying Retry-After: 30 s makes refusals expensive.
	raTick(p, now, 2, 30*time.Second)
	if s := stateOf(t, p); !s.Penalized || s.HoldMs != 30_000 {
		t.Fatalf("Retry-After 30 s: penalized %v hold %d ms", s.Penalized, s.HoldMs)
	}
	// The wait between steps is at least two holds, doubled by the refusal.
	if w := cycle(p); w != 2*time.Duration(dp.PenaltyHolds)*30*time.Second {
		t.Fatalf("wait after a refused step %v, want %v", w, 2*time.Duration(dp.PenaltyHolds)*30*time.Second)
	}
	// Clean steps: each halves the wait (down to two holds) and grows the step.
	var rates []float64
	for i := 0; i < 200 && len(rates) < 4; i++ {
		now = now.Add(10 * time.Second)
		before := stateOf(t, p).Rate
		runTick(p, now, pacing.KindOK)
		if s := stateOf(t, p); s.Phase == pacing.PhaseRecover && s.Rate > before && s.PenaltySteps > len(rates) {
			rates = append(rates, s.Rate/before-1)
		}
	}
	if len(rates) < 3 || math.Abs(rates[0]-0.05) > 1e-9 || math.Abs(rates[1]-0.10) > 1e-9 || math.Abs(rates[2]-0.20) > 1e-9 {
		t.Fatalf("clean penalised steps %v, want 5%%, 10%%, 20%%", rates)
	}
	if w := cycle(p); w != time.Duration(dp.PenaltyHolds)*30*time.Second {
		t.Fatalf("wait after clean steps %v, want the floor %v", w, time.Duration(dp.PenaltyHolds)*30*time.Second)
	}
}

func TestProbePenalisedRefusedStepResumesAtTheLastCleanRate(t *testing.T) {
	p := probeWith(t, sub, penalised(fields{"rate": 200, "ceiling": 215, "phase": pacing.PhaseProbe,
		"penalty_steps": 1})) // the step before held
	_, now := runTick(p, t0, pacing.KindOK) // a 5%… step above 200
	if s := stateOf(t, p); s.Rate <= 200 || s.Clean != 200 {
		t.Fatalf("penalised step: rate %v clean %v, want a step above 200 from 200", s.Rate, s.Clean)
	}
	waitBefore := cycle(p)
	now = raTick(p, now, 3, 30*time.Second)
	// The refusal already cost a 30 s hold: resume at the rate that held,
	// not 0.9× under a ceiling estimate.
	if s := stateOf(t, p); s.Rate != 200 || s.Ceiling*dp.PenaltyMargin != 200 {
		t.Fatalf("after a refused step: rate %v ceiling %v, want to cruise at 200", s.Rate, s.Ceiling)
	}
	if w := cycle(p); w != 2*waitBefore {
		t.Fatalf("wait after a refused step %v, want doubled %v", w, 2*waitBefore)
	}
	// The next step is the first after a refusal: it does not halve the
	// wait (no clean step behind it), so refused steps grow ever rarer.
	for stateOf(t, p).Phase != pacing.PhaseProbe {
		_, now = runTick(p, now, pacing.KindOK)
	}
	runTick(p, now, pacing.KindOK)
	if w := cycle(p); w != 2*waitBefore {
		t.Fatalf("wait after the first step since a refusal %v, want still %v", w, 2*waitBefore)
	}
}

func TestProbePenaltyWaitAfterABlockSpansMoreHolds(t *testing.T) {
	hold := fields{"penalized": true, "hold_ms": (5 * time.Minute).Milliseconds()}
	if w := cycle(probeWith(t, sub, hold)); w != time.Duration(dp.PenaltyHolds)*5*time.Minute {
		t.Fatalf("Retry-After hold of 5 min: wait %v", w)
	}
	hold["blocks"] = 1
	if w := cycle(probeWith(t, sub, hold)); w != time.Duration(dp.PenaltyBlockHolds)*5*time.Minute {
		t.Fatalf("block of 5 min: wait %v", w)
	}
}

func TestProbePenaltyWaitStopsDoublingAtPenaltyMaxHolds(t *testing.T) {
	hold := 30 * time.Second
	most := time.Duration(dp.PenaltyMaxHolds) * hold
	// Refused steps in a row: each doubles the wait between steps, up to
	// PenaltyMaxHolds Retry-After holds and no further.
	p := probeWith(t, sub, penalised(fields{"rate": 200, "ceiling": 215, "phase": pacing.PhasePlateau}))
	now := t0
	var waits []time.Duration
	for i := 0; i < 2000 && len(waits) < 6; i++ {
		before := stateOf(t, p).PenaltySteps
		_, now = runTick(p, now, pacing.KindOK)
		if stateOf(t, p).PenaltySteps > before { // a step: refuse it
			now = raTick(p, now, 2, hold)
			waits = append(waits, cycle(p))
		}
	}
	if len(waits) < 6 {
		t.Fatalf("%d refused steps, want 6: waits %v", len(waits), waits)
	}
	for i, w := range waits {
		want := min(time.Duration(dp.PenaltyHolds)*hold<<(i+1), most)
		if w != want {
			t.Fatalf("wait after refused step %d: %v, want %v (waits %v)", i+1, w, want, waits)
		}
	}
	if waits[len(waits)-1] != most || waits[len(waits)-2] != most {
		t.Fatalf("waits %v never held at %v", waits, most)
	}
	// Once the upstream has blocked, the wait may grow past that many of
	// its (longer) holds, to MaxRecover × PenaltyFactor.
	long := 40 * time.Minute
	blocked := probeWith(t, sub, penalised(fields{"penalty_wait_ms": long.Milliseconds(), "blocks": 1,
		"hold_ms": hold.Milliseconds()}))
	if w := cycle(blocked); w != long {
		t.Fatalf("after a block: wait %v, want %v", w, long)
	}
}

func TestProbePenalisedRefusedStepMeasuresTheBurst(t *testing.T) {
	// A step from 200 to 240 is refused after 30 s: what was served beyond
	// 200/min (120 requests, 100 of them the rate) is the burst.
	p := probeWith(t, sub, penalised(fields{"rate": 240, "clean": 200, "phase": pacing.PhaseRecover,
		"step_at": ms(0), "step_ok": 120}))
	p.Done(t0.Add(30*time.Second), tickOf(1, 4, pacing.KindThrottled, t0.Add(29*time.Second), 100*time.Millisecond))
	if s := stateOf(t, p); math.Abs(s.Burst-20) > 1e-9 || s.StepRefused != 240 {
		t.Fatalf("refused step: burst %v refused %v, want 20 and 240", s.Burst, s.StepRefused)
	}
}

func TestProbePenalisedRiseProvenStepsOnInDoublingSteps(t *testing.T) {
	// The burst is 20 and a step to 240 was refused. Later the capacity
	// rose: a step to 260 is served in full. After a minute it proves
	// 260 - 20 = 240/min, not yet more than the refused rate; after two it
	// proves 250/min: the capacity rose.
	now := t0.Add(10 * time.Minute)
	p := probeWith(t, sub, penalised(fields{"burst": 20, "step_refused": 240, "rate": 260, "clean": 240,
		"phase": pacing.PhaseRecover, "penalty_steps": 1, "step_at": now.UnixMilli(), "last_throttle": now.UnixMilli(),
		"penalty_wait_ms": (8 * time.Minute).Milliseconds()})) // under PenaltyMaxHolds × 30 s
	for i := 0; i < 5; i++ {
		now = now.Add(10 * time.Second)
		runTick(p, now, pacing.KindOK)
	}
	if s := stateOf(t, p); s.Rising || s.Rate != 260 {
		t.Fatalf("after 51 s: rising %v rate %v, want still cruising at 260", s.Rising, s.Rate)
	}
	for i := 0; i < 7 && !stateOf(t, p).Rising; i++ {
		now = now.Add(10 * time.Second)
		runTick(p, now, pacing.KindOK)
	}
	if s := stateOf(t, p); !s.Rising || math.Abs(s.Rate-260*1.2) > 1e-9 || s.RoseAt == 0 {
		t.Fatalf("rise proven: rising %v rate %v, want a 20%% step to %v at once", s.Rising, s.Rate, 260*1.2)
	}
	// The next step doubles and comes within a few ticks (its evidence,
	// 20 requests / 124.8/min ≈ 10 s, then the climb and the plateau), not
	// after the eight-minute wait.
	start, rate := now, stateOf(t, p).Rate
	for i := 0; i < 30 && stateOf(t, p).Rate == rate; i++ {
		now = now.Add(10 * time.Second)
		runTick(p, now, pacing.KindOK)
	}
	if r := stateOf(t, p).Rate; math.Abs(r-rate*1.4) > 1e-9 || now.Sub(start) > 90*time.Second {
		t.Fatalf("next rising step: rate %v after %v, want %v within 90 s", r, now.Sub(start), rate*1.4)
	}
	// Refused: back to the rate before, the ramp over, and the next probe
	// after the eight-minute wait from before the rise.
	now = raTick(p, now.Add(10*time.Second), 3, 30*time.Second)
	if s := stateOf(t, p); s.Rising || s.Rate != rate || s.StepRefused != rate*1.4 {
		t.Fatalf("refused rising step: rising %v rate %v refused %v", s.Rising, s.Rate, s.StepRefused)
	}
	if w := cycle(p); w != 8*time.Minute {
		t.Fatalf("wait after a refused rising step %v, want the wait from before the rise, 8m", w)
	}
	// A rise was seen: a step that would land near the refused rate tests
	// 20% above it instead.
	p = restart(t, p, sub, fields{"rate": 400, "step_refused": 410, "phase": pacing.PhaseProbe, "penalty_steps": 0})
	runTick(p, now.Add(time.Minute), pacing.KindOK)
	if want, r := 410*(1+dp.PenaltyRiseProbe), stateOf(t, p).Rate; math.Abs(r-want) > 1e-9 {
		t.Fatalf("step near a refused rate after a rise: %v, want %v", r, want)
	}
}

func TestProbePenalisedCruiseKeepsCloseUnderTheCeiling(t *testing.T) {
	// A refusal where refusals are penalised costs one hold; cruising
	// far under the ceiling costs as much every few minutes. After a
	// refused step from 200, the ceiling is learned at most ~4% above the
	// rate that held, so the climb after the next refusal ends close to it.
	p := probeWith(t, sub, penalised(fields{"rate": 200, "ceiling": 215, "phase": pacing.PhaseProbe, "penalty_steps": 1}))
	_, now := runTick(p, t0, pacing.KindOK) // a step above 200
	raTick(p, now, 3, 30*time.Second)
	if s := stateOf(t, p); s.Rate != 200 || s.Ceiling > 200/0.96 {
		t.Fatalf("after a refused step: rate %v ceiling %v, want 200 under a ceiling ≤ %.1f", s.Rate, s.Ceiling, 200/0.96)
	}
}

func TestProbePenalisedRefusedRisingStepMeasuresTheCapacity(t *testing.T) {
	// A rising step from 750 to 1050/min was served 150 requests in 8 s
	// before its refusal: with a burst of 20 (the smallest measured), the
	// capacity is 130 per 8 s = 975/min, well above the step before.
	p := probeWith(t, sub, penalised(fields{"burst": 30, "burst_low": 20, "rate": 1050, "clean": 750,
		"ceiling": 1050 / dp.PenaltyMargin, "phase": pacing.PhaseRecover, "rising": true, "step_at": ms(0), "step_ok": 150}))
	now := t0.Add(8 * time.Second)
	p.Done(now, tickOf(1, 4, pacing.KindThrottled, now, 0))
	if s := stateOf(t, p); math.Abs(s.Ceiling-975) > 1e-6 || math.Abs(s.Rate-975*dp.PenaltyMargin) > 1e-6 || s.Rising {
		t.Fatalf("refused rising step: ceiling %v rate %v rising %v, want 975 and %v", s.Ceiling, s.Rate, s.Rising, 975*dp.PenaltyMargin)
	}
	// A non-rising refused step measures the burst (25 here): its bounds
	// stay apart (the largest proves rises, the smallest measures capacity).
	p = restart(t, p, sub, fields{"rate": 1000, "clean": 940, "step_at": now.UnixMilli(), "step_ok": int(940.0/60*30) + 25})
	later := now.Add(30 * time.Second)
	p.Done(later, tickOf(1, 4, pacing.KindThrottled, later, 0))
	if s := stateOf(t, p); s.Burst != 30 || math.Abs(s.BurstLow-20) > 1e-9 {
		t.Fatalf("burst %v low %v, want 30 and 20", s.Burst, s.BurstLow)
	}
}

func TestProbeFirstRefusalAfterAHoldTakesTheMinuteBeforeTheHold(t *testing.T) {
	// Retry-after at 1 request per item: slow start served 136 by its
	// refusal 40 s ago, 30 s held, then refused 10 s into the resumed run
	// at 303.8/min. The minute now counts the hold as served at nothing
	// (151 in 59 s); the minute up to the first refusal (136 in 35 s) says
	// more, and lies under 0.9 × the rate refused.
	history := []fields{{"end": ms(-75 * time.Second), "ok": 10}, {"end": ms(-67 * time.Second), "ok": 15},
		{"end": ms(-59 * time.Second), "ok": 23}, {"end": ms(-50 * time.Second), "ok": 34}, {"end": ms(-40 * time.Second), "ok": 54}}
	state := penalised(fields{"rate": 303.8, "ceiling": 313.1, "phase": pacing.PhaseRecover,
		"last_throttle": ms(-40 * time.Second), "resume_at": ms(-10 * time.Second), "history": history})
	p := probeWith(t, 1, state)
	resumedTick(p, t0, 40)
	before := 136 / (35.0 / 60) * dp.EstimateSlack
	if s := stateOf(t, p); math.Abs(s.Ceiling-before) > 0.01 || math.Abs(s.Rate-before*dp.Beta) > 0.01 {
		t.Fatalf("ceiling %v rate %v, want the minute before the hold %v and %v under it", s.Ceiling, s.Rate, before, before*dp.Beta)
	}
	minute := (23 + 34 + 54 + 40) / (59.0 / 60) * dp.EstimateSlack
	// Refused at a rate the minute before would not stay 10% under: the
	// minute's rate stands.
	state["rate"] = 250.0
	p = probeWith(t, 1, state)
	resumedTick(p, t0, 40)
	if s := stateOf(t, p); math.Abs(s.Ceiling-minute) > 0.01 {
		t.Fatalf("refused at 250: ceiling %v, want the minute's accepted rate %v", s.Ceiling, minute)
	}
	// No run resumed from a hold: the minute holds none, and stands.
	delete(state, "resume_at")
	state["rate"] = 303.8
	p = probeWith(t, 1, state)
	resumedTick(p, t0, 40)
	if s := stateOf(t, p); math.Abs(s.Ceiling-minute) > 0.01 {
		t.Fatalf("no hold in the minute: ceiling %v, want the minute's accepted rate %v", s.Ceiling, minute)
	}
}

func TestProbeRefusedResumedRunBoundsTheBurstForARiseProof(t *testing.T) {
	// No refused step has measured the burst. A run resumed after a hold
	// was served 30 and refused: S = B + C·t, so the burst is at most 30.
	p := probeWith(t, 1, penalised(fields{"rate": 90, "ceiling": 93, "phase": pacing.PhaseRecover,
		"last_throttle": ms(-40 * time.Second), "resume_at": ms(-10 * time.Second), "resume_ok": 20}))
	resumedTick(p, t0, 10)
	if s := stateOf(t, p); s.BurstResumed != 30 || s.Burst != 0 {
		t.Fatalf("resumed run served 30 and refused: burst_resumed %v burst %v, want 30 and none measured", s.BurstResumed, s.Burst)
	}
	// With that bound, a step to 100 above a refused 83 served in full
	// proves a rise once 100 − 30/dt > 83: after 1.76 minutes. With no
	// bound at all it proves nothing, however long it is served.
	step := func(fs fields) (*pacing.Probe, time.Time) {
		now := t0.Add(10 * time.Minute)
		base := fields{"step_refused": 83, "rate": 100, "clean": 83, "phase": pacing.PhaseRecover, "penalty_steps": 1,
			"step_at": now.UnixMilli(), "last_throttle": now.UnixMilli(), "penalty_wait_ms": (10 * time.Minute).Milliseconds()}
		for k, v := range fs {
			base[k] = v
		}
		return probeWith(t, 1, penalised(base)), now
	}
	p, now := step(fields{"burst_resumed": 30})
	for now.Before(t0.Add(10*time.Minute + 100*time.Second)) {
		now = now.Add(10 * time.Second)
		runTick(p, now, pacing.KindOK)
	}
	if stateOf(t, p).Rising {
		t.Fatal("rising after 100 s, before 100 − 30/dt proves more than 83")
	}
	for i := 0; i < 3; i++ {
		now = now.Add(10 * time.Second)
		runTick(p, now, pacing.KindOK)
	}
	if !stateOf(t, p).Rising {
		t.Fatal("not rising after 130 s: the resumed run's bound proves 100 − 30/2.17 min > 83")
	}
	p, now = step(nil)
	for i := 0; i < 30; i++ {
		now = now.Add(10 * time.Second)
		runTick(p, now, pacing.KindOK)
	}
	if stateOf(t, p).Rising {
		t.Fatal("rising with no burst bounded at all")
	}
}

func TestProbeResumedRunRefusedLengthensTheWaitLessThanAStep(t *testing.T) {
	// The wait between steps is already four times its floor of two holds.
	// A resumed run refused before any step, with no burst measured,
	// refutes the first estimate: the wait stays at
	// PenaltyEstimateDoublings over the floor. A refused step doubles it,
	// and so does such a run once a refused step has measured the burst.
	floor := time.Duration(dp.PenaltyHolds) * 30 * time.Second
	fs := penalised(fields{"rate": 90, "ceiling": 93, "phase": pacing.PhaseRecover,
		"last_throttle": ms(-40 * time.Second), "resume_at": ms(-10 * time.Second), "resume_ok": 20,
		"penalty_wait_ms": (4 * floor).Milliseconds()})
	p := probeWith(t, 1, fs)
	resumedTick(p, t0, 10)
	if w, want := cycle(p), floor<<dp.PenaltyEstimateDoublings; w != want {
		t.Fatalf("resumed run refused: wait %v, want %v", w, want)
	}
	measured := fields{"burst": 12.0, "burst_low": 12.0}
	for k, v := range fs {
		measured[k] = v
	}
	p = probeWith(t, 1, measured)
	resumedTick(p, t0, 10)
	if w, want := cycle(p), 8*floor; w != want {
		t.Fatalf("resumed run refused with a burst measured: wait %v, want %v", w, want)
	}
	fs["step_at"], fs["clean"] = ms(-10*time.Second), 85.0
	p = probeWith(t, 1, fs)
	resumedTick(p, t0, 10)
	if w, want := cycle(p), 8*floor; w != want {
		t.Fatalf("refused step: wait %v, want %v", w, want)
	}
}
