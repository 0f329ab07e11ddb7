package sim

import (
	"math"
	"reflect"
	"testing"
	"time"

	"storecrawl/durable/pacing"
)

// bucket is an upstream of 60 req/min (a token a second) and burst.
func bucket(burst int, mutate func(*Phase)) *upstream {
	return newUpstream(testScenario(func(s *Scenario) {
		s.DurationS = 3600
		s.Phases[0].CapacityPerMin, s.Phases[0].Burst = 60, burst
		if mutate != nil {
			mutate(&s.Phases[0])
		}
	}))
}

// kinds serves n requests at t (item i for request i) and returns their kinds.
func kinds(u *upstream, t time.Duration, n int) []pacing.Kind {
	var out []pacing.Kind
	for i := range n {
		out = append(out, u.serve(t, i).kind)
	}
	return out
}

func count(ks []pacing.Kind, k pacing.Kind) int {
	n := 0
	for _, x := range ks {
		if x == k {
			n++
		}
	}
	return n
}

func TestBucketBurstAndRefill(t *testing.T) {
	u := bucket(5, nil)
	if got := count(kinds(u, 0, 7), pacing.KindOK); got != 5 {
		t.Errorf("burst served %d of 7, want 5", got)
	}
	if got := count(kinds(u, time.Second, 3), pacing.KindOK); got != 1 {
		t.Errorf("after 1 s at 1/s served %d, want 1", got)
	}
	if got := count(kinds(u, 1500*time.Millisecond, 1), pacing.KindOK); got != 0 {
		t.Errorf("half a token served a request")
	}
	// A long idle refills only up to the burst.
	if got := count(kinds(u, time.Hour/2, 10), pacing.KindOK); got != 5 {
		t.Errorf("after idling served %d, want the burst of 5", got)
	}
	if u.lockouts() != 0 {
		t.Errorf("plain 429s began %d blocks", u.lockouts())
	}
}

func TestBucketPhaseChange(t *testing.T) {
	sc := testScenario(func(s *Scenario) {
		s.DurationS = 3600
		s.Phases = []Phase{
			{CapacityPerMin: 60, Burst: 10, LatencyMS: 100},
			{AtS: 10, CapacityPerMin: 600, Burst: 3, LatencyMS: 100},
		}
	})
	u := newUpstream(sc)
	kinds(u, 0, 10) // empty the bucket
	// 5 s at 1/s, then at the change capped at the new burst of 3, then 10/s.
	if got := count(kinds(u, 5*time.Second, 10), pacing.KindOK); got != 5 {
		t.Errorf("old rate: served %d, want 5", got)
	}
	if got := count(kinds(u, 10*time.Second+100*time.Millisecond, 10), pacing.KindOK); got != 3 {
		t.Errorf("at the change: served %d, want 3 (5 tokens capped at burst 3)", got)
	}
	if got := count(kinds(u, 10*time.Second+400*time.Millisecond, 10), pacing.KindOK); got != 3 {
		t.Errorf("new rate: served %d in 0.3 s, want 3", got)
	}
}

func TestBlockIsNotExtended(t *testing.T) {
	u := bucket(1, func(p *Phase) { p.OnExceed, p.BlockS = exceed403, 10 })
	kinds(u, 0, 2) // the second is refused: blocked until 10 s
	if u.bucket.BlockedUntil.Sub(epoch) != 10*time.Second || u.lockouts() != 1 {
		t.Fatalf("blocked until %v, %d blocks", u.bucket.BlockedUntil.Sub(epoch), u.lockouts())
	}
	// Plenty of tokens by 9 s, but the block refuses everything without
	// touching the bucket or extending the block.
	if got := count(kinds(u, 9*time.Second, 3), pacing.KindThrottled); got != 3 {
		t.Errorf("during the block %d of 3 refused", got)
	}
	if u.bucket.BlockedUntil.Sub(epoch) != 10*time.Second || u.lockouts() != 1 {
		t.Errorf("block extended to %v, %d blocks", u.bucket.BlockedUntil.Sub(epoch), u.lockouts())
	}
	if got := u.serve(10*time.Second, 0).kind; got != pacing.KindOK {
		t.Errorf("after the block: %s", got)
	}
}

func TestLockoutAfterRefusalsPerMinute(t *testing.T) {
	mk := func() *upstream {
		return bucket(1, func(p *Phase) { p.LockoutAfterRefusalsPerMin, p.BlockS = 3, 600 })
	}
	// Three refusals spread over more than a minute: no lockout.
	u := mk()
	for _, s := range []time.Duration{0, 40, 80, 120} {
		u.bucket.Tokens = 0
		u.bucket.RefilledAt = epoch.Add(s * time.Second)
		u.serve(s*time.Second, 0)
	}
	if u.lockouts() != 0 {
		t.Errorf("refusals 40 s apart locked out")
	}
	// Four within a minute: locked out for block_s.
	u = mk()
	kinds(u, 0, 1) // take the token
	kinds(u, time.Millisecond, 3)
	if u.lockouts() != 0 {
		t.Fatalf("locked out after 3 refusals (limit is more than 3)")
	}
	kinds(u, 2*time.Millisecond, 1)
	if u.lockouts() != 1 || u.bucket.BlockedUntil.Sub(epoch) != 2*time.Millisecond+600*time.Second {
		t.Fatalf("after 4 refusals: %d lockouts, blocked until %v", u.lockouts(), u.bucket.BlockedUntil.Sub(epoch))
	}
	// Refusals during the lockout do not count towards another one.
	kinds(u, 599*time.Second, 10)
	if got := u.serve(600*time.Second+3*time.Millisecond, 0).kind; got != pacing.KindOK || u.lockouts() != 1 {
		t.Errorf("after the lockout: %s, %d lockouts", got, u.lockouts())
	}
}

func TestRefusalsConsume(t *testing.T) {
	u := bucket(2, func(p *Phase) { p.RefusalsConsume = true })
	kinds(u, 0, 10) // 2 served, 8 refused: tokens floor at -burst
	if u.bucket.Tokens != -2 {
		t.Fatalf("tokens %v, want -2", u.bucket.Tokens)
	}
	// From -2 the next token is 3 s away (a plain bucket: 1 s), and a
	// refusal at 2 s (0 tokens) pushes it one second further.
	if got := u.serve(2*time.Second, 0).kind; got != pacing.KindThrottled {
		t.Errorf("at 2 s: %s", got)
	}
	if u.bucket.Tokens != -1 {
		t.Errorf("the refusal at 2 s left %v tokens, want -1", u.bucket.Tokens)
	}
	if got := u.serve(5*time.Second, 0).kind; got != pacing.KindOK {
		t.Errorf("at 5 s: %s", got)
	}
}

func TestRetryAfter(t *testing.T) {
	u := bucket(1, func(p *Phase) { p.RetryAfterS = 30 })
	ok, refused := u.serve(0, 0), u.serve(0, 1)
	if ok.retryAfter != 0 || refused.retryAfter != 30*time.Second {
		t.Errorf("retry-after: served %v, refused %v", ok.retryAfter, refused.retryAfter)
	}
}

func TestRateLimitHeaders(t *testing.T) {
	u := bucket(3, func(p *Phase) { p.RatelimitHeaders = true })
	var rem []int
	for range 4 {
		rem = append(rem, u.serve(0, 0).remaining)
	}
	if !reflect.DeepEqual(rem, []int{2, 1, 0, 0}) {
		t.Errorf("remaining %v", rem)
	}
	if a := u.serve(250*time.Millisecond, 0); a.kind != pacing.KindThrottled || a.reset != 750*time.Millisecond {
		t.Errorf("reset %v (%s), want 750ms to the next token", a.reset, a.kind)
	}
	if a := bucket(3, nil).serve(0, 0); a.remaining != -1 || a.reset != 0 {
		t.Errorf("without headers: remaining %d reset %v", a.remaining, a.reset)
	}
}

func TestNotFoundPerItem(t *testing.T) {
	const items = 2000
	mk := func() *upstream {
		return newUpstream(testScenario(func(s *Scenario) {
			s.Items = items
			s.Phases[0].NotFoundRate = 0.2
		}))
	}
	u, v := mk(), mk()
	missing := 0
	for i := range items {
		a, b := u.serve(0, i).kind, u.serve(0, i).kind
		if a != b {
			t.Fatalf("item %d answered %s then %s", i, a, b)
		}
		if a == pacing.KindNotFound {
			missing++
		}
	}
	if share := float64(missing) / items; math.Abs(share-0.2) > 0.03 {
		t.Errorf("not-found share %.3f, want about 0.2", share)
	}
	// The verdict is the item's own, whatever the order of requests.
	for i := items - 1; i >= 0; i-- {
		if (v.serve(0, i).kind == pacing.KindNotFound) != (u.items[i] == itemMissing) {
			t.Fatalf("item %d differs when asked in another order", i)
		}
	}
}

func TestErrorsAndTimeouts(t *testing.T) {
	u := newUpstream(testScenario(func(s *Scenario) {
		s.Phases[0].ErrorRate, s.Phases[0].TimeoutRate = 0.1, 0.05
	}))
	const n = 20000
	var errs, timeouts int
	for i := range n {
		switch a := u.serve(0, i%1000); a.kind {
		case pacing.KindServerError:
			errs++
		case pacing.KindTimeout:
			timeouts++
			if a.latency != requestTimeout {
				t.Fatalf("a timeout took %v", a.latency)
			}
		}
	}
	if e, to := float64(errs)/n, float64(timeouts)/n; math.Abs(e-0.1) > 0.01 || math.Abs(to-0.05) > 0.01 {
		t.Errorf("5xx %.3f (want 0.1), timeouts %.3f (want 0.05)", e, to)
	}
}

func TestLatencyJitterAndSeed(t *testing.T) {
	mk := func(seed uint64) []time.Duration {
		u := newUpstream(testScenario(func(s *Scenario) {
			s.Seed = seed
			s.Phases[0].LatencyMS, s.Phases[0].LatencyJitterMS = 120, 40
		}))
		var out []time.Duration
		for i := range 100 {
			l := u.serve(0, i).latency
			if l < 80*time.Millisecond || l > 160*time.Millisecond {
				t.Fatalf("latency %v outside 120±40 ms", l)
			}
			out = append(out, l)
		}
		return out
	}
	if !reflect.DeepEqual(mk(1), mk(1)) {
		t.Error("same seed, different latencies")
	}
	if reflect.DeepEqual(mk(1), mk(2)) {
		t.Error("different seeds, same latencies")
	}
}

func TestDeterministicRun(t *testing.T) {
	run := func(seed uint64) Metrics {
		sc := testScenario(func(s *Scenario) {
			s.DurationS, s.Seed = 600, seed
			s.Phases[0] = Phase{CapacityPerMin: 240, Burst: 20, LatencyMS: 120, LatencyJitterMS: 40,
				ErrorRate: 0.05, NotFoundRate: 0.1, RatelimitHeaders: true}
		})
		ctl, err := newController("seed", sc)
		if err != nil {
			t.Fatal(err)
		}
		m := simulate(sc, ctl)
		m.Controller = "seed"
		return m
	}
	a, b := run(1), run(1)
	if !reflect.DeepEqual(a, b) {
		t.Errorf("same seed, different metrics:\n%+v\n%+v", a, b)
	}
	if c := run(2); reflect.DeepEqual(a, c) {
		t.Errorf("different seeds, identical metrics")
	}
}

func TestBucketRamp(t *testing.T) {
	// 1/s rising linearly to 3/s over 60 s: the tokens are the area under
	// the line, 45 in the first half (1→2/s), 75 in the second (2→3/s).
	sc := testScenario(func(s *Scenario) {
		s.DurationS = 120
		s.Phases = []Phase{
			{CapacityPerMin: 60, RampToPerMin: 180, Burst: 1000, LatencyMS: 100},
			{AtS: 60, CapacityPerMin: 180, Burst: 1000, LatencyMS: 100},
		}
	})
	u := newUpstream(sc)
	kinds(u, 0, 1000) // empty the bucket
	first := count(kinds(u, 30*time.Second, 1000), pacing.KindOK)
	second := count(kinds(u, 60*time.Second, 1000), pacing.KindOK)
	if first != 45 || second != 75 {
		t.Errorf("ramp 1→3/s: served %d then %d, want 45 and 75", first, second)
	}
	if c := sc.capacityAt(epoch.Add(45 * time.Second)); math.Abs(c-150) > 1e-9 {
		t.Errorf("capacity at 45 s is %v, want 150", c)
	}
	if c := sc.capacityAt(epoch.Add(90 * time.Second)); c != 180 {
		t.Errorf("capacity after the ramp is %v, want 180", c)
	}
	// The ideal is the same area, clipped where the connections bind: at
	// 3 s latency six connections carry 2/s, so the ramp's second half
	// counts 2/s, not 2→3/s.
	sc.Phases[0].LatencyMS, sc.Phases[1].LatencyMS = 3000, 3000
	if got := idealBetween(sc, 0, 60*time.Second); math.Abs(got-(45+60)) > 1e-9 {
		t.Errorf("clipped ramp ideal %v, want 105", got)
	}
}
