package pacing

import (
	"encoding/json"
	"math"
	"testing"
	"time"
)

// tickOf builds a tick of n items × sub requests of kind k, each taking lat.
// dp is the default tuning the tests check against.
var dp = DefaultProbeParams()

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
	p.rate = 200
	plan := p.Plan(t0)
	// A minute of the connections' work (144 requests = 24 items) in one chunk.
	if plan.Items != 24 || plan.ChunkItems != 24 || plan.ChunkPause != 0 {
		t.Fatalf("latency-bound plan %+v, want 24 items in one chunk", plan)
	}
	// Well under what the connections carry, the rate paces as before.
	p.rate = 60
	if plan := p.Plan(t0); plan.Items != 2 || plan.ChunkItems != 1 {
		t.Fatalf("rate-bound plan %+v, want 2 items (60/min × 10 s / 6) in chunks of 1", plan)
	}
}

func TestProbeOldStateDecodes(t *testing.T) {
	// State stored by an older version (no newer fields) must still decode and run.
	old := `{"sub":4,"latency_ms":130,"not_before":0,"last_wake":0,"last_plan_requests":40,
		"rate":540,"ceiling":600,"phase":"plateau","phase_since":1,"last_throttle":1,"streak":0,
		"probe_ticks":0,"backoff_ms":0,"blocks":0,"penalized":false,"careful":false,"history":[{"end":1,"ok":40}]}`
	var p Probe
	if err := json.Unmarshal([]byte(old), &p); err != nil {
		t.Fatal(err)
	}
	if p.rate != 540 || p.ceiling != 600 || p.phase != PhasePlateau || p.Sub != 4 {
		t.Fatalf("decoded %+v", p)
	}
	if plan := p.Plan(t0); plan.Items == 0 {
		t.Fatal("decoded old state plans nothing")
	}
	p.Done(t0.Add(10*time.Second), tickOf(1, 4, KindOK, t0, 100*time.Millisecond))
}

// runTick plans at now and reports every planned item answered with kind k
// (100 ms each), returning the next wake.
func runTick(p *Probe, now time.Time, k Kind) (Plan, time.Time) {
	plan := p.Plan(now)
	return plan, p.Done(now.Add(time.Second), tickOf(plan.Items, p.Sub, k, now, 100*time.Millisecond))
}

func TestProbeOneRefusedTickIsNotABlock(t *testing.T) {
	p := NewProbe(Config{SubrequestsPerItem: 4})
	p.rate, p.ceiling, p.phase = 300, 300, PhaseProbe
	now := t0
	_, now = runTick(p, now, KindThrottled) // one item, all refused: near the limit
	if p.phase == PhaseBlocked || p.penalized || p.blocks != 0 {
		t.Fatalf("a single all-refused tick was taken for a block: %+v", p)
	}
	_, _ = runTick(p, now, KindThrottled) // still everything refused after backing off
	if p.phase != PhaseBlocked || p.blocks != 1 {
		t.Fatalf("two all-refused ticks in a row are a block: phase %s blocks %d", p.phase, p.blocks)
	}
}

func TestProbeBisectsAfterFindingFarMoreRoom(t *testing.T) {
	p := NewProbe(Config{SubrequestsPerItem: 4})
	now := t0
	p.rate, p.ceiling, p.phase = 1000, 300, PhaseProbe
	// The last minute served ~300/min (the climb), the probe at 1000 is refused.
	p.history = []tickStats{{End: now.Add(-50 * time.Second).UnixMilli(), OK: 50}, {End: now.UnixMilli(), OK: 200}}
	_, now = runTick(p, now, KindThrottled)
	if p.phase != PhaseBracket || p.refusedRate != 1000 || p.rate != p.ceiling {
		t.Fatalf("refused far above the learned ceiling: want bisection from it, got %+v", p)
	}
	lo := p.ceiling
	// Clean ticks: the floor rises and the next step is the geometric mean,
	// once the rest after the refusal is over.
	for now.Sub(t0) < dp.BracketRest {
		_, now = runTick(p, now, KindOK)
	}
	_, now = runTick(p, now, KindOK)
	if want := math.Sqrt(p.ceiling * 1000); math.Abs(p.rate-want) > 1e-6 || p.ceiling < lo {
		t.Fatalf("bisection step %v, want √(%v × 1000) = %v", p.rate, p.ceiling, want)
	}
	// Steps continue until the bracket is within dp.BracketGap.
	for i := 0; i < 20 && p.phase == PhaseBracket; i++ {
		_, now = runTick(p, now, KindOK)
	}
	if p.phase != PhasePlateau || p.ceiling < 1000/(1+dp.BracketGap) {
		t.Fatalf("after clean bisection steps: phase %s ceiling %v", p.phase, p.ceiling)
	}
}

func TestProbePenalisedCycleTimedByTheRefusalsCost(t *testing.T) {
	p := NewProbe(Config{SubrequestsPerItem: 4})
	p.rate, p.ceiling, p.phase, p.careful = 200, 215, PhasePlateau, true
	now := t0
	// A refusal carrying Retry-After: 30 s makes refusals expensive.
	ra := tickOf(1, 4, KindThrottled, now, 100*time.Millisecond)
	for i := range ra {
		ra[i].RetryAfter = 30 * time.Second
	}
	p.Plan(now)
	p.Done(now.Add(time.Second), append(tickOf(2, 4, KindOK, now, 100*time.Millisecond), ra...))
	if !p.penalized || p.holdMs != 30_000 {
		t.Fatalf("Retry-After 30 s: penalized %v hold %d ms", p.penalized, p.holdMs)
	}
	// The wait between steps is at least two holds, doubled by the refusal.
	if w := p.penaltyWait(); w != 2*dp.PenaltyHolds*30*time.Second {
		t.Fatalf("wait after a refused step %v, want %v", w, 2*dp.PenaltyHolds*30*time.Second)
	}
	// Clean steps: each halves the wait (down to two holds) and grows the step.
	var rates []float64
	for i := 0; i < 200 && len(rates) < 4; i++ {
		now = now.Add(10 * time.Second)
		before := p.rate
		runTick(p, now, KindOK)
		if p.phase == PhaseRecover && p.rate > before && p.penaltySteps > len(rates) {
			rates = append(rates, p.rate/before-1)
		}
	}
	if len(rates) < 3 || math.Abs(rates[0]-0.05) > 1e-9 || math.Abs(rates[1]-0.10) > 1e-9 || math.Abs(rates[2]-0.20) > 1e-9 {
		t.Fatalf("clean penalised steps %v, want 5%%, 10%%, 20%%", rates)
	}
	if w := p.penaltyWait(); w != dp.PenaltyHolds*30*time.Second {
		t.Fatalf("wait after clean steps %v, want the floor %v", w, dp.PenaltyHolds*30*time.Second)
	}
}

// raTick is a tick of ok clean items and one refused item carrying a
// Retry-After of ra.
func raTick(p *Probe, now time.Time, ok int, ra time.Duration) time.Time {
	p.Plan(now)
	refused := tickOf(1, p.Sub, KindThrottled, now, 100*time.Millisecond)
	for i := range refused {
		refused[i].Item = ok
		refused[i].RetryAfter = ra
	}
	return p.Done(now.Add(time.Second), append(tickOf(ok, p.Sub, KindOK, now, 100*time.Millisecond), refused...))
}

func TestProbePenalisedRefusedStepResumesAtTheLastCleanRate(t *testing.T) {
	p := NewProbe(Config{SubrequestsPerItem: 4})
	p.rate, p.ceiling, p.phase, p.careful, p.penalized, p.holdMs = 200, 215, PhaseProbe, true, true, 30_000
	p.penaltySteps = 1 // the step before held
	now := t0
	_, now = runTick(p, now, KindOK) // a 5%… step above 200
	stepped := p.rate
	if stepped <= 200 || p.clean != 200 {
		t.Fatalf("penalised step: rate %v clean %v, want a step above 200 from 200", stepped, p.clean)
	}
	waitBefore := p.penaltyWait()
	now = raTick(p, now, 3, 30*time.Second)
	// The refusal already cost a 30 s hold: resume at the rate that held,
	// not 0.9× under a ceiling estimate.
	if p.rate != 200 || p.ceiling*dp.PenaltyMargin != 200 {
		t.Fatalf("after a refused step: rate %v ceiling %v, want to cruise at 200", p.rate, p.ceiling)
	}
	if w := p.penaltyWait(); w != 2*waitBefore {
		t.Fatalf("wait after a refused step %v, want doubled %v", w, 2*waitBefore)
	}
	// The next step is the first after a refusal: it does not halve the
	// wait (no clean step behind it), so refused steps grow ever rarer.
	for p.phase != PhaseProbe {
		_, now = runTick(p, now, KindOK)
	}
	_, now = runTick(p, now, KindOK)
	if w := p.penaltyWait(); w != 2*waitBefore {
		t.Fatalf("wait after the first step since a refusal %v, want still %v", w, 2*waitBefore)
	}
	_ = now
}

func TestProbeRiseEvidenceSetsTheBracketFloor(t *testing.T) {
	p := NewProbe(Config{SubrequestsPerItem: 4})
	now := t0
	p.rate, p.ceiling, p.phase, p.probeTicks = 1000, 300, PhaseProbe, 5
	p.history = []tickStats{{End: now.Add(-50 * time.Second).UnixMilli(), OK: 50}, {End: now.UnixMilli(), OK: 200}}
	_, now = runTick(p, now, KindOK) // 1000/min served in full: over 2× the ceiling
	if p.clean != 1000 || p.rate != 2000 {
		t.Fatalf("clean probe tick: clean %v rate %v", p.clean, p.rate)
	}
	_, _ = runTick(p, now, KindThrottled)
	if p.phase != PhaseBracket || p.ceiling != 1000 || p.refusedRate != 2000 {
		t.Fatalf("refused at 2000 after 1000 was served: want the bracket [1000, 2000], got %+v", p)
	}
	// Without that evidence (the last clean tick under 2× the ceiling) the
	// floor stays the last minute's accepted rate.
	q := NewProbe(Config{SubrequestsPerItem: 4})
	q.rate, q.ceiling, q.phase, q.clean = 500, 300, PhaseProbe, 400
	q.history = p.history[:0:0]
	q.history = append(q.history, tickStats{End: t0.Add(-50 * time.Second).UnixMilli(), OK: 50}, tickStats{End: t0.UnixMilli(), OK: 200})
	runTick(q, t0, KindThrottled)
	if q.ceiling >= 400 {
		t.Fatalf("a clean tick at 1.3× the ceiling taken as rise evidence: ceiling %v", q.ceiling)
	}
}

func TestPausesAreSizedByTheSlowestAnswer(t *testing.T) {
	// Answers averaging 120 ms but up to 160 ms: a chunk waits for its
	// slowest, so the pause after it is shorter by the difference.
	p := NewProbe(Config{SubrequestsPerItem: 4})
	p.rate, p.phase = 1200, PhaseRecover
	now := t0
	out := tickOf(1, 4, KindOK, now, 80*time.Millisecond)
	out = append(out, tickOf(1, 4, KindOK, now, 160*time.Millisecond)...)
	p.LatencyMs, p.SlowMs = 120, 0
	p.observe(out)
	if p.SlowMs != 160 {
		t.Fatalf("slowest answer %v ms, want 160", p.SlowMs)
	}
	p.LatencyMs = 120
	slow := p.Plan(now)
	p.SlowMs = 0
	mean := p.Plan(now)
	if slow.ChunkItems != mean.ChunkItems || slow.ChunkPause >= mean.ChunkPause {
		t.Fatalf("pause %v with the slowest answer, %v with the mean: want shorter", slow.ChunkPause, mean.ChunkPause)
	}
	// An upstream that paces clients itself gets one-round chunks: the
	// mean latency sizes them.
	p.careful, p.SlowMs = true, 160
	careful := p.Plan(now)
	p.SlowMs = 0
	if again := p.Plan(now); careful.ChunkPause != again.ChunkPause {
		t.Fatalf("careful pause %v, want %v (mean latency)", careful.ChunkPause, again.ChunkPause)
	}
}

func TestProbeSlowStartRefusalBisectsFromLastCleanRate(t *testing.T) {
	// Slow start served 200/min in full, then 300/min was refused. The
	// minute's accepted rate mixes in the slower ticks before; the last
	// clean rate is the floor, and the gap to the refused rate is bisected.
	p := NewProbe(Config{SubrequestsPerItem: 4})
	now := t0
	p.history = []tickStats{{End: now.Add(-50 * time.Second).UnixMilli(), OK: 8}, {End: now.Add(-10 * time.Second).UnixMilli(), OK: 32}}
	p.clean, p.rate = 200, 300
	p.Done(now, append(tickOf(2, 4, KindOK, now, 100*time.Millisecond), tickOf(1, 1, KindThrottled, now, 100*time.Millisecond)...))
	if p.phase != PhaseBracket || p.ceiling != 200 || p.rate != 200 || p.refusedRate != 300 {
		t.Fatalf("after a refused slow-start tick: phase %s ceiling %.0f rate %.0f refused %.0f, want bracket 200/200/300",
			p.phase, p.ceiling, p.rate, p.refusedRate)
	}
	// Where refusals are penalised the bracket is not used.
	q := NewProbe(Config{SubrequestsPerItem: 4})
	q.history, q.clean, q.rate, q.penalized = p.history, 200, 300, true
	q.Done(now, tickOf(1, 1, KindThrottled, now, 100*time.Millisecond))
	if q.phase == PhaseBracket {
		t.Fatal("penalised slow start bisects")
	}
}

func TestProbePenaltyWaitAfterABlockSpansMoreHolds(t *testing.T) {
	p := NewProbe(Config{SubrequestsPerItem: 4})
	p.penalized, p.holdMs = true, (5 * time.Minute).Milliseconds()
	if w := p.penaltyWait(); w != dp.PenaltyHolds*5*time.Minute {
		t.Fatalf("Retry-After hold of 5 min: wait %v", w)
	}
	p.blocks = 1
	if w := p.penaltyWait(); w != dp.PenaltyBlockHolds*5*time.Minute {
		t.Fatalf("block of 5 min: wait %v", w)
	}
}

func TestProbeRecoverTimeShorterWhereAnItemIsSmall(t *testing.T) {
	p := NewProbe(Config{SubrequestsPerItem: 4})
	p.ceiling = 60 // 15 items a minute: one refused item is a larger share
	slow := p.recoverTime()
	p.ceiling = 240 // 60 items a minute
	fast := p.recoverTime()
	if want := time.Duration(4 / (dp.RefusalShare * 60) * float64(time.Minute)); slow != want {
		t.Fatalf("60/min: recover %v, want %v", slow, want)
	}
	if want := time.Duration(4 / (dp.FastRefusalShare * 240) * float64(time.Minute)); fast != want {
		t.Fatalf("240/min: recover %v, want %v", fast, want)
	}
}

func TestProbeSmallChunksNearTheCeiling(t *testing.T) {
	// 1400/min at 4 requests an item: a second's worth is 6 items; near a
	// learned ceiling of 1500 the chunks shrink to the 3 items that fill
	// the connections, so a small burst is not overrun at once.
	p := NewProbe(Config{SubrequestsPerItem: 4})
	p.rate, p.phase = 1400, PhasePlateau
	if plan := p.Plan(t0); plan.ChunkItems != 6 {
		t.Fatalf("no ceiling known: chunks of %d items, want 6", plan.ChunkItems)
	}
	p.ceiling = 1500
	if plan := p.Plan(t0); plan.ChunkItems != chunkItems(4) {
		t.Fatalf("near the ceiling: chunks of %d items, want %d", plan.ChunkItems, chunkItems(4))
	}
}

func TestProbeBlockProbesOnWholeMinutesSinceItBegan(t *testing.T) {
	// The first refusal ends its tick at t0; everything is refused from
	// then on (a 5-minute block). The probes are timed from t0, not from
	// when the block was recognised: 15 s, 30 s, 1 min, then every whole
	// minute, so the block's end is found the moment it lifts.
	p := NewProbe(Config{SubrequestsPerItem: 4})
	p.rate, p.ceiling, p.phase = 300, 300, PhaseProbe
	p.history = []tickStats{{End: t0.Add(-30 * time.Second).UnixMilli(), OK: 100}, {End: t0.Add(-10 * time.Second).UnixMilli(), OK: 100}}
	refused := func(at time.Time) time.Time {
		p.Plan(at)
		return p.Done(at.Add(150*time.Millisecond), tickOf(1, 4, KindThrottled, at, 100*time.Millisecond))
	}
	p.Plan(t0.Add(-time.Second))
	next := p.Done(t0, tickOf(1, 4, KindThrottled, t0.Add(-time.Second), 100*time.Millisecond))
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
	// The block lifts at 5 min: the probe then is served, and the block's
	// length is measured from its first refusal.
	p.Plan(next)
	p.Done(next.Add(150*time.Millisecond), tickOf(1, 4, KindOK, next, 100*time.Millisecond))
	if p.phase != PhaseRecover || p.holdMs != (5*time.Minute+150*time.Millisecond).Milliseconds() {
		t.Fatalf("after the block: phase %s hold %d ms", p.phase, p.holdMs)
	}
}

// bracketStepAfter puts p in a bracket at ceiling (a step to 2×ceiling just
// refused at t0) and runs clean ticks: how long until the next step up.
func bracketStepAfter(t *testing.T, ceiling float64) time.Duration {
	t.Helper()
	p := NewProbe(Config{SubrequestsPerItem: 4})
	p.rate, p.ceiling, p.refusedRate, p.phase = ceiling, ceiling, 2*ceiling, PhaseBracket
	p.streak, p.lastThrottle = 1, t0.UnixMilli()
	now := t0
	for i := 0; i < 100; i++ {
		_, next := runTick(p, now, KindOK)
		if p.rate > ceiling {
			return now.Sub(t0)
		}
		now = next
	}
	t.Fatalf("no bisection step at ceiling %v: %+v", ceiling, p)
	return 0
}

func TestProbeBracketRestScalesWithTheRefusalsShare(t *testing.T) {
	// At 1200/min one refused item (4 requests) is 2% of 12 s of traffic:
	// the next bisection step comes after about a tick, not half a minute.
	if d := bracketStepAfter(t, 1200); d >= 2*TickInterval {
		t.Errorf("ceiling 1200/min: next bisection step after %v, want about a tick", d)
	}
	// At 240/min the rest stays dp.BracketRest: refusals must not bunch.
	if d := bracketStepAfter(t, 240); d < dp.BracketRest {
		t.Errorf("ceiling 240/min: next bisection step after %v, want ≥ %v", d, dp.BracketRest)
	}
}

func TestProbeStepsTripleWhileClean(t *testing.T) {
	p := NewProbe(Config{SubrequestsPerItem: 4})
	p.rate, p.ceiling = 300, 300
	p.setPhase(PhaseProbe, t0)
	now := t0
	var steps []float64
	for i := 0; i < 4; i++ {
		before := p.rate
		_, now = runTick(p, now, KindOK)
		steps = append(steps, p.rate/before-1)
	}
	for i, want := range []float64{0.05, 0.15, 0.45, 1.0} {
		if math.Abs(steps[i]-want) > 1e-9 {
			t.Fatalf("clean probe steps %v, want 5%%, 15%%, 45%%, 100%%", steps)
		}
	}
}

func TestProbeRefusalAtTheFloorAfterARefusedStepEndsTheBracket(t *testing.T) {
	p := NewProbe(Config{SubrequestsPerItem: 4})
	p.rate, p.ceiling, p.refusedRate, p.phase = 1400, 1000, 2000, PhaseBracket
	now := t0
	_, now = runTick(p, now, KindThrottled) // the step at 1400 is refused
	if p.phase != PhaseBracket || p.rate != 1000 || p.refusedRate != 1400 {
		t.Fatalf("refused bisection step: %+v", p)
	}
	// The next tick at the floor is refused too: the step drained the
	// bucket. The bracket ends at the floor; no cut for a falling capacity.
	p.Plan(now)
	p.Done(now.Add(time.Second), append(tickOf(2, 4, KindOK, now, 100*time.Millisecond),
		tickOf(1, 4, KindThrottled, now, 100*time.Millisecond)...))
	if p.phase != PhaseRecover || p.refusedRate != 0 || p.ceiling != 1000 || math.Abs(p.rate-1000*dp.Beta) > 1e-9 {
		t.Fatalf("refused at the floor after a refused step: phase %s ceiling %v rate %v refused %v, want recover at %v under 1000",
			p.phase, p.ceiling, p.rate, p.refusedRate, 1000*dp.Beta)
	}
}

func TestProbePenalisedRiseProvenStepsOnInDoublingSteps(t *testing.T) {
	p := NewProbe(Config{SubrequestsPerItem: 4})
	p.careful, p.penalized, p.holdMs = true, true, 30_000
	// A step from 200 to 240 was refused: the burst it measured is what
	// was served beyond 200/min (30 s at 240 from a full bucket, 20 more).
	p.rate, p.clean, p.phase = 240, 200, PhaseRecover
	p.step.At, p.step.OK = t0.UnixMilli(), 120
	p.Done(t0.Add(30*time.Second), tickOf(0, 4, KindOK, t0, 0)) // nothing sent: no evidence
	holdCost{}.refusal(p, t0.Add(30*time.Second))
	if math.Abs(p.burst.High-20) > 1e-9 || p.stepRefused != 240 {
		t.Fatalf("refused step: burst %v refused %v, want 20 and 240", p.burst.High, p.stepRefused)
	}
	// Later the capacity rose: a step to 260 is served in full. After a
	// minute it proves 260 - 20 = 240/min, not yet more than the refused
	// rate; after two it proves 250/min: the capacity rose.
	now := t0.Add(10 * time.Minute)
	p.rate, p.clean, p.phase, p.penaltySteps = 260, 240, PhaseRecover, 1
	p.step.At, p.step.OK, p.lastThrottle = now.UnixMilli(), 0, now.UnixMilli()
	p.penaltyWaitMs = (10 * time.Minute).Milliseconds()
	for i := 0; i < 5; i++ {
		now = now.Add(10 * time.Second)
		runTick(p, now, KindOK)
	}
	if p.rising || p.rate != 260 {
		t.Fatalf("after 51 s: rising %v rate %v, want still cruising at 260", p.rising, p.rate)
	}
	for i := 0; i < 7 && !p.rising; i++ {
		now = now.Add(10 * time.Second)
		runTick(p, now, KindOK)
	}
	if !p.rising || math.Abs(p.rate-260*1.2) > 1e-9 || p.roseAt == 0 {
		t.Fatalf("rise proven: rising %v rate %v, want a 20%% step to %v at once", p.rising, p.rate, 260*1.2)
	}
	// The next step doubles and comes once this one proved half of itself
	// (2 × 20 requests / 52/min ≈ 46 s), not after the ten-minute wait.
	start, rate := now, p.rate
	for i := 0; i < 30 && p.rate == rate; i++ {
		now = now.Add(10 * time.Second)
		runTick(p, now, KindOK)
	}
	if math.Abs(p.rate-rate*1.4) > 1e-9 || now.Sub(start) > 90*time.Second {
		t.Fatalf("next rising step: rate %v after %v, want %v within 90 s", p.rate, now.Sub(start), rate*1.4)
	}
	// Refused: back to the rate before, the ramp over.
	now = raTick(p, now.Add(10*time.Second), 3, 30*time.Second)
	if p.rising || p.rate != rate || p.stepRefused != rate*1.4 {
		t.Fatalf("refused rising step: rising %v rate %v refused %v", p.rising, p.rate, p.stepRefused)
	}
	// A rise was seen: a step that would land near the refused rate tests
	// 20% above it instead.
	p.rate, p.stepRefused, p.phase, p.penaltySteps = 400, 410, PhaseProbe, 0
	runTick(p, now.Add(time.Minute), KindOK)
	if want := 410 * (1 + dp.PenaltyRiseProbe); math.Abs(p.rate-want) > 1e-9 {
		t.Fatalf("step near a refused rate after a rise: %v, want %v", p.rate, want)
	}
}

func TestProbeOutageKeepsAnItemATickAndClimbsBackToTheCeiling(t *testing.T) {
	// An outage (every answer a 5xx) in the middle of a probe: the rate is
	// cut, but no lower than an item a tick, so its end is seen within a
	// tick; once served, the rate climbs back to the ceiling at once
	// rather than probing up from the bottom.
	p := NewProbe(Config{SubrequestsPerItem: 4})
	p.rate, p.ceiling, p.phase = 630, 600, PhaseProbe
	now := t0
	for i := 0; i < 40; i++ {
		_, now = runTick(p, now, KindServerError)
	}
	if floor := 4 * 6.0; p.rate != floor {
		t.Fatalf("after a long outage: rate %v, want an item a tick (%v/min)", p.rate, floor)
	}
	if p.ceiling != 600 || p.phase != PhaseRecover || len(p.history) != 0 {
		t.Fatalf("after an outage: ceiling %v phase %s history %v, want 600, recover and no history", p.ceiling, p.phase, p.history)
	}
	_, now = runTick(p, now, KindOK)
	if p.rate < dp.Beta*600 {
		t.Fatalf("first served tick after the outage: rate %v, want back near the ceiling 600", p.rate)
	}
	// A refusal among an overloaded tick's answers is not a rate signal.
	q := NewProbe(Config{SubrequestsPerItem: 4})
	q.rate, q.ceiling, q.phase = 600, 600, PhasePlateau
	q.Plan(t0)
	q.Done(t0.Add(time.Second), append(tickOf(5, 4, KindServerError, t0, 100*time.Millisecond), tickOf(1, 4, KindThrottled, t0, 100*time.Millisecond)...))
	if q.ceiling != 600 || q.streak != 0 {
		t.Fatalf("refusal in an overloaded tick: ceiling %v streak %d, want 600 and no streak", q.ceiling, q.streak)
	}
	_ = now
}

func TestProbePenalisedCruiseKeepsCloseUnderTheCeiling(t *testing.T) {
	// A refusal where refusals are penalised costs one hold; cruising
	// far under the ceiling costs as much every few minutes. After a
	// refused step from 200, the ceiling is learned at most ~4% above the
	// rate that held, so the climb after the next refusal ends close to it.
	p := NewProbe(Config{SubrequestsPerItem: 4})
	p.rate, p.ceiling, p.phase, p.careful, p.penalized, p.holdMs = 200, 215, PhaseProbe, true, true, 30_000
	p.penaltySteps = 1
	now := t0
	_, now = runTick(p, now, KindOK) // a step above 200
	raTick(p, now, 3, 30*time.Second)
	if p.rate != 200 || p.ceiling > 200/0.96 {
		t.Fatalf("after a refused step: rate %v ceiling %v, want 200 under a ceiling ≤ %.1f", p.rate, p.ceiling, 200/0.96)
	}
}

func TestProbeBurstAwareStepsAndRefusals(t *testing.T) {
	// With the burst known (20 requests), the first probe step asks a
	// burst beyond the ceiling over a tick (20 in 10 s at 300/min: +40%),
	// the next grows from there.
	p := NewProbe(Config{SubrequestsPerItem: 4})
	p.rate, p.ceiling, p.burst.High = 300, 300, 20
	p.setPhase(PhaseProbe, t0)
	now := t0
	_, now = runTick(p, now, KindOK)
	if math.Abs(p.rate-420) > 1e-9 {
		t.Fatalf("first burst-aware step to %v, want 420", p.rate)
	}
	runTick(p, now, KindOK)
	if math.Abs(p.rate-840) > 1e-9 {
		t.Fatalf("second step to %v, want 840 (the step tripled, capped at ×2)", p.rate)
	}

	// Refused with nothing proven above the ceiling: no bracket (the step
	// was sized beyond the burst, not near the capacity); the ceiling
	// moves at most a first step up; the probe measured the burst (served
	// since it began beyond the 300/min it began from: 170 - 150).
	q := NewProbe(Config{SubrequestsPerItem: 4})
	q.rate, q.ceiling, q.burst.High, q.phase, q.probeTicks = 420, 300, 15, PhaseProbe, 1
	q.probe.At, q.probeFrom, q.probe.OK = t0.Add(-30*time.Second).UnixMilli(), 300, 162
	q.history = []tickStats{{End: t0.Add(-20 * time.Second).UnixMilli(), OK: 50}, {End: t0.Add(-10 * time.Second).UnixMilli(), OK: 50}}
	out := append(tickOf(2, 4, KindOK, t0.Add(-5*time.Second), 100*time.Millisecond),
		tickOf(1, 4, KindThrottled, t0.Add(-time.Second), 100*time.Millisecond)...)
	q.Done(t0, out)
	if q.phase != PhaseRecover || q.ceiling != 300*(1+dp.FirstStep) || math.Abs(q.burst.High-20) > 1e-9 {
		t.Fatalf("refused burst-sized step: phase %s ceiling %v burst %v, want recover, %v, 20",
			q.phase, q.ceiling, q.burst.High, 300*(1+dp.FirstStep))
	}

	// Refused after serving 100 requests in 5 s: beyond the burst that
	// proves 960/min, far above the ceiling of 300: the capacity rose, and
	// the bracket starts from what was proven.
	r := NewProbe(Config{SubrequestsPerItem: 4})
	r.rate, r.ceiling, r.burst.High, r.phase, r.probeTicks = 2000, 300, 20, PhaseProbe, 3
	out = append(tickOf(25, 4, KindOK, t0, 100*time.Millisecond), tickOf(1, 4, KindThrottled, t0, 100*time.Millisecond)...)
	r.Done(t0.Add(5*time.Second), out)
	if r.phase != PhaseBracket || math.Abs(r.ceiling-960) > 1e-6 || r.refusedRate != 2000 {
		t.Fatalf("refused after proving 960/min: phase %s ceiling %v refused %v, want the bracket [960, 2000]",
			r.phase, r.ceiling, r.refusedRate)
	}
}

func TestProbePenalisedRefusedRisingStepMeasuresTheCapacity(t *testing.T) {
	p := NewProbe(Config{SubrequestsPerItem: 4})
	p.careful, p.penalized, p.holdMs = true, true, 30_000
	p.burst.High, p.burst.Low = 30, 20
	// A rising step from 750 to 1050/min was served 150 requests in 8 s
	// before its refusal: with a burst of 20 (the smallest measured), the
	// capacity is 130 per 8 s = 975/min, well above the step before.
	p.rate, p.clean, p.ceiling, p.phase, p.rising = 1050, 750, 1050/dp.PenaltyMargin, PhaseRecover, true
	p.step.At, p.step.OK = t0.UnixMilli(), 150
	now := t0.Add(8 * time.Second)
	p.Done(now, tickOf(1, 4, KindThrottled, now, 0))
	if math.Abs(p.ceiling-975) > 1e-6 || math.Abs(p.rate-975*dp.PenaltyMargin) > 1e-6 || p.rising {
		t.Fatalf("refused rising step: ceiling %v rate %v rising %v, want 975 and %v", p.ceiling, p.rate, p.rising, 975*dp.PenaltyMargin)
	}
	// A non-rising refused step measures the burst: its bounds stay
	// apart (the largest proves rises, the smallest measures capacity).
	p.rate, p.clean, p.step.At, p.step.OK = 1000, 940, now.UnixMilli(), 0
	p.step.OK = int(940.0/60*30) + 25
	holdCost{}.refusal(p, now.Add(30*time.Second))
	if p.burst.High != 30 || math.Abs(p.burst.Low-20) > 1e-9 {
		t.Fatalf("burst %v low %v, want 30 and 20", p.burst.High, p.burst.Low)
	}
}

func TestCarefulPausesAreSizedByEachChunksSlowestAnswer(t *testing.T) {
	// One-round chunks whose answers average 120 ms but whose slowest
	// takes 150 ms: each chunk lasts 150 ms, so the pause is 30 ms shorter
	// than the mean latency would make it, and the sent rate is the rate.
	p := NewProbe(Config{SubrequestsPerItem: 4})
	p.rate, p.phase, p.careful = 1000, PhaseRecover, true
	plan := p.Plan(t0)
	if plan.ChunkItems != 1 {
		t.Fatalf("careful chunks of %d items, want 1", plan.ChunkItems)
	}
	var out []Outcome
	for i := 0; i < plan.Items; i++ {
		at := t0.Add(time.Duration(i) * time.Second)
		for _, lat := range []time.Duration{90, 120, 120, 150} {
			out = append(out, Outcome{Item: i, SentAt: at, DoneAt: at.Add(lat * time.Millisecond), Kind: KindOK, Remaining: -1})
		}
	}
	p.LatencyMs = 120
	p.observe(out)
	if math.Abs(p.RoundMs-150) > 1e-9 {
		t.Fatalf("chunk span %v ms, want 150", p.RoundMs)
	}
	p.LatencyMs = 120
	again := p.Plan(t0)
	spacing := time.Duration(4 / (1000.0 / 60) * float64(time.Second))
	if want := spacing - 150*time.Millisecond; again.ChunkPause != want {
		t.Fatalf("pause %v, want %v (spacing %v less the chunk's 150 ms)", again.ChunkPause, want, spacing)
	}
}

func TestProbeSmallBurstSmoothsBeforeCuttingTheRate(t *testing.T) {
	// Slow start at 60/min sends 3 items (12 requests) at once; a burst-5
	// bucket serves 5 and refuses the rest. That is too many at once, not
	// too fast: the rate is kept, no ceiling is learned, and from then on
	// a chunk is one item, the next tick a chunk's spacing after the last.
	p := NewProbe(Config{SubrequestsPerItem: 4})
	plan := p.Plan(t0)
	if plan.ChunkItems != 3 {
		t.Fatalf("slow start: chunks of %d items, want 3", plan.ChunkItems)
	}
	out := tickOf(2, 4, KindOK, t0, 100*time.Millisecond)
	for i := 5; i < len(out); i++ {
		out[i].Kind = KindThrottled
	}
	now := t0.Add(100 * time.Millisecond)
	next := p.Done(now, out)
	if !p.smooth || p.ceiling != 0 || p.rate != dp.StartRate || p.phase != PhaseSlowStart || p.streak != 0 {
		t.Fatalf("a burst-sized refusal was read as the rate: %+v", p)
	}
	if min := t0.Add(4 * time.Second); next.Before(min) { // 4 requests at 1/s after the last chunk
		t.Fatalf("next tick at %v, want no earlier than %v", next.Sub(t0), min.Sub(t0))
	}
	if plan := p.Plan(next); plan.ChunkItems != 1 {
		t.Fatalf("smooth: chunks of %d items, want 1", plan.ChunkItems)
	}
	// Refused again, now smooth: a rate signal as before.
	p.Done(next.Add(100*time.Millisecond), tickOf(1, 4, KindThrottled, next, 100*time.Millisecond))
	if p.ceiling == 0 || p.phase != PhaseRecover {
		t.Fatalf("a refusal once smooth is a rate signal: ceiling %v phase %s", p.ceiling, p.phase)
	}
}
