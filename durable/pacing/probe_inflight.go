package pacing

import "time"

// Concurrency, not rate: an upstream whose burst is smaller than the
// connections refuses what a round sends at once beyond it at any rate
// (a burst of 5 against six connections refuses one request a round).
// The probe measures that burst where a round met a full bucket and then
// keeps at most that many requests in flight (Plan.MaxInFlight).

// learnInFlight reads, at a small burst, how many requests the refused
// chunk's first wave (its requests sent at once) had served: a bucket
// full at the chunk's start serves its burst and refuses the rest, so a
// wave with some served and some refused bounds what may be in flight.
func (p *Probe) learnInFlight(outcomes []Outcome) {
	wave := p.refusedWave(outcomes)
	served, refused := 0, 0
	for _, o := range wave {
		switch o.Kind {
		case KindOK, KindNotFound:
			served++
		case KindThrottled:
			refused++
		}
	}
	if served > 0 && refused > 0 && served < p.conns() {
		p.InFlight = served
	}
}

// refusedWave is the first wave of the chunk with the tick's first
// refusal: its requests sent within WaveSpread of the chunk's first.
func (p *Probe) refusedWave(outcomes []Outcome) []Outcome {
	ci := max(1, p.PlanChunk)
	chunk := -1
	for _, o := range outcomes {
		if o.Kind == KindThrottled {
			chunk = o.Item / ci
			break
		}
	}
	if chunk < 0 {
		return nil
	}
	var first time.Time
	for _, o := range outcomes {
		if o.Item/ci == chunk && (first.IsZero() || o.SentAt.Before(first)) {
			first = o.SentAt
		}
	}
	var wave []Outcome
	for _, o := range outcomes {
		if o.Item/ci == chunk && o.SentAt.Sub(first) <= p.params.WaveSpread {
			wave = append(wave, o)
		}
	}
	return wave
}
