package pacing

import "time"

// ProbeParams are the probe controller's tuning constants, in one place so
// the simulator can sweep them; DefaultProbeParams are the product's. What
// a value was chosen against, and the command that measures it, is in
// docs/pacing.md ("How to measure") and docs/pacing-experiments.md.
type ProbeParams struct {
	StartRate     float64 // requests per minute: safe for most APIs, fast to grow from
	SlowStartGrow float64
	Beta          float64 // rate after a refusal, as a share of the ceiling
	// ClimbDepth is how far under its target the climb back after a
	// refusal starts (1 − Beta). It is its own figure so the default's
	// arithmetic is exact: 1 − 0.9 folded at compile time is 0.1, computed
	// at run time 0.09999999999999998. A sweep of Beta sets both.
	ClimbDepth  float64
	FallingBeta float64 // further cut per consecutive refused tick
	RefRecover  time.Duration
	MinRecover  time.Duration
	MaxRecover  time.Duration
	// RefusalShare sets how long the climb back to the ceiling takes: long
	// enough that the refusals one probe costs (about one item's requests)
	// are this share of the traffic sent meanwhile. A 20/min upstream is
	// thus probed every ~15 min, a 600/min one every ~40 s.
	RefusalShare float64
	// ProbeCost is the fewest requests a refused probe costs under
	// FastItemsPerMin, whatever an item's: at 1 request an item a probe
	// at a low capacity drains the bucket for the next ticks too, so
	// counting it as one request would probe a slow upstream too often.
	// It is applied at low rates only: a smaller RefusalShare everywhere
	// would lengthen every cycle, fast upstreams' included.
	ProbeCost int
	// FastRefusalShare replaces RefusalShare from FastItemsPerMin items a
	// minute: there one refused item is a small share of a cycle's traffic
	// anyway, and probing twice as often finds a capacity that stepped up
	// twice as soon.
	FastRefusalShare float64
	FastItemsPerMin  float64
	// PenaltyFactor bounds the probing cycle once refusals have proven
	// expensive (they came with a Retry-After or led to a block).
	PenaltyFactor int
	// Where refusals are penalised the cycle is timed by what a refusal
	// costs, not by a share of the traffic: the wait between probe steps is
	// at least PenaltyHolds × the last hold (a refused step then costs at
	// most about 1/PenaltyHolds of the time since the last), doubles after
	// every refused step and halves after every clean one, so a capacity
	// that keeps rising is followed step after step and one that does not
	// is probed ever more rarely.
	PenaltyHolds   int
	PenaltyWaitMin time.Duration
	// PenaltyBlockHolds replaces PenaltyHolds once the upstream has
	// blocked: a block holds for minutes and may come back longer, so the
	// steps towards it are spaced further apart.
	PenaltyBlockHolds int
	// PenaltyMaxHolds caps the wait between probe steps at this many
	// Retry-After holds (never under the floor): refused steps double the
	// wait, and uncapped it would reach MaxRecover × PenaltyFactor, longer
	// than a capacity may keep still, so a rise would wait a phase to be
	// found. A refused step then costs at most about 1/PenaltyMaxHolds of
	// the time since the last; the value is the fewest holds under which
	// no scenario family's worst case falls (-sweep PenaltyMaxHolds=… and
	// -variants with -params). Not once the upstream has blocked: a block
	// holds for minutes, so its cap stays MaxRecover × PenaltyFactor, and
	// a "block" lifted within its first probes is a drained bucket at a
	// slow upstream whose refusals a tighter cap would multiply.
	PenaltyMaxHolds int
	// PenaltyMaxDoublings: clean penalised steps grow 5%, 10%, 20% and no
	// further (a refused step costs the same hold whatever its size, but
	// lands further above the capacity).
	PenaltyMaxDoublings int
	// PenaltyEstimateDoublings: each refusal doubles the wait between
	// probe steps, but until a refused step has measured the burst, a run
	// resumed after a hold and refused before any step refutes the first
	// estimate, not a probe, and takes the wait no further than this many
	// doublings over its floor: slow start's refusal, its resumed run's
	// and a climb to a ceiling the refilled burst inflated would otherwise
	// double the wait three times within minutes, and a rise soon after
	// would wait that long to be probed. Once a burst is measured the
	// estimate is a measurement, and every refusal doubles the wait.
	PenaltyEstimateDoublings int
	// PenaltyRiseProbe: once the capacity has been seen to rise, a
	// penalised step near a rate already refused tests this far above it
	// instead (the largest clean step): refused, it costs the same hold as
	// a small one, sooner; clean, it proves the rise in a few ticks.
	PenaltyRiseProbe float64
	// PenaltyEvidence: a rising step runs until it proves the rate it
	// stepped from (a burst of Burst requests carries a rate r for dt only
	// if the capacity is at least r - Burst/dt; 1 proves r - step, 2 half
	// the step too) before the next. A rising step that overshoots costs
	// one hold however soon it comes, and its refusal measures the new
	// capacity, so proving less per step finds a rise sooner; under 1 a
	// step would not prove even the rate it stepped from.
	PenaltyEvidence float64
	// ResumeSpread, ResumeServed: two refusals after resuming from a full
	// bucket measure the capacity (ΔS/Δt) only if refused at least
	// ResumeSpread apart in time since their resume and ResumeServed
	// requests apart in what was served; closer, the latency's jitter and
	// a request more or less dominate.
	ResumeSpread time.Duration
	ResumeServed int
	// ResumeWithin: a refused run is measured from its resume only if
	// refused within this long of it; a longer one may have climbed back
	// under the capacity and let the bucket overflow; a shorter one
	// leaves too few runs measured.
	ResumeWithin time.Duration
	// ResumeCloseCut: after resumed runs too close to measure (under
	// ResumeServed apart; the capacity lies well under both), the next
	// block lifts this much lower, so the next run measures; a deeper cut
	// costs the runs it was not needed for more.
	ResumeCloseCut float64
	// PenaltyRetryAfter is the Retry-After from which a refusal counts as expensive.
	PenaltyRetryAfter time.Duration
	// PenaltyMargin: where refusals are penalised the loop cruises this far
	// under the ceiling, and probes in single small steps. A refusal costs
	// one hold (30 s at a Retry-After of 30 s), while cruising 5% lower
	// costs as much every 10 minutes, so close under it pays; closer still
	// is refused more.
	PenaltyMargin float64
	FirstStep     float64 // first probe step above the ceiling
	// StepGrowth multiplies the step per clean probe tick (5%, 15%, 45%,
	// 100%): a refused probe costs one item whatever its size, and a
	// capacity that quadrupled is reached a tick sooner than by doubling.
	StepGrowth float64
	// PenalizedStep is the one step a probe takes where refusals are
	// penalised: small, since overshooting costs a block or a Retry-After.
	PenalizedStep float64
	MaxStep       float64 // a probe tick at most doubles the rate
	// BurstCarry: the first probe step asks this many bursts beyond the
	// ceiling over a tick, so a refusal is sure if the capacity did not
	// rise and a clean tick proves it did.
	BurstCarry   float64
	BackoffStart time.Duration
	// BackoffMax caps the wait between probes of a block: longer waits
	// would waste more of the time after the block lifts than the probes
	// cost. The probes are timed from when the block began (its refusal),
	// not from when it was recognised, and from a minute on fall on whole
	// minutes since then: blocks are set in whole minutes (1, 5, 10, 60),
	// so such a block's end is found at once, any other within a minute.
	BackoffMax     time.Duration
	OverloadShare  float64       // 5xx+timeouts share of a tick that means overload
	OverloadFactor float64       // rate cut per overloaded tick
	History        time.Duration // window of the accepted-rate estimate
	// EstimateSlack scales the measured accepted rate into the ceiling: a
	// little under it, since an over-estimate costs refusals at every cycle
	// while an under-estimate is corrected by the next probe.
	EstimateSlack float64
	// BusyRefusedSpan: a latency-bound tick (one chunk at the connections'
	// pace, above the rate) refused after sending this long learns the
	// ceiling from the accepted rate even above the rate (capped at the
	// rate, the ceiling would ratchet down below a capacity the
	// connections outpace); refused sooner, what it was served is mostly
	// the burst, which would overrate the capacity.
	BusyRefusedSpan time.Duration
	// BracketGap: a probe refused this far above the ceiling it learns
	// means the capacity rose and the minute's accepted rate (which mixes
	// the climb's slower ticks) underrates it; the ceiling is then found by
	// bisecting between the two, a tick per step, until they are this
	// close. A refused step costs one item, as in any probe.
	BracketGap float64
	// BracketRest caps the wait at the floor after a refused bisection step
	// (bracketRest: until the refused item is a small share of the
	// traffic), so refusals never bunch at slow rates (an upstream that
	// locks out after ~10 refusals a minute sees at most two refused items
	// a minute); a fast upstream refills within a second and waits a tick.
	BracketRest time.Duration
	// RiseEvidence: a probe tick served in full at this multiple of the
	// learned ceiling shows the capacity rose, and its rate (a burst of a
	// few dozen tokens cannot carry a tick at twice the ceiling) is the
	// bracket's floor, rather than the last minute's accepted rate, which
	// mixes in the slower ticks of the climb.
	RiseEvidence float64
	// SmoothShare: from this share of the learned ceiling, ticks are sent
	// in the smallest chunks that fill the connections (where those are
	// one round, the fewest items that carry the rate).
	SmoothShare float64
	// BusyShare: from this share of what the connections carry at the
	// measured latency, the connections bind, not the rate (chunks that
	// wait for their slowest answer carry less than the nominal six at once).
	BusyShare float64
	// BusySpan is how much of the connections' work a latency-bound tick
	// carries, all in one chunk: the tick ends at its slowest answer (up to
	// a timeout), and a minute of work keeps that wait a small share while
	// a refusal still ends the tick at once.
	BusySpan time.Duration
	// BusyPacedShare: where a refusal costs a hold or a block, or the
	// upstream paces clients itself, a latency-bound tick goes as one busy
	// chunk only where what the connections carry is at most this share of
	// the rate cruised at under the ceiling (connectionsBind): a busy chunk
	// goes at the connections' pace, above the rate, and the measured
	// latency is noisy: nearer 1, a ceiling read just above what the
	// connections carry sends busy chunks above the capacity and buys a
	// hold after each.
	BusyPacedShare float64
	// SmoothSlack: a smooth chunk (Smooth) is the smallest whose spacing at
	// the rate exceeds its slowest answer by this share, so the pause after
	// it absorbs the latency's jitter and the rate is kept.
	SmoothSlack float64
	// SmallBurstShare: a first refusal in a tick that served at most this
	// share of one chunk's requests says the bucket held less than half a
	// chunk: its burst may be small (a refusal at the rate after a burst of
	// 20 drained comes with most of a chunk served).
	SmallBurstShare float64
	// WaveSpread: requests whose sends lie this close together went out
	// at once (the runner starts a chunk's first round together; live
	// goroutines start within a few ms of each other). A small burst
	// refused in such a wave with some of it served measures the most
	// the upstream takes at once (Plan.MaxInFlight).
	WaveSpread time.Duration
	// BoundBurst: refused twice with fewer than this many served between
	// (5xx answers and timeouts count: they took a token too),
	// the capacity is under what was served plus one over the time
	// between (the bucket held under a token at both and cannot have
	// reached its burst, assumed no smaller than this, between them).
	BoundBurst int
	// BoundShare: the bound is taken only under this share of the ceiling
	// (slow start carried far above a low capacity by its burst): nearer,
	// a bucket that refusals drained below empty (refusals_consume) makes
	// it too low, and the usual cut is close anyway.
	BoundShare float64
	// DrainGap: after a tick of one chunk all refused right after a
	// refused tick with some served (a bucket drained at a low capacity,
	// or a block's start), the next waits this long, so a token has
	// refilled at any capacity over 6 a minute; refused again, it is a
	// block. Longer, a real block is recognised later.
	DrainGap time.Duration
}

// DefaultProbeParams are the product's tuning.
func DefaultProbeParams() ProbeParams {
	const beta, penalizedStep, maxDoublings = 0.9, 0.05, 2
	return ProbeParams{
		StartRate:                60,
		SlowStartGrow:            1.5,
		Beta:                     beta,
		ClimbDepth:               1 - beta, // folded exactly (see ClimbDepth)
		FallingBeta:              0.7,
		RefRecover:               80 * time.Second,
		MinRecover:               40 * time.Second,
		MaxRecover:               15 * time.Minute,
		RefusalShare:             0.01,
		ProbeCost:                2,
		FastRefusalShare:         0.02,
		FastItemsPerMin:          30,
		PenaltyFactor:            3,
		PenaltyHolds:             2,
		PenaltyWaitMin:           time.Minute,
		PenaltyBlockHolds:        3,
		PenaltyMaxHolds:          17,
		PenaltyMaxDoublings:      maxDoublings,
		PenaltyEstimateDoublings: 2,
		PenaltyRiseProbe:         penalizedStep * (1 << maxDoublings),
		PenaltyEvidence:          1,
		PenaltyRetryAfter:        5 * time.Second,
		ResumeSpread:             time.Second,
		ResumeServed:             10,
		ResumeWithin:             3 * time.Minute,
		ResumeCloseCut:           0.6,
		PenaltyMargin:            0.97,
		FirstStep:                0.05,
		StepGrowth:               3,
		PenalizedStep:            penalizedStep,
		MaxStep:                  1,
		BurstCarry:               1,
		BackoffStart:             15 * time.Second,
		BackoffMax:               time.Minute,
		OverloadShare:            0.5,
		OverloadFactor:           0.8,
		History:                  time.Minute,
		EstimateSlack:            0.98,
		BusyRefusedSpan:          TickInterval,
		BracketGap:               0.1,
		BracketRest:              30 * time.Second,
		RiseEvidence:             2,
		SmoothShare:              0.8,
		BusyShare:                0.8,
		BusySpan:                 time.Minute,
		BusyPacedShare:           0.8,
		SmoothSlack:              0.2,
		SmallBurstShare:          0.5,
		WaveSpread:               20 * time.Millisecond,
		BoundBurst:               5,
		BoundShare:               0.5,
		DrainGap:                 10 * time.Second,
	}
}
