package pacing

import (
	"math"
	"time"
)

// holdCost is the policy where a refusal costs a hold: the cycle is the
// penalty wait, the loop cruises PenaltyMargin under the ceiling, and a
// probe is one step (5%, 10%, 20%; doubling once a rise is proven).

func (holdCost) cycle(p *Probe) time.Duration { return p.penaltyWait() }

func (holdCost) cruise(p *Probe, ceiling float64) float64 { return ceiling * p.params.PenaltyMargin }

func (holdCost) drainsAtFloor() bool                     { return false }
func (holdCost) bracketRefused(*Probe, time.Time, tally) {}

// step (→ recover): one step, then cruise again: an over-probe costs a
// hold. The last step held, so the next comes sooner and may be larger.
func (holdCost) step(p *Probe, now time.Time) string {
	q := p.params
	step := q.PenalizedStep * math.Pow(2, float64(min(p.penaltySteps, q.PenaltyMaxDoublings)))
	if p.rising {
		step = math.Min(2*math.Max(p.stepSize, q.PenalizedStep), q.MaxStep)
		p.stepSize = step
		next := p.rate * (1 + step)
		p.evidenceMs = int64(q.PenaltyEvidence * p.burst.upper() / (next - p.rate) * 60000)
		p.evidenceMs = max(p.evidenceMs, TickInterval.Milliseconds())
	}
	if p.penaltySteps > 0 && !p.rising {
		// The last step held for a whole wait: clean, so the wait halves.
		// (The first step after a refusal has no clean step behind it:
		// the doubled wait stands. A rising step is timed by its
		// evidence, and leaves the wait as it was before the rise.)
		p.penaltyWaitMs = (p.penaltyWait() / 2).Milliseconds()
	}
	p.penaltySteps++
	p.clean = p.rate
	next := p.rate * (1 + step)
	if r := p.stepRefused; p.roseAt > 0 && r > 0 && next*(1+q.PenalizedStep) >= r {
		// The capacity has risen before: a step at or just under a rate
		// already refused would only be refused again or prove nothing
		// new, so test well above it. A refusal costs the same hold,
		// comes sooner, and a clean step proves a rise within a few ticks.
		next = math.Max(next, r*(1+q.PenaltyRiseProbe))
	}
	p.rate = clampRate(next)
	p.step.open(now)
	p.ceiling = math.Max(p.ceiling, p.rate/q.PenaltyMargin)
	p.lastThrottle = now.UnixMilli()
	return PhaseRecover
}

// rose: the current step was served in full long enough to prove a rate
// above one refused before. Step on at once, in doubling steps from the
// largest clean step (the one after stepSize).
func (holdCost) rose(p *Probe, now time.Time) bool {
	if p.rising || !p.riseProven(now) {
		return false
	}
	q := p.params
	p.rising, p.stepRefused, p.stepSize = true, 0, q.PenalizedStep*math.Pow(2, float64(q.PenaltyMaxDoublings-1))
	p.roseAt = now.UnixMilli()
	return true
}

// riseProven reports whether the current step has been served in full
// for long enough to prove a rate above one refused before.
func (p *Probe) riseProven(now time.Time) bool {
	if p.step.At == 0 || p.stepRefused == 0 || p.burst.upper() == 0 || p.rate <= p.stepRefused {
		return false
	}
	dt := p.step.minutes(now)
	return dt > 0 && p.burst.sustainedAt(p.rate, dt) > p.stepRefused
}

// refusal lengthens the cycle after a refusal, and learns from it: the
// refused rate tops the steps, and a step that began at a full bucket
// (under the capacity, not mid-ramp) measures the burst the upstream let
// through beyond the clean rate under it; a refused rising step (from a
// rate well under the capacity, so a full bucket) measures the capacity;
// a refused run resumed after a hold bounds the burst by what it served.
func (holdCost) refusal(p *Probe, now time.Time) {
	resumed := p.resumedRun(now) > 0 && p.step.At == 0 && !p.rising
	if resumed {
		p.burst.noteResumed(float64(p.resume.OK))
	}
	rose := p.rising
	p.stepCap = 0
	if dt := p.step.minutes(now); p.step.At > 0 && p.clean > 0 && dt > 0 {
		switch b := p.step.beyond(now, p.clean); {
		case !p.rising && b >= 1:
			p.burst.note(b)
		case p.rising && p.burst.Low > 0:
			p.stepCap = p.burst.capacity(p.step, now)
		}
	}
	if p.stepRefused == 0 || p.rate < p.stepRefused {
		p.stepRefused = p.rate
	}
	p.rising, p.stepSize = false, 0
	p.step.close()
	wait := p.penaltyWait()
	p.penaltyWaitMs = (2 * wait).Milliseconds()
	if rose {
		// A refused rising step ends a rise that was found (and measures
		// the capacity), not a probe that failed: the next probe comes
		// after the wait from before the rise, not sooner and not
		// doubled. Re-probing two holds after a rise cost a hold each
		// time the capacity had simply stopped rising.
		p.penaltyWaitMs = wait.Milliseconds()
	}
	if most := p.penaltyFloor() << p.params.PenaltyEstimateDoublings; resumed && !p.burst.known() && 2*wait > most {
		// A resumed run refused before any step, while no refused step
		// has measured the burst, refutes the first estimate (the
		// minute's accepted rate, inflated by the burst the hold
		// refilled), not a probe: it lengthens the wait no further.
		p.penaltyWaitMs = max(wait, most).Milliseconds()
	}
	p.penaltySteps = 0
}

// firstRefusal: a refusal here cost a hold already: resume at the last
// rate served in full (the one before the refused step) rather than
// cutting below it and climbing back; or, when a refused rising step
// measured a capacity above that, cruise under the capacity.
func (holdCost) firstRefusal(p *Probe, now time.Time, _ tally) bool {
	q := p.params
	refused := p.rate
	p.probe.close()
	p.setCeiling(p.heldCeiling(now))
	p.rate = clampRate(p.ceiling * q.Beta)
	if c := p.resumedCapacity(now); p.clean == 0 && c > 0 && c < refused {
		// Refused again soon after a hold, and once before: two windows
		// from a full bucket measure the capacity, where the minute's
		// accepted rate (it counts a block's minutes, a hold's 30 s) and a
		// cut of 0.9 per hold (a block each) do not. A measurement, it
		// stands above that estimate too, and over one run's upper bound
		// below, which is loose: cut from it, every resumed run would be
		// refused again.
		p.ceiling, p.rate = c, clampRate(c*q.PenaltyMargin)
	} else if b := p.resumedRunBound(now); p.clean == 0 && b > p.ceiling {
		// One such window bounds it from above, and the minute's
		// accepted rate, which counts the hold, lies under that bound:
		// the bound is the better reading.
		p.ceiling = math.Min(b, refused)
		p.rate = clampRate(p.ceiling * q.PenaltyMargin)
	}
	if p.clean > 0 && p.clean < refused {
		p.ceiling, p.rate = p.clean/q.PenaltyMargin, p.clean
		if c := math.Min(p.stepCap, refused); c*q.PenaltyMargin > p.clean {
			p.ceiling, p.rate = c, c*q.PenaltyMargin
		}
	}
	p.clean = 0
	return false
}

// heldCeiling is the ceiling a first refusal learns where a refusal costs
// a hold: the minute's accepted rate (acceptedCeiling), unless that minute
// holds the last refusal's hold, which it counts as served at nothing. Then
// the minute up to that refusal says more, where it lies above the
// minute's rate and under Beta × the rate refused: where slow start is
// refused, held and refused again early in the resumed run, the minute
// counts the hold as served at nothing and reads far under the capacity,
// and the penalised climb from there takes many steps.
func (p *Probe) heldCeiling(now time.Time) float64 {
	q := p.params
	est := p.acceptedCeiling(now)
	if !p.resume.isOpen() || p.lastThrottle == 0 || now.Sub(time.UnixMilli(p.lastThrottle)) >= q.History {
		return est
	}
	if before := p.history.acceptedUpTo(p.lastThrottle, q.History) * q.EstimateSlack; before > est && before <= q.Beta*p.rate {
		return before
	}
	return est
}

// penaltyWait is the wait between probe steps: while rising, as long as a
// step takes to prove itself; else at least PenaltyHolds × the last hold,
// at most PenaltyMaxHolds × a Retry-After hold (see penaltyMost).
func (p *Probe) penaltyWait() time.Duration {
	if p.rising {
		return time.Duration(p.evidenceMs) * time.Millisecond
	}
	w := time.Duration(p.penaltyWaitMs) * time.Millisecond
	return min(max(w, p.penaltyFloor()), p.penaltyMost())
}

// penaltyMost is the longest wait between probe steps: PenaltyMaxHolds ×
// the hold where refusals cost a Retry-After (never under the floor), and
// MaxRecover × PenaltyFactor once the upstream has blocked (see
// ProbeParams.PenaltyMaxHolds).
func (p *Probe) penaltyMost() time.Duration {
	q := p.params
	most := q.MaxRecover * time.Duration(q.PenaltyFactor)
	if p.blocks > 0 || p.holdMs <= 0 || q.PenaltyMaxHolds <= 0 {
		return most
	}
	held := time.Duration(q.PenaltyMaxHolds) * time.Duration(p.holdMs) * time.Millisecond
	return min(most, max(held, p.penaltyFloor()))
}

// penaltyFloor is the shortest wait between probe steps: PenaltyHolds ×
// the last hold (PenaltyBlockHolds once blocked), at least PenaltyWaitMin.
func (p *Probe) penaltyFloor() time.Duration {
	q := p.params
	holds := time.Duration(q.PenaltyHolds)
	if p.blocks > 0 {
		holds = time.Duration(q.PenaltyBlockHolds)
	}
	return max(q.PenaltyWaitMin, holds*time.Duration(p.holdMs)*time.Millisecond)
}
