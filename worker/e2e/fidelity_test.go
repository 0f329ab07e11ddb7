//go:build integration

package e2e

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"storecrawl/internal/fidelity"
)

// Issue 18, live fidelity: the real EnrichmentController under wrangler
// dev against cmd/upstream-sim, the store host's limit stepped up ×4 and
// down ÷4 as in the scenario internal/fidelity/live-steps.json, next to what
// cmd/simulate predicts for that scenario. The comparison is printed (make
// bench prints it too); the test asserts what must hold live whatever the
// prediction: every phase served, few refusals, no cross-talk to the API
// host.
func TestLivePacingAgainstTheSimulatorsPrediction(t *testing.T) {
	scenario := filepath.Join(root, fidelity.ScenarioFile)
	sc, err := fidelity.Load(scenario)
	if err != nil {
		t.Fatal(err)
	}
	const apps = 3000 // more than the scenario can serve
	dir := outputDir(t)
	first := sc.Phases[0]
	s := startSim(t, dir, "-apps", itoa(apps), "-rate-per-min", "6000", "-burst", "100",
		"-store-rate-per-min", itoa(int(first.CapacityPerMin)), "-store-burst", itoa(first.Burst))
	persist := filepath.Join(dir, "state")
	prepareDB(t, persist, dir, apps)
	w := startWorker(t, dir, persist, s.base)

	// What cmd/simulate predicts, computed first so that it takes no CPU
	// from the live run.
	simulate := exec.Command("go", "run", "./cmd/simulate", "-scenario", scenario, "-controller", "default", "-json", "-trace")
	simulate.Dir = root
	predicted, err := simulate.Output()
	if err != nil {
		t.Fatalf("cmd/simulate: %v", err)
	}

	// The controller starts at its first use: t = 0 of the scenario.
	start := time.Now()
	getStatus(t, w)
	samples, err := fidelity.Drive(context.Background(), s.base, sc, start, 5*time.Second)
	if err != nil {
		t.Fatalf("live run: %v", err)
	}
	live := fidelity.Live(sc, samples)
	sim, err := fidelity.Simulated(sc, predicted)
	if err != nil {
		t.Fatal(err)
	}
	var table bytes.Buffer
	fidelity.Table(&table, sc, live, sim)
	t.Logf("live vs simulated:\n%s", table.String())

	// Every phase is served, refusals stay few, and the free API host is
	// never refused. Whether the ×4 step is used, and how close the live
	// run comes to the prediction, is printed above and reported in the
	// README: in session 6 it was not (issue 18 stays open for it).
	for _, p := range live.Phases {
		if p.Goodput < 0.15 {
			t.Errorf("phase %d–%d s at %g/min: live goodput %.2f", p.AtS, p.ToS, p.CapacityPerMin, p.Goodput)
		}
	}
	if live.Refused > 0.1 {
		t.Errorf("live refused %.1f%% of the store host's answers", 100*live.Refused)
	}
	if _, refused := hostRefusals(t, s, "api"); refused != 0 {
		t.Errorf("the API host, free, refused %v", refused)
	}
}

func hostRefusals(t *testing.T, s *sim, host string) (served, refused float64) {
	h, _ := s.stats(t)["by_host"].(map[string]any)[host].(map[string]any)
	return h["served"].(float64), h["refused"].(float64)
}
