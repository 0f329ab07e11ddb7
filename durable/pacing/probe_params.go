package pacing

import "time"

// ProbeParams are the probe controller's tuning constants, in one place so
// the simulator can sweep them; DefaultProbeParams are the product's.
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
	// at a low capacity drains the bucket for the next ticks too (steady-20's variants at 1
	// request an item refused 2.33 % with 1, 1.99 % with 2; 0.5 %
	// RefusalShare at every shape did as much there but cost
	// refusals-consume's worst variant at 4 per item 0.856 → 0.739).
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
	// wait, and uncapped it reached MaxRecover × PenaltyFactor (45 min),
	// longer than a capacity keeps still in rise-retry-after's variants
	// (phases of 5–30 min), so a rise waited a phase to be found. A
	// refused step then costs at most 1/17 of the time since the last
	// (go run ./cmd/simulate -sweep PenaltyMaxHolds=0,16,17,18,20 and
	// -variants 200 -params PenaltyMaxHolds=…: 17 is the fewest holds
	// under which no family's worst case falls; 16 and 15 cost retry-after
	// its worst seed at 4 requests per item, 0.926 → 0.921). Not once the
	// upstream has blocked: a block holds for minutes, so its cap stays
	// MaxRecover × PenaltyFactor (storm-403 at 1 request per item reads
	// 0.569 of the oracle capped at 15 min, 0.727 at 45), and a "block"
	// lifted within its first probes is a drained bucket at a slow upstream
	// whose refusals the cap would multiply (steady-20's variants at 1
	// request per item: refused 2.07 %).
	PenaltyMaxHolds int
	// PenaltyMaxDoublings: clean penalised steps grow 5%, 10%, 20% and no
	// further (a refused step costs the same hold whatever its size, but
	// lands further above the capacity).
	PenaltyMaxDoublings int
	// PenaltyEstimateDoublings: each refusal doubles the wait between
	// probe steps, but until a refused step has measured the burst, a run
	// resumed after a hold and refused before any step refutes the first
	// estimate, not a probe, and takes the wait no further than this many
	// doublings over its floor. Slow start, its resumed run and a climb to
	// a ceiling the refilled burst inflated made three at once and an
	// 8-minute wait (rise-retry-after#48 at 70 then 250/min: the rise found
	// after 24 minutes, 0.35 of the oracle). Once a burst is measured the
	// estimate is a measurement, and refusals double as before
	// (retry-after#56: 0.92 → 0.89 of the oracle if they do not).
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
	// capacity, so proving less per step finds a rise sooner
	// (go run ./cmd/simulate -sweep PenaltyEvidence=0.5,1,1.5,2:
	// rise-retry-after 0.860/0.852/0.841/0.837 at 4 requests per item,
	// 0.840/0.838/0.831/0.822 at 1; no other scenario moves. 0.5 proves
	// less than the rate stepped from, and over -variants 200 its
	// rise-retry-after mean at 1 is 0.833 against 1's 0.837).
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
	// under the capacity and let the bucket overflow. 3 min against 1 and
	// 2 (rise-retry-after variants' worst 0.187 / 0.241 → 0.266) and 5
	// (storm-403 variants' worst 0.310 → 0.287).
	ResumeWithin time.Duration
	// ResumeCloseCut: after resumed runs too close to measure (under
	// ResumeServed apart; the capacity lies well under both), the next
	// block lifts this much lower, so the next run measures. 0.5–0.8 lift
	// as many storm-403 variants; 0.6 drops the fewest, by ≤ 0.019.
	ResumeCloseCut float64
	// PenaltyRetryAfter is the Retry-After from which a refusal counts as expensive.
	PenaltyRetryAfter time.Duration
	// PenaltyMargin: where refusals are penalised the loop cruises this far
	// under the ceiling, and probes in single small steps. A refusal costs
	// one hold (30 s at a Retry-After of 30 s), while cruising 5% lower
	// costs as much every 10 minutes: close under it pays (0.93 → 0.97:
	// rise-retry-after 0.815 → 0.825 of the best; 0.96–0.97 is the robust
	// optimum over seeds, 0.98 is refused more).
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
	// ceiling from the accepted rate even above the rate (errors-5xx#164
	// at 1 request per item: capped at the rate, the ceiling ratcheted
	// down to 0.83 of the capacity); refused sooner, what it was served
	// is mostly the burst (doubled#0: a 1.5 s tick overrated it by 17 %).
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
	// latency is noisy. Swept where the upstream paces clients (go run
	// ./cmd/simulate -variants 200 -params BusyPacedShare=…): rise-retry-
	// after's mean at 1 request per item 0.949 with none, then 0.961 at
	// 0.7, 0.972 at 0.8, 0.984 at 0.9 and 0.986 at 1, no family's worst
	// moving; but retry-after#180 (717/min at 423 ms, the connections
	// carrying ~850) read a ceiling above them, sent busy chunks, was held
	// again and again and fell 0.930 → 0.916 at 0.8, 0.885 at 0.9 and 0.87
	// at 1. Applied to upstreams that block too, 0.8 moved 7 of the 4,000
	// variants, all up (storm-403#144 0.63 → 0.85).
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
	// block (15 s: storm-403's worst variant at 1 request an item 0.253,
	// 10 s 0.277).
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
