package pacing

import (
	"math"
	"time"
)

// block (everything refused, even after backing off; → blocked): a block
// or lockout. Rate says nothing here; wait, doubling the wait each time,
// and try one item.
func (p *Probe) block(now time.Time, _ tally) string {
	next := ""
	if p.phase != PhaseBlocked {
		p.blocks++
		p.penalized = true
		// The block began with the refused tick before this one.
		p.blockFrom = now.UnixMilli()
		if p.streak > 0 {
			p.blockFrom = p.lastThrottle
		}
		if p.blockFrom == 0 {
			p.blockFrom = now.UnixMilli()
		}
		next = PhaseBlocked
	}
	at := p.blockProbeAt(now)
	p.backoffMs = at - now.UnixMilli()
	p.NotBefore = max(p.NotBefore, at)
	p.lastThrottle = now.UnixMilli()
	p.resume = window{At: p.holdEnd(now)}
	return next
}

// blockProbeAt is when to try one item next while blocked: BackoffStart
// after the block began, doubling up to BackoffMax, then every BackoffMax,
// all counted from blockFrom (see ProbeParams.BackoffMax).
func (p *Probe) blockProbeAt(now time.Time) int64 {
	since := now.UnixMilli() - p.blockFrom
	start, step := p.params.BackoffStart.Milliseconds(), p.params.BackoffMax.Milliseconds()
	off := start
	for off < step && off <= since {
		off = min(2*off, step)
	}
	if off <= since {
		off = (since/step + 1) * step
	}
	return p.blockFrom + off
}

// bracketRefused (a refused bisection step; stays, or → plateau once the
// bracket is tight): the step was too far; back to the ceiling, and bisect
// from there. A refusal at the floor right after it is refused's.
func (p *Probe) bracketRefused(now time.Time, t tally) string {
	if p.streak != 0 {
		return p.refused(now, t)
	}
	p.refusedRate = p.rate
	p.rate = p.ceiling
	p.streak++
	p.lastThrottle = now.UnixMilli()
	p.policy().bracketRefused(p, now, t)
	p.resume = window{At: p.holdEnd(now)}
	if p.refusedRate <= p.ceiling*(1+p.params.BracketGap) {
		p.refusedRate = 0
		return PhasePlateau
	}
	return ""
}

// refused (a tick with refusals; → recover, or → bracket when the
// capacity rose well above the old ceiling). The first refusal of a run
// learns the ceiling (the policy's firstRefusal); a refusal at the
// bracket's floor right after a refused step ends the bracket there (the
// step drained the bucket: no fall); any other refusal in a row means the
// capacity fell.
func (p *Probe) refused(now time.Time, t tally) string {
	switch {
	case p.streak == 0:
		if p.policy().firstRefusal(p, now, t) {
			p.streak++
			p.lastThrottle = now.UnixMilli()
			p.resume = window{At: p.holdEnd(now)}
			return PhaseBracket
		}
	case p.streak == 1 && p.phase == PhaseBracket && p.policy().drainsAtFloor():
		p.refusedRate = 0
		p.rate = clampRate(p.ceiling * p.params.Beta)
	default:
		if c := p.resumedBound(now); c > 0 {
			// Refused again on resuming from a hold: the resumed run
			// bounds the capacity, where a cut of FallingBeta guesses.
			p.ceiling = math.Min(p.rate, c)
			p.rate = clampRate(p.ceiling * p.params.PenaltyMargin)
			break
		}
		p.ceiling = p.rate
		p.rate = clampRate(p.rate * p.params.FallingBeta)
	}
	p.streak++
	p.lastThrottle = now.UnixMilli()
	p.resume = window{At: p.holdEnd(now)}
	return PhaseRecover
}

// acceptedCeiling is the ceiling a first refusal learns from the minute's
// accepted rate (what the upstream really served: a token bucket refuses
// exactly the excess), a little under it.
func (p *Probe) acceptedCeiling(now time.Time) float64 {
	return p.history.acceptedPerMin(now, p.params.History) * p.params.EstimateSlack
}

// setCeiling learns est as the ceiling: never above the rate just
// refused, never under the floor of every rate controller.
func (p *Probe) setCeiling(est float64) {
	p.ceiling = math.Min(p.rate, math.Max(est, MinRatePerMin))
}

// holdEnd is when traffic resumes after the refusal at now: the end of a
// hold (a Retry-After, a block's next probe), 0 if there is none (the
// bucket is not refilled then).
func (p *Probe) holdEnd(now time.Time) int64 {
	if p.NotBefore > now.UnixMilli() {
		return p.NotBefore
	}
	return 0
}
