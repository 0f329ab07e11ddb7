package pacing

import "time"

// RatePacer is the rate machinery of this package's controllers, for a
// controller built outside it (the simulator's peers): the controller
// chooses a request rate; RatePacer spreads it over ticks and chunks, reads
// each tick's answers (latency, Retry-After, RateLimit headers) and times
// the next wake-up, exactly as it does for the product's controllers, so
// controllers compared on it differ only in the rate they choose. Embedded,
// its state is part of the controller's JSON and it is a Releaser.
type RatePacer struct{ pacer }

// NewRatePacer is the machinery for a controller built with cfg.
func NewRatePacer(cfg Config) RatePacer { return RatePacer{newPacer(cfg)} }

// PlanRate is the tick woken at now, spreading ratePerMin.
func (r *RatePacer) PlanRate(now time.Time, ratePerMin float64) Plan {
	return r.plan(now, ratePerMin, 0)
}

// Observe folds a tick's outcomes into the machinery and counts them.
func (r *RatePacer) Observe(outcomes []Outcome) Tally {
	t := r.observe(outcomes)
	return Tally{Sent: t.sent, OK: t.ok, Throttled: t.throttled, Span: t.span(), t: t}
}

// NextAt is when to wake after a tick that ended at now and sent sent
// requests at ratePerMin (Algorithm.Done's answer).
func (r *RatePacer) NextAt(now time.Time, ratePerMin float64, sent int) time.Time {
	return r.next(now, ratePerMin, sent)
}

// UsedPlan reports whether the tick t sent what the plan at ratePerMin
// asked for, at that rate: only then is a clean tick evidence the rate is
// safe.
func (r *RatePacer) UsedPlan(t Tally, ratePerMin float64) bool {
	return r.usedPlan(t.t, ratePerMin)
}

// Tally is what one tick's requests said.
type Tally struct {
	// Sent counts the requests; OK those served (found or not found);
	// Throttled those refused (429/403).
	Sent, OK, Throttled int
	// Span is from the first request sent to the last answer.
	Span time.Duration
	t    tally
}

// ClampRate bounds a rate to [MinRatePerMin, MaxRatePerMin].
func ClampRate(ratePerMin float64) float64 { return clampRate(ratePerMin) }

// RateTickGap is how long after a tick's start the next one starts when
// the tick sent sent requests at ratePerMin: the peers' Spacer.
func RateTickGap(ratePerMin float64, sent int) time.Duration { return tickGap(ratePerMin, sent) }
