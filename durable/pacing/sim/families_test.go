package sim

import (
	"testing"
)

// The product's controller against every scenario family, on the shipped
// hour-long scenarios (each simulates in milliseconds). The bounds are the
// goals of the pacing work, so a regression in the algorithm fails here;
// the full side-by-side table is `go run ./cmd/simulate -scenario all`.

func runShipped(t *testing.T, name, controller string) Metrics {
	t.Helper()
	scs, err := loadScenarios(name)
	if err != nil || len(scs) != 1 {
		t.Fatalf("scenario %s: %v", name, err)
	}
	m := runOne(scs[0], controller, true)
	if m.Error != "" {
		t.Fatalf("%s × %s: %s", name, controller, m.Error)
	}
	return m
}

func TestSteadyLimitsNearCapacityWithFewRefusals(t *testing.T) {
	for _, name := range []string{"steady-20", "steady-60", "steady-600", "steady-6000"} {
		m := runShipped(t, name, "default")
		if m.GoodputRatio < 0.90 || m.RefusedRatio > 0.02 || m.AttemptsPerSuccess > 1.05 {
			t.Errorf("%s: goodput %.3f (≥0.90), refused %.4f (≤0.02), attempts/success %.3f (≤1.05)",
				name, m.GoodputRatio, m.RefusedRatio, m.AttemptsPerSuccess)
		}
	}
}

// TestSmallBurstIsSentSmoothly: steady-600 with a burst of 5 (a chunk of
// 3 items is 12 requests at once): the default sends smoothly and keeps
// near the capacity instead of reading the burst's refusals as the rate
// (it ran at 4% before; the oracle, sending in bursts, refuses 42%).
func TestSmallBurstIsSentSmoothly(t *testing.T) {
	m := runShipped(t, "small-burst", "default")
	if m.GoodputRatio < 0.90 || m.RefusedRatio > 0.01 || m.Lockouts > 0 {
		t.Fatalf("small-burst: goodput %.3f (≥ 0.90), refused %.4f (≤ 0.01), lockouts %d", m.GoodputRatio, m.RefusedRatio, m.Lockouts)
	}
}

func TestHalvedLimitStopsRefusalsWithinAMinute(t *testing.T) {
	m := runShipped(t, "halved", "default")
	change := 1800 / 60 // the phase change, in trace minutes
	next := m.Trace[change+1]
	if next.Sent == 0 || float64(next.Refused)/float64(next.Sent) >= 0.02 {
		t.Fatalf("minute after the halving: %d refused of %d sent", next.Refused, next.Sent)
	}
	if m.GoodputRatio < 0.90 {
		t.Fatalf("goodput %.3f", m.GoodputRatio)
	}
}

func TestDoubledLimitFoundWithinFiveMinutes(t *testing.T) {
	m := runShipped(t, "doubled", "default")
	if len(m.RecoveryS) != 1 || m.RecoveryS[0] < 0 || m.RecoveryS[0] > 300 {
		t.Fatalf("recovery after doubling: %v s (goal ≤ 300)", m.RecoveryS)
	}
}

func TestNoiseIsNotMistakenForRateLimiting(t *testing.T) {
	base := runShipped(t, "steady-6000", "default")
	errs := runShipped(t, "errors-5xx", "default")
	if errs.Cooldowns != 0 || errs.GoodputRatio < 0.9*base.GoodputRatio {
		t.Errorf("5%% 5xx: cooldowns %d, goodput %.3f vs %.3f without errors", errs.Cooldowns, errs.GoodputRatio, base.GoodputRatio)
	}
	base = runShipped(t, "steady-600", "default")
	nf := runShipped(t, "not-found-20", "default")
	if nf.Cooldowns != 0 || nf.GoodputRatio < 0.9*base.GoodputRatio {
		t.Errorf("20%% not-found: cooldowns %d, goodput %.3f vs %.3f", nf.Cooldowns, nf.GoodputRatio, base.GoodputRatio)
	}
}

func TestServerPacingSignalsAreObeyed(t *testing.T) {
	for _, name := range []string{"retry-after", "ratelimit-headers"} {
		if m := runShipped(t, name, "default"); m.RetryAfterViolations != 0 {
			t.Errorf("%s: %d requests sent before the server's time", name, m.RetryAfterViolations)
		}
	}
}

func TestLockoutOnlyInTheFirstMinute(t *testing.T) {
	m := runShipped(t, "lockout", "default")
	for _, row := range m.Trace[1:] {
		if row.Refused > 10 {
			t.Fatalf("minute %d: %d refusals would lock the client out", row.Minute, row.Refused)
		}
	}
	if m.Lockouts > 1 {
		t.Fatalf("%d lockouts", m.Lockouts)
	}
}

func TestBeatsSeedEverywhere(t *testing.T) {
	scs, err := loadScenarios(allFlag)
	if err != nil {
		t.Fatal(err)
	}
	const slack = 0.02 // never worse on either measure by more than 2 points
	for _, sc := range scs {
		seed, ours := runOne(sc, "seed", false), runOne(sc, "default", false)
		better := ours.GoodputRatio > seed.GoodputRatio || ours.RefusedRatio < seed.RefusedRatio
		worse := ours.GoodputRatio < seed.GoodputRatio-slack || ours.RefusedRatio > seed.RefusedRatio+slack
		if !better || worse {
			t.Errorf("%s: default goodput %.3f refused %.3f vs seed %.3f %.3f",
				sc.Name, ours.GoodputRatio, ours.RefusedRatio, seed.GoodputRatio, seed.RefusedRatio)
		}
	}
}

func TestSimulationIsDeterministic(t *testing.T) {
	a, b := runShipped(t, "steady-600", "default"), runShipped(t, "steady-600", "default")
	if a.RequestsSent != b.RequestsSent || a.GoodputRatio != b.GoodputRatio {
		t.Fatalf("two runs differ: %d/%v vs %d/%v", a.RequestsSent, a.GoodputRatio, b.RequestsSent, b.GoodputRatio)
	}
}

// judgeShipped runs the default and its peers on a shipped scenario and
// judges the default against the best of them.
func judgeShipped(t *testing.T, name string) (Metrics, verdict) {
	t.Helper()
	runs := []Metrics{runShipped(t, name, "default")}
	for _, peer := range peerAlgorithms {
		runs = append(runs, runShipped(t, name, peer))
	}
	v, ok := verdicts(runs)[0]
	if !ok {
		t.Fatalf("%s: the default was not judged", name)
	}
	return runs[0], v
}

// The issue-18 families. share is the least share of the best peer's
// goodput; refused the most refused share. Where the goal (0.9) is not met
// yet, the bound is today's figure less a little, so a regression fails,
// and knownGaps below names the scenario.
func TestIssue18FamiliesBounds(t *testing.T) {
	cases := []struct {
		name    string
		share   float64
		refused float64
	}{
		{"slow-noisy", goalShare, goalRefused},  // 1.04 of aws-adaptive
		{"rise-linear", goalShare, goalRefused}, // 0.99 of the oracle
		{"outage", goalShare, goalRefused},      // 0.93 of the oracle
		{"sawtooth", goalShare, goalRefused},    // 0.93 of the oracle (seeds 1..5: 0.918–0.933)
		{"rise-retry-after", 0.83, goalRefused}, // 0.837 of the oracle (seeds 1..5, min 0.834): goal not met
	}
	for _, c := range cases {
		m, v := judgeShipped(t, c.name)
		if v.share < c.share || m.RefusedRatio > c.refused || m.RetryAfterViolations != 0 || m.Lockouts != 0 {
			t.Errorf("%s: %.3f of %s (≥ %.2f), refused %.4f (≤ %.2f), %d Retry-After violations, %d lockouts",
				c.name, v.share, v.best.Controller, c.share, m.RefusedRatio, c.refused, m.RetryAfterViolations, m.Lockouts)
		}
	}
}

func TestOutageRecoveredWithinThreeMinutes(t *testing.T) {
	// 5xx are noise, but a tick of nothing else is an overloaded upstream:
	// the rate backs off, and comes back once the answers do.
	m := runShipped(t, "outage", "default")
	if len(m.RecoveryS) != 2 || m.RecoveryS[1] < 0 || m.RecoveryS[1] > 180 {
		t.Fatalf("recovery after the outage: %v s (goal ≤ 180)", m.RecoveryS)
	}
	if m.Cooldowns != 0 {
		t.Fatalf("the outage was taken for a block: %d", m.Cooldowns)
	}
}

func TestSawtoothFollowsEveryStep(t *testing.T) {
	// Every capacity change of the sawtooth, up ×4 or down ÷4, is
	// followed within five minutes (before issue 18: 430–505 s after a
	// step up).
	m := runShipped(t, "sawtooth", "default")
	for i, r := range m.RecoveryS {
		if r < 0 || r > 300 {
			t.Errorf("change %d recovered in %d s (goal ≤ 300): %v", i+1, r, m.RecoveryS)
		}
	}
}

// knownGaps are the shipped scenarios where the default does not reach
// the goal yet (see TestIssue18FamiliesBounds for their floors).
var knownGaps = map[string]bool{"rise-retry-after": true, "storm-403": true}

func TestGoalMetOnEveryOtherScenario(t *testing.T) {
	scs, err := loadScenarios(allFlag)
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range scs {
		if knownGaps[sc.Name] {
			continue
		}
		m, v := judgeShipped(t, sc.Name)
		if !v.met {
			t.Errorf("%s: %.3f of %s's goodput, refused %.4f (best %.4f)", sc.Name, v.share, v.best.Controller, m.RefusedRatio, v.best.RefusedRatio)
		}
	}
}

func TestRetryAfterClimbIsTimedByItsCost(t *testing.T) {
	// Retry-After 30 s on every refusal: the climb to the capacity takes
	// minutes, not the hour it took before issue 18 (83% of the oracle),
	// and a refused step neither cuts the rate below the last one that held
	// nor comes back sooner (0.93 of the oracle).
	m, v := judgeShipped(t, "retry-after")
	if !v.met || v.share < goalShare || m.RetryAfterViolations != 0 {
		t.Fatalf("retry-after: %.3f of the oracle (≥ %.2f), refused %.4f, %d violations", v.share, goalShare, m.RefusedRatio, m.RetryAfterViolations)
	}
	// A refused step doubles the wait before the next: refusals (each a
	// 30 s hold) grow rarer on a capacity that does not move.
	var refusedMinutes int
	for _, row := range m.Trace {
		if row.Refused > 0 {
			refusedMinutes++
		}
	}
	if refusedMinutes > 8 {
		t.Fatalf("refusals in %d minutes of the hour (≤ 8): the probing cycle does not back off", refusedMinutes)
	}
}

func TestStorm403BlocksOnce(t *testing.T) {
	// Any refusal blocks for 5 minutes. The first block cannot be avoided
	// by a controller that must find the capacity; its end is found the
	// moment it lifts (probes on whole minutes since it began: 0.80 before,
	// when they counted from its recognition); after it the climb is timed
	// by the block's cost, so there is no second.
	m := runShipped(t, "storm-403", "default")
	if m.Lockouts > 1 || m.GoodputRatio < 0.81 || m.RefusedRatio > goalRefused {
		t.Fatalf("storm-403: %d blocks (≤ 1), goodput %.3f (≥ 0.81), refused %.4f", m.Lockouts, m.GoodputRatio, m.RefusedRatio)
	}
}
