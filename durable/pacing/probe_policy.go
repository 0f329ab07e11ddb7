package pacing

import (
	"math"
	"time"
)

// probingPolicy is how the probe spends refusals: where a refusal costs
// one item (itemCost) the ceiling is probed often and bisected for; where
// it costs a hold (holdCost: a Retry-After, a block) the cycle is timed by
// that cost and probes are single small steps.
type probingPolicy interface {
	// cycle is how long the climb back to the ceiling takes.
	cycle(p *Probe) time.Duration
	// cruise is the rate the climb ends at under a ceiling.
	cruise(p *Probe, ceiling float64) float64
	// step is a clean probe tick: the next step up (returns the phase to enter).
	step(p *Probe, now time.Time) string
	// rose reports, before a clean tick grows the rate, that the evidence
	// proves the capacity rose (and sets up the rise).
	rose(p *Probe, now time.Time) bool
	// refusal learns from any tick with refusals, before its event.
	refusal(p *Probe, now time.Time)
	// firstRefusal learns the ceiling from the first refusal of a run;
	// true means bisect for it (rate and refusedRate set).
	firstRefusal(p *Probe, now time.Time, t tally) bool
	// bracketRefused refines the ceiling after a refused bisection step.
	bracketRefused(p *Probe, now time.Time, t tally)
	// drainsAtFloor: a refusal at the bracket's floor right after a
	// refused step is the drained bucket, not a fall.
	drainsAtFloor() bool
}

type (
	itemCost struct{}
	holdCost struct{}
)

func (p *Probe) policy() probingPolicy {
	if p.penalized {
		return holdCost{}
	}
	return itemCost{}
}

// cycle: long enough that the refusals one probe costs are a small share
// of the traffic; longer for slow upstreams.
func (itemCost) cycle(p *Probe) time.Duration {
	q := p.params
	d := q.RefRecover
	if p.ceiling > 0 {
		share, cost := q.RefusalShare, max(p.Sub, q.ProbeCost)
		if p.ceiling/float64(p.Sub) >= q.FastItemsPerMin {
			share, cost = q.FastRefusalShare, p.Sub
		}
		d = time.Duration(float64(cost) / (share * p.ceiling) * float64(time.Minute))
	}
	return min(max(d, q.MinRecover), q.MaxRecover*time.Duration(q.PenaltyFactor))
}

func (itemCost) cruise(_ *Probe, ceiling float64) float64 { return ceiling }

// step: ×1.05, ×1.15, ×1.45, ×2 per clean tick; with the burst known the
// first step goes beyond what the burst carries in a tick (a smaller one
// is served whatever the capacity).
func (itemCost) step(p *Probe, _ time.Time) string {
	q := p.params
	step := math.Min(q.FirstStep*math.Pow(q.StepGrowth, float64(p.probeTicks)), q.MaxStep)
	if p.burst.High > 0 && p.probeTicks == 0 {
		tick := math.Max(TickInterval.Minutes(), float64(p.Sub)/p.rate)
		step = math.Min(math.Max(step, q.BurstCarry*p.burst.High/(p.rate*tick)), q.MaxStep)
	}
	if p.probeTicks > 0 {
		step = math.Min(math.Max(step, p.lastStep*q.StepGrowth), q.MaxStep)
	}
	p.lastStep = step
	p.probeTicks++
	p.clean = p.rate
	p.rate = clampRate(p.rate * (1 + step))
	return ""
}

func (itemCost) rose(*Probe, time.Time) bool { return false }
func (itemCost) refusal(*Probe, time.Time)   {}
func (itemCost) drainsAtFloor() bool         { return true }

// firstRefusal: the ceiling is the minute's accepted rate; with the burst
// known, what was served beyond it proves a capacity (a rise if well over
// the old ceiling, bracketed from there). A refused probe that proved no
// rise measures the burst. A clean tick at RiseEvidence × the old ceiling,
// or slow start's last clean tick, is a floor the minute's accepted rate
// (mixing in slower ticks) may underrate; a refusal far above the ceiling
// then is bisected for.
func (itemCost) firstRefusal(p *Probe, now time.Time, t tally) bool {
	q := p.params
	est := p.acceptedCeiling(now)
	refused, probing, old := p.rate, p.phase == PhaseProbe, p.ceiling
	if since := now.UnixMilli() - p.lastThrottle; !probing && p.lastThrottle > 0 && since < p.params.History.Milliseconds() {
		// Refused again within the minute of the last refusal: the minute
		// mixes in what came before it (a climb, an older capacity), so
		// what was served since that refusal counts too.
		est = math.Max(est, p.history.acceptedSince(now, p.lastThrottle)*p.params.EstimateSlack)
	}
	aware, rise := probing && p.burst.High > 0 && old > 0, false
	if aware {
		proven := p.history.provenPerMin(now, t, p.burst)
		rise = proven > old*(1+q.BracketGap)
		if rise {
			est = proven // the capacity rose: bracket from what is proven
		} else {
			// No rise: the step, sized beyond the burst, says little
			// about how far above the ceiling the capacity is.
			est = math.Max(math.Min(old*(1+q.FirstStep), est), proven)
		}
	}
	if probing && !rise && (p.burst.High == 0 || p.probeTicks <= 1) {
		p.measureBurst(now)
	}
	p.probe.close()
	p.setCeiling(est)
	if p.busyTick && t.lastSent.Sub(t.first) >= q.BusyRefusedSpan {
		// Sent at the connections' pace for long enough that what was
		// served is mostly rate, not burst: that pace was refused, not
		// the rate.
		p.ceiling = math.Min(math.Max(p.rate, t.sentPerMin()), math.Max(est, MinRatePerMin))
	}
	if probing && p.burst.High == 0 && old > 0 && p.clean >= q.RiseEvidence*old {
		p.ceiling = math.Max(p.ceiling, math.Min(p.clean, refused))
	}
	if p.phase == PhaseSlowStart && p.clean > 0 {
		p.ceiling = math.Max(p.ceiling, math.Min(p.clean, refused))
		probing = true
	}
	p.rate = clampRate(p.ceiling * q.Beta)
	p.clean = 0
	if probing && (!aware || rise) && refused > p.ceiling*(1+q.BracketGap) {
		p.refusedRate, p.rate = refused, p.ceiling
		return true
	}
	return false
}

// bracketRefused: with the burst known, what was proven raises the floor.
func (itemCost) bracketRefused(p *Probe, now time.Time, t tally) {
	if p.burst.High > 0 {
		p.ceiling = math.Max(p.ceiling, math.Min(p.history.provenPerMin(now, t, p.burst), p.refusedRate))
		p.rate = clampRate(p.ceiling * p.params.Beta)
	}
}

// measureBurst learns the upstream's burst from a refused probe that was
// no rise: what the upstream served since the probe began beyond the rate
// it began from (served in full, so at most the capacity).
func (p *Probe) measureBurst(now time.Time) {
	if p.probe.At == 0 || p.probeFrom <= 0 {
		return
	}
	p.burst.noteHigh(p.probe.beyond(now, p.probeFrom))
}
