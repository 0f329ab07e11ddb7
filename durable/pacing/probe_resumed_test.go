package pacing_test

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"storecrawl/durable/pacing"
)

// Refused twice soon after a hold: each run began at a full bucket, so
// what it served is the burst plus the capacity over its length; the two
// together measure the capacity (storm-403 at 1 request per item resumed
// 0.9× lower after each block instead: one block more).
func TestProbeTwoRefusedResumesMeasureTheCapacity(t *testing.T) {
	resume := t0.UnixMilli()
	// The last resumed run: 50 served 10 s after its resume, then refused.
	// This one resumed at t0 and served 42 by t0+10 s; 48 more by t0+20 s.
	p := probeWith(t, sub, penalised(fields{
		"rate": 300, "ceiling": 310, "phase": pacing.PhaseRecover,
		"resume_at": resume, "resume_ok": 42, "resumed_ms": 10_000, "resumed_ok": 50,
	}))
	raTick(p, t0.Add(19*time.Second), 12, 30*time.Second)
	// (90 − 50) in (20 − 10) s is 240 a minute (its burst 90 − 80 = 10):
	// cruise under it at once.
	if s := stateOf(t, p); math.Abs(s.Ceiling-240) > 1e-9 || math.Abs(s.Rate-240*dp.PenaltyMargin) > 1e-9 {
		t.Fatalf("ceiling %v rate %v, want 240 and %v", s.Ceiling, s.Rate, 240*dp.PenaltyMargin)
	}
	// The same two runs where the minute's accepted rate counts the hold
	// before the resume (90 served in the 50 s since a tick that ended
	// 30 s before it: 105.8/min after EstimateSlack): the measured
	// capacity stands over that estimate, as it does over a resumed run's
	// upper bound (rise-retry-after#96: ceilings of 605, 557, 522, 486,
	// 458 and 436/min, each cut from such a bound and each refused, its
	// capacity 348 and measured at 377 by the second refusal).
	p = probeWith(t, sub, penalised(fields{
		"rate": 300, "ceiling": 310, "phase": pacing.PhaseRecover,
		"resume_at": resume, "resume_ok": 42, "resumed_ms": 10_000, "resumed_ok": 50,
		"history": []map[string]any{{"end": resume - 30_000, "ok": 0}, {"end": resume + 10_000, "ok": 42}},
	}))
	raTick(p, t0.Add(19*time.Second), 12, 30*time.Second)
	if s := stateOf(t, p); math.Abs(s.Ceiling-240) > 1e-9 || math.Abs(s.Rate-240*dp.PenaltyMargin) > 1e-9 {
		t.Fatalf("minute's estimate under the measurement: ceiling %v rate %v, want 240 and %v", s.Ceiling, s.Rate, 240*dp.PenaltyMargin)
	}
	// One refused run alone does not tell the burst from the capacity.
	p = probeWith(t, sub, penalised(fields{
		"rate": 300, "ceiling": 310, "phase": pacing.PhaseRecover, "resume_at": resume, "resume_ok": 42,
		"history": []map[string]any{{"end": resume + 10_000, "ok": 42}},
	}))
	raTick(p, t0.Add(19*time.Second), 12, 30*time.Second)
	if s := stateOf(t, p); s.Ceiling != 300 {
		t.Fatalf("one refused run: ceiling %v, want the rate refused (300)", s.Ceiling)
	}
	// A refusal with no hold (no Retry-After) opens no run: the bucket was
	// not refilled, so the next refusal measures nothing.
	p = probeWith(t, sub, penalised(fields{"rate": 300, "ceiling": 310, "phase": pacing.PhaseRecover}))
	runTick(p, t0, pacing.KindThrottled)
	if raw, _ := json.Marshal(p); strings.Contains(string(raw), "resume_at") {
		t.Fatalf("a refusal without a hold opened a resumed run: %s", raw)
	}
}

// resumedTick reports one tick at 1 request an item that ends at now: ok
// served, then one refused with a 30 s Retry-After.
func resumedTick(p *pacing.Probe, now time.Time, ok int) {
	p.Plan(now.Add(-time.Second))
	out := tickOf(ok+1, 1, pacing.KindOK, now.Add(-time.Second), 100*time.Millisecond)
	out[ok].Kind, out[ok].RetryAfter = pacing.KindThrottled, 30*time.Second
	p.Done(now, out)
}

func TestProbeResumedRunTooCloseToTheLastKeepsTheLast(t *testing.T) {
	// The last resumed run was refused 10 s in with 50 served. This one is
	// refused 10.5 s in with 53: too close to tell the capacity from the
	// latency's jitter, so it measures nothing and the window kept is the
	// farther one, not this one (rise-retry-after#164: six runs in a row
	// refused 4.0, 4.9, 5.8, 6.9, 7.9 and 9.1 s in, each within a second or
	// ten requests of the last, measured nothing; against the first, the
	// fourth measures).
	p := probeWith(t, 1, penalised(fields{"rate": 300, "ceiling": 310, "phase": pacing.PhaseRecover,
		"resume_at": t0.UnixMilli(), "resume_ok": 50, "resumed_ms": 10_000, "resumed_ok": 50,
		"history": []fields{{"end": ms(9500 * time.Millisecond), "ok": 50}}}))
	resumedTick(p, t0.Add(10500*time.Millisecond), 3)
	s := stateOf(t, p)
	if s.ResumedMs != 10_000 || s.ResumedOK != 50 {
		t.Fatalf("window kept (%d ms, %d served), want the farther (10000 ms, 50)", s.ResumedMs, s.ResumedOK)
	}
	// The next run, refused 20 s after its resume with 90 served, measures
	// (90 − 50) per 10 s against it: 240/min (against the closer window,
	// 233.7).
	resumedTick(p, time.UnixMilli(s.ResumeAt).Add(20*time.Second), 90)
	if s := stateOf(t, p); math.Abs(s.Ceiling-240) > 1e-9 {
		t.Fatalf("ceiling %v, want the capacity measured against the farther window, 240", s.Ceiling)
	}
}

func TestProbeRefusedAgainOnResumingIsBoundedByTheResumedRun(t *testing.T) {
	// Refused, held 30 s, and refused again 5 s into the resumed run with
	// 60 served: from a full bucket of at least 11 (the largest burst a
	// refused step measured), the capacity is at most (60 − 11) per 5 s,
	// 588/min. A cut of FallingBeta would guess 474.6 under a ceiling of
	// 678, the rate just refused.
	p := probeWith(t, 1, penalised(fields{"rate": 678, "ceiling": 699, "phase": pacing.PhaseRecover, "streak": 1,
		"last_throttle": ms(-35 * time.Second), "resume_at": ms(-5 * time.Second), "burst": 11, "burst_low": 8}))
	resumedTick(p, t0, 60)
	s := stateOf(t, p)
	bound := (60 - 11) / (5.0 / 60)
	if math.Abs(s.Ceiling-bound) > 0.01 || math.Abs(s.Rate-bound*dp.PenaltyMargin) > 0.01 {
		t.Fatalf("ceiling %v rate %v, want the resumed run's bound %v and %v under it", s.Ceiling, s.Rate, bound, bound*dp.PenaltyMargin)
	}
}

func TestProbeFirstRefusalAfterAHoldTakesTheResumedRunOverTheMinute(t *testing.T) {
	// rise-retry-after at 960/min: a rising step refused, 30 s held, then
	// 442 served in the 26.5 s since the resume, refused at 996/min. The
	// minute's accepted rate counts the hold (451 in 56.5 s: 469/min);
	// the resumed run bounds the capacity at (442 − 11) per 26.5 s, 976.
	state := penalised(fields{"rate": 996, "ceiling": 1027, "phase": pacing.PhaseRecover,
		"last_throttle": ms(-56500 * time.Millisecond), "resume_at": ms(-26500 * time.Millisecond), "resume_ok": 334,
		"burst": 11, "burst_low": 8.2,
		"history": []fields{{"end": ms(-56500 * time.Millisecond), "ok": 9}, {"end": ms(-16500 * time.Millisecond), "ok": 167},
			{"end": ms(-6500 * time.Millisecond), "ok": 167}}})
	p := probeWith(t, 1, state)
	resumedTick(p, t0, 108)
	s := stateOf(t, p)
	bound := (442 - 11) / (26.5 / 60)
	if math.Abs(s.Ceiling-bound) > 0.01 || math.Abs(s.Rate-bound*dp.PenaltyMargin) > 0.01 {
		t.Fatalf("ceiling %v rate %v, want the resumed run's bound %v and %v under it", s.Ceiling, s.Rate, bound, bound*dp.PenaltyMargin)
	}
	// With no burst measured the run bounds nothing: the minute's
	// accepted rate stands (retry-after's first refusals, before any
	// refused step).
	delete(state, "burst")
	delete(state, "burst_low")
	p = probeWith(t, 1, state)
	resumedTick(p, t0, 108)
	accepted := 451 / (56.5 / 60) * dp.EstimateSlack
	if s := stateOf(t, p); math.Abs(s.Ceiling-accepted) > 0.01 {
		t.Fatalf("no burst known: ceiling %v, want the minute's accepted rate %v", s.Ceiling, accepted)
	}
}

// A run resumed after a block and refused within a few requests of the
// kept run says the cut between them was too small to measure: the
// capacity lies well under both. The run after the next block resumes
// ResumeCloseCut lower, so that it measures against the kept one, rather
// than another cut of 0.9 (storm-403#56 at 62/min with a burst of 33:
// resumed at 175, 158 and 140/min, its runs serve 49, 52 and 56, and
// with cuts of 0.9 alone five blocks pass before two measure).
func TestProbeResumedRunsTooCloseToMeasureResumeLower(t *testing.T) {
	for _, kept := range []int64{17_000, 0} {
		// The kept run served 49 in 17 s; this one resumed at t0 and
		// serves 52 in 20 s, then is refused and blocked again.
		p := probeWith(t, 1, fields{"rate": 157.8, "ceiling": 175.3, "phase": pacing.PhaseRecover, "penalized": true,
			"blocks": 1, "hold_ms": 300_000, "resume_at": t0.UnixMilli(), "resume_ok": 42, "resumed_ms": kept, "resumed_ok": 49})
		now := t0.Add(20 * time.Second)
		p.Plan(now.Add(-time.Second))
		out := tickOf(11, 1, pacing.KindOK, now.Add(-time.Second), 100*time.Millisecond)
		out[10].Kind = pacing.KindThrottled
		next := p.Done(now, out)
		var blocked probeState
		for lifted := false; !lifted; {
			lifted = next.Sub(t0) > 5*time.Minute
			k := pacing.KindThrottled
			if lifted {
				k = pacing.KindOK
				blocked = stateOf(t, p)
				p = restart(t, p, 1, nil) // the block's lessons survive storage
			}
			plan := p.Plan(next)
			next = p.Done(next.Add(time.Second), tickOf(max(plan.Items, 1), 1, k, next, 100*time.Millisecond))
		}
		s := stateOf(t, p)
		if blocked.Phase != pacing.PhaseBlocked || s.Phase != pacing.PhaseRecover || s.Blocks != 2 {
			t.Fatalf("kept %d ms: phases %s → %s, %d blocks; want blocked → recover after the second block", kept, blocked.Phase, s.Phase, s.Blocks)
		}
		want := blocked.Ceiling
		if kept > 0 {
			want *= dp.ResumeCloseCut
		}
		if math.Abs(s.Ceiling-want) > 1e-9 || s.Rate > s.Ceiling {
			t.Fatalf("kept %d ms: resumed at %v under a ceiling of %v (blocked at %v), want the ceiling %v", kept, s.Rate, s.Ceiling, blocked.Ceiling, want)
		}
	}
}
