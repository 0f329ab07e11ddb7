package pacing

import (
	"math"
	"time"
)

// A low capacity, not a block: slow start's burst can carry the rate far
// above a capacity of a few dozen a minute; the refusals then come in a
// row, and a tick of one item (at 1 request an item, one request) meets
// the bucket the tick before emptied and is all refused, as a block's
// ticks are. Two all-refused ticks in a row, the second DrainGap after
// the first, are a block; the refusals in a row bound the capacity.

// drain is what a tick's refusals in a row said before its transition.
type drain struct {
	tick       bool  // all refused, right after a refused tick with some served
	since      int64 // the refusal before (unix ms)
	streak     int
	ceil, rate float64 // before the transition
}

// drained reports whether t, all refused right after a tick with refusals
// and some served, is one item meeting the bucket that tick emptied: at a
// low capacity the bucket refills a token in seconds, so one item refused
// says no more than that; a block refuses the next tick too.
func (p *Probe) drained(t tally) bool { return t.sent <= max(1, p.lastChunk)*p.Sub && !p.refusedAll }

// refillBound caps the rate after a refusal that follows another at
// since: the bucket held under a token at both, so it refilled less than
// what was served between them plus one; the capacity is under that rate.
// A drained bucket at a low capacity (a burst carried slow start far
// above it) is thus found in one step, not in a refused tick per ×0.7.
func (p *Probe) refillBound(now time.Time, t tally, d drain) {
	since := d.since
	dt := now.UnixMilli() - since
	if since <= 0 || dt <= 0 {
		return
	}
	ok := 0
	for _, s := range p.history {
		if s.End > since {
			ok += s.OK
		}
	}
	// This tick's refusals count too: an upstream whose refusals consume
	// tokens spent them; so do its 5xx answers and timeouts, which passed
	// the limit before they failed (counting the served alone bounds a
	// noisy upstream far under its capacity).
	used := ok + t.serverErr + t.timeouts + max(t.throttled, p.Sub)
	if used > p.params.BoundBurst {
		return // the bucket may have refilled to its burst between: no bound
	}
	bound := float64(used) / float64(dt) * float64(time.Minute.Milliseconds())
	if bound < p.params.BoundShare*p.ceiling {
		if p.boundFrom == 0 {
			p.boundFrom, p.boundRate, p.boundAt = d.ceil, d.rate, since // before this run of refusals cut them
		}
		p.ceiling = math.Max(bound, MinRatePerMin)
		p.rate = math.Min(p.rate, clampRate(p.ceiling*p.params.Beta))
	}
}

func (p *Probe) clearBound() { p.boundFrom, p.boundRate, p.boundAt = 0, 0, 0 }

// beforeDrain notes the tick's place in a run of refusals; an all-refused
// tick that ends a drain (a block after all) undoes the drain's cuts.
func (p *Probe) beforeDrain(ev event, t tally) drain {
	d := drain{tick: ev == evRefused && t.ok == 0 && p.streak > 0, since: p.lastThrottle, streak: p.streak, ceil: p.ceiling, rate: p.rate}
	p.refusedAll = t.throttled > 0 && t.ok == 0
	switch {
	case ev == evAllRefused && p.phase != PhaseBlocked && p.boundFrom > 0:
		// A block, not a drained bucket: the cuts since measured nothing.
		// The block began with the refusal before the drained tick.
		p.ceiling = math.Max(p.ceiling, p.boundFrom)
		p.rate = math.Max(p.rate, p.boundRate)
		p.lastThrottle = min(p.lastThrottle, p.boundAt)
		p.clearBound()
	case ev == evClean || ev == evUnused:
		p.clearBound()
	}
	return d
}

// afterDrain keeps what a drained tick cut (a block found next undoes
// it) and bounds the capacity by the refusals in a row.
func (p *Probe) afterDrain(now time.Time, ev event, t tally, d drain) {
	if d.tick && p.boundFrom == 0 {
		p.boundFrom, p.boundRate, p.boundAt = d.ceil, d.rate, d.since
	}
	if ev == evRefused && d.streak > 0 && !p.penalized {
		p.refillBound(now, t, d)
	}
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
