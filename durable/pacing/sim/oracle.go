package sim

import (
	"time"

	"storecrawl/durable/pacing"
)

// Oracle paces exactly at the hidden capacity it is told: the best any
// controller could do, the simulator's yardstick.
type Oracle struct {
	pacing.RatePacer
	capacity func(time.Time) float64
	rate     float64
}

// newOracle paces at capacityPerMin(now).
func newOracle(capacityPerMin func(time.Time) float64, cfg pacing.Config) pacing.Algorithm {
	return &Oracle{RatePacer: pacing.NewRatePacer(cfg), capacity: capacityPerMin}
}

func (o *Oracle) Name() string { return oracleName }

func (o *Oracle) Plan(now time.Time) pacing.Plan {
	o.rate = pacing.ClampRate(o.capacity(now))
	return o.PlanRate(now, o.rate)
}

func (o *Oracle) Done(now time.Time, outcomes []pacing.Outcome) time.Time {
	t := o.Observe(outcomes)
	return o.NextAt(now, o.rate, t.Sent)
}

func (o *Oracle) CapacityPerMin() float64 { return o.rate }

// TickGap: the requests paid for at the capacity (pacing.Spacer).
func (o *Oracle) TickGap(requests int) time.Duration { return pacing.RateTickGap(o.rate, requests) }
