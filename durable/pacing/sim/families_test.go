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
