package pacing

import (
	"math"
	"time"
)

// probeGrowth is what a clean tick that used its plan does in each phase
// (the clean event's transition, after the policy's look at the evidence).
var probeGrowth = map[string]transition{
	PhaseSlowStart: (*Probe).growSlowStart,
	PhaseBracket:   (*Probe).growBracket,
	PhaseRecover:   (*Probe).growRecover,
	PhasePlateau:   (*Probe).growPlateau,
	PhaseProbe:     (*Probe).growProbe,
}

// served (clean; the phase's growth decides): the rate held. A proven
// rise of the capacity moves to probe first.
func (p *Probe) served(now time.Time, t tally) string {
	p.streak = 0
	if p.policy().rose(p, now) {
		p.setPhase(PhaseProbe, now)
	}
	grow, ok := probeGrowth[p.phase]
	if !ok {
		return ""
	}
	return grow(p, now, t)
}

// growSlowStart (stays): ×SlowStartGrow until the first refusal.
func (p *Probe) growSlowStart(time.Time, tally) string {
	p.clean = p.rate
	p.rate = clampRate(p.rate * p.params.SlowStartGrow)
	return ""
}

// growBracket (stays, or → plateau once the bracket is tight): the rate
// held, so it is the bracket's new floor; after a rest, bisect.
func (p *Probe) growBracket(now time.Time, _ tally) string {
	p.ceiling = math.Max(p.ceiling, p.rate)
	if now.Sub(time.UnixMilli(p.lastThrottle)) < p.bracketRest() {
		return ""
	}
	if p.refusedRate <= p.ceiling*(1+p.params.BracketGap) {
		p.refusedRate = 0
		p.lastThrottle = now.UnixMilli()
		return PhasePlateau
	}
	p.rate = clampRate(math.Sqrt(p.ceiling * p.refusedRate))
	return ""
}

// growRecover (stays, or → plateau at the target): a concave climb, fast
// right after the cut, flattening at the policy's cruising rate.
func (p *Probe) growRecover(now time.Time, _ tally) string {
	k := p.recoverTime()
	target := p.policy().cruise(p, p.ceiling)
	dt := now.Sub(time.UnixMilli(p.lastThrottle))
	if dt >= k {
		p.rate = clampRate(math.Max(p.rate, target))
		return PhasePlateau
	}
	x := 1 - dt.Seconds()/k.Seconds()
	p.rate = clampRate(math.Max(p.rate, target*(1-p.params.ClimbDepth*x*x*x)))
	return ""
}

// growPlateau (stays, or → probe after a quarter of the cycle): the probe
// window opens at the rate it starts from.
func (p *Probe) growPlateau(now time.Time, _ tally) string {
	if now.Sub(time.UnixMilli(p.phaseSince)) < p.recoverTime()/4 {
		return ""
	}
	p.probeTicks = 0
	p.probe.open(now)
	p.probeFrom = p.rate
	return PhaseProbe
}

// growProbe (the policy's step).
func (p *Probe) growProbe(now time.Time, _ tally) string { return p.policy().step(p, now) }

// recoverTime is how long the climb back to the ceiling takes (the
// policy's probing cycle).
func (p *Probe) recoverTime() time.Duration { return p.policy().cycle(p) }

// bracketRest is the wait at the floor after a refused bisection step:
// long enough that the refused item is FastRefusalShare of the traffic
// sent meanwhile, at least a tick and at most BracketRest. A fast
// upstream's bracket thus closes in a few ticks instead of spending half a
// minute under the capacity per refused step.
func (p *Probe) bracketRest() time.Duration {
	d := time.Duration(float64(p.Sub) / (p.params.FastRefusalShare * math.Max(p.ceiling, MinRatePerMin)) * float64(time.Minute))
	return min(max(d, TickInterval), p.params.BracketRest)
}
