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
//     exactly the excess; refused again within a minute of the last
//     refusal, at least what was served since it, as the minute mixes in
//     the climb before it) and the rate drops to 0.9× of it; refusals in
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
//     above the step before (which may lie far under it). A run resumed
//     after a hold (a Retry-After's end, a block's lift) starts at a full
//     bucket: two such runs refused within ResumeWithin measure the
//     capacity as what they served apart over how long they lasted apart
//     (S = burst + capacity × t), and the loop cruises under it at once.
//     One such run, with a burst measured, bounds it (the burst is at
//     least the largest measured): refused again in a row, the loop
//     cruises under that bound rather than cutting ×0.7, and at a run's
//     first refusal the bound replaces the minute's accepted rate where
//     that (counting the hold) lies under it.
//   - Latency-bound (the rate asks about what six connections carry at the
//     measured latency): a tick is one chunk of a minute of the
//     connections' work, so they stay busy instead of waiting out every
//     small chunk's slowest answer or timeout.
//   - A burst under the connections: a refusal in the run's first chunk
//     whose first wave (the requests sent at once) had some served and some
//     refused measured the bucket's burst, full at the run's start; from
//     then on at most that many requests are in flight (Plan.MaxInFlight),
//     so a latency-bound tick keeps that many connections busy instead of
//     refusing the rest of every round.
//   - Refusals in a row with fewer than BoundBurst served between bound the
//     capacity (the bucket held under a token at both): taken where it is
//     under half the ceiling, a low capacity is found in one step. A chunk
//     all refused right after a refused tick with some served is the
//     bucket that tick drained, not a block: the next waits DrainGap.
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
//     and while probing, chunks shrink to the fewest items that still
//     carry the rate at the measured latency (one item where it allows, at
//     most one round of the connections), so a refusal costs a few requests
//     at most and the rate, not one connection at a time, sets the pace.
//     Near the ceiling, a chunk that would be one round sent at once is
//     likewise the fewest items that carry the rate.
//
// How it is built: every tick becomes one event (probe_events.go), and a
// transition table picks what the event does in the current phase; what a
// refusal costs (an item, or a hold) is a probing policy (probe_policy.go);
// evidence about the capacity and the burst is in probe_evidence.go; chunk
// shaping is apart from deciding (probe_chunks.go); every tuning figure is
// in ProbeParams; the persisted state is versioned (probe_state.go).
type Probe struct {
	pacer
	params ProbeParams

	rate         float64 // target, requests per minute
	ceiling      float64 // where refusals start; 0 = not yet known
	phase        string
	phaseSince   int64 // unix ms
	lastThrottle int64 // unix ms
	streak       int   // consecutive ticks with refusals
	probeTicks   int
	backoffMs    int64
	blocks       int
	// blockFrom is when the current block began, as late as it can have:
	// the end of the refused tick before the one that showed the block
	// (unix ms; 0 = not blocked).
	blockFrom int64
	// penalized: refusals here are expensive (Retry-After, blocks), so the
	// ceiling is probed far more rarely (holdCost instead of itemCost).
	penalized bool
	// careful: the upstream paces clients itself (Retry-After or RateLimit
	// headers seen), so chunks are sized to be in flight at once: no request
	// waits in the runtime's queue to be sent after the answer that said stop
	// (a latency-bound tick at one request an item where the connections
	// bind excepted: busyPlan).
	careful bool
	history history
	// refusedRate is the lowest rate known to be refused while bracketing
	// the ceiling after a probe found far more room than expected (0 = not
	// bracketing).
	refusedRate float64
	// clean is the rate of the last probe tick that was served in full
	// (0 = none since the last refusal).
	clean float64
	// penaltyWaitMs is the wait between probe steps where refusals are
	// penalised (0 = not yet set: PenaltyWaitMin); holdMs is what the last
	// penalty held traffic for (a Retry-After, a block's length);
	// penaltySteps counts the clean penalised steps since the last refusal.
	penaltyWaitMs int64
	holdMs        int64
	penaltySteps  int
	// step is what the upstream served since the current penalised step
	// began; burst is its burst as refused steps measured it.
	step  window
	burst burstEstimate
	// stepRefused is the lowest rate a penalised step was refused at since
	// the capacity last rose (0 = none); rising means a step proved the
	// capacity rose above it, so steps grow geometrically, each as soon as
	// the last has proven itself.
	stepRefused float64
	rising      bool
	roseAt      int64   // unix ms of the last proven rise (0 = none)
	stepSize    float64 // the last rising step, as a share of the rate
	evidenceMs  int64   // how long a rising step runs before the next
	// probe is what the upstream served since the current unpenalised
	// probe began, from probeFrom (served in full, so under the capacity):
	// at a refusal that is no rise, what it served beyond that is its burst.
	probe     window
	probeFrom float64
	lastStep  float64 // the last probe step, as a share of the rate
	// stepCap is the capacity the last refused rising step measured (0 = none).
	stepCap float64
	// smooth: the upstream's burst looked smaller than a chunk (the small
	// burst event), so chunks are the smallest that carry the rate and a
	// tick begins a chunk's spacing after the last one's start;
	// smoothTried: the trial was made (once a run); lastChunk: the last
	// plan's chunk.
	smooth      bool
	smoothTried bool
	lastChunk   int
	// refusedAll: the last tick with an answer had every request refused
	// (a block needs two such ticks where the second is one item).
	refusedAll bool
	// boundFrom and boundRate are the ceiling and rate before a drained
	// tick or a refill bound cut them in this run of refusals (0 = none):
	// a block found next restores them; boundAt is the refusal before
	// that cut (unix ms), when such a block began.
	boundFrom, boundRate float64
	boundAt              int64
	// resume is what the upstream served since traffic could resume after
	// the last refusal's hold (its Retry-After's end, a block's next
	// probe; not open without a hold): the bucket was full then. resumed
	// is such a run up to its refusal (the first of two that measure the
	// capacity).
	resume  window
	resumed resumeWindow
	// resumeClose: at an upstream that has blocked, the last refused run
	// resumed after a hold served too little more than the kept one to
	// measure against it; the next block lifts to a lower ceiling
	// (ResumeCloseCut).
	resumeClose bool
	// busyTick: the tick Done reports was one latency-bound chunk, sent
	// at the connections' pace, above the rate (not stored: one Done).
	busyTick bool
}

// Phase names.
const (
	PhaseSlowStart = "slow_start"
	PhaseRecover   = "recover"
	PhasePlateau   = "plateau"
	PhaseProbe     = "probe"
	PhaseBlocked   = "blocked"
	PhaseBracket   = "bracket" // bisecting between the ceiling and a refused rate
)

// NewProbe starts in slow start with the product's tuning.
func NewProbe(cfg Config) *Probe { return NewProbeWith(cfg, DefaultProbeParams()) }

// NewProbeWith starts in slow start with the given tuning (a sweep).
func NewProbeWith(cfg Config, params ProbeParams) *Probe {
	return &Probe{pacer: newPacer(cfg), params: params, rate: params.StartRate, phase: PhaseSlowStart}
}

func (p *Probe) Name() string { return "probe" }

// CapacityPerMin is the learned ceiling (0 until the first refusal).
func (p *Probe) CapacityPerMin() float64 { return p.ceiling }

// Cooldowns counts blocks: ticks where the upstream refused everything.
func (p *Probe) Cooldowns() int { return p.blocks }

// HoldUntil is when the next request may go (a block backoff, Retry-After).
func (p *Probe) HoldUntil() time.Time { return time.UnixMilli(p.NotBefore) }

// Release lifts the hold and the block backoff (Releaser): the next tick
// sends one probe item, as after a block.
func (p *Probe) Release() {
	p.pacer.Release()
	p.backoffMs = 0
}

// Tune sets the rate; a batch/interval pair is turned into the rate it
// carries. The learned ceiling is kept: the loop climbs from here.
func (p *Probe) Tune(t TuneRequest) {
	switch {
	case t.RatePerMin != nil:
		p.rate = clampRate(*t.RatePerMin)
	case t.BatchSize != nil || t.IntervalMs != nil:
		batch, interval := float64(max(1, p.LastPlanRq/p.Sub)), float64(TickInterval.Milliseconds())
		if t.BatchSize != nil {
			batch = float64(*t.BatchSize)
		}
		if t.IntervalMs != nil {
			interval = float64(*t.IntervalMs)
		}
		p.rate = clampRate(batch * float64(p.Sub) * 60000 / interval)
	}
}

// Describe reports the rate, the learned ceiling and the phase, and the
// probing cycle: how long the climb back to the ceiling takes (where
// refusals are penalised, the wait between probe steps).
func (p *Probe) Describe(now time.Time) map[string]any {
	return map[string]any{
		"rate_per_min": math.Round(p.rate*10) / 10, "ceiling_per_min": math.Round(p.ceiling*10) / 10,
		"phase": p.phase, "refused_streak": p.streak, "backoff_ms": p.backoffMs,
		"latency_ms": math.Round(p.LatencyMs), "blocks": p.blocks,
		"penalized": p.penalized, "cycle_ms": p.recoverTime().Milliseconds(),
		"max_in_flight": p.InFlight, // 0: the runtime's MaxConnections
	}
}

func (p *Probe) setPhase(ph string, now time.Time) {
	p.phase, p.phaseSince = ph, now.UnixMilli()
}
