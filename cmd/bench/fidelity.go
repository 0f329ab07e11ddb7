//go:build unix

package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"storecrawl/internal/fidelity"
)

// fidelityApps is more than the live-steps scenario can serve (its 9
// minutes at 120, 480 and 120 requests a minute: about 2,200 pages).
const fidelityApps = 3000

// benchFidelity runs the live-fidelity scenario (internal/fidelity) with
// the real controller under wrangler dev and prints it next to what
// cmd/simulate predicts for the same scenario.
func benchFidelity(root string) {
	scenario := filepath.Join(root, fidelity.ScenarioFile)
	sc, err := fidelity.Load(scenario)
	if err != nil {
		fail("%v", err)
	}
	persist, _ := os.MkdirTemp("", "bench-fidelity-")
	defer os.RemoveAll(persist)
	wranglerLocal(root, persist, "d1", "migrations", "apply", "DB", "--local")
	seedLocalDB(root, persist, fidelityApps)
	first := sc.Phases[0]
	simBase, stopSim := startSimWith(root, fidelityApps, "-rate-per-min", "6000", "-burst", "100",
		"-store-rate-per-min", strconv.Itoa(int(first.CapacityPerMin)), "-store-burst", strconv.Itoa(first.Burst))
	defer stopSim()
	base, stop := startWranglerWith(root, filepath.Join(root, "wrangler.jsonc"), persist,
		"--var", "UPSTREAM_API_BASE:"+simBase, "--var", "UPSTREAM_STORE_BASE:"+simBase, "--var", "UPSTREAM_HINTS_BASE:"+simBase, "--var", "ADMIN_TOKEN:"+benchAdminToken)
	defer stop()

	simulate := exec.Command("go", "run", "./cmd/simulate", "-scenario", scenario, "-controller", "default", "-json", "-trace")
	simulate.Dir = root
	predicted, err := simulate.Output()
	if err != nil {
		fail("cmd/simulate: %v", err)
	}
	fmt.Printf("\nLive fidelity: the controller under wrangler dev against the simulator, the store host's limit stepped as in\n"+
		"%s (%d s), next to cmd/simulate's prediction for the same scenario (goodput = OK answers ÷ what the limit allowed)\n",
		fidelity.ScenarioFile, sc.DurationS)
	start := time.Now()
	control(base, "start", "") // the controller's first use: t = 0 of the scenario
	samples, err := fidelity.Drive(context.Background(), simBase, sc, start, 5*time.Second)
	if err != nil {
		fail("live run: %v", err)
	}
	sim, err := fidelity.Simulated(sc, predicted)
	if err != nil {
		fail("%v", err)
	}
	var out bytes.Buffer
	fidelity.Table(&out, sc, fidelity.Live(sc, samples), sim)
	fmt.Print(out.String())
}
