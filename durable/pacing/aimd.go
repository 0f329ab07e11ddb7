package pacing

import "time"

// AIMD is Netflix concurrency-limits' AIMDLimit applied to a request rate:
// on a drop (a throttled answer) the limit is multiplied by 0.9 once per
// tick; otherwise every request answered while the limit was in use adds
// one. The limit is requests per minute.
type AIMD struct {
	pacer
	Limit float64 `json:"limit"`
}

const (
	aimdBackoff = 0.9
	aimdStart   = 60.0 // requests per minute
)

func NewAIMD(cfg Config) *AIMD { return &AIMD{pacer: newPacer(cfg), Limit: aimdStart} }

func (a *AIMD) Name() string { return "aimd" }

func (a *AIMD) Plan(now time.Time) Plan { return a.plan(now, a.Limit, 0) }

func (a *AIMD) Done(now time.Time, outcomes []Outcome) time.Time {
	t := a.observe(outcomes)
	switch {
	case t.throttled > 0:
		a.Limit = clampRate(a.Limit * aimdBackoff)
	case a.usedPlan(t, a.Limit):
		a.Limit = clampRate(a.Limit + float64(t.ok))
	}
	return a.next(now, a.Limit, t.sent)
}

func (a *AIMD) CapacityPerMin() float64 { return a.Limit }

// TickGap: the requests paid for at the limit (Spacer).
func (a *AIMD) TickGap(requests int) time.Duration { return tickGap(a.Limit, requests) }
