package sim

import (
	"time"

	"storecrawl/durable/pacing"
)

// epoch is the virtual clock's zero: every simulated time is epoch + offset.
var epoch = time.Date(2026, time.January, 1, 0, 0, 0, 0, time.UTC)

// minAlarmGap is how soon after a tick its next alarm can fire at the
// earliest: a real alarm set in the past fires "now", not before.
const minAlarmGap = time.Millisecond

// sim is one run of one controller against one scenario.
type sim struct {
	sc       *Scenario
	cfg      pacing.Config
	ctl      pacing.Algorithm
	up       *upstream
	q        *queue
	rec      *recorder
	deadline time.Duration
}

// tickResult is one tick's work.
type tickResult struct {
	ids      []int // the items handed out, in tick order (Outcome.Item indexes this)
	started  int   // how many of ids were sent; the rest go back unattempted
	outcomes []pacing.Outcome
	end      time.Duration
}

// simulate runs ctl against sc and measures it.
func simulate(sc *Scenario, ctl pacing.Algorithm) Metrics {
	s := newSim(sc, ctl)
	end := s.loop()
	return s.rec.finish(sc, end, ctl, s.up.lockouts(), s.q.completed)
}

func newSim(sc *Scenario, ctl pacing.Algorithm) *sim {
	return &sim{
		sc:       sc,
		cfg:      pacing.Config{SubrequestsPerItem: sc.SubrequestsPerItem},
		ctl:      ctl,
		up:       newUpstream(sc),
		q:        newQueue(sc.Items),
		rec:      newRecorder(sc),
		deadline: sc.duration(),
	}
}

// loop is the alarm loop; it returns when the run ended.
func (s *sim) loop() time.Duration {
	wake, last := time.Duration(0), time.Duration(0)
	for wake < s.deadline && s.q.remaining() > 0 {
		plan := s.ctl.Plan(epoch.Add(wake))
		s.rec.plan(wake, plan)
		t := s.tick(wake, plan)
		if t.end > s.deadline {
			// The run ends mid-tick: what is still in flight does not count.
			s.account(t, s.deadline)
			return s.deadline
		}
		s.account(t, t.end)
		next := s.ctl.Done(epoch.Add(t.end), t.outcomes).Sub(epoch)
		s.rec.capacity(t.end, s.ctl.CapacityPerMin())
		if next <= t.end {
			next = t.end + minAlarmGap
		}
		wake, last = next, t.end
	}
	if s.q.remaining() == 0 {
		return last
	}
	return s.deadline
}

// tick executes a plan from wake: chunks in sequence, each through the
// connection pool.
func (s *sim) tick(wake time.Duration, plan pacing.Plan) tickResult {
	t := tickResult{end: wake}
	n := min(plan.Items, s.q.remaining(), s.cfg.ItemsPerTickLimit())
	if n <= 0 {
		return t
	}
	t.ids = s.q.take(n)
	t.outcomes = make([]pacing.Outcome, 0, n*s.sc.SubrequestsPerItem)
	chunk := plan.ChunkItems
	if chunk <= 0 || chunk > n {
		chunk = n
	}
	start := max(wake, plan.NotBefore.Sub(epoch)) // Sub saturates: no overflow
	for t.started < n {
		if start >= s.deadline {
			t.end = max(t.end, start) // nothing more can be sent in this run
			break
		}
		k := min(chunk, n-t.started)
		var throttled bool
		var started int
		t.end, throttled, started = s.chunk(start, t.ids[t.started:t.started+k], t.started, plan, &t.outcomes)
		t.started += started
		if plan.StopOnThrottle && throttled {
			break
		}
		start = s.after(t.end, plan.ChunkPause)
	}
	return t
}

// after is at+d, saturating at the deadline (anything later is the same).
func (s *sim) after(at, d time.Duration) time.Duration {
	if d <= 0 {
		return at
	}
	if d >= s.deadline-at {
		return s.deadline
	}
	return at + d
}

// chunk sends the requests of ids (tick indexes from first) FIFO through
// MaxConnections connections (plan.MaxInFlight when fewer) from start; it
// returns its last answer's time, whether any answer was a refusal, and
// how many items it started. With plan.StopOnThrottle an item whose first
// request would go out after a refusal has come back is not started (it
// stays queued), as the product's runner checks before it starts an item.
func (s *sim) chunk(start time.Duration, ids []int, first int, plan pacing.Plan, outs *[]pacing.Outcome) (end time.Duration, throttled bool, started int) {
	stopOnThrottle := plan.StopOnThrottle
	conns := pacing.MaxConnections
	if plan.MaxInFlight > 0 {
		conns = min(conns, plan.MaxInFlight)
	}
	var pool [pacing.MaxConnections]time.Duration // when each connection frees up
	free := pool[:conns]
	for i := range free {
		free[i] = start
	}
	end = start
	refusedAt := time.Duration(-1) // when the first refusal came back
	for j, id := range ids {
		if stopOnThrottle && refusedAt >= 0 && free[earliest(free)] >= refusedAt {
			break
		}
		started++
		for range s.sc.SubrequestsPerItem {
			c := earliest(free)
			sent := free[c]
			a := s.up.serve(sent, id)
			done := sent + a.latency
			free[c] = done
			end = max(end, done)
			throttled = throttled || a.kind == pacing.KindThrottled
			if a.kind == pacing.KindThrottled && (refusedAt < 0 || done < refusedAt) {
				refusedAt = done
			}
			*outs = append(*outs, pacing.Outcome{
				Item: first + j, SentAt: epoch.Add(sent), DoneAt: epoch.Add(done), Kind: a.kind,
				RetryAfter: a.retryAfter, Remaining: a.remaining, Reset: a.reset,
			})
		}
	}
	return end, throttled, started
}

// earliest is the connection that frees up first (the lowest on ties), so
// sends are in time order.
func earliest(free []time.Duration) int {
	best := 0
	for i, t := range free {
		if t < free[best] {
			best = i
		}
	}
	return best
}

// served reports whether the upstream served the request (not-found is an
// answer, not a failure).
func served(k pacing.Kind) bool { return k == pacing.KindOK || k == pacing.KindNotFound }

// account settles a tick's items and requests answered by cutoff.
func (s *sim) account(t tickResult, cutoff time.Duration) {
	sub := s.sc.SubrequestsPerItem
	var back []int
	for i, id := range t.ids {
		if i >= t.started {
			back = append(back, id)
			continue
		}
		answered, ok := 0, 0
		for _, o := range t.outcomes[i*sub : (i+1)*sub] {
			if o.DoneAt.Sub(epoch) <= cutoff {
				answered++
				if served(o.Kind) {
					ok++
				}
			}
		}
		if answered > 0 {
			s.rec.m.ItemAttempts++
		}
		if ok == sub {
			s.q.completed++
		} else {
			back = append(back, id)
		}
	}
	s.q.putBack(back)
	s.rec.requests(t.outcomes, cutoff)
	s.rec.m.Ticks++
}
