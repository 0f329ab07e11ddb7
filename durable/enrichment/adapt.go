package enrichment

import (
	"math"
	"time"
)

// Success-rate thresholds splitting the rolling rate into five zones.
const (
	RateCritical = 0.20 // below: the upstream is blocking us → cooldown
	RateLow      = 0.50 // below: significant backoff
	RateGood     = 0.80 // above: gentle ramp up
	RateGreat    = 0.95 // above: aggressive ramp up
	// Between RateLow and RateGood is the dead zone: no change, which gives
	// hysteresis so the loop does not oscillate around one threshold.

	// MinSamples is the smallest window that may drive adaptation, so one
	// failed request cannot trigger a cooldown.
	MinSamples = 5
)

// Adjustment factors. Retreat is faster than advance on purpose: getting
// blocked is expensive, reaching full speed a few ticks later is cheap.
const (
	RampUpAggressive    = 1.25
	RampUpGentle        = 1.10
	RampDown            = 0.50
	IntervalSpeedupFast = 0.80
	IntervalSpeedupSlow = 0.95
	IntervalSlowdown    = 1.50
)

// Zone names the adaptation decision.
type Zone string

const (
	ZoneNoData   Zone = "insufficient_samples"
	ZoneCritical Zone = "critical"
	ZoneLow      Zone = "low"
	ZoneDead     Zone = "dead_zone"
	ZoneGood     Zone = "good"
	ZoneGreat    Zone = "great"
)

// ZoneFor classifies a success rate with its sample size.
func ZoneFor(rate float64, samples int) Zone {
	switch {
	case samples < MinSamples:
		return ZoneNoData
	case rate < RateCritical:
		return ZoneCritical
	case rate < RateLow:
		return ZoneLow
	case rate > RateGreat:
		return ZoneGreat
	case rate > RateGood:
		return ZoneGood
	default:
		return ZoneDead
	}
}

// Adapt tunes batch size and interval from the rolling success rate at now and
// returns the zone it acted on. Ramp-ups round up (so 5×1.1 really grows) and
// ramp-downs round down (so 3×0.5 really shrinks).
func (s *State) Adapt(now time.Time, cfg Config) Zone {
	rate, samples := s.SuccessRate(now)
	zone := ZoneFor(rate, samples)
	minI, maxI := MinInterval.Milliseconds(), MaxInterval.Milliseconds()
	switch zone {
	case ZoneCritical:
		s.CooldownUntil = now.Add(cfg.Cooldown).UnixMilli()
		s.BatchSize = MinBatch
		s.IntervalMs = maxI
		s.Totals.Cooldowns++
		// The failures that caused the cooldown have been acted on; after it
		// the upstream is judged afresh, not by a window of stale refusals
		// (with a cooldown shorter than the window they would re-trigger it).
		s.Metrics = nil
	case ZoneLow:
		s.BatchSize = clampInt(int(math.Floor(float64(s.BatchSize)*RampDown)), MinBatch, MaxBatch)
		s.IntervalMs = clampInt64(int64(math.Floor(float64(s.IntervalMs)*IntervalSlowdown)), minI, maxI)
	case ZoneGreat:
		s.BatchSize = clampInt(int(math.Ceil(float64(s.BatchSize)*RampUpAggressive)), MinBatch, MaxBatch)
		s.IntervalMs = clampInt64(int64(math.Floor(float64(s.IntervalMs)*IntervalSpeedupFast)), minI, maxI)
	case ZoneGood:
		s.BatchSize = clampInt(int(math.Ceil(float64(s.BatchSize)*RampUpGentle)), MinBatch, MaxBatch)
		s.IntervalMs = clampInt64(int64(math.Floor(float64(s.IntervalMs)*IntervalSpeedupSlow)), minI, maxI)
	}
	return zone
}
