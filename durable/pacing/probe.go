package pacing

import (
	"math"
	"time"
)

// Probe is the product's controller: a rate controller that learns where
// the upstream starts refusing (its ceiling) and spends most of its time
// just under it, probing above it rarely and gently.
//
//   - Slow start: from a modest rate, ×1.5 per clean tick until the first
//     refusal; unless refusals are penalised, the ceiling is then bisected
//     between the last clean rate and the refused one.
//   - On a tick with refusals the ceiling becomes the accepted rate of the
//     last minute (what the upstream really served: a token bucket refuses
//     exactly the excess) and the rate drops to 0.9× of it; refusals in
//     consecutive ticks mean the capacity fell, so the rate drops 0.7× more
//     each time (a halving is found in three ticks, not three windows).
//   - Recover: a concave (cubic) climb back to the ceiling over a time that
//     grows as the ceiling shrinks (60 s at 6000/min … 15 min at 20/min), so
//     a slow upstream is probed rarely and refusals stay a tiny share.
//   - Plateau at the ceiling for a quarter of that time, then probe: ×1.05,
//     ×1.15, ×1.45, ×2 per clean tick, so a capacity that quadrupled is
//     found in a handful of ticks. A probe refused far above the learned ceiling
//     (the capacity rose; the minute's accepted rate mixes in the climb)
//     bisects between the two instead of restarting the cycle from an
//     underestimate (after a refused step the next waits at the floor
//     until that refusal is ~2% of the traffic: a tick at 1000/min, half
//     a minute at slow rates); a probe tick served in full at twice
//     the ceiling or more is the bracket's floor. A refusal at the floor
//     right after a refused step ends the bracket there (the step drained
//     the bucket; it is not a fall of the capacity).
//   - Unpenalised probes learn the upstream's burst: a refused probe that
//     proved no rise measures what was served since it began beyond the
//     rate it began from (kept at the largest, so it errs high). Once known,
//     the first step asks a burst beyond the ceiling over a tick (smaller
//     steps are served whatever the capacity and prove nothing), later
//     steps triple from it; a refused probe is a rise only if what was
//     served beyond the burst over some stretch up to the refusal proves a
//     rate over 1.1× the ceiling, and the bracket then starts from that
//     proven rate (its refused steps raise it likewise). A refused probe
//     that proved no rise sets the ceiling to the minute's accepted rate,
//     at most one first step above the old ceiling (the big step bounds
//     the capacity loosely), and never under what was proven.
//   - Where refusals are penalised (Retry-After, blocks) the cycle is
//     timed by what a refusal costs: at least two holds (three once the
//     upstream has blocked) between steps,
//     doubled after a refused step, halved after a step that held for a
//     whole wait; clean steps grow 5%, 10%, 20%. A refused step resumes at
//     the rate before it (the hold is the refusal's cost; no cut on top).
//     A refused step also measures the upstream's burst (what it served
//     since the step began beyond the clean rate under it). A step served
//     in full at r for dt proves a capacity of at least r - burst/dt; once
//     that exceeds a rate refused before, the capacity rose: steps then
//     double (20%, 40%, … up to ×2), each as soon as it has proven half of
//     itself, until one is refused. After such a rise, a step near a rate
//     already refused tests 20% above it instead, so a clean one proves
//     the next rise within a few ticks and a refused one costs the same hold.
//     A refused rising step (from a rate well under the capacity, so a
//     full bucket) measures the capacity: it was served the burst plus
//     the capacity over its length, the burst taken as the smallest a
//     refused step measured. The loop resumes at 0.97 of that when it is
//     above the step before (which may lie far under it).
//   - Latency-bound (the rate asks about what six connections carry at the
//     measured latency): a tick is one chunk of a minute of the
//     connections' work, so they stay busy instead of waiting out every
//     small chunk's slowest answer or timeout.
//   - Two ticks in a row whose every request was refused are a block, not
//     a rate: the rate is kept and a single item probes it 15 s, 30 s and
//     a minute after the block began (its refusal, not when it was
//     recognised), then on every whole minute since, so a block set in
//     whole minutes is left the moment it lifts; its length, measured
//     from its start, times the later probe steps.
//   - Only refusals (429/403) are rate signals. 5xx and timeouts lower the
//     rate only when they are most of a tick (the upstream is overloaded),
//     ×0.8 a tick down to an item a tick, so an outage's end is seen at
//     once; the ceiling is kept, refusals among them are ignored and the
//     overloaded minute is left out of the accepted rate, and once a tick
//     is served the rate climbs back as after a refusal. Not-found answers
//     are successes.
//   - Retry-After and RateLimit-Remaining/Reset are obeyed exactly: no
//     request before the time they give.
//   - Where the upstream paces clients (Careful) chunks are one round, and
//     each pause is sized by how long such a chunk lasted (its own slowest
//     answer), so the rate sent is the rate asked for.
//   - Small bursts: the first refusal of a run that came in chunks of
//     several items with less than half a chunk served is read as "too many
//     at once", not "too fast": the rate is kept and sending turns smooth
//     for the run (the smallest chunks that carry the rate, one item where
//     the latency allows, and a chunk's spacing across tick boundaries
//     too); refusals from then on are rate signals as above.
//   - Every tick stops at the first chunk with a refusal; after a refusal,
//     chunks shrink to one item, so a refusal costs a few requests at most.
type Probe struct {
	pacer
	Rate         float64 `json:"rate"`    // target, requests per minute
	Ceiling      float64 `json:"ceiling"` // where refusals start; 0 = not yet known
	Phase        string  `json:"phase"`
	PhaseSince   int64   `json:"phase_since"`   // unix ms
	LastThrottle int64   `json:"last_throttle"` // unix ms
	Streak       int     `json:"streak"`        // consecutive ticks with refusals
	ProbeTicks   int     `json:"probe_ticks"`
	BackoffMs    int64   `json:"backoff_ms"`
	Blocks       int     `json:"blocks"`
	// BlockFrom is when the current block began, as late as it can have:
	// the end of the refused tick before the one that showed the block
	// (unix ms; 0 = not blocked).
	BlockFrom int64 `json:"block_from,omitempty"`
	// Penalized: refusals here are expensive (Retry-After, blocks), so the
	// ceiling is probed far more rarely.
	Penalized bool `json:"penalized"`
	// Careful: the upstream paces clients itself (Retry-After or RateLimit
	// headers seen), so chunks are sized to be in flight at once: no request
	// waits in the runtime's queue to be sent after the answer that said stop.
	Careful bool        `json:"careful"`
	History []tickStats `json:"history"`
	// Refused is the lowest rate known to be refused while bracketing the
	// ceiling after a probe found far more room than expected (0 = not
	// bracketing).
	Refused float64 `json:"refused,omitempty"`
	// Clean is the rate of the last probe tick that was served in full
	// (0 = none since the last refusal).
	Clean float64 `json:"clean,omitempty"`
	// PenaltyWaitMs is the wait between probe steps where refusals are
	// penalised (0 = not yet set: probePenaltyWaitMin); HoldMs is what the
	// last penalty held traffic for (a Retry-After, a block's length);
	// PenaltySteps counts the clean penalised steps since the last refusal.
	PenaltyWaitMs int64 `json:"penalty_wait_ms,omitempty"`
	HoldMs        int64 `json:"hold_ms,omitempty"`
	PenaltySteps  int   `json:"penalty_steps,omitempty"`
	// StepAt is when the current penalised step began (unix ms) and StepOK
	// what the upstream served since; Burst is the upstream's burst as a
	// refused step measured it (requests; 0 = not yet measured).
	StepAt int64   `json:"step_at,omitempty"`
	StepOK int     `json:"step_ok,omitempty"`
	Burst  float64 `json:"burst,omitempty"`
	// StepRefused is the lowest rate a penalised step was refused at since
	// the capacity last rose (0 = none); Rising means a step proved the
	// capacity rose above it, so steps grow geometrically, each as soon as
	// the last has proven itself.
	StepRefused float64 `json:"step_refused,omitempty"`
	Rising      bool    `json:"rising,omitempty"`
	RoseAt      int64   `json:"rose_at,omitempty"`     // unix ms of the last proven rise (0 = none)
	StepSize    float64 `json:"step_size,omitempty"`   // the last rising step, as a share of the rate
	EvidenceMs  int64   `json:"evidence_ms,omitempty"` // how long a rising step runs before the next
	// ProbeAt is when the current unpenalised probe began (unix ms; 0 =
	// not probing), ProbeFrom the rate it began from (served in full, so
	// under the capacity) and ProbeOK what the upstream served since: at
	// a refusal that is no rise, what it served beyond ProbeFrom is its burst.
	ProbeAt   int64   `json:"probe_at,omitempty"`
	ProbeFrom float64 `json:"probe_from,omitempty"`
	ProbeOK   int     `json:"probe_ok,omitempty"`
	LastStep  float64 `json:"last_step,omitempty"` // the last probe step, as a share of the rate
	// BurstLow is the smallest burst a refused step measured (each
	// measurement is an upper bound on the burst; Burst, their largest,
	// keeps rise proofs safe, this one sizes a capacity measurement);
	// StepCap is the capacity the last refused rising step measured with
	// it (0 = none).
	BurstLow float64 `json:"burst_low,omitempty"`
	StepCap  float64 `json:"step_cap,omitempty"`
	// Smooth: the upstream's burst looked smaller than a chunk (Done's
	// trial), so chunks are the smallest that carry the rate and a tick
	// begins a chunk's spacing after the last one's start; SmoothTried:
	// the trial was made (once a run); LastChunk: the last plan's chunk.
	Smooth      bool `json:"smooth,omitempty"`
	SmoothTried bool `json:"smooth_tried,omitempty"`
	LastChunk   int  `json:"last_chunk,omitempty"`
}

type tickStats struct {
	End int64 `json:"end"` // unix ms
	OK  int   `json:"ok"`
}

const (
	probeStartRate     = 60.0 // requests per minute: safe for most APIs, fast to grow from
	probeSlowStartGrow = 1.5
	probeBeta          = 0.9 // rate after a refusal, as a share of the ceiling
	probeFallingBeta   = 0.7 // further cut per consecutive refused tick
	probeRefRate       = 600.0
	probeRefRecover    = 80 * time.Second
	probeMinRecover    = 40 * time.Second
	probeMaxRecover    = 15 * time.Minute
	// probeRefusalShare sets how long the climb back to the ceiling takes:
	// long enough that the refusals one probe costs (about one item's
	// requests) are this share of the traffic sent meanwhile. A 20/min
	// upstream is thus probed every ~15 min, a 600/min one every ~40 s.
	probeRefusalShare = 0.01
	// probeFastRefusalShare replaces probeRefusalShare from
	// probeFastItemsPerMin items a minute: there one refused item is a
	// small share of a cycle's traffic anyway, and probing twice as often
	// finds a capacity that stepped up twice as soon.
	probeFastRefusalShare = 0.02
	probeFastItemsPerMin  = 30.0
	// probePenaltyFactor bounds the probing cycle once refusals have
	// proven expensive (they came with a Retry-After or led to a block).
	probePenaltyFactor = 3
	// Where refusals are penalised the cycle is timed by what a refusal
	// costs, not by a share of the traffic: the wait between probe steps
	// is at least probePenaltyHolds × the last hold (a refused step then
	// costs at most about 1/probePenaltyHolds of the time since the last),
	// doubles after every refused step and halves after every clean one,
	// so a capacity that keeps rising is followed step after step and one
	// that does not is probed ever more rarely.
	probePenaltyHolds   = 2
	probePenaltyWaitMin = time.Minute
	// probePenaltyBlockHolds replaces probePenaltyHolds once the upstream
	// has blocked: a block holds for minutes and may come back longer, so
	// the steps towards it are spaced further apart.
	probePenaltyBlockHolds = 3
	// probePenaltyMaxDoublings: clean penalised steps grow 5%, 10%, 20%
	// and no further (a refused step costs the same hold whatever its size,
	// but lands further above the capacity).
	probePenaltyMaxDoublings = 2
	// probePenaltyRiseProbe: once the capacity has been seen to rise, a
	// penalised step near a rate already refused tests this far above it
	// instead (the largest clean step): refused, it costs the same hold
	// as a small one, sooner; clean, it proves the rise in a few ticks.
	probePenaltyRiseProbe = probePenalizedStep * (1 << probePenaltyMaxDoublings)
	// probePenaltyEvidence: a rising step runs until it proves at least
	// half of itself (a burst of Burst requests carries a rate r for dt
	// only if the capacity is at least r - Burst/dt) before the next.
	probePenaltyEvidence = 2.0
	// probePenaltyRetryAfter is the Retry-After from which a refusal counts as expensive.
	probePenaltyRetryAfter = 5 * time.Second
	// probePenaltyMargin: where refusals are penalised the loop cruises this
	// far under the ceiling, and probes in single small steps. A refusal
	// costs one hold (30 s at a Retry-After of 30 s), while cruising 5%
	// lower costs as much every 10 minutes: close under it pays (0.93 →
	// 0.97: rise-retry-after 0.815 → 0.825 of the best; 0.96–0.97 is the
	// robust optimum over seeds, 0.98 is refused more).
	probePenaltyMargin = 0.97
	probeFirstStep     = 0.05 // first probe step above the ceiling
	// probeStepGrowth multiplies the step per clean probe tick (5%, 15%,
	// 45%, 100%): a refused probe costs one item whatever its size, and a
	// capacity that quadrupled is reached a tick sooner than by doubling.
	probeStepGrowth = 3.0
	// probePenalizedStep is the one step a probe takes where refusals are
	// penalised: small, since overshooting costs a block or a Retry-After.
	probePenalizedStep = 0.05
	probeMaxStep       = 1.0 // a probe tick at most doubles the rate
	// probeBurstCarry: the first probe step asks this many bursts beyond
	// the ceiling over a tick, so a refusal is sure if the capacity did
	// not rise and a clean tick proves it did.
	probeBurstCarry   = 1.0
	probeBackoffStart = 15 * time.Second
	// probeBackoffMax caps the wait between probes of a block: longer waits
	// would waste more of the time after the block lifts than the probes cost.
	// The probes are timed from when the block began (its refusal),
	// not from when it was recognised, and from a minute on fall on whole
	// minutes since then: blocks are set in whole minutes (1, 5, 10, 60),
	// so such a block's end is found at once, any other within a minute.
	probeBackoffMax     = time.Minute
	probeOverloadShare  = 0.5 // 5xx+timeouts share of a tick that means overload
	probeOverloadFactor = 0.8
	probeHistory        = time.Minute // window of the accepted-rate estimate
	// probeEstimateSlack scales the measured accepted rate into the ceiling:
	// a little under it, since an over-estimate costs refusals at every
	// cycle while an under-estimate is corrected by the next probe.
	probeEstimateSlack = 0.98
	// probeBracketGap: a probe refused this far above the ceiling it
	// learns means the capacity rose and the minute's accepted rate (which
	// mixes the climb's slower ticks) underrates it; the ceiling is then
	// found by bisecting between the two, a tick per step, until they are
	// this close. A refused step costs one item, as in any probe.
	probeBracketGap = 0.1
	// probeBracketRest caps the wait at the floor after a refused bisection
	// step (bracketRest: until the refused item is a small share of the
	// traffic), so refusals never bunch at slow rates (an upstream that
	// locks out after ~10 refusals a minute sees at most two refused items
	// a minute); a fast upstream refills within a second and waits a tick.
	probeBracketRest = 30 * time.Second
	// probeRiseEvidence: a probe tick served in full at this multiple of
	// the learned ceiling shows the capacity rose, and its rate (a burst
	// of a few dozen tokens cannot carry a tick at twice the ceiling) is
	// the bracket's floor, rather than the last minute's accepted rate,
	// which mixes in the slower ticks of the climb.
	probeRiseEvidence = 2.0
	// probeSmoothShare: from this share of the learned ceiling, ticks are
	// sent in the smallest chunks that fill the connections.
	probeSmoothShare = 0.8
	// probeBusyShare: from this share of what the connections carry at the
	// measured latency, the connections bind, not the rate (chunks that wait
	// for their slowest answer carry less than the nominal six at once).
	probeBusyShare = 0.8
	// probeBusySpan is how much of the connections' work a latency-bound
	// tick carries, all in one chunk: the tick ends at its slowest answer
	// (up to a timeout), and a minute of work keeps that wait a small share
	// while a refusal still ends the tick at once.
	probeBusySpan = time.Minute
	// probeSmoothSlack: a smooth chunk (Smooth) is the smallest whose
	// spacing at the rate exceeds its slowest answer by this share, so
	// the pause after it absorbs the latency's jitter and the rate is kept.
	probeSmoothSlack = 0.2
	// probeSmallBurstShare: a first refusal in a tick that served at most
	// this share of one chunk's requests says the bucket held less than
	// half a chunk: its burst may be small (a refusal at the rate after a
	// burst of 20 drained comes with most of a chunk served).
	probeSmallBurstShare = 0.5
)

// Phase names.
const (
	PhaseSlowStart = "slow_start"
	PhaseRecover   = "recover"
	PhasePlateau   = "plateau"
	PhaseProbe     = "probe"
	PhaseBlocked   = "blocked"
	PhaseBracket   = "bracket" // bisecting between the ceiling and a refused rate
)

// NewProbe starts in slow start.
func NewProbe(cfg Config) *Probe {
	return &Probe{pacer: newPacer(cfg), Rate: probeStartRate, Phase: PhaseSlowStart}
}

func (p *Probe) Name() string { return "probe" }

// CapacityPerMin is the learned ceiling (0 until the first refusal).
func (p *Probe) CapacityPerMin() float64 { return p.Ceiling }

// Cooldowns counts blocks: ticks where the upstream refused everything.
func (p *Probe) Cooldowns() int { return p.Blocks }

func (p *Probe) Plan(now time.Time) Plan {
	chunk := 0
	if p.Streak > 0 || p.Phase == PhaseProbe || p.Phase == PhaseBracket {
		chunk = 1 // near the limit, a refusal should cost one item
	}
	if chunk == 0 && p.Ceiling > 0 && p.Rate >= probeSmoothShare*p.Ceiling {
		// Near the ceiling, the smallest chunks that fill the connections:
		// a token bucket with a small burst refuses a second's worth of
		// requests sent at once even when the rate is under its capacity.
		chunk = chunkItems(p.Sub)
	}
	if p.Smooth && chunk != 1 {
		if c := p.smoothChunk(); c > 0 {
			chunk = c
		}
	}
	if p.Careful {
		chunk = max(1, MaxConnections/p.Sub)
	}
	// An upstream that paces clients itself gets chunks in flight at once:
	// a chunk is one round, and the tick's slowest answer overrates it.
	p.selfPaced = p.Careful
	plan := p.plan(now, p.Rate, chunk)
	p.LastChunk = plan.ChunkItems
	switch {
	case plan.Items == 0:
	case p.Phase == PhaseBlocked:
		plan.Items, plan.ChunkItems = 1, 1 // one probe item while blocked
		p.LastPlanRq = p.Sub
	case p.latencyBound() && !p.Careful && p.Streak == 0:
		// The connections are the limit: keep all six busy for a while in
		// one chunk, rather than waiting out every small chunk's slowest answer.
		items := int(math.Ceil(p.connPerMin() * probeBusySpan.Minutes() / float64(p.Sub)))
		plan.Items = min(max(plan.Items, items), MaxSubrequestsPerTick/p.Sub)
		plan.ChunkItems, plan.ChunkPause = plan.Items, 0
		p.LastPlanRq = plan.Items * p.Sub
	}
	return plan
}

// smoothChunk is the smallest chunk that still carries the rate: its
// requests at once are few, and the pause after it (its spacing at the
// rate less its slowest answer) stays at least probeSmoothSlack of it.
// 0 (the usual chunks) where no chunk up to a connection-filling one does.
func (p *Probe) smoothChunk() int {
	perSec := p.Rate / 60
	lat := math.Max(p.LatencyMs, p.SlowMs) / 1000
	for ci := 1; ci <= chunkItems(p.Sub); ci++ {
		reqs := float64(ci * p.Sub)
		rounds := math.Ceil(reqs / MaxConnections)
		if reqs/perSec*(1-probeSmoothSlack) >= rounds*lat {
			return ci
		}
	}
	return 0
}

// connPerMin is what MaxConnections carry per minute at the measured latency.
func (p *Probe) connPerMin() float64 {
	return MaxConnections * float64(time.Minute.Milliseconds()) / math.Max(p.LatencyMs, 1)
}

// latencyBound reports whether the rate asks about as much as the
// connections can carry, so latency, not the rate, sets the pace.
func (p *Probe) latencyBound() bool { return p.Rate >= probeBusyShare*p.connPerMin() }

// recoverTime is how long the climb back to the ceiling takes: longer for
// slow upstreams, where each refusal is a bigger share of the traffic, and
// far longer where refusals are penalised.
func (p *Probe) recoverTime() time.Duration {
	d := probeRefRecover
	if p.Ceiling > 0 {
		share := probeRefusalShare
		if p.Ceiling/float64(p.Sub) >= probeFastItemsPerMin {
			share = probeFastRefusalShare
		}
		d = time.Duration(float64(p.Sub) / (share * p.Ceiling) * float64(time.Minute))
	}
	if p.Penalized {
		return p.penaltyWait()
	}
	return min(max(d, probeMinRecover), probeMaxRecover*probePenaltyFactor)
}

// bracketRest is the wait at the floor after a refused bisection step:
// long enough that the refused item is probeFastRefusalShare of the
// traffic sent meanwhile, at least a tick and at most probeBracketRest.
// A fast upstream's bracket thus closes in a few ticks instead of spending
// half a minute under the capacity per refused step.
func (p *Probe) bracketRest() time.Duration {
	d := time.Duration(float64(p.Sub) / (probeFastRefusalShare * math.Max(p.Ceiling, MinRatePerMin)) * float64(time.Minute))
	return min(max(d, TickInterval), probeBracketRest)
}

// penaltyWait is the wait between probe steps where refusals are penalised.
func (p *Probe) penaltyWait() time.Duration {
	if p.Rising {
		return time.Duration(p.EvidenceMs) * time.Millisecond
	}
	holds := time.Duration(probePenaltyHolds)
	if p.Blocks > 0 {
		holds = probePenaltyBlockHolds
	}
	lo := max(probePenaltyWaitMin, holds*time.Duration(p.HoldMs)*time.Millisecond)
	w := time.Duration(p.PenaltyWaitMs) * time.Millisecond
	return min(max(w, lo), probeMaxRecover*probePenaltyFactor)
}

// penaltyRefused lengthens the penalised cycle after a refusal, and learns
// from it: the refused rate tops the bracket, and a step that began at a
// full bucket (under the capacity, not mid-ramp) measures the burst the
// upstream let through beyond the clean rate under it.
func (p *Probe) penaltyRefused(now time.Time) {
	p.StepCap = 0
	if dt := float64(now.UnixMilli()-p.StepAt) / 60000; p.StepAt > 0 && p.Clean > 0 && dt > 0 {
		switch b := float64(p.StepOK) - p.Clean*dt; {
		case !p.Rising && b >= 1:
			p.Burst = math.Max(p.Burst, b)
			if p.BurstLow == 0 || b < p.BurstLow {
				p.BurstLow = b
			}
		case p.Rising && p.BurstLow > 0:
			// A rising step starts from a rate well under the capacity
			// (a full bucket) and is refused once the bucket is empty:
			// it was served BurstLow + capacity × dt.
			p.StepCap = (float64(p.StepOK) - p.BurstLow) / dt
		}
	}
	if p.StepRefused == 0 || p.Rate < p.StepRefused {
		p.StepRefused = p.Rate
	}
	p.Rising, p.StepSize, p.StepAt, p.StepOK = false, 0, 0, 0
	p.PenaltyWaitMs = (2 * p.penaltyWait()).Milliseconds()
	p.PenaltySteps = 0
}

// riseProven reports whether the current penalised step has been served in
// full for long enough to prove a rate above one refused before: a burst
// of Burst requests carries a rate r for dt only if the capacity is at
// least r - Burst/dt.
func (p *Probe) riseProven(now time.Time) bool {
	if p.StepAt == 0 || p.StepRefused == 0 || p.Burst == 0 || p.Rate <= p.StepRefused {
		return false
	}
	dt := float64(now.UnixMilli()-p.StepAt) / 60000
	return dt > 0 && p.Rate-p.Burst/dt > p.StepRefused
}

func (p *Probe) setPhase(ph string, now time.Time) {
	p.Phase, p.PhaseSince = ph, now.UnixMilli()
}

// provenPerMin is the capacity the upstream proved up to now: over any
// stretch a token bucket serves at most its burst plus its rate, so what
// it served beyond Burst since the end of an earlier tick (or since this
// tick's first request) is a rate it sustains. The best such stretch is
// the one where the client sent above the capacity throughout.
func (p *Probe) provenPerMin(now time.Time, t tally) float64 {
	best := 0.0
	if dt := now.Sub(t.first).Minutes(); dt > 0 && !t.first.IsZero() {
		best = (float64(t.ok) - p.Burst) / dt
	}
	ok := 0
	for i := len(p.History) - 1; i > 0; i-- {
		ok += p.History[i].OK
		if dt := float64(now.UnixMilli()-p.History[i-1].End) / 60000; dt > 0 {
			best = math.Max(best, (float64(ok)-p.Burst)/dt)
		}
	}
	return best
}

// measureBurst learns the upstream's burst from a refused probe that was
// no rise: what the upstream served since the probe began beyond the rate
// it began from (served in full, so at most the capacity).
func (p *Probe) measureBurst(now time.Time) {
	if p.ProbeAt == 0 || p.ProbeFrom <= 0 {
		return
	}
	dt := float64(now.UnixMilli()-p.ProbeAt) / 60000
	if b := float64(p.ProbeOK) - p.ProbeFrom*dt; b >= 1 {
		p.Burst = math.Max(p.Burst, b)
	}
}

// acceptedPerMin is what the upstream served over the last minute.
func (p *Probe) acceptedPerMin(now time.Time) float64 {
	cutoff := now.Add(-probeHistory).UnixMilli()
	ok, oldest := 0, now.UnixMilli()
	for _, h := range p.History {
		if h.End >= cutoff {
			ok += h.OK
			oldest = min(oldest, h.End)
		}
	}
	span := math.Max(float64(now.UnixMilli()-oldest), float64(TickInterval.Milliseconds()))
	return float64(ok) / span * 60000
}

func (p *Probe) Done(now time.Time, outcomes []Outcome) time.Time {
	t := p.observe(outcomes)
	if t.sent == 0 {
		return p.next(now, p.Rate, 0) // nothing was sent (waiting, or no work): no evidence
	}
	p.History = append(p.History, tickStats{End: now.UnixMilli(), OK: t.ok})
	cutoff := now.Add(-2 * probeHistory).UnixMilli()
	for len(p.History) > 0 && p.History[0].End < cutoff {
		p.History = p.History[1:]
	}

	for _, o := range outcomes {
		if o.RetryAfter > 0 || o.Remaining >= 0 {
			p.Careful = true
		}
		if o.Kind == KindThrottled && o.RetryAfter >= probePenaltyRetryAfter {
			p.Penalized = true
			p.HoldMs = max(p.HoldMs, o.RetryAfter.Milliseconds())
		}
	}
	if p.StepAt > 0 {
		p.StepOK += t.ok
	}
	if p.ProbeAt > 0 {
		p.ProbeOK += t.ok
	}
	if t.throttled > 0 && !p.Smooth && !p.SmoothTried && !p.Penalized && p.Phase != PhaseBlocked && p.Streak == 0 &&
		p.LastChunk > 1 && float64(t.ok) <= probeSmallBurstShare*float64(p.LastChunk*p.Sub) &&
		float64(t.serverErr+t.timeouts) <= probeOverloadShare*float64(t.sent) {
		// The first refusal of a run, in chunks of several items, with
		// less than half a chunk served: the upstream's burst may be
		// smaller than a chunk (too many at once, not too fast). Send
		// smoothly from now on and keep the rate; a refusal then is a
		// rate signal as any.
		p.Smooth, p.SmoothTried = true, true
		return p.next(now, p.Rate, t.sent)
	}
	if p.Penalized && t.throttled > 0 && p.Phase != PhaseBlocked {
		p.penaltyRefused(now)
	}
	switch {
	case t.throttled > 0 && t.ok == 0 && (p.Streak > 0 || p.Phase == PhaseBlocked):
		// Everything refused, even after backing off: a block or lockout.
		// (A single refused tick is not enough: a tick of one item near
		// the limit is all refused too.) Rate says nothing here; wait,
		// doubling the wait each time, and try one item.
		if p.Phase != PhaseBlocked {
			p.Blocks++
			p.Penalized = true
			// The block began with the refused tick before this one.
			p.BlockFrom = now.UnixMilli()
			if p.Streak > 0 {
				p.BlockFrom = p.LastThrottle
			}
			p.setPhase(PhaseBlocked, now)
		}
		if p.BlockFrom == 0 {
			p.BlockFrom = p.PhaseSince // blocked in state stored before BlockFrom
		}
		at := p.blockProbeAt(now)
		p.BackoffMs = at - now.UnixMilli()
		p.NotBefore = max(p.NotBefore, at)
		p.LastThrottle = now.UnixMilli()
	case p.Phase != PhaseBlocked && float64(t.serverErr+t.timeouts) > probeOverloadShare*float64(t.sent):
		// Overloaded: its refusals, if any, say nothing about the rate
		// limit, nor does the minute's accepted rate; cut the rate, no
		// lower than an item a tick (so the end of an outage is seen
		// within a tick), and climb back to the ceiling once it is served.
		p.Streak = 0
		p.History = p.History[:0]
		p.Rate = clampRate(p.Rate * probeOverloadFactor)
		p.Rate = math.Max(p.Rate, math.Min(p.Ceiling, float64(p.Sub)*time.Minute.Seconds()/TickInterval.Seconds()))
		if p.Phase == PhasePlateau || p.Phase == PhaseProbe || p.Phase == PhaseBracket {
			p.Refused = 0
			p.setPhase(PhaseRecover, now)
		}
	case t.throttled > 0 && p.Phase == PhaseBracket && p.Streak == 0:
		// Bisecting: this step was too far; back to the ceiling, and bisect
		// from there unless the bracket is already tight.
		p.Refused = p.Rate
		p.Rate = p.Ceiling
		p.Streak++
		p.LastThrottle = now.UnixMilli()
		if !p.Penalized && p.Burst > 0 {
			p.Ceiling = math.Max(p.Ceiling, math.Min(p.provenPerMin(now, t), p.Refused))
			p.Rate = clampRate(p.Ceiling * probeBeta)
		}
		if p.Refused <= p.Ceiling*(1+probeBracketGap) {
			p.Refused = 0
			p.setPhase(PhasePlateau, now)
		}
	case t.throttled > 0:
		if p.Streak == 0 {
			est := p.acceptedPerMin(now) * probeEstimateSlack
			refused, probing, old := p.Rate, p.Phase == PhaseProbe, p.Ceiling
			aware, rise := probing && !p.Penalized && p.Burst > 0 && old > 0, false
			if aware {
				// The burst is known: what the upstream served beyond
				// it proves a capacity (a token bucket serves at most
				// its burst plus its rate over any stretch).
				proven := p.provenPerMin(now, t)
				rise = proven > old*(1+probeBracketGap)
				if rise {
					est = proven // the capacity rose: bracket from what is proven
				} else {
					// No rise: the step, sized beyond the burst, says
					// little about how far above the ceiling the capacity is.
					est = math.Max(math.Min(old*(1+probeFirstStep), est), proven)
				}
			}
			if probing && !p.Penalized && !rise && (p.Burst == 0 || p.ProbeTicks <= 1) {
				p.measureBurst(now)
			}
			p.ProbeAt, p.ProbeOK = 0, 0
			p.Ceiling = math.Min(p.Rate, math.Max(est, MinRatePerMin))
			if probing && !p.Penalized && p.Burst == 0 && old > 0 && p.Clean >= probeRiseEvidence*old {
				p.Ceiling = math.Max(p.Ceiling, math.Min(p.Clean, refused))
			}
			if p.Phase == PhaseSlowStart && !p.Penalized && p.Clean > 0 {
				// Slow start's last clean tick is a floor the minute's
				// accepted rate (mixing in slower ticks) may underrate.
				p.Ceiling = math.Max(p.Ceiling, math.Min(p.Clean, refused))
				probing = true
			}
			p.Rate = clampRate(p.Ceiling * probeBeta)
			if p.Penalized && p.Clean > 0 && p.Clean < refused {
				// A refusal here cost a hold already: resume at the last
				// rate served in full (the one before the refused step)
				// rather than cutting below it and climbing back.
				p.Ceiling, p.Rate = p.Clean/probePenaltyMargin, p.Clean
				if c := math.Min(p.StepCap, refused); c*probePenaltyMargin > p.Clean {
					// A refused rising step measured a capacity above
					// the step before it: cruise under that instead.
					p.Ceiling, p.Rate = c, c*probePenaltyMargin
				}
			}
			p.Clean = 0
			if probing && !p.Penalized && (!aware || rise) && refused > p.Ceiling*(1+probeBracketGap) {
				// The capacity rose well above the old ceiling: bisect for it.
				p.Refused, p.Rate = refused, p.Ceiling
				p.Streak++
				p.LastThrottle = now.UnixMilli()
				p.setPhase(PhaseBracket, now)
				break
			}
		} else if p.Streak == 1 && p.Phase == PhaseBracket && !p.Penalized {
			// Refused at the bracket's floor (served in full before) right
			// after a refused step above it: the step drained the bucket,
			// the capacity did not fall. End the bracket at the floor.
			p.Refused = 0
			p.Rate = clampRate(p.Ceiling * probeBeta)
		} else {
			// Still refused after backing off: the capacity fell.
			p.Ceiling = p.Rate
			p.Rate = clampRate(p.Rate * probeFallingBeta)
		}
		p.Streak++
		p.LastThrottle = now.UnixMilli()
		p.setPhase(PhaseRecover, now)
	default:
		p.Streak = 0
		if p.Phase == PhaseBlocked {
			// The block lifted: resume below the old ceiling.
			p.HoldMs = now.UnixMilli() - p.BlockFrom
			if p.BlockFrom == 0 {
				p.HoldMs = now.UnixMilli() - p.PhaseSince // state from before BlockFrom
			}
			p.BackoffMs, p.BlockFrom = 0, 0
			p.setPhase(PhaseRecover, now)
			p.LastThrottle = now.UnixMilli()
			break
		}
		if !p.usedPlan(t, p.Rate) {
			break // an empty queue or slow connections prove nothing about the rate
		}
		p.grow(now)
	}
	rate := p.Rate
	if p.latencyBound() {
		rate = math.Max(rate, p.connPerMin()) // the connections pace this tick, not the rate
	}
	next := p.next(now, rate, t.sent)
	if p.Smooth && p.LastChunk > 0 && !t.lastSent.IsZero() {
		// The next tick's first chunk keeps the spacing after this tick's
		// last one: woken at the paid-for time, it would go out right after
		// the last chunk's answers, two chunks at once.
		gap := time.Duration(float64(p.LastChunk*p.Sub) / (rate / 60) * float64(time.Second))
		if at := t.lastSent.Add(gap); next.Before(at) {
			next = at
		}
	}
	return next
}

// blockProbeAt is when to try one item next while blocked: probeBackoffStart
// after the block began, doubling up to probeBackoffMax, then every
// probeBackoffMax, all counted from BlockFrom (see probeBackoffMax).
func (p *Probe) blockProbeAt(now time.Time) int64 {
	since := now.UnixMilli() - p.BlockFrom
	start, step := probeBackoffStart.Milliseconds(), probeBackoffMax.Milliseconds()
	off := start
	for off < step && off <= since {
		off = min(2*off, step)
	}
	if off <= since {
		off = (since/step + 1) * step
	}
	return p.BlockFrom + off
}

// grow advances the rate after a clean tick that used its plan.
func (p *Probe) grow(now time.Time) {
	if p.Penalized && !p.Rising && p.riseProven(now) {
		// The capacity rose: step on at once, in doubling steps from the
		// largest clean step (the one after StepSize).
		p.Rising, p.StepRefused, p.StepSize = true, 0, probePenalizedStep*math.Pow(2, probePenaltyMaxDoublings-1)
		p.RoseAt = now.UnixMilli()
		p.setPhase(PhaseProbe, now)
	}
	switch p.Phase {
	case PhaseSlowStart:
		p.Clean = p.Rate
		p.Rate = clampRate(p.Rate * probeSlowStartGrow)
	case PhaseBracket:
		// The rate held: it is the new floor of the bracket.
		p.Ceiling = math.Max(p.Ceiling, p.Rate)
		if now.Sub(time.UnixMilli(p.LastThrottle)) < p.bracketRest() {
			return
		}
		if p.Refused <= p.Ceiling*(1+probeBracketGap) {
			p.Refused = 0
			p.LastThrottle = now.UnixMilli()
			p.setPhase(PhasePlateau, now)
			return
		}
		p.Rate = clampRate(math.Sqrt(p.Ceiling * p.Refused))
	case PhaseRecover:
		k := p.recoverTime()
		target := p.Ceiling
		if p.Penalized {
			target *= probePenaltyMargin
		}
		dt := now.Sub(time.UnixMilli(p.LastThrottle))
		if dt >= k {
			p.Rate = clampRate(math.Max(p.Rate, target))
			p.setPhase(PhasePlateau, now)
			return
		}
		// Concave: fast right after the cut, flattening at the target.
		x := 1 - dt.Seconds()/k.Seconds()
		p.Rate = clampRate(math.Max(p.Rate, target*(1-(1-probeBeta)*x*x*x)))
	case PhasePlateau:
		if now.Sub(time.UnixMilli(p.PhaseSince)) >= p.recoverTime()/4 {
			p.ProbeTicks = 0
			p.ProbeAt, p.ProbeFrom, p.ProbeOK = now.UnixMilli(), p.Rate, 0
			p.setPhase(PhaseProbe, now)
		}
	case PhaseProbe:
		step := math.Min(probeFirstStep*math.Pow(probeStepGrowth, float64(p.ProbeTicks)), probeMaxStep)
		if p.Penalized {
			// One step, then cruise again: an over-probe costs a block. The
			// last step held, so the next comes sooner and may be larger.
			step := probePenalizedStep * math.Pow(2, float64(min(p.PenaltySteps, probePenaltyMaxDoublings)))
			if p.Rising {
				step = math.Min(2*math.Max(p.StepSize, probePenalizedStep), probeMaxStep)
				p.StepSize = step
				next := p.Rate * (1 + step)
				p.EvidenceMs = int64(probePenaltyEvidence * p.Burst / (next - p.Rate) * 60000)
				p.EvidenceMs = max(p.EvidenceMs, TickInterval.Milliseconds())
			}
			if p.PenaltySteps > 0 {
				// The last step held for a whole wait: clean, so the
				// wait halves. (The first step after a refusal has no
				// clean step behind it: the doubled wait stands.)
				p.PenaltyWaitMs = (p.penaltyWait() / 2).Milliseconds()
			}
			p.PenaltySteps++
			p.Clean = p.Rate
			next := p.Rate * (1 + step)
			if r := p.StepRefused; p.RoseAt > 0 && r > 0 && next*(1+probePenalizedStep) >= r {
				// The capacity has risen before: a step at or just under
				// a rate already refused would only be refused again or
				// prove nothing new, so test well above it. A refusal
				// costs the same hold, comes sooner, and a clean step
				// proves a rise within a few ticks.
				next = math.Max(next, r*(1+probePenaltyRiseProbe))
			}
			p.Rate = clampRate(next)
			p.StepAt, p.StepOK = now.UnixMilli(), 0
			p.Ceiling = math.Max(p.Ceiling, p.Rate/probePenaltyMargin)
			p.LastThrottle = now.UnixMilli()
			p.setPhase(PhaseRecover, now)
			return
		}
		if !p.Penalized && p.Burst > 0 && p.ProbeTicks == 0 {
			// The first step goes beyond what the burst carries in a
			// tick: a smaller one is served whatever the capacity.
			tick := math.Max(TickInterval.Minutes(), float64(p.Sub)/p.Rate)
			step = math.Min(math.Max(step, probeBurstCarry*p.Burst/(p.Rate*tick)), probeMaxStep)
		}
		if p.ProbeTicks > 0 {
			step = math.Min(math.Max(step, p.LastStep*probeStepGrowth), probeMaxStep)
		}
		p.LastStep = step
		p.ProbeTicks++
		p.Clean = p.Rate
		p.Rate = clampRate(p.Rate * (1 + step))
	}
}

// HoldUntil is when the next request may go (a block backoff, Retry-After).
func (p *Probe) HoldUntil() time.Time { return time.UnixMilli(p.NotBefore) }

// Release lifts the hold and the block backoff (Releaser): the next tick
// sends one probe item, as after a block.
func (p *Probe) Release() {
	p.pacer.Release()
	p.BackoffMs = 0
}

// Tune sets the rate; a batch/interval pair is turned into the rate it
// carries. The learned ceiling is kept: the loop climbs from here.
func (p *Probe) Tune(t TuneRequest) {
	switch {
	case t.RatePerMin != nil:
		p.Rate = clampRate(*t.RatePerMin)
	case t.BatchSize != nil || t.IntervalMs != nil:
		batch, interval := float64(max(1, p.LastPlanRq/p.Sub)), float64(TickInterval.Milliseconds())
		if t.BatchSize != nil {
			batch = float64(*t.BatchSize)
		}
		if t.IntervalMs != nil {
			interval = float64(*t.IntervalMs)
		}
		p.Rate = clampRate(batch * float64(p.Sub) * 60000 / interval)
	}
}

// Describe reports the rate, the learned ceiling and the phase.
func (p *Probe) Describe(now time.Time) map[string]any {
	return map[string]any{
		"rate_per_min": math.Round(p.Rate*10) / 10, "ceiling_per_min": math.Round(p.Ceiling*10) / 10,
		"phase": p.Phase, "refused_streak": p.Streak, "backoff_ms": p.BackoffMs,
		"latency_ms": math.Round(p.LatencyMs), "blocks": p.Blocks,
	}
}
