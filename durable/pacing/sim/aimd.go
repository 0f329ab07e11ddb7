package sim

import (
	"time"

	"storecrawl/durable/pacing"
)

// AIMD is Netflix concurrency-limits' AIMDLimit applied to a request rate:
// on a drop (a throttled answer) the limit is multiplied by 0.9 once per
// tick; otherwise every request answered while the limit was in use adds
// one. The limit is requests per minute. A peer of the product's
// controller, simulator only.
type AIMD struct {
	pacing.RatePacer
	Limit float64 `json:"limit"`
}

const (
	aimdBackoff = 0.9
	aimdStart   = 60.0 // requests per minute
)

func NewAIMD(cfg pacing.Config) *AIMD {
	return &AIMD{RatePacer: pacing.NewRatePacer(cfg), Limit: aimdStart}
}

func (a *AIMD) Name() string { return "aimd" }

func (a *AIMD) Plan(now time.Time) pacing.Plan { return a.PlanRate(now, a.Limit) }

func (a *AIMD) Done(now time.Time, outcomes []pacing.Outcome) time.Time {
	t := a.Observe(outcomes)
	switch {
	case t.Throttled > 0:
		a.Limit = pacing.ClampRate(a.Limit * aimdBackoff)
	case a.UsedPlan(t, a.Limit):
		a.Limit = pacing.ClampRate(a.Limit + float64(t.OK))
	}
	return a.NextAt(now, a.Limit, t.Sent)
}

func (a *AIMD) CapacityPerMin() float64 { return a.Limit }

// TickGap: the requests paid for at the limit (pacing.Spacer).
func (a *AIMD) TickGap(requests int) time.Duration { return pacing.RateTickGap(a.Limit, requests) }
