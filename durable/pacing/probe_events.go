package pacing

import (
	"math"
	"time"
)

// event is what one tick told the probe; each tick is exactly one.
type event int

const (
	// evClean: served, and the tick sent its whole plan at the rate:
	// evidence that the rate is safe.
	evClean event = iota
	// evUnused: served, but the tick sent less than planned or was carried
	// by slow connections: no evidence about the rate.
	evUnused
	// evRefused: some requests were refused (429/403).
	evRefused
	// evAllRefused: everything refused after a refused tick, or while
	// blocked: a block or lockout, not a rate.
	evAllRefused
	// evOverloaded: most answers were 5xx or timeouts.
	evOverloaded
	// evSmallBurst: the first refusal of a run, in chunks of several items
	// with less than half a chunk served: too many at once, not too fast.
	evSmallBurst
)

// transition is what an event does in a phase; it returns the phase to
// enter ("" = stay, the phase's start unchanged).
type transition func(p *Probe, now time.Time, t tally) string

// anyPhase keys a row's default: the phases the row does not name.
const anyPhase = ""

// probeTransitions is the state machine: for each event, its transition in
// each phase. The phases each leads to are in the transitions' comments.
var probeTransitions = map[event]map[string]transition{
	evSmallBurst: {anyPhase: (*Probe).smoothen},
	evAllRefused: {anyPhase: (*Probe).block},
	evOverloaded: {
		PhasePlateau: (*Probe).overloadMidCycle, PhaseProbe: (*Probe).overloadMidCycle,
		PhaseBracket: (*Probe).overloadMidCycle, anyPhase: (*Probe).overload,
	},
	evRefused: {PhaseBracket: (*Probe).bracketRefused, anyPhase: (*Probe).refused},
	evUnused:  {PhaseBlocked: (*Probe).unblock, anyPhase: (*Probe).idle},
	evClean:   {PhaseBlocked: (*Probe).unblock, anyPhase: (*Probe).served},
}

func (p *Probe) transition(ev event) transition {
	row := probeTransitions[ev]
	if tr, ok := row[p.phase]; ok {
		return tr
	}
	return row[anyPhase]
}

// firstChunkOfRun reports whether t is the run's first tick, refused in
// its first chunk: the bucket was full, so it holds less than a chunk
// (at 1 request per item a chunk of 6 meets a burst of 5 with 5 served,
// more than SmallBurstShare of it: read as a rate, it would cut the
// ceiling to a fraction of the capacity).
func (p *Probe) firstChunkOfRun(t tally) bool {
	return p.phase == PhaseSlowStart && p.ceiling == 0 && p.rate == p.params.StartRate && t.sent <= p.lastChunk*p.Sub
}

// classify turns a tick into its event.
func (p *Probe) classify(t tally) event {
	overloaded := float64(t.serverErr+t.timeouts) > p.params.OverloadShare*float64(t.sent)
	switch {
	case t.throttled > 0 && !p.smooth && !p.smoothTried && !p.penalized && p.phase != PhaseBlocked && p.streak == 0 &&
		p.lastChunk > 1 && (float64(t.ok) <= p.params.SmallBurstShare*float64(p.lastChunk*p.Sub) || p.firstChunkOfRun(t)) && !overloaded:
		return evSmallBurst
	case t.throttled > 0 && t.ok == 0 && (p.phase == PhaseBlocked || p.streak > 0 && !p.drained(t)):
		// A single refused tick is not enough: a tick of one item near
		// the limit is all refused too.
		return evAllRefused
	case p.phase != PhaseBlocked && overloaded:
		return evOverloaded
	case t.throttled > 0:
		return evRefused
	case !p.usedPlan(t, p.rate):
		return evUnused
	}
	return evClean
}

func (p *Probe) Done(now time.Time, outcomes []Outcome) time.Time {
	p.busyTick = p.busyPlan() // as Plan chose, before this tick's latencies
	t := p.observe(outcomes)
	if t.sent == 0 {
		return p.next(now, p.rate, 0) // nothing was sent (waiting, or no work): no evidence
	}
	p.history.record(now, t.ok, p.params.History)
	p.readHints(outcomes)
	p.step.add(t.ok)
	p.probe.add(t.ok)
	p.resume.add(t.ok)
	ev := p.classify(t)
	if t.throttled > 0 && p.phase != PhaseBlocked {
		p.policy().refusal(p, now)
	}
	if ev == evSmallBurst && p.firstChunkOfRun(t) {
		p.learnInFlight(outcomes) // a full bucket met the chunk's first wave
	}
	d := p.beforeDrain(ev, t)
	if next := p.transition(ev)(p, now, t); next != "" {
		p.setPhase(next, now)
	}
	p.afterDrain(now, ev, t, d)
	if ev == evSmallBurst {
		return p.next(now, p.rate, t.sent) // the trial changes how, not when
	}
	if d.tick {
		// Give the bucket DrainGap to refill a token: refused again
		// after that, it is a block.
		return maxTime(p.wake(now, t), now.Add(p.params.DrainGap))
	}
	return p.wake(now, t)
}

// readHints notes what the answers say about the upstream itself: it paces
// clients (Retry-After, RateLimit headers), and a long Retry-After makes
// refusals expensive.
func (p *Probe) readHints(outcomes []Outcome) {
	for _, o := range outcomes {
		if o.RetryAfter > 0 || o.Remaining >= 0 {
			p.careful = true
		}
		if o.Kind == KindThrottled && o.RetryAfter >= p.params.PenaltyRetryAfter {
			p.penalized = true
			p.holdMs = max(p.holdMs, o.RetryAfter.Milliseconds())
		}
	}
}

// smoothen (small burst; stays): the upstream's burst may be smaller than
// a chunk. Send smoothly from now on and keep the rate; a refusal then is
// a rate signal as any.
func (p *Probe) smoothen(time.Time, tally) string {
	p.smooth, p.smoothTried = true, true
	return ""
}

// overload (overloaded; stays): its refusals, if any, say nothing about
// the rate limit, nor does the minute's accepted rate; cut the rate, no
// lower than an item a tick (the ceiling where that is lower), so the end
// of an outage is seen within a tick, in slow start too, and climb back to
// the ceiling once it is served.
func (p *Probe) overload(time.Time, tally) string {
	p.streak = 0
	p.history = p.history[:0]
	p.rate = clampRate(p.rate * p.params.OverloadFactor)
	floor := float64(p.Sub) * time.Minute.Seconds() / TickInterval.Seconds() // an item a tick
	if p.ceiling > 0 {
		floor = math.Min(p.ceiling, floor)
	}
	p.rate = math.Max(p.rate, floor)
	return ""
}

// overloadMidCycle (overloaded at or above the ceiling; → recover).
func (p *Probe) overloadMidCycle(now time.Time, t tally) string {
	p.overload(now, t)
	p.refusedRate = 0
	return PhaseRecover
}

// idle (unused; stays): an empty queue or slow connections prove nothing.
func (p *Probe) idle(time.Time, tally) string {
	p.streak = 0
	return ""
}

// unblock (served while blocked; → recover): the block lifted. Resume
// below the old ceiling; the block's length times the later probe steps.
// Where the run refused before the block was too close to the kept one to
// measure, the next resumes ResumeCloseCut lower, far enough to measure.
func (p *Probe) unblock(now time.Time, _ tally) string {
	p.streak = 0
	p.holdMs = now.UnixMilli() - p.blockFrom
	p.backoffMs, p.blockFrom = 0, 0
	p.lastThrottle = now.UnixMilli()
	if p.resumeClose {
		p.resumeClose = false
		p.ceiling *= p.params.ResumeCloseCut
		p.rate = clampRate(math.Min(p.rate, p.ceiling))
	}
	return PhaseRecover
}
