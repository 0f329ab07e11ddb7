package sim

import "testing"

func TestVerdictAgainstTheBestPeer(t *testing.T) {
	run := func(scenario, ctl, algo string, good, refused float64) Metrics {
		return Metrics{Scenario: scenario, Controller: ctl, Algorithm: algo, GoodputRatio: good, RefusedRatio: refused}
	}
	runs := []Metrics{
		run("a", "seed", "seed", 0.99, 0.30), // not a peer: never the yardstick
		run("a", "aimd", "aimd", 0.80, 0.05),
		run("a", "oracle", "oracle", 0.95, 0),
		run("a", "default", "probe", 0.86, 0.01), // 0.905 of the oracle
		run("b", "aws-adaptive", "aws-adaptive", 0.50, 0.10),
		run("b", "default", "probe", 0.44, 0.05), // 0.88 of aws: short
		run("c", "aimd", "aimd", 0.60, 0.10),
		run("c", "default", "probe", 0.60, 0.08), // refuses > 2% but less than the best
		run("d", "default", "probe", 0.60, 0),    // no peer ran
	}
	v := verdicts(runs)
	if len(v) != 3 {
		t.Fatalf("judged %d runs, want 3 (the default's with a peer): %v", len(v), v)
	}
	if a := v[3]; a.best.Controller != "oracle" || !a.met || a.share < 0.905 || a.share > 0.906 {
		t.Errorf("a: %+v", a)
	}
	if b := v[5]; b.met || b.best.Controller != "aws-adaptive" {
		t.Errorf("b: 0.88 of the best met the goal: %+v", b)
	}
	if c := v[7]; !c.met {
		t.Errorf("c: refusing less than the best peer missed the goal: %+v", c)
	}
	// Refusing more than 2% and more than the best misses it.
	if w := judge(run("e", "default", "probe", 0.95, 0.03), run("e", "oracle", "oracle", 0.95, 0)); w.met {
		t.Errorf("3%% refused met the goal: %+v", w)
	}
}
