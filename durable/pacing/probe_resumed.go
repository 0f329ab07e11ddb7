package pacing

import (
	"math"
	"time"
)

// The runs that resume after a hold, where refusals cost one: each began
// at a full bucket, so what one served until its refusal is its burst
// plus the capacity over its length, S = B + C·t. One such run bounds
// the capacity; two measure it.

// resumedCapacity learns from a refusal within ResumeWithin of traffic
// resuming after a hold (a Retry-After's end, a block's lift), where the
// bucket was full: what it served since then is its burst plus its
// capacity over that time, S = B + C·t. One such window cannot tell B from
// C; two refused after times at least ResumeSpread apart can: C = ΔS/Δt,
// if B = S − C·t is neither negative nor more than the hold refills at C.
// It returns the capacity (0 = not measured) and keeps this window as the
// next one's other point, unless it is too close to the last to measure.
func (p *Probe) resumedCapacity(now time.Time) float64 {
	ms := p.resumedFor(now)
	if ms == 0 {
		return 0
	}
	if p.liftedEarly() {
		// A block lifted within its first probes may be a rate limit
		// misread (a one-item tick refused twice): its bucket was not
		// full, so the window measures nothing.
		p.resumed, p.resumeClose = resumeWindow{}, false
		return 0
	}
	cur := resumeWindow{Ms: ms, OK: p.resume.OK}
	prev := p.resumed
	tooClose := cur.Ms-prev.Ms < p.params.ResumeSpread.Milliseconds() || cur.OK-prev.OK < p.params.ResumeServed
	p.resumeClose = prev.Ms > 0 && tooClose && p.blocks > 0 // read when a block lifts
	if prev.Ms > 0 && tooClose && cur.Ms > prev.Ms {
		// Longer than the last, but too little to measure against it:
		// keep the last, so the next run is measured against the farther
		// (replacing it, a series of runs each a little longer than the
		// one before would never measure).
		return 0
	}
	p.resumed = cur
	if prev.Ms == 0 || tooClose {
		return 0
	}
	c := float64(cur.OK-prev.OK) / float64(cur.Ms-prev.Ms) * 60000
	burst := float64(cur.OK) - c*float64(cur.Ms)/60000
	if burst < 0 || c*float64(p.holdMs)/60000 < burst {
		// A negative burst, or one the hold could not refill at that
		// capacity: the runs did not start from a full bucket (a block
		// misread from a one-item tick at a slow upstream).
		return 0
	}
	return c
}

// resumedBound is what a run resumed after a hold (a full bucket) and
// refused says of the capacity: two such runs measure it
// (resumedCapacity); one bounds it, S = B + C·t with B at least the
// largest burst measured. 0 where refusals cost no hold, or no run
// resumed, or no burst is known.
func (p *Probe) resumedBound(now time.Time) float64 {
	if !p.penalized {
		return 0
	}
	if c := p.resumedCapacity(now); c > 0 {
		return c
	}
	return p.resumedRunBound(now)
}

// resumedRunBound is one resumed run's bound on the capacity: it was
// served the burst, at least the largest a refused step measured, plus
// the capacity over its length (0: no run, or no burst known, or a block
// that lifted within its first probes, whose bucket may not have been
// full: see resumedCapacity).
func (p *Probe) resumedRunBound(now time.Time) float64 {
	ms := p.resumedRun(now)
	if ms == 0 || !p.burst.known() {
		return 0
	}
	return math.Max(0, float64(p.resume.OK)-p.burst.High) / (float64(ms) / 60000)
}

// resumedRun is how long the run resumed at a hold's end has lasted up to
// a refusal at now, where it began at a full bucket: within ResumeWithin,
// no step since, and not after a block that lifted within its first
// probes, whose bucket may not have been full (see resumedCapacity). 0: no
// such run.
func (p *Probe) resumedRun(now time.Time) int64 {
	if p.liftedEarly() {
		return 0
	}
	return p.resumedFor(now)
}

// resumedFor is how long the run resumed at a hold's end has lasted up to
// a refusal at now, if that is within ResumeWithin and no step came since
// (0: none).
func (p *Probe) resumedFor(now time.Time) int64 {
	ms := now.UnixMilli() - p.resume.At
	if !p.resume.isOpen() || p.clean > 0 || ms <= 0 || ms >= p.params.ResumeWithin.Milliseconds() {
		return 0
	}
	return ms
}

// liftedEarly reports whether the upstream blocked and the block lifted
// within its first probes: a rate limit misread, whose bucket was not full.
func (p *Probe) liftedEarly() bool {
	return p.blocks > 0 && p.holdMs < p.params.BackoffMax.Milliseconds()
}
