package pacing

import (
	"math"
	"time"
)

// The seed rules, exactly as the design document states them.
const (
	SeedMinBatch        = 2
	SeedMaxBatch        = 50
	SeedStartBatch      = 5
	SeedMinInterval     = 10 * time.Second
	SeedMaxInterval     = 120 * time.Second
	SeedStartInterval   = 30 * time.Second
	SeedCooldown        = 5 * time.Minute
	SeedWindow          = 5 * time.Minute
	SeedMinSamples      = 5
	SeedParallel        = 8
	SeedChunkPause      = 200 * time.Millisecond
	SeedRateCritical    = 0.20
	SeedRateLow         = 0.50
	SeedRateGood        = 0.80
	SeedRateGreat       = 0.95
	SeedRampAggressive  = 1.25
	SeedRampGentle      = 1.10
	SeedRampDown        = 0.50
	SeedSpeedupFast     = 0.80
	SeedSpeedupSlow     = 0.95
	SeedIntervalSlowing = 1.50
)

// SeedBucket is one minute of item outcomes.
type SeedBucket struct {
	Minute    int64 `json:"minute"` // unix ms of the minute's start
	Completed int   `json:"completed"`
	Failed    int   `json:"failed"`
}

// Seed is the design's tiered controller: batch 2–50 items per tick, tick
// every 10–120 s, five success-rate zones over a 5-minute window of items
// (not-found items count as completed: the upstream served them), and a
// 5-minute cooldown at minimum batch and maximum interval below 20%.
type Seed struct {
	Batch         int          `json:"batch"`
	IntervalMs    int64        `json:"interval_ms"`
	CooldownUntil int64        `json:"cooldown_until"`
	CooldownMs    int64        `json:"cooldown_ms"`
	CooldownCount int          `json:"cooldowns"`
	Sub           int          `json:"sub"`
	Metrics       []SeedBucket `json:"metrics"`
	Zone          string       `json:"zone"`
}

// NewSeed starts the seed rules at their documented defaults.
func NewSeed(cfg Config) *Seed {
	cd := cfg.Cooldown
	if cd <= 0 {
		cd = SeedCooldown
	}
	return &Seed{Batch: SeedStartBatch, IntervalMs: SeedStartInterval.Milliseconds(), CooldownMs: cd.Milliseconds(), Sub: max(1, cfg.SubrequestsPerItem)}
}

func (s *Seed) Name() string { return "seed" }

func (s *Seed) interval() time.Duration { return time.Duration(s.IntervalMs) * time.Millisecond }

// Plan runs the batch in chunks of 8 items with 200 ms between chunks, or
// nothing during a cooldown.
func (s *Seed) Plan(now time.Time) Plan {
	if now.UnixMilli() < s.CooldownUntil {
		return Plan{}
	}
	return Plan{Items: s.Batch, ChunkItems: SeedParallel, ChunkPause: SeedChunkPause}
}

// Done records item outcomes, adapts, and schedules the next tick one
// interval later (the next tick during a cooldown just re-arms).
func (s *Seed) Done(now time.Time, outcomes []Outcome) time.Time {
	if len(outcomes) > 0 {
		b := s.bucket(now)
		for _, it := range ByItem(outcomes) {
			if len(it) == 0 {
				continue
			}
			switch ItemKind(it) {
			case KindOK, KindNotFound:
				b.Completed++
			default:
				b.Failed++
			}
		}
		s.adapt(now)
	}
	s.prune(now)
	return now.Add(s.interval())
}

// TickGap is the interval, whatever was sent: the seed rules wait it
// after a tick's end (Spacer).
func (s *Seed) TickGap(int) time.Duration { return s.interval() }

// CapacityPerMin: the seed rules keep no capacity estimate.
func (s *Seed) CapacityPerMin() float64 { return 0 }

func (s *Seed) bucket(now time.Time) *SeedBucket {
	m := now.UnixMilli() - now.UnixMilli()%60000
	for i := range s.Metrics {
		if s.Metrics[i].Minute == m {
			return &s.Metrics[i]
		}
	}
	s.Metrics = append(s.Metrics, SeedBucket{Minute: m})
	return &s.Metrics[len(s.Metrics)-1]
}

func (s *Seed) prune(now time.Time) {
	cutoff := now.Add(-SeedWindow - time.Minute).UnixMilli()
	kept := s.Metrics[:0]
	for _, b := range s.Metrics {
		if b.Minute >= cutoff {
			kept = append(kept, b)
		}
	}
	s.Metrics = kept
}

func (s *Seed) window(now time.Time) (completed, failed int) {
	start := now.Add(-SeedWindow).UnixMilli()
	for _, b := range s.Metrics {
		if b.Minute >= start {
			completed += b.Completed
			failed += b.Failed
		}
	}
	return
}

func (s *Seed) adapt(now time.Time) {
	c, f := s.window(now)
	total := c + f
	if total < SeedMinSamples {
		s.Zone = "insufficient_samples"
		return
	}
	rate := float64(c) / float64(total)
	minI, maxI := SeedMinInterval.Milliseconds(), SeedMaxInterval.Milliseconds()
	switch {
	case rate < SeedRateCritical:
		s.Zone = "critical"
		s.CooldownUntil = now.UnixMilli() + s.CooldownMs
		s.Batch = SeedMinBatch
		s.IntervalMs = maxI
		s.CooldownCount++
	case rate < SeedRateLow:
		s.Zone = "low"
		s.Batch = clamp(int(math.Floor(float64(s.Batch)*SeedRampDown)), SeedMinBatch, SeedMaxBatch)
		s.IntervalMs = clamp64(int64(math.Floor(float64(s.IntervalMs)*SeedIntervalSlowing)), minI, maxI)
	case rate > SeedRateGreat:
		s.Zone = "great"
		s.Batch = clamp(int(math.Ceil(float64(s.Batch)*SeedRampAggressive)), SeedMinBatch, SeedMaxBatch)
		s.IntervalMs = clamp64(int64(math.Floor(float64(s.IntervalMs)*SeedSpeedupFast)), minI, maxI)
	case rate > SeedRateGood:
		s.Zone = "good"
		s.Batch = clamp(int(math.Ceil(float64(s.Batch)*SeedRampGentle)), SeedMinBatch, SeedMaxBatch)
		s.IntervalMs = clamp64(int64(math.Floor(float64(s.IntervalMs)*SeedSpeedupSlow)), minI, maxI)
	default:
		s.Zone = "dead_zone"
	}
}

func clamp(v, lo, hi int) int { return min(max(v, lo), hi) }

func clamp64(v, lo, hi int64) int64 { return min(max(v, lo), hi) }

// HoldUntil is the end of the cooldown.
func (s *Seed) HoldUntil() time.Time { return time.UnixMilli(s.CooldownUntil) }

// Release ends the cooldown (Releaser).
func (s *Seed) Release() { s.CooldownUntil = 0 }

// Cooldowns counts entries into the critical zone.
func (s *Seed) Cooldowns() int { return s.CooldownCount }

// Tune sets batch and interval (clamped to the rules' bounds); a rate is
// turned into the batch that carries it at the current interval.
func (s *Seed) Tune(t TuneRequest) {
	if t.IntervalMs != nil {
		s.IntervalMs = clamp64(*t.IntervalMs, SeedMinInterval.Milliseconds(), SeedMaxInterval.Milliseconds())
	}
	if t.BatchSize != nil {
		s.Batch = clamp(*t.BatchSize, SeedMinBatch, SeedMaxBatch)
	}
	if t.RatePerMin != nil {
		items := *t.RatePerMin * float64(s.IntervalMs) / 60000 / float64(max(1, s.Sub))
		s.Batch = clamp(int(math.Round(items)), SeedMinBatch, SeedMaxBatch)
	}
}

// Describe reports the rules' knobs.
func (s *Seed) Describe(now time.Time) map[string]any {
	return map[string]any{
		"batch_size": s.Batch, "interval_ms": s.IntervalMs, "zone": s.Zone,
		"cooldown_until": s.CooldownUntil, "cooldowns": s.CooldownCount,
	}
}
