package pacing

import (
	"math"
	"time"
)

// What the probe learns the upstream's capacity and burst from. A token
// bucket serves at most its burst plus its rate over any stretch, so:
//   - what it served over a window beyond a rate the client sent under the
//     capacity is its burst (an upper bound: burstEstimate keeps the
//     largest and the smallest such measurement);
//   - what it served beyond the burst over a window is a rate it sustains.

// window counts what the upstream served since a moment: a penalised step
// or an unpenalised probe began (At 0 = no window open).
type window struct {
	At int64 // unix ms
	OK int   // requests served since
}

func (w window) isOpen() bool { return w.At > 0 }

// open starts counting at now.
func (w *window) open(now time.Time) { w.At, w.OK = now.UnixMilli(), 0 }

// close stops counting.
func (w *window) close() { w.At, w.OK = 0, 0 }

// add counts a tick's served requests into an open window.
func (w *window) add(ok int) {
	if w.isOpen() {
		w.OK += ok
	}
}

// minutes is the window's length up to now.
func (w window) minutes(now time.Time) float64 { return float64(now.UnixMilli()-w.At) / 60000 }

// beyond is what the upstream served over the window beyond rate (per
// minute): its burst, when rate was served in full throughout.
func (w window) beyond(now time.Time, rate float64) float64 {
	return float64(w.OK) - rate*w.minutes(now)
}

// burstEstimate is the upstream's burst as refused steps measured it
// (requests; 0 = not yet measured). Each measurement is an upper bound:
// High, their largest, keeps rise proofs safe; Low, their smallest, sizes
// a capacity measurement. Resumed is the fewest a run resumed from a full
// bucket was served before its refusal (S = B + C·t, so at least B): a
// looser upper bound, for rise proofs only until a refused step measures
// one.
type burstEstimate struct {
	High, Low, Resumed float64
}

// upper is the burst a rise proof assumes: High, or failing that Resumed
// (0: nothing bounds it yet, so no rise can be proven).
func (b burstEstimate) upper() float64 {
	if b.High > 0 {
		return b.High
	}
	return b.Resumed
}

// noteResumed keeps the fewest served by a refused resumed run.
func (b *burstEstimate) noteResumed(served float64) {
	if served >= 1 && (b.Resumed == 0 || served < b.Resumed) {
		b.Resumed = served
	}
}

func (b burstEstimate) known() bool { return b.High > 0 }

// noteHigh keeps a measurement of at least one request as an upper bound.
func (b *burstEstimate) noteHigh(m float64) {
	if m >= 1 {
		b.High = math.Max(b.High, m)
	}
}

// note keeps a measurement as both bounds.
func (b *burstEstimate) note(m float64) {
	b.High = math.Max(b.High, m)
	if b.Low == 0 || m < b.Low {
		b.Low = m
	}
}

// sustained is the rate proven by ok requests served over minutes: what
// the upstream served beyond its (largest) burst.
func (b burstEstimate) sustained(ok, minutes float64) float64 { return (ok - b.High) / minutes }

// sustainedAt is the rate proven by a rate served in full for minutes:
// the same bound, for a step served at rate throughout (upper's burst).
func (b burstEstimate) sustainedAt(rate, minutes float64) float64 { return rate - b.upper()/minutes }

// capacity is what a step sent from a full bucket until it was refused
// measured: it was served the (smallest) burst plus the capacity over its
// length. 0 while no burst is measured.
func (b burstEstimate) capacity(w window, now time.Time) float64 {
	if b.Low <= 0 {
		return 0
	}
	return (float64(w.OK) - b.Low) / w.minutes(now)
}

// resumeWindow is what the upstream served (OK) from a hold's end until a
// refusal Ms later.
type resumeWindow struct {
	Ms int64
	OK int
}

type tickStats struct {
	End int64 `json:"end"` // unix ms
	OK  int   `json:"ok"`
}

// history is what the upstream served per tick over the last two
// History windows.
type history []tickStats

// record appends a tick and drops those older than two windows.
func (h *history) record(now time.Time, ok int, span time.Duration) {
	*h = append(*h, tickStats{End: now.UnixMilli(), OK: ok})
	cutoff := now.Add(-2 * span).UnixMilli()
	for len(*h) > 0 && (*h)[0].End < cutoff {
		*h = (*h)[1:]
	}
}

// acceptedPerMin is what the upstream served over the last span.
func (h history) acceptedPerMin(now time.Time, span time.Duration) float64 {
	cutoff := now.Add(-span).UnixMilli()
	ok, oldest := 0, now.UnixMilli()
	for _, s := range h {
		if s.End >= cutoff {
			ok += s.OK
			oldest = min(oldest, s.End)
		}
	}
	spanMs := math.Max(float64(now.UnixMilli()-oldest), float64(TickInterval.Milliseconds()))
	return float64(ok) / spanMs * 60000
}

// acceptedUpTo is acceptedPerMin as it stood at end, a moment past: over
// the ticks that had ended by then (h is in time order).
func (h history) acceptedUpTo(end int64, span time.Duration) float64 {
	n := 0
	for n < len(h) && h[n].End <= end {
		n++
	}
	return h[:n].acceptedPerMin(time.UnixMilli(end), span)
}

// acceptedSince is what the upstream served per minute from the end of
// a tick at from (ticks ending after it) up to now, over at least a tick.
func (h history) acceptedSince(now time.Time, from int64) float64 {
	ok := 0
	for _, s := range h {
		if s.End > from {
			ok += s.OK
		}
	}
	spanMs := math.Max(float64(now.UnixMilli()-from), float64(TickInterval.Milliseconds()))
	return float64(ok) / spanMs * 60000
}

// provenPerMin is the best rate the upstream proved up to now: beyond the
// burst, what it served since the end of an earlier tick (or since this
// tick's first request). The best such stretch is the one where the
// client sent above the capacity throughout.
func (h history) provenPerMin(now time.Time, t tally, b burstEstimate) float64 {
	best := 0.0
	if dt := now.Sub(t.first).Minutes(); dt > 0 && !t.first.IsZero() {
		best = b.sustained(float64(t.ok), dt)
	}
	ok := 0
	for i := len(h) - 1; i > 0; i-- {
		ok += h[i].OK
		if dt := float64(now.UnixMilli()-h[i-1].End) / 60000; dt > 0 {
			best = math.Max(best, b.sustained(float64(ok), dt))
		}
	}
	return best
}

// sentPerMin is the rate the tick's requests were sent at, first to last
// (0 for a single request).
func (t tally) sentPerMin() float64 {
	d := t.lastSent.Sub(t.first)
	if d <= 0 || t.sent < 2 {
		return 0
	}
	return float64(t.sent-1) / d.Minutes()
}
