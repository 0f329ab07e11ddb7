package sim

import (
	"math"
	"slices"
	"testing"
	"time"

	"storecrawl/durable/pacing"
)

// maxInFlight is the most requests outstanding at any instant.
func maxInFlight(outs []pacing.Outcome) int {
	type ev struct {
		t time.Time
		d int
	}
	var evs []ev
	for _, o := range outs {
		evs = append(evs, ev{o.SentAt, 1}, ev{o.DoneAt, -1})
	}
	// At equal times the answer frees its connection before the next send.
	slices.SortFunc(evs, func(a, b ev) int {
		if c := a.t.Compare(b.t); c != 0 {
			return c
		}
		return a.d - b.d
	})
	n, peak := 0, 0
	for _, e := range evs {
		n += e.d
		peak = max(peak, n)
	}
	return peak
}

func TestConnectionPool(t *testing.T) {
	sc := testScenario(func(s *Scenario) { s.DurationS = 10 })
	ctl := &fixedCtl{plan: pacing.Plan{Items: 8}, every: time.Hour}
	simulate(sc, ctl)
	if len(ctl.dones) != 1 {
		t.Fatalf("%d ticks, want 1", len(ctl.dones))
	}
	d := ctl.dones[0]
	if len(d.outcomes) != 32 {
		t.Fatalf("%d requests, want 8 items × 4", len(d.outcomes))
	}
	if got := maxInFlight(d.outcomes); got != pacing.MaxConnections {
		t.Errorf("peak in flight %d, want %d", got, pacing.MaxConnections)
	}
	want := time.Duration(math.Ceil(32.0/pacing.MaxConnections)) * 100 * time.Millisecond
	if got := d.at.Sub(epoch); got != want {
		t.Errorf("the chunk took %v, want ceil(32/6)×100ms = %v", got, want)
	}
	for i, o := range d.outcomes {
		if o.Item != i/4 || o.Kind != pacing.KindOK {
			t.Fatalf("request %d: item %d %s", i, o.Item, o.Kind)
		}
		if i > 0 && o.SentAt.Before(d.outcomes[i-1].SentAt) {
			t.Fatalf("request %d sent out of order", i)
		}
	}
}

func TestMaxInFlightBoundsTheConnections(t *testing.T) {
	sc := testScenario(func(s *Scenario) { s.DurationS = 10 })
	ctl := &fixedCtl{plan: pacing.Plan{Items: 8, MaxInFlight: 5}, every: time.Hour}
	simulate(sc, ctl)
	d := ctl.dones[0]
	if got := maxInFlight(d.outcomes); got != 5 {
		t.Errorf("peak in flight %d, want the plan's 5", got)
	}
	want := time.Duration(math.Ceil(32.0/5)) * 100 * time.Millisecond
	if got := d.at.Sub(epoch); got != want {
		t.Errorf("the chunk took %v, want ceil(32/5)×100ms = %v", got, want)
	}
}

func TestChunksPauseAndNotBefore(t *testing.T) {
	sc := testScenario(func(s *Scenario) { s.DurationS = 10 })
	nb := at(2 * time.Second)
	ctl := &fixedCtl{plan: pacing.Plan{Items: 5, ChunkItems: 2, ChunkPause: time.Second, NotBefore: nb}, every: time.Hour}
	simulate(sc, ctl)
	outs := ctl.dones[0].outcomes
	// Chunks of 2, 2, 1 items: 8 requests = 2 rounds of 100 ms, then a 1 s pause.
	starts := []time.Duration{2000, 2000, 3200, 3200, 4400}
	for i, o := range outs {
		if o.SentAt.Before(nb) {
			t.Fatalf("request %d sent at %v, before NotBefore", i, o.SentAt.Sub(epoch))
		}
		if o.SentAt.Sub(epoch) < starts[o.Item]*time.Millisecond {
			t.Errorf("item %d sent at %v, its chunk starts at %dms", o.Item, o.SentAt.Sub(epoch), starts[o.Item])
		}
	}
	if got := ctl.dones[0].at.Sub(epoch); got != 4500*time.Millisecond {
		t.Errorf("the tick ended at %v, want 4.5s", got)
	}
}

func TestStopOnThrottle(t *testing.T) {
	sc := testScenario(func(s *Scenario) {
		s.DurationS = 120
		s.Phases[0].CapacityPerMin, s.Phases[0].Burst = 60, 10
	})
	s := newSim(sc, &fixedCtl{})
	// 10 tokens: the first chunk (2 items, 8 requests) is served, the
	// second gets 2 tokens and 6 refusals, and the tick stops there.
	tk := s.tick(0, pacing.Plan{Items: 10, ChunkItems: 2, StopOnThrottle: true})
	if tk.started != 4 || len(tk.outcomes) != 16 {
		t.Fatalf("started %d items, %d requests; want 4 and 16", tk.started, len(tk.outcomes))
	}
	s.account(tk, tk.end)
	if s.q.completed != 2 || s.rec.m.ItemAttempts != 4 {
		t.Errorf("completed %d, attempts %d; want 2 and 4 (unstarted items are not attempts)", s.q.completed, s.rec.m.ItemAttempts)
	}
	// The refused and the unstarted items come first next time, in order.
	if got := s.q.take(9); !slices.Equal(got, []int{2, 3, 4, 5, 6, 7, 8, 9, 10}) {
		t.Errorf("next items %v", got)
	}
	// Without StopOnThrottle the whole plan is sent.
	s = newSim(sc, &fixedCtl{})
	if tk := s.tick(0, pacing.Plan{Items: 10, ChunkItems: 2}); tk.started != 10 || len(tk.outcomes) != 40 {
		t.Errorf("without StopOnThrottle: started %d, %d requests", tk.started, len(tk.outcomes))
	}
}

func TestItemsRetriedAndAttemptsCounted(t *testing.T) {
	sc := testScenario(func(s *Scenario) {
		s.DurationS, s.Items = 3600, 20
		s.Phases[0].ErrorRate = 0.2
	})
	ctl := &fixedCtl{plan: pacing.Plan{Items: 5}, every: time.Second}
	m := simulate(sc, ctl)
	if m.ItemsCompleted != 20 {
		t.Fatalf("completed %d of 20 items", m.ItemsCompleted)
	}
	if m.ItemAttempts <= 20 || m.AttemptsPerSuccess != float64(m.ItemAttempts)/20 {
		t.Errorf("attempts %d, per success %v", m.ItemAttempts, m.AttemptsPerSuccess)
	}
	if m.SimulatedS >= 3600 || m.ServerErrors == 0 {
		t.Errorf("the run did not stop early (%vs) or saw no 5xx (%d)", m.SimulatedS, m.ServerErrors)
	}
	if m.RequestsSent != m.RequestsOK+m.ServerErrors {
		t.Errorf("sent %d != ok %d + 5xx %d", m.RequestsSent, m.RequestsOK, m.ServerErrors)
	}
}

func TestInFlightAtTheEndNotCounted(t *testing.T) {
	sc := testScenario(func(s *Scenario) {
		s.DurationS, s.SubrequestsPerItem = 10, 1
		s.Phases[0].LatencyMS = 3000
	})
	// Wakes at 0, 3.001, 6.002, 9.003 s; the last answer would come at 12.003 s.
	ctl := &fixedCtl{plan: pacing.Plan{Items: 1}}
	m := simulate(sc, ctl)
	if m.RequestsSent != 3 || m.ItemsCompleted != 3 || len(ctl.dones) != 3 {
		t.Errorf("sent %d, completed %d, %d Done calls; want 3 each", m.RequestsSent, m.ItemsCompleted, len(ctl.dones))
	}
	if want := at(3*time.Second + time.Millisecond); !ctl.plans[1].Equal(want) {
		t.Errorf("a wake in the past became %v, want the tick's end + 1 ms", ctl.plans[1].Sub(epoch))
	}
}

func TestFixedRateGoodput(t *testing.T) {
	sc := testScenario(func(s *Scenario) {
		s.DurationS, s.Items = 3600, 100000
		s.Phases[0] = Phase{CapacityPerMin: 240, Burst: 20, LatencyMS: 120, LatencyJitterMS: 40}
	})
	// One item (4 requests) a second is exactly the capacity.
	m := simulate(sc, &fixedCtl{plan: pacing.Plan{Items: 1}, every: time.Second})
	if m.GoodputRatio < 0.99 || m.RefusedRatio > 0.001 {
		t.Errorf("at capacity: goodput %.4f, refused %.4f", m.GoodputRatio, m.RefusedRatio)
	}
	// Half the capacity gives half the goodput.
	m = simulate(sc, &fixedCtl{plan: pacing.Plan{Items: 1}, every: 2 * time.Second})
	if math.Abs(m.GoodputRatio-0.5) > 0.01 {
		t.Errorf("at half capacity: goodput %.4f, want 0.5", m.GoodputRatio)
	}
	// Four times the capacity: three quarters refused.
	m = simulate(sc, &fixedCtl{plan: pacing.Plan{Items: 1}, every: 250 * time.Millisecond})
	if want := 1 - 240.0/960; math.Abs(m.RefusedRatio-want) > 0.01 || m.GoodputRatio < 0.99 {
		t.Errorf("at 4× capacity: refused %.4f (want %.2f), goodput %.4f", m.RefusedRatio, want, m.GoodputRatio)
	}
}

func TestRetryAfterViolations(t *testing.T) {
	sc := testScenario(func(s *Scenario) {
		s.DurationS, s.SubrequestsPerItem = 600, 1
		s.Phases[0] = Phase{CapacityPerMin: 6, Burst: 1, LatencyMS: 100, RetryAfterS: 30}
	})
	rude := simulate(sc, &fixedCtl{plan: pacing.Plan{Items: 1}, every: time.Second})
	if rude.RetryAfterViolations == 0 {
		t.Error("a client ignoring Retry-After had no violations")
	}
	polite := simulate(sc, &fixedCtl{plan: pacing.Plan{Items: 1}, every: time.Second, honorRA: true})
	if polite.RetryAfterViolations != 0 || polite.RequestsRefused == 0 {
		t.Errorf("a client obeying Retry-After: %d violations, %d refusals", polite.RetryAfterViolations, polite.RequestsRefused)
	}
}

func TestLockoutsAndCooldowns(t *testing.T) {
	sc := testScenario(func(s *Scenario) {
		s.DurationS, s.SubrequestsPerItem = 600, 1
		s.Phases[0] = Phase{CapacityPerMin: 60, Burst: 1, LatencyMS: 100, OnExceed: exceed403, BlockS: 100}
	})
	ctl := &coolCtl{fixedCtl{plan: pacing.Plan{Items: 2}, every: 10 * time.Second, cooldowns: 7}}
	m := simulate(sc, ctl)
	// Every tick's second request is refused, and ticks land inside and
	// outside blocks of 100 s: one block per 100 s at most.
	if m.Lockouts < 5 || m.Lockouts > 6 {
		t.Errorf("%d blocks, want 5-6 in 600 s of 100 s blocks", m.Lockouts)
	}
	if m.Cooldowns != 7 {
		t.Errorf("cooldowns %d, want the controller's 7", m.Cooldowns)
	}
	if plain := simulate(sc, &fixedCtl{plan: pacing.Plan{Items: 1}, every: time.Hour}); plain.Cooldowns != 0 {
		t.Errorf("a controller without Cooldowns reports %d", plain.Cooldowns)
	}
}

func TestCapacityAllowed(t *testing.T) {
	all, err := loadScenarios(allFlag)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{
		"steady-20":    20 + 20*60,
		"halved":       20 + 600*30 + 300*30,
		"steady-6000":  20 + 3000*60, // six connections at 120 ms carry 3000/min
		"high-latency": 20 + 180*60,  // six connections at 2 s carry 180/min
	}
	for _, sc := range all {
		if w, ok := want[sc.Name]; ok {
			if got := capacityAllowed(sc, sc.duration()); math.Abs(got-w) > 1e-6 {
				t.Errorf("%s: capacity allowed %v, want %v", sc.Name, got, w)
			}
		}
	}
}

func TestRecovery(t *testing.T) {
	sc := testScenario(func(s *Scenario) {
		s.DurationS = 600
		s.Phases = []Phase{
			{CapacityPerMin: 600, Burst: 20, LatencyMS: 100},
			{AtS: 300, CapacityPerMin: 300, Burst: 20, LatencyMS: 100},
		}
	})
	bins := make([]bin, sc.DurationS+1)
	fill := func(from, to, ok, refused int) {
		for s := from; s < to; s++ {
			bins[s] = bin{ok: ok, refused: refused, answered: ok + refused}
		}
	}
	fill(0, 300, 10, 0)
	fill(300, 600, 5, 0) // the new rate at once: the best score is one window
	if got := recovery(sc, bins, sc.duration()); len(got) != 1 || got[0] != recoveryWindowS {
		t.Errorf("instant adaptation: %v, want [60]", got)
	}
	fill(300, 400, 0, 20) // refused until 400 s
	if got := recovery(sc, bins, sc.duration()); got[0] != 160 {
		t.Errorf("refusals until 400 s: %v, want [160]", got)
	}
	fill(300, 600, 4, 0) // 80% of the ideal rate: never recovered
	if got := recovery(sc, bins, sc.duration()); got[0] != -1 {
		t.Errorf("80%% of capacity: %v, want [-1]", got)
	}
}

func TestTrace(t *testing.T) {
	sc := testScenario(func(s *Scenario) { s.DurationS = 180 })
	ctl := &fixedCtl{plan: pacing.Plan{Items: 1, ChunkItems: 1, ChunkPause: time.Second}, every: 30 * time.Second}
	m := simulate(sc, ctl)
	if len(m.Trace) != 3 {
		t.Fatalf("%d trace rows, want 3", len(m.Trace))
	}
	for i, r := range m.Trace {
		if r.Minute != i || r.Sent != 8 || r.OK != 8 || r.PlanItems != 1 || r.PlanChunkPauseMS != 1000 {
			t.Errorf("minute %d: %+v", i, r)
		}
	}
}
