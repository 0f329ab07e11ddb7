package sim

import (
	"flag"
	"testing"
)

// The product's controller against every scenario family, on the shipped
// hour-long scenarios (each simulates in milliseconds). The bounds are the
// goals of the pacing work, so a regression in the algorithm fails here;
// the full side-by-side table is `go run ./cmd/simulate -scenario all`.
//
// A scenario's seed draws its latencies, errors and not-found items, and
// one seed can flatter the controller by a point or so: the tests that
// take under 2 s of CPU for all of them check seeds 1..shippedSeeds; the
// two over every scenario (3 s and 9 s for five seeds) check the shipped
// seed (1) unless -all-seeds is given. A bound that is not a goal
// is the least (or most) figure over the seeds. Each test logs its figures
// per seed: `go test ./durable/pacing/sim -run NAME -v -all-seeds`.

// shippedSeeds is how many seeds the figures are measured over.
const shippedSeeds = 5

var allSeeds = flag.Bool("all-seeds", false, "the slow scenario-family tests check seeds 1..5, not only the shipped seed")

// seeds are the seeds a test checks: 1..shippedSeeds, or the shipped seed
// alone for a slow test without -all-seeds.
func seeds(slow bool) []uint64 {
	if slow && !*allSeeds {
		return []uint64{1}
	}
	out := make([]uint64, shippedSeeds)
	for i := range out {
		out[i] = uint64(i + 1)
	}
	return out
}

// runShipped runs a shipped scenario under seed.
func runShipped(t *testing.T, name, controller string, seed uint64) Metrics {
	t.Helper()
	scs, err := loadScenarios(name)
	if err != nil || len(scs) != 1 {
		t.Fatalf("scenario %s: %v", name, err)
	}
	sc := *scs[0]
	sc.Seed = seed
	m := runOne(&sc, controller, true)
	if m.Error != "" {
		t.Fatalf("%s × %s (seed %d): %s", name, controller, seed, m.Error)
	}
	return m
}

// Seeds 1..5: goodput 0.9754–0.9986, refused at most 0.01542 (steady-20),
// attempts per success at most 1.0405.
func TestSteadyLimitsNearCapacityWithFewRefusals(t *testing.T) {
	for _, seed := range seeds(false) {
		for _, name := range []string{"steady-20", "steady-60", "steady-600", "steady-6000"} {
			m := runShipped(t, name, "default", seed)
			t.Logf("%s seed %d: goodput %.4f, refused %.5f, attempts/success %.4f", name, seed, m.GoodputRatio, m.RefusedRatio, m.AttemptsPerSuccess)
			if m.GoodputRatio < 0.90 || m.RefusedRatio > 0.02 || m.AttemptsPerSuccess > 1.05 {
				t.Errorf("%s seed %d: goodput %.3f (≥0.90), refused %.4f (≤0.02), attempts/success %.3f (≤1.05)",
					name, seed, m.GoodputRatio, m.RefusedRatio, m.AttemptsPerSuccess)
			}
		}
	}
}

// TestSmallBurstIsSentSmoothly: steady-600 with a burst of 5 (a chunk of
// 3 items is 12 requests at once): the default sends smoothly and keeps
// near the capacity instead of reading the burst's refusals as the rate
// (the oracle, sending in bursts, refuses 42%).
// Seeds 1..5: goodput 0.9238–0.9270, refused at most 0.00297, no lockout.
func TestSmallBurstIsSentSmoothly(t *testing.T) {
	for _, seed := range seeds(false) {
		m := runShipped(t, "small-burst", "default", seed)
		t.Logf("small-burst seed %d: goodput %.4f, refused %.5f, lockouts %d", seed, m.GoodputRatio, m.RefusedRatio, m.Lockouts)
		if m.GoodputRatio < 0.90 || m.RefusedRatio > 0.01 || m.Lockouts > 0 {
			t.Errorf("small-burst seed %d: goodput %.3f (≥ 0.90), refused %.4f (≤ 0.01), lockouts %d", seed, m.GoodputRatio, m.RefusedRatio, m.Lockouts)
		}
	}
}

// Seeds 1..5: the minute after the halving refuses 2–3 of 300–308 sent
// (at most 0.99%); goodput 0.9751–0.9791.
func TestHalvedLimitStopsRefusalsWithinAMinute(t *testing.T) {
	for _, seed := range seeds(false) {
		m := runShipped(t, "halved", "default", seed)
		change := 1800 / 60 // the phase change, in trace minutes
		next := m.Trace[change+1]
		t.Logf("halved seed %d: the minute after, %d refused of %d sent; goodput %.4f", seed, next.Refused, next.Sent, m.GoodputRatio)
		if next.Sent == 0 || float64(next.Refused)/float64(next.Sent) >= 0.02 {
			t.Errorf("seed %d: minute after the halving: %d refused of %d sent", seed, next.Refused, next.Sent)
		}
		if m.GoodputRatio < 0.90 {
			t.Errorf("seed %d: goodput %.3f", seed, m.GoodputRatio)
		}
	}
}

// Seeds 1..5: found in 87–127 s.
func TestDoubledLimitFoundWithinFiveMinutes(t *testing.T) {
	for _, seed := range seeds(false) {
		m := runShipped(t, "doubled", "default", seed)
		t.Logf("doubled seed %d: recovery %v s", seed, m.RecoveryS)
		if len(m.RecoveryS) != 1 || m.RecoveryS[0] < 0 || m.RecoveryS[0] > 300 {
			t.Errorf("seed %d: recovery after doubling: %v s (goal ≤ 300)", seed, m.RecoveryS)
		}
	}
}

// Seeds 1..5: 5% 5xx keep 0.9496–0.9509 of the goodput without them, 20%
// not-found 0.9946–1.0098; no cooldown.
func TestNoiseIsNotMistakenForRateLimiting(t *testing.T) {
	for _, seed := range seeds(false) {
		base := runShipped(t, "steady-6000", "default", seed)
		errs := runShipped(t, "errors-5xx", "default", seed)
		t.Logf("errors-5xx seed %d: %.4f of the goodput without errors (%.4f vs %.4f), cooldowns %d",
			seed, errs.GoodputRatio/base.GoodputRatio, errs.GoodputRatio, base.GoodputRatio, errs.Cooldowns)
		if errs.Cooldowns != 0 || errs.GoodputRatio < 0.9*base.GoodputRatio {
			t.Errorf("seed %d: 5%% 5xx: cooldowns %d, goodput %.3f vs %.3f without errors", seed, errs.Cooldowns, errs.GoodputRatio, base.GoodputRatio)
		}
		base = runShipped(t, "steady-600", "default", seed)
		nf := runShipped(t, "not-found-20", "default", seed)
		t.Logf("not-found-20 seed %d: %.4f of the goodput without them (%.4f vs %.4f), cooldowns %d",
			seed, nf.GoodputRatio/base.GoodputRatio, nf.GoodputRatio, base.GoodputRatio, nf.Cooldowns)
		if nf.Cooldowns != 0 || nf.GoodputRatio < 0.9*base.GoodputRatio {
			t.Errorf("seed %d: 20%% not-found: cooldowns %d, goodput %.3f vs %.3f", seed, nf.Cooldowns, nf.GoodputRatio, base.GoodputRatio)
		}
	}
}

func TestServerPacingSignalsAreObeyed(t *testing.T) {
	for _, seed := range seeds(false) {
		for _, name := range []string{"retry-after", "ratelimit-headers"} {
			if m := runShipped(t, name, "default", seed); m.RetryAfterViolations != 0 {
				t.Errorf("%s seed %d: %d requests sent before the server's time", name, seed, m.RetryAfterViolations)
			}
		}
	}
}

// Seeds 1..5: at most 5–6 refusals in any later minute (more than 10
// lock the client out), no lockout.
func TestLockoutOnlyInTheFirstMinute(t *testing.T) {
	for _, seed := range seeds(false) {
		m := runShipped(t, "lockout", "default", seed)
		most := 0
		for _, row := range m.Trace[1:] {
			most = max(most, row.Refused)
			if row.Refused > 10 {
				t.Errorf("seed %d, minute %d: %d refusals would lock the client out", seed, row.Minute, row.Refused)
			}
		}
		t.Logf("lockout seed %d: at most %d refusals in a minute after the first, %d lockouts", seed, most, m.Lockouts)
		if m.Lockouts > 1 {
			t.Errorf("seed %d: %d lockouts", seed, m.Lockouts)
		}
	}
}

// Slow (every scenario, two controllers): the shipped seed unless -all-seeds.
func TestBeatsSeedEverywhere(t *testing.T) {
	scs, err := loadScenarios(allFlag)
	if err != nil {
		t.Fatal(err)
	}
	const slack = 0.02 // never worse on either measure by more than 2 points
	for _, seed := range seeds(true) {
		for _, shipped := range scs {
			sc := *shipped
			sc.Seed = seed
			seedRules, ours := runOne(&sc, "seed", false), runOne(&sc, "default", false)
			better := ours.GoodputRatio > seedRules.GoodputRatio || ours.RefusedRatio < seedRules.RefusedRatio
			worse := ours.GoodputRatio < seedRules.GoodputRatio-slack || ours.RefusedRatio > seedRules.RefusedRatio+slack
			if !better || worse {
				t.Errorf("%s seed %d: default goodput %.3f refused %.3f vs seed %.3f %.3f",
					sc.Name, seed, ours.GoodputRatio, ours.RefusedRatio, seedRules.GoodputRatio, seedRules.RefusedRatio)
			}
		}
	}
}

func TestSimulationIsDeterministic(t *testing.T) {
	a, b := runShipped(t, "steady-600", "default", 1), runShipped(t, "steady-600", "default", 1)
	if a.RequestsSent != b.RequestsSent || a.GoodputRatio != b.GoodputRatio {
		t.Fatalf("two runs differ: %d/%v vs %d/%v", a.RequestsSent, a.GoodputRatio, b.RequestsSent, b.GoodputRatio)
	}
}

// judgeShipped runs the default and its peers on a shipped scenario under
// seed and judges the default against the best of them.
func judgeShipped(t *testing.T, name string, seed uint64) (Metrics, verdict) {
	t.Helper()
	runs := []Metrics{runShipped(t, name, "default", seed)}
	for _, peer := range peerAlgorithms {
		runs = append(runs, runShipped(t, name, peer, seed))
	}
	v, ok := verdicts(runs)[0]
	if !ok {
		t.Fatalf("%s seed %d: the default was not judged", name, seed)
	}
	return runs[0], v
}

// The issue-18 families. share is the least share of the best peer's
// goodput; refused the most refused share. Where the goal (0.9) is not met
// yet, the bound is the least figure over seeds 1..5, so a regression
// fails, and knownGaps below names the scenario.
func TestFamiliesBounds(t *testing.T) {
	cases := []struct {
		name    string
		share   float64
		refused float64
	}{
		// Seeds 1..5 (refused at most 0.00347 on every one):
		{"slow-noisy", goalShare, goalRefused},   // 1.028–1.041 of aws-adaptive
		{"rise-linear", goalShare, goalRefused},  // 0.995–0.998 of the oracle
		{"outage", goalShare, goalRefused},       // 0.971–0.981 of the oracle
		{"sawtooth", goalShare, goalRefused},     // 0.915–0.922 of the oracle
		{"rise-retry-after", 0.848, goalRefused}, // 0.8488–0.8575 of the oracle: goal not met
	}
	for _, seed := range seeds(false) {
		for _, c := range cases {
			m, v := judgeShipped(t, c.name, seed)
			t.Logf("%s seed %d: %.4f of %s, refused %.5f, %d Retry-After violations, %d lockouts",
				c.name, seed, v.share, v.best.Controller, m.RefusedRatio, m.RetryAfterViolations, m.Lockouts)
			if v.share < c.share || m.RefusedRatio > c.refused || m.RetryAfterViolations != 0 || m.Lockouts != 0 {
				t.Errorf("%s seed %d: %.3f of %s (≥ %.3f), refused %.4f (≤ %.2f), %d Retry-After violations, %d lockouts",
					c.name, seed, v.share, v.best.Controller, c.share, m.RefusedRatio, c.refused, m.RetryAfterViolations, m.Lockouts)
			}
		}
	}
}

// Seeds 1..5: back in 60 s.
func TestOutageRecoveredWithinThreeMinutes(t *testing.T) {
	// 5xx are noise, but a tick of nothing else is an overloaded upstream:
	// the rate backs off, and comes back once the answers do.
	for _, seed := range seeds(false) {
		m := runShipped(t, "outage", "default", seed)
		t.Logf("outage seed %d: recovery %v s, cooldowns %d", seed, m.RecoveryS, m.Cooldowns)
		if len(m.RecoveryS) != 2 || m.RecoveryS[1] < 0 || m.RecoveryS[1] > 180 {
			t.Errorf("seed %d: recovery after the outage: %v s (goal ≤ 180)", seed, m.RecoveryS)
		}
		if m.Cooldowns != 0 {
			t.Errorf("seed %d: the outage was taken for a block: %d", seed, m.Cooldowns)
		}
	}
}

// Seeds 1..5: every change followed in 64–154 s.
func TestSawtoothFollowsEveryStep(t *testing.T) {
	// Every capacity change of the sawtooth, up ×4 or down ÷4, is
	// followed within five minutes.
	for _, seed := range seeds(false) {
		m := runShipped(t, "sawtooth", "default", seed)
		t.Logf("sawtooth seed %d: recovery %v s", seed, m.RecoveryS)
		for i, r := range m.RecoveryS {
			if r < 0 || r > 300 {
				t.Errorf("seed %d: change %d recovered in %d s (goal ≤ 300): %v", seed, i+1, r, m.RecoveryS)
			}
		}
	}
}

// knownGaps are the shipped scenarios where the default does not reach
// the goal yet (their floors: TestFamiliesBounds, TestStorm403BlocksOnce).
var knownGaps = map[string]bool{"rise-retry-after": true, "storm-403": true}

// Slow (every scenario, four controllers): the shipped seed unless -all-seeds.
func TestGoalMetOnEveryOtherScenario(t *testing.T) {
	scs, err := loadScenarios(allFlag)
	if err != nil {
		t.Fatal(err)
	}
	for _, seed := range seeds(true) {
		for _, sc := range scs {
			if knownGaps[sc.Name] {
				continue
			}
			m, v := judgeShipped(t, sc.Name, seed)
			if !v.met {
				t.Errorf("%s seed %d: %.3f of %s's goodput, refused %.4f (best %.4f)", sc.Name, seed, v.share, v.best.Controller, m.RefusedRatio, v.best.RefusedRatio)
			}
		}
	}
}

// retryAfterRefusedMinutes is the most minutes of the hour with a refusal
// on retry-after: 6 on each of seeds 1..5.
const retryAfterRefusedMinutes = 6

func TestRetryAfterClimbIsTimedByItsCost(t *testing.T) {
	// Retry-After 30 s on every refusal: the climb to the capacity takes
	// minutes, not the hour, and a refused step neither cuts the rate below the last one that held
	// nor comes back sooner (seeds 1..5: 0.9264–0.9267 of the oracle).
	for _, seed := range seeds(false) {
		m, v := judgeShipped(t, "retry-after", seed)
		// A refused step doubles the wait before the next: refusals (each a
		// 30 s hold) grow rarer on a capacity that does not move.
		var refusedMinutes int
		for _, row := range m.Trace {
			if row.Refused > 0 {
				refusedMinutes++
			}
		}
		t.Logf("retry-after seed %d: %.4f of the oracle, refused %.5f, %d violations, refusals in %d minutes",
			seed, v.share, m.RefusedRatio, m.RetryAfterViolations, refusedMinutes)
		if !v.met || v.share < goalShare || m.RetryAfterViolations != 0 {
			t.Errorf("retry-after seed %d: %.3f of the oracle (≥ %.2f), refused %.4f, %d violations", seed, v.share, goalShare, m.RefusedRatio, m.RetryAfterViolations)
		}
		if refusedMinutes > retryAfterRefusedMinutes {
			t.Errorf("seed %d: refusals in %d minutes of the hour (≤ %d): the probing cycle does not back off", seed, refusedMinutes, retryAfterRefusedMinutes)
		}
	}
}

// storm403Goodput is the least goodput on storm-403 over seeds 1..5
// (0.8211–0.8212).
const storm403Goodput = 0.821

func TestStorm403BlocksOnce(t *testing.T) {
	// Any refusal blocks for 5 minutes. The first block cannot be avoided
	// by a controller that must find the capacity; its end is found the
	// moment it lifts (probes on whole minutes since it began, not since
	// it was recognised); after it the climb is timed
	// by the block's cost, so there is no second.
	for _, seed := range seeds(false) {
		m := runShipped(t, "storm-403", "default", seed)
		t.Logf("storm-403 seed %d: %d blocks, goodput %.4f, refused %.5f", seed, m.Lockouts, m.GoodputRatio, m.RefusedRatio)
		if m.Lockouts > 1 || m.GoodputRatio < storm403Goodput || m.RefusedRatio > goalRefused {
			t.Errorf("storm-403 seed %d: %d blocks (≤ 1), goodput %.4f (≥ %.3f), refused %.4f", seed, m.Lockouts, m.GoodputRatio, storm403Goodput, m.RefusedRatio)
		}
	}
}

// oneRequestGaps are the shipped scenarios where, at 1 request per item
// (the product's shape), the default does not reach the goal on every seed
// yet: each bound is the least share of the best peer over seeds 1..5
// (`go test ./durable/pacing/sim -run TestGoalAtOneRequestPerItem -v -all-seeds`).
var oneRequestGaps = map[string]float64{
	"rise-retry-after": 0.8285, // 0.8290–0.8520 of the oracle
	"storm-403":        0.7230, // 0.7231–0.7321 (two blocks more than at 4 per item)
}

// Slow (every scenario at 1 request per item, four controllers): the
// shipped seed unless -all-seeds. Every other scenario meets the goal.
func TestGoalAtOneRequestPerItem(t *testing.T) {
	scs, err := loadScenarios(allFlag)
	if err != nil {
		t.Fatal(err)
	}
	for _, seed := range seeds(true) {
		for _, shipped := range atShape(scs, productShape) {
			sc := *shipped
			sc.Seed = seed
			runs := []Metrics{runOne(&sc, "default", false)}
			for _, peer := range peerAlgorithms {
				runs = append(runs, runOne(&sc, peer, false))
			}
			v, ok := verdicts(runs)[0]
			if !ok {
				t.Fatalf("%s seed %d: the default was not judged", sc.Name, seed)
			}
			m := runs[0]
			t.Logf("%s seed %d at 1 per item: %.4f of %s, refused %.5f", sc.Name, seed, v.share, v.best.Controller, m.RefusedRatio)
			floor, gap := oneRequestGaps[sc.Name]
			switch {
			case gap && (v.share < floor || m.RefusedRatio > goalRefused):
				t.Errorf("%s seed %d at 1 per item: %.4f of %s (≥ %.4f), refused %.4f", sc.Name, seed, v.share, v.best.Controller, floor, m.RefusedRatio)
			case !gap && !v.met:
				t.Errorf("%s seed %d at 1 per item: %.4f of %s's goodput, refused %.4f (best %.4f)", sc.Name, seed, v.share, v.best.Controller, m.RefusedRatio, v.best.RefusedRatio)
			}
		}
	}
}

// resumedRunVariants are hold-family variants (`-variants 200 -seed 1`, at
// 1 request per item) where a small burst misleads slow start and the
// capacity is found by the runs that resume after each Retry-After: each
// bound is the default's share of the best peer, measured with
// `go run ./cmd/simulate -scenario NAME -controller default,oracle,aimd,aws-adaptive`.
// With the wait between probe steps capped at PenaltyMaxHolds holds, a
// static phase pays a 30 s hold every ~11 minutes for finding rises
// sooner; the floors include it. #56 finds its capacity at minute 22.
var resumedRunVariants = map[string]float64{
	"retry-after#56":       0.87, // 0.8709 of the oracle (a burst of 7 at 297.8/min)
	"rise-retry-after#140": 0.87, // 0.8701
	"rise-retry-after#60":  0.72, // 0.7325
	// Two resumed runs measure 377/min at 348, above the minute's
	// estimate: the measurement stands over one run's upper bound, which
	// would cost six refusals in seven minutes.
	"rise-retry-after#96": 0.69, // 0.6980
}

func TestHoldVariantsFindTheCapacityFromResumedRuns(t *testing.T) {
	checkVariantFloors(t, resumedRunVariants)
}

// closeResumeVariants are storm-403 variants (`-variants 200 -seed 1`)
// whose burst is large against their capacity: slow start's estimate lies
// far above it, and runs resumed after each block at 0.9 of the last each
// serves within a few requests of it, too close to measure the capacity.
// The block after such a run lifts ResumeCloseCut lower, so the next
// measures: three blocks, four for #152 (five with cuts of 0.9 alone).
// Bounds as resumedRunVariants'.
var closeResumeVariants = map[string]float64{
	"storm-403#141": 0.75, // 0.758: 84/min, burst 22, 2 requests per item
	"storm-403#85":  0.75, // 0.757: 66/min, burst 13, 2 requests per item
	"storm-403#152": 0.69, // 0.698: 60/min, burst 39, 1 request per item
}

func TestBlockVariantsResumeLowerWhereRunsAreTooCloseToMeasure(t *testing.T) {
	checkVariantFloors(t, closeResumeVariants)
}

// checkVariantFloors runs each named variant (drawn under seed 1) with the
// default and its peers, and holds the default's share of the best peer to
// its floor, refused to the goal's share.
func checkVariantFloors(t *testing.T, floors map[string]float64) {
	t.Helper()
	for name, floor := range floors {
		scs, err := loadScenarioOrVariant(name, 1)
		if err != nil {
			t.Fatal(err)
		}
		runs := []Metrics{runOne(scs[0], "default", false)}
		for _, peer := range peerAlgorithms {
			runs = append(runs, runOne(scs[0], peer, false))
		}
		v := verdicts(runs)[0]
		t.Logf("%s: %.4f of %s, refused %.5f", name, v.share, v.best.Controller, runs[0].RefusedRatio)
		if v.share < floor || runs[0].RefusedRatio > goalRefused {
			t.Errorf("%s: %.4f of %s (≥ %.2f), refused %.4f", name, v.share, v.best.Controller, floor, runs[0].RefusedRatio)
		}
	}
}

// unmeasuredBurstVariants are hold-family variants (`-variants 200 -seed
// 1`, at 1 request per item) where no refused step measures the burst: a
// refused resumed run bounds it for the rise proof, and the refusals that
// refute the first estimate leave the wait between steps at four times its
// floor. Each bound is the default's share of the best peer, measured with
// `go run ./cmd/simulate -scenario NAME -controller default,oracle,aimd,aws-adaptive`.
var unmeasuredBurstVariants = map[string]float64{
	"rise-retry-after#48": 0.70, // 0.7062 of the oracle: 70 then 250/min from 6 min; the climb starts at 17 min
}

func TestHoldVariantsFindARiseWithNoBurstMeasured(t *testing.T) {
	checkVariantFloors(t, unmeasuredBurstVariants)
}
