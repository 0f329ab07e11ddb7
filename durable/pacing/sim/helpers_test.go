package sim

import (
	"time"

	"storecrawl/durable/pacing"
)

// testScenario is a small valid scenario: ample capacity, 100 ms latency
// without jitter; mutate adjusts it.
func testScenario(mutate func(*Scenario)) *Scenario {
	s := &Scenario{
		Name: "test", DurationS: 60, Items: 1000, SubrequestsPerItem: 4, Seed: 1,
		Phases: []Phase{{CapacityPerMin: 6_000_000, Burst: 100_000, OnExceed: exceed429, LatencyMS: 100}},
	}
	if mutate != nil {
		mutate(s)
	}
	if err := s.validate(); err != nil {
		panic(err)
	}
	return s
}

// done is one Done call a test controller saw.
type done struct {
	at       time.Time
	outcomes []pacing.Outcome
}

// fixedCtl plans the same work every tick and wakes every `every` after
// the previous wake (a fixed rate), optionally obeying Retry-After.
type fixedCtl struct {
	plan      pacing.Plan
	every     time.Duration
	honorRA   bool
	cooldowns int

	wake      time.Time
	notBefore time.Time
	plans     []time.Time
	dones     []done
}

func (f *fixedCtl) Name() string { return "fixed" }

func (f *fixedCtl) Plan(now time.Time) pacing.Plan {
	f.wake = now
	f.plans = append(f.plans, now)
	p := f.plan
	if f.honorRA {
		p.NotBefore = f.notBefore
	}
	return p
}

func (f *fixedCtl) Done(now time.Time, outcomes []pacing.Outcome) time.Time {
	f.dones = append(f.dones, done{now, outcomes})
	for _, o := range outcomes {
		if nb := o.DoneAt.Add(o.RetryAfter); o.RetryAfter > 0 && nb.After(f.notBefore) {
			f.notBefore = nb
		}
	}
	next := f.wake.Add(f.every)
	if f.honorRA && next.Before(f.notBefore) {
		next = f.notBefore
	}
	return next
}

func (f *fixedCtl) CapacityPerMin() float64 { return 0 }

// coolCtl adds the optional Cooldowns method.
type coolCtl struct{ fixedCtl }

func (c *coolCtl) Cooldowns() int { return c.cooldowns }

// at is the virtual time offset d.
func at(d time.Duration) time.Time { return epoch.Add(d) }
