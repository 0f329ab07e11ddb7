package sim

import (
	"math"
	"time"

	"storecrawl/durable/pacing"
)

// AWSAdaptive is the AWS SDKs' "adaptive" retry mode: a client-side token
// bucket whose fill rate follows CUBIC. Until the first throttle the bucket
// is off (send as fast as the plan allows). On a throttle it remembers the
// measured send rate as the last maximum and cuts to 0.7× of it; between
// throttles the rate grows along the cubic curve back to and beyond that
// maximum, capped at twice the measured send rate. A peer of the product's
// controller, simulator only.
type AWSAdaptive struct {
	pacing.RatePacer
	Enabled      bool    `json:"enabled"`
	Rate         float64 `json:"rate"`          // req/min
	LastMaxRate  float64 `json:"last_max_rate"` // req/min
	LastThrottle int64   `json:"last_throttle"` // unix ms
	MeasuredRate float64 `json:"measured_rate"` // smoothed send rate, req/min
}

const (
	awsBeta       = 0.7
	awsScale      = 0.4 // CUBIC's C, with rates in requests per second
	awsSmoothing  = 0.8
	awsUnthrottle = pacing.MaxRatePerMin
)

func NewAWSAdaptive(cfg pacing.Config) *AWSAdaptive {
	return &AWSAdaptive{RatePacer: pacing.NewRatePacer(cfg), Rate: awsUnthrottle}
}

func (a *AWSAdaptive) Name() string { return "aws-adaptive" }

func (a *AWSAdaptive) Plan(now time.Time) pacing.Plan { return a.PlanRate(now, a.Rate) }

func (a *AWSAdaptive) Done(now time.Time, outcomes []pacing.Outcome) time.Time {
	t := a.Observe(outcomes)
	if t.Sent > 0 {
		span := math.Max(t.Span.Seconds(), 1)
		sent := float64(t.Sent) / span * 60
		a.MeasuredRate = awsSmoothing*sent + (1-awsSmoothing)*a.MeasuredRate
	}
	if t.Throttled > 0 {
		a.Enabled = true
		a.LastMaxRate = math.Min(a.MeasuredRate, a.Rate)
		a.LastThrottle = now.UnixMilli()
		a.Rate = pacing.ClampRate(a.LastMaxRate * awsBeta)
	} else if a.Enabled {
		// W(t) = C·(t − K)³ + Wmax, K = ∛(Wmax·(1−β)/C), rates per second.
		wmax := a.LastMaxRate / 60
		k := math.Cbrt(wmax * (1 - awsBeta) / awsScale)
		dt := now.Sub(time.UnixMilli(a.LastThrottle)).Seconds()
		cubic := (awsScale*math.Pow(dt-k, 3) + wmax) * 60
		a.Rate = pacing.ClampRate(math.Min(cubic, 2*math.Max(a.MeasuredRate, pacing.MinRatePerMin)))
	}
	return a.NextAt(now, a.Rate, t.Sent)
}

func (a *AWSAdaptive) CapacityPerMin() float64 { return a.LastMaxRate }

// TickGap: the requests paid for at the rate (Spacer).
func (a *AWSAdaptive) TickGap(requests int) time.Duration {
	return pacing.RateTickGap(a.Rate, requests)
}
