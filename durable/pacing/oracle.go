package pacing

import "time"

// Oracle paces exactly at the hidden capacity it is told: the best any
// controller could do, the yardstick of cmd/simulate.
type Oracle struct {
	pacer
	capacity func(time.Time) float64
	rate     float64
}

// NewOracle paces at capacityPerMin(now).
func NewOracle(capacityPerMin func(time.Time) float64, cfg Config) Algorithm {
	return &Oracle{pacer: newPacer(cfg), capacity: capacityPerMin}
}

func (o *Oracle) Name() string { return "oracle" }

func (o *Oracle) Plan(now time.Time) Plan {
	o.rate = clampRate(o.capacity(now))
	return o.plan(now, o.rate, 0)
}

func (o *Oracle) Done(now time.Time, outcomes []Outcome) time.Time {
	t := o.observe(outcomes)
	return o.next(now, o.rate, t.sent)
}

func (o *Oracle) CapacityPerMin() float64 { return o.rate }

// TickGap: the requests paid for at the capacity (Spacer).
func (o *Oracle) TickGap(requests int) time.Duration { return tickGap(o.rate, requests) }
