package sim

import (
	"flag"
	"fmt"
	"io"
)

// Exit codes.
const (
	exitOK    = 0
	exitError = 1 // a scenario or the single run failed
	exitUsage = 2
)

// CLI runs the simulate command with args, writing to stdout and stderr,
// and returns the exit code (cmd/simulate is a one-line main around it).
func CLI(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("simulate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	scenario := fs.String("scenario", allFlag, `scenario JSON file, name of a shipped scenario, or "all" (every shipped scenario)`)
	list := fs.String("controller", defaultControllers, "comma-separated controllers (pacing.New names, \"default\", \"oracle\")")
	asJSON := fs.Bool("json", false, "print JSON: one object for one run, an array for several")
	trace := fs.Bool("trace", false, "include a per-minute trace")
	seeds := fs.Int("seeds", 0, "run every scenario under seeds 1..N and print the default's standing per scenario (mean, worst seed)")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "simulate: unexpected arguments %q\n", fs.Args())
		return exitUsage
	}
	controllers := splitNames(*list)
	if len(controllers) == 0 {
		fmt.Fprintln(stderr, "simulate: -controller names no controller")
		return exitUsage
	}
	scenarios, err := loadScenarios(*scenario)
	if err != nil {
		fmt.Fprintf(stderr, "simulate: %v\n", err)
		return exitError
	}
	if *seeds > 0 {
		return sweepSeeds(stdout, stderr, scenarios, controllers, *seeds)
	}
	var runs []Metrics
	for _, sc := range scenarios {
		for _, name := range controllers {
			runs = append(runs, runOne(sc, name, *trace))
		}
	}
	if err := report(stdout, runs, controllers, *scenario == allFlag, *asJSON); err != nil {
		fmt.Fprintf(stderr, "simulate: %v\n", err)
		return exitError
	}
	if len(runs) == 1 && runs[0].Error != "" {
		fmt.Fprintf(stderr, "simulate: %s\n", runs[0].Error)
		return exitError
	}
	return exitOK
}

// report prints one run in full, several as a table (or JSON).
func report(w io.Writer, runs []Metrics, controllers []string, all, asJSON bool) error {
	single := len(runs) == 1 && !all
	switch {
	case single && runs[0].Error != "":
		return nil // reported on stderr
	case single && asJSON:
		return writeJSON(w, runs[0])
	case single:
		return writeDetails(w, runs[0])
	case asJSON:
		return writeJSON(w, runs)
	}
	if err := writeTable(w, runs, controllers); err != nil {
		return err
	}
	for _, m := range runs {
		if m.Trace != nil {
			fmt.Fprintf(w, "\n%s × %s\n", m.Scenario, label(m))
			if err := writeTrace(w, m.Trace); err != nil {
				return err
			}
		}
	}
	return nil
}

// maxSeeds bounds -seeds: each seed reruns every controller on every scenario.
const maxSeeds = 100

func sweepSeeds(stdout, stderr io.Writer, scenarios []*Scenario, controllers []string, n int) int {
	if n > maxSeeds {
		fmt.Fprintf(stderr, "simulate: -seeds %d: at most %d\n", n, maxSeeds)
		return exitUsage
	}
	if err := writeSeedTable(stdout, seedSweep(scenarios, withPeers(controllers), n), n); err != nil {
		fmt.Fprintf(stderr, "simulate: %v\n", err)
		return exitError
	}
	return exitOK
}

// withPeers is controllers plus the default and every peer it is judged against.
func withPeers(controllers []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, n := range append(append([]string{}, controllers...), append([]string{"default"}, peerAlgorithms...)...) {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}
