package sim

import (
	"math"
	"slices"
	"time"

	"storecrawl/durable/pacing"
)

// Metrics is one run's result; the JSON keys are the -json output.
type Metrics struct {
	Scenario             string     `json:"scenario"`
	Controller           string     `json:"controller"` // as named on the command line
	Algorithm            string     `json:"algorithm,omitempty"`
	SubrequestsPerItem   int        `json:"subrequests_per_item"` // the shape it ran at
	Error                string     `json:"error,omitempty"`
	SimulatedS           float64    `json:"simulated_s"`
	Ticks                int        `json:"ticks"`
	ItemsCompleted       int        `json:"items_completed"`
	ItemAttempts         int        `json:"item_attempts"`
	RequestsSent         int        `json:"requests_sent"`
	RequestsRefused      int        `json:"requests_refused"`
	RequestsOK           int        `json:"requests_ok"`
	ServerErrors         int        `json:"server_errors"`
	Timeouts             int        `json:"timeouts"`
	CapacityAllowed      float64    `json:"capacity_allowed"`
	GoodputRatio         float64    `json:"goodput_ratio"`
	RefusedRatio         float64    `json:"refused_ratio"`
	AttemptsPerSuccess   float64    `json:"attempts_per_success"`
	RetryAfterViolations int        `json:"retry_after_violations"`
	Lockouts             int        `json:"lockouts"`
	Cooldowns            int        `json:"cooldowns"`
	RecoveryS            []int      `json:"recovery_s"`
	Trace                []TraceRow `json:"trace,omitempty"`
}

// TraceRow is one simulated minute.
type TraceRow struct {
	Minute           int     `json:"minute"`
	Sent             int     `json:"sent"`
	OK               int     `json:"ok"`
	Refused          int     `json:"refused"`
	CapacityPerMin   float64 `json:"capacity_per_min"`
	PlanItems        int     `json:"plan_items"`
	PlanChunkItems   int     `json:"plan_chunk_items"`
	PlanChunkPauseMS int64   `json:"plan_chunk_pause_ms"`

	hasPlan, hasCap bool // set this minute (else carried from the last)
}

// Recovery criteria (see the package doc).
const (
	recoveryWindowS    = 60
	recoveryShare      = 0.9
	recoveryMaxRefused = 0.02
)

// bin is one second of answers, by arrival.
type bin struct{ ok, refused, answered int }

// recorder accumulates a run's measurements as the ticks are settled.
type recorder struct {
	m           Metrics
	bins        []bin
	trace       []TraceRow
	raNotBefore time.Duration // no send before this (Retry-After)
}

func newRecorder(sc *Scenario) *recorder {
	return &recorder{bins: make([]bin, sc.DurationS+1)}
}

func (r *recorder) row(at time.Duration) *TraceRow {
	m := int(at / time.Minute)
	for len(r.trace) <= m {
		r.trace = append(r.trace, TraceRow{Minute: len(r.trace)})
	}
	return &r.trace[m]
}

func (r *recorder) plan(at time.Duration, p pacing.Plan) {
	row := r.row(at)
	row.PlanItems, row.PlanChunkItems, row.PlanChunkPauseMS = p.Items, p.ChunkItems, p.ChunkPause.Milliseconds()
	row.hasPlan = true
}

func (r *recorder) capacity(at time.Duration, perMin float64) {
	row := r.row(at)
	row.CapacityPerMin, row.hasCap = perMin, true
}

// requests counts the answers received by cutoff. outs are in send order.
func (r *recorder) requests(outs []pacing.Outcome, cutoff time.Duration) {
	// Answers in arrival order, to know which Retry-After a send had seen.
	answers := make([]pacing.Outcome, 0, len(outs))
	for _, o := range outs {
		if o.DoneAt.Sub(epoch) <= cutoff {
			answers = append(answers, o)
		}
	}
	slices.SortStableFunc(answers, func(a, b pacing.Outcome) int { return a.DoneAt.Compare(b.DoneAt) })
	j := 0
	seen := func(until time.Time) { // fold in the answers received by until
		for ; j < len(answers) && !answers[j].DoneAt.After(until); j++ {
			if a := answers[j]; a.RetryAfter > 0 {
				r.raNotBefore = max(r.raNotBefore, a.DoneAt.Sub(epoch)+a.RetryAfter)
			}
		}
	}
	defer seen(epoch.Add(cutoff)) // the rest bind the next ticks' sends
	for _, o := range outs {
		sent, done := o.SentAt.Sub(epoch), o.DoneAt.Sub(epoch)
		seen(o.SentAt)
		if done > cutoff {
			continue // in flight when the run ended
		}
		if sent < r.raNotBefore {
			r.m.RetryAfterViolations++
		}
		r.m.RequestsSent++
		row, b := r.row(sent), &r.bins[int(done/time.Second)]
		row.Sent++
		b.answered++
		switch o.Kind {
		case pacing.KindOK, pacing.KindNotFound:
			r.m.RequestsOK++
			row.OK++
			b.ok++
		case pacing.KindThrottled:
			r.m.RequestsRefused++
			row.Refused++
			b.refused++
		case pacing.KindServerError:
			r.m.ServerErrors++
		case pacing.KindTimeout:
			r.m.Timeouts++
		}
	}
}

// finish derives the ratios once the run ended at end.
func (r *recorder) finish(sc *Scenario, end time.Duration, ctl pacing.Algorithm, lockouts, completed int) Metrics {
	m := r.m
	m.Scenario, m.Algorithm, m.SubrequestsPerItem = sc.Name, ctl.Name(), sc.SubrequestsPerItem
	m.SimulatedS = end.Seconds()
	m.ItemsCompleted, m.Lockouts = completed, lockouts
	m.CapacityAllowed = capacityAllowed(sc, end)
	m.GoodputRatio = ratio(m.RequestsOK, m.CapacityAllowed)
	m.RefusedRatio = ratio(m.RequestsRefused, float64(m.RequestsSent))
	m.AttemptsPerSuccess = ratio(m.ItemAttempts, float64(m.ItemsCompleted))
	if c, ok := ctl.(interface{ Cooldowns() int }); ok {
		m.Cooldowns = c.Cooldowns()
	}
	m.RecoveryS = recovery(sc, r.bins, end)
	m.Trace = r.finishTrace(end)
	return m
}

// ratio is n/d, 0 when d is 0 (JSON has no NaN).
func ratio(n int, d float64) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d
}

// finishTrace covers every started minute of the run, carrying the
// controller's state into minutes where it did not change.
func (r *recorder) finishTrace(end time.Duration) []TraceRow {
	minutes := int((end + time.Minute - 1) / time.Minute)
	if minutes > 0 {
		r.row(time.Duration(minutes-1) * time.Minute)
	}
	rows := r.trace[:min(minutes, len(r.trace))]
	for i := 1; i < len(rows); i++ {
		prev, cur := &rows[i-1], &rows[i]
		if !cur.hasPlan {
			cur.PlanItems, cur.PlanChunkItems, cur.PlanChunkPauseMS = prev.PlanItems, prev.PlanChunkItems, prev.PlanChunkPauseMS
		}
		if !cur.hasCap {
			cur.CapacityPerMin = prev.CapacityPerMin
		}
	}
	return rows
}

// connPerSec is what MaxConnections carry per second at phase p's mean
// latency (unbounded without latency).
func connPerSec(p Phase) float64 {
	if lat := (time.Duration(p.LatencyMS) * time.Millisecond).Seconds(); lat > 0 {
		return pacing.MaxConnections / lat
	}
	return math.Inf(1)
}

// idealBetween is what an ideal client is served in [from, to): the
// hidden limit (a ramp included), bounded by MaxConnections at each
// phase's mean latency.
func idealBetween(sc *Scenario, from, to time.Duration) float64 {
	total := 0.0
	for i, p := range sc.Phases {
		a, b := max(from, p.at()), min(to, sc.phaseEnd(i))
		if b <= a {
			continue
		}
		total += clippedIntegral(perSec(sc.rateAt(i, a)), perSec(sc.rateAt(i, b)), connPerSec(p), (b - a).Seconds())
	}
	return total
}

// clippedIntegral is ∫ min(r(t), limit) dt over a span of secs where r
// moves linearly from r0 to r1.
func clippedIntegral(r0, r1, limit, secs float64) float64 {
	switch {
	case r0 <= limit && r1 <= limit:
		return (r0 + r1) / 2 * secs
	case r0 >= limit && r1 >= limit:
		return limit * secs
	}
	// The line crosses the limit at x (a share of the span).
	x := (limit - r0) / (r1 - r0)
	if r0 < limit {
		return (r0+limit)/2*x*secs + limit*(1-x)*secs
	}
	return limit*x*secs + (limit+r1)/2*(1-x)*secs
}

// capacityAllowed is the initial burst plus the ideal rate integrated over
// [0, end).
func capacityAllowed(sc *Scenario, end time.Duration) float64 {
	return float64(sc.Phases[0].Burst) + idealBetween(sc, 0, end)
}

// recovery measures, per phase change, how long until a 60 s window wholly
// in the new phase meets the recovery criteria (-1: never).
func recovery(sc *Scenario, bins []bin, end time.Duration) []int {
	prefix := make([]bin, len(bins)+1)
	for i, b := range bins {
		p := prefix[i]
		prefix[i+1] = bin{p.ok + b.ok, p.refused + b.refused, p.answered + b.answered}
	}
	endS := int(end / time.Second)
	out := []int{}
	for k := 1; k < len(sc.Phases); k++ {
		p := sc.Phases[k]
		stop := endS
		if k+1 < len(sc.Phases) {
			stop = min(stop, sc.Phases[k+1].AtS)
		}
		got := -1
		for t := p.AtS + recoveryWindowS; t <= stop; t++ {
			window := time.Duration(recoveryWindowS) * time.Second
			target := recoveryShare * idealBetween(sc, time.Duration(t)*time.Second-window, time.Duration(t)*time.Second)
			hi, lo := prefix[t], prefix[t-recoveryWindowS]
			ok, refused, answered := hi.ok-lo.ok, hi.refused-lo.refused, hi.answered-lo.answered
			if answered > 0 && float64(ok) >= target && float64(refused) < recoveryMaxRefused*float64(answered) {
				got = t - p.AtS
				break
			}
		}
		out = append(out, got)
	}
	return out
}
