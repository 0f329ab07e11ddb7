package pacing_test

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"storecrawl/durable/pacing"
)

// The probe's tests drive ticks in through Plan and Done and read its
// decisions out: the plans, the wake-ups, Describe and the persisted
// state. A test starts the probe from a state as the Durable Object
// stores it.

var (
	t0 = time.Date(2026, 11, 22, 12, 0, 30, 0, time.UTC)
	dp = pacing.DefaultProbeParams()
)

// sub is the subrequests per item of most tests.
const sub = 4

// ms is t0+d in unix milliseconds, as the state stores times.
func ms(d time.Duration) int64 { return t0.Add(d).UnixMilli() }

// fields is a stored state, in part: what a test sets.
type fields map[string]any

// probeWith is a probe of n subrequests an item whose stored state has fs.
func probeWith(t *testing.T, n int, fs fields) *pacing.Probe {
	t.Helper()
	raw, err := json.Marshal(fs)
	if err != nil {
		t.Fatal(err)
	}
	p := pacing.NewProbe(pacing.Config{SubrequestsPerItem: n})
	if err := json.Unmarshal(raw, p); err != nil {
		t.Fatal(err)
	}
	return p
}

// probeState is the stored state as the tests read it.
type probeState struct {
	V             int     `json:"v"`
	Rate          float64 `json:"rate"`
	Ceiling       float64 `json:"ceiling"`
	Phase         string  `json:"phase"`
	Streak        int     `json:"streak"`
	Blocks        int     `json:"blocks"`
	Penalized     bool    `json:"penalized"`
	HoldMs        int64   `json:"hold_ms"`
	Refused       float64 `json:"refused"`
	Clean         float64 `json:"clean"`
	Burst         float64 `json:"burst"`
	BurstLow      float64 `json:"burst_low"`
	BurstResumed  float64 `json:"burst_resumed"`
	StepRefused   float64 `json:"step_refused"`
	ResumeAt      int64   `json:"resume_at"`
	ResumedMs     int64   `json:"resumed_ms"`
	ResumedOK     int     `json:"resumed_ok"`
	Rising        bool    `json:"rising"`
	RoseAt        int64   `json:"rose_at"`
	PenaltySteps  int     `json:"penalty_steps"`
	PenaltyWaitMs int64   `json:"penalty_wait_ms"`
	Smooth        bool    `json:"smooth"`
	SlowMs        float64 `json:"slow_ms"`
	RoundMs       float64 `json:"round_ms"`
	History       []any   `json:"history"`
}

func stateOf(t *testing.T, p *pacing.Probe) probeState {
	t.Helper()
	raw, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var s probeState
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// restart is p stored, changed by fs and decoded again.
func restart(t *testing.T, p *pacing.Probe, n int, fs fields) *pacing.Probe {
	t.Helper()
	raw, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	all := fields{}
	if err := json.Unmarshal(raw, &all); err != nil {
		t.Fatal(err)
	}
	for k, v := range fs {
		all[k] = v
	}
	return probeWith(t, n, all)
}

// cycle is the probing cycle the probe reports.
func cycle(p *pacing.Probe) time.Duration {
	return time.Duration(p.Describe(t0)["cycle_ms"].(int64)) * time.Millisecond
}

// tickOf builds a tick of n items × n requests of kind k, each taking lat.
func tickOf(n, subs int, k pacing.Kind, at time.Time, lat time.Duration) []pacing.Outcome {
	var out []pacing.Outcome
	for i := 0; i < n; i++ {
		for j := 0; j < subs; j++ {
			out = append(out, pacing.Outcome{Item: i, SentAt: at, DoneAt: at.Add(lat), Kind: k, Remaining: -1})
		}
	}
	return out
}

// runTick plans at now and reports every planned item answered with kind k
// (100 ms each) a second later, returning the next wake.
func runTick(p *pacing.Probe, now time.Time, k pacing.Kind) (pacing.Plan, time.Time) {
	plan := p.Plan(now)
	return plan, p.Done(now.Add(time.Second), tickOf(plan.Items, sub, k, now, 100*time.Millisecond))
}

// raTick is a tick of ok clean items and one refused item carrying a
// Retry-After of ra.
func raTick(p *pacing.Probe, now time.Time, ok int, ra time.Duration) time.Time {
	p.Plan(now)
	refused := tickOf(1, sub, pacing.KindThrottled, now, 100*time.Millisecond)
	for i := range refused {
		refused[i].Item = ok
		refused[i].RetryAfter = ra
	}
	return p.Done(now.Add(time.Second), append(tickOf(ok, sub, pacing.KindOK, now, 100*time.Millisecond), refused...))
}

func TestProbeLatencyBoundPlanKeepsConnectionsBusy(t *testing.T) {
	p := probeWith(t, 6, fields{"latency_ms": 2500, "rate": 200}) // six connections carry 144 requests a minute
	plan := p.Plan(t0)
	// A minute of the connections' work (144 requests = 24 items) in one chunk.
	if plan.Items != 24 || plan.ChunkItems != 24 || plan.ChunkPause != 0 {
		t.Fatalf("latency-bound plan %+v, want 24 items in one chunk", plan)
	}
	// Well under what the connections carry, the rate paces as before.
	rate := 60.0
	p.Tune(pacing.TuneRequest{RatePerMin: &rate})
	if plan := p.Plan(t0); plan.Items != 2 || plan.ChunkItems != 1 {
		t.Fatalf("rate-bound plan %+v, want 2 items (60/min × 10 s / 6) in chunks of 1", plan)
	}
}

func TestProbeOneRefusedTickIsNotABlock(t *testing.T) {
	p := probeWith(t, sub, fields{"rate": 300, "ceiling": 300, "phase": pacing.PhaseProbe})
	_, now := runTick(p, t0, pacing.KindThrottled) // one item, all refused: near the limit
	if s := stateOf(t, p); s.Phase == pacing.PhaseBlocked || s.Penalized || s.Blocks != 0 {
		t.Fatalf("a single all-refused tick was taken for a block: %+v", s)
	}
	runTick(p, now, pacing.KindThrottled) // still everything refused after backing off
	if s := stateOf(t, p); s.Phase != pacing.PhaseBlocked || s.Blocks != 1 || p.Cooldowns() != 1 {
		t.Fatalf("two all-refused ticks in a row are a block: phase %s blocks %d", s.Phase, s.Blocks)
	}
}

// climbHistory is a last minute that served ~300/min (a climb).
var climbHistory = []fields{{"end": ms(-50 * time.Second), "ok": 50}, {"end": ms(0), "ok": 200}}

func TestProbeBisectsAfterFindingFarMoreRoom(t *testing.T) {
	// The probe at 1000 is refused after a minute that served ~300/min.
	p := probeWith(t, sub, fields{"rate": 1000, "ceiling": 300, "phase": pacing.PhaseProbe, "history": climbHistory})
	_, now := runTick(p, t0, pacing.KindThrottled)
	if s := stateOf(t, p); s.Phase != pacing.PhaseBracket || s.Refused != 1000 || s.Rate != s.Ceiling {
		t.Fatalf("refused far above the learned ceiling: want bisection from it, got %+v", s)
	}
	lo := p.CapacityPerMin()
	// Clean ticks: the floor rises and the next step is the geometric mean,
	// once the rest after the refusal is over.
	for now.Sub(t0) < dp.BracketRest {
		_, now = runTick(p, now, pacing.KindOK)
	}
	_, now = runTick(p, now, pacing.KindOK)
	s := stateOf(t, p)
	if want := math.Sqrt(s.Ceiling * 1000); math.Abs(s.Rate-want) > 1e-6 || s.Ceiling < lo {
		t.Fatalf("bisection step %v, want √(%v × 1000) = %v", s.Rate, s.Ceiling, want)
	}
	// Steps continue until the bracket is within BracketGap.
	for i := 0; i < 20 && stateOf(t, p).Phase == pacing.PhaseBracket; i++ {
		_, now = runTick(p, now, pacing.KindOK)
	}
	if s := stateOf(t, p); s.Phase != pacing.PhasePlateau || s.Ceiling < 1000/(1+dp.BracketGap) {
		t.Fatalf("after clean bisection steps: phase %s ceiling %v", s.Phase, s.Ceiling)
	}
}

func TestProbeRiseEvidenceSetsTheBracketFloor(t *testing.T) {
	p := probeWith(t, sub, fields{"rate": 1000, "ceiling": 300, "phase": pacing.PhaseProbe, "probe_ticks": 5, "history": climbHistory})
	_, now := runTick(p, t0, pacing.KindOK) // 1000/min served in full: over 2× the ceiling
	if s := stateOf(t, p); s.Clean != 1000 || s.Rate != 2000 {
		t.Fatalf("clean probe tick: clean %v rate %v", s.Clean, s.Rate)
	}
	runTick(p, now, pacing.KindThrottled)
	if s := stateOf(t, p); s.Phase != pacing.PhaseBracket || s.Ceiling != 1000 || s.Refused != 2000 {
		t.Fatalf("refused at 2000 after 1000 was served: want the bracket [1000, 2000], got %+v", s)
	}
	// Without that evidence (the last clean tick under 2× the ceiling) the
	// floor stays the last minute's accepted rate.
	q := probeWith(t, sub, fields{"rate": 500, "ceiling": 300, "phase": pacing.PhaseProbe, "clean": 400, "history": climbHistory})
	runTick(q, t0, pacing.KindThrottled)
	if c := q.CapacityPerMin(); c >= 400 {
		t.Fatalf("a clean tick at 1.3× the ceiling taken as rise evidence: ceiling %v", c)
	}
}

func TestProbeSlowStartRefusalBisectsFromLastCleanRate(t *testing.T) {
	// Slow start served 200/min in full, then 300/min was refused. The
	// minute's accepted rate mixes in the slower ticks before; the last
	// clean rate is the floor, and the gap to the refused rate is bisected.
	history := []fields{{"end": ms(-50 * time.Second), "ok": 8}, {"end": ms(-10 * time.Second), "ok": 32}}
	p := probeWith(t, sub, fields{"history": history, "clean": 200, "rate": 300})
	p.Done(t0, append(tickOf(2, 4, pacing.KindOK, t0, 100*time.Millisecond), tickOf(1, 1, pacing.KindThrottled, t0, 100*time.Millisecond)...))
	if s := stateOf(t, p); s.Phase != pacing.PhaseBracket || s.Ceiling != 200 || s.Rate != 200 || s.Refused != 300 {
		t.Fatalf("after a refused slow-start tick: phase %s ceiling %.0f rate %.0f refused %.0f, want bracket 200/200/300",
			s.Phase, s.Ceiling, s.Rate, s.Refused)
	}
	// Where refusals are penalised the bracket is not used.
	q := probeWith(t, sub, fields{"history": history, "clean": 200, "rate": 300, "penalized": true})
	q.Done(t0, tickOf(1, 1, pacing.KindThrottled, t0, 100*time.Millisecond))
	if stateOf(t, q).Phase == pacing.PhaseBracket {
		t.Fatal("penalised slow start bisects")
	}
}

func TestProbeRecoverTimeShorterWhereAnItemIsSmall(t *testing.T) {
	slow := cycle(probeWith(t, sub, fields{"ceiling": 60}))  // 15 items a minute: one refused item is a larger share
	fast := cycle(probeWith(t, sub, fields{"ceiling": 240})) // 60 items a minute
	if want := time.Duration(4 / (dp.RefusalShare * 60) * float64(time.Minute)).Truncate(time.Millisecond); slow != want {
		t.Fatalf("60/min: recover %v, want %v", slow, want)
	}
	if want := time.Duration(4 / (dp.FastRefusalShare * 240) * float64(time.Minute)).Truncate(time.Millisecond); fast != want {
		t.Fatalf("240/min: recover %v, want %v", fast, want)
	}
}

func TestProbeSmallChunksNearTheCeiling(t *testing.T) {
	// 1400/min at 4 requests an item: a second's worth is 6 items; near a
	// learned ceiling of 1500 the chunks shrink to the 3 items that fill
	// the connections (two rounds of 6), so a small burst is not overrun.
	p := probeWith(t, sub, fields{"rate": 1400, "phase": pacing.PhasePlateau})
	if plan := p.Plan(t0); plan.ChunkItems != 6 {
		t.Fatalf("no ceiling known: chunks of %d items, want 6", plan.ChunkItems)
	}
	p = probeWith(t, sub, fields{"rate": 1400, "phase": pacing.PhasePlateau, "ceiling": 1500})
	if plan := p.Plan(t0); plan.ChunkItems != 3 {
		t.Fatalf("near the ceiling: chunks of %d items, want 3", plan.ChunkItems)
	}
}

func TestProbeStepsTripleWhileClean(t *testing.T) {
	p := probeWith(t, sub, fields{"rate": 300, "ceiling": 300, "phase": pacing.PhaseProbe, "phase_since": ms(0)})
	now := t0
	var steps []float64
	for i := 0; i < 4; i++ {
		before := stateOf(t, p).Rate
		_, now = runTick(p, now, pacing.KindOK)
		steps = append(steps, stateOf(t, p).Rate/before-1)
	}
	for i, want := range []float64{0.05, 0.15, 0.45, 1.0} {
		if math.Abs(steps[i]-want) > 1e-9 {
			t.Fatalf("clean probe steps %v, want 5%%, 15%%, 45%%, 100%%", steps)
		}
	}
}

func TestProbeNearTheLimitTheRateNotOneConnectionSetsThePace(t *testing.T) {
	// 1,800/min at 1 request an item and 120 ms: one item at a time would
	// carry 500/min (one connection). Probing, the chunk is the fewest
	// items sent at once that carry the rate with SmoothSlack to spare:
	// 30/s × 0.12 s ÷ 0.8 = 4.5, so 5 items, paced.
	p := probeWith(t, 1, fields{"rate": 1800, "ceiling": 1700, "phase": pacing.PhaseProbe, "latency_ms": 120})
	if plan := p.Plan(t0); plan.ChunkItems != 5 || plan.ChunkPause <= 0 {
		t.Fatalf("probing at 1800/min, 120 ms: %+v, want chunks of 5 with a pause", plan)
	}
	// 600/min: 10/s × 0.12 s ÷ 0.8 = 1.5, so 2 items at a time.
	p = probeWith(t, 1, fields{"rate": 600, "ceiling": 580, "phase": pacing.PhaseProbe, "latency_ms": 120})
	if plan := p.Plan(t0); plan.ChunkItems != 2 || plan.ChunkPause <= 0 {
		t.Fatalf("probing at 600/min, 120 ms: %+v, want chunks of 2 with a pause", plan)
	}
	// At 4 requests an item one item is already four connections: unchanged.
	p = probeWith(t, sub, fields{"rate": 1800, "ceiling": 1700, "phase": pacing.PhaseProbe, "latency_ms": 120})
	if plan := p.Plan(t0); plan.ChunkItems != 1 {
		t.Fatalf("probing at 4 requests an item: chunks of %d items, want 1", plan.ChunkItems)
	}
}

func TestProbeFirstChunkRefusedIsASmallBurst(t *testing.T) {
	// At 1 request an item slow start's first chunk is 6 requests at once;
	// a burst-5 bucket, full at the start, serves 5 and refuses one: more
	// than half a chunk served, but the bucket held less than a chunk. The
	// rate is kept and sending turns smooth, instead of a ceiling of 30/min.
	p := pacing.NewProbe(pacing.Config{SubrequestsPerItem: 1})
	plan := p.Plan(t0)
	if plan.ChunkItems != 6 {
		t.Fatalf("slow start at 1 request an item: chunks of %d items, want 6", plan.ChunkItems)
	}
	out := tickOf(6, 1, pacing.KindOK, t0, 100*time.Millisecond)
	out[5].Kind = pacing.KindThrottled
	p.Done(t0.Add(100*time.Millisecond), out)
	if s := stateOf(t, p); !s.Smooth || s.Ceiling != 0 || s.Rate != dp.StartRate || s.Phase != pacing.PhaseSlowStart {
		t.Fatalf("a refusal in the run's first chunk was read as the rate: %+v", s)
	}
}

func TestProbeRefusedAgainSoonLearnsFromWhatWasServedSince(t *testing.T) {
	// Refused 20 s after the last refusal: the minute's accepted rate
	// (300 in 52 s: 346/min) mixes in the slow climb before that refusal;
	// since it the upstream served 160 in 22 s (436/min), so the ceiling
	// is 0.98 of that, not of the minute's.
	p := probeWith(t, 1, fields{"rate": 560, "ceiling": 580, "phase": pacing.PhaseRecover, "last_throttle": ms(-20 * time.Second),
		"history": []fields{{"end": ms(-50 * time.Second), "ok": 100}, {"end": ms(-20 * time.Second), "ok": 40},
			{"end": ms(-10 * time.Second), "ok": 75}, {"end": ms(0), "ok": 75}}})
	p.Plan(t0)
	out := tickOf(11, 1, pacing.KindOK, t0, 100*time.Millisecond)
	out[10].Kind = pacing.KindThrottled
	p.Done(t0.Add(2*time.Second), out)
	want := 160.0 / 22 * 60 * dp.EstimateSlack
	if s := stateOf(t, p); math.Abs(s.Ceiling-want) > 0.5 || s.Phase != pacing.PhaseRecover {
		t.Fatalf("ceiling %v phase %s, want %.1f (what was served since the last refusal)", s.Ceiling, s.Phase, want)
	}
}

func TestProbeLatencyBoundTickRefusedLearnsAboveTheRate(t *testing.T) {
	// At 2,400/min and 120 ms six connections carry 3,000/min: the tick
	// goes out as one chunk at the connections' pace, above the rate, and
	// a refusal there says that pace was too fast, not the rate. The
	// ceiling is the accepted rate (errors-5xx#164 at 1 request per item,
	// capacity 2,805: capped at the rate it ratcheted down to 2,340).
	hist := []fields{}
	for i := 6; i >= 1; i-- {
		hist = append(hist, fields{"end": ms(time.Duration(-10*i) * time.Second), "ok": 430})
	}
	p := probeWith(t, 1, fields{"rate": 2400, "ceiling": 2450, "phase": pacing.PhaseRecover, "latency_ms": 120, "history": hist})
	if plan := p.Plan(t0); plan.ChunkItems != plan.Items || plan.ChunkPause != 0 {
		t.Fatalf("plan %+v, want one latency-bound chunk", plan)
	}
	var out []pacing.Outcome
	for i := range 600 { // 3,000/min for 12 s, the last one refused
		at := t0.Add(time.Duration(i) * 20 * time.Millisecond)
		out = append(out, pacing.Outcome{Item: i, SentAt: at, DoneAt: at.Add(120 * time.Millisecond), Kind: pacing.KindOK, Remaining: -1})
	}
	out[599].Kind = pacing.KindThrottled
	p.Done(t0.Add(12*time.Second), out)
	if s := stateOf(t, p); s.Ceiling <= 2400*1.05 || s.Ceiling > 3000 {
		t.Fatalf("ceiling %.1f, want the accepted rate above the rate 2,400, at most the 3,000 sent", s.Ceiling)
	}
}
