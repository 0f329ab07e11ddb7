package sim

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
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
	scenario := fs.String("scenario", allFlag, `scenario JSON file, name of a shipped scenario, "all" (every shipped scenario), or a variant as -variants names it ("retry-after#56", drawn under -seed);`+
		` with -variants, the families to draw from: "all" or comma-separated names or files`)
	list := fs.String("controller", defaultControllers, "comma-separated controllers: the product's (pacing.New names, \"default\"), the peers \"aimd\" and \"aws-adaptive\", \"oracle\"")
	asJSON := fs.Bool("json", false, "print JSON: one object for one run, an array for several")
	trace := fs.Bool("trace", false, "include a per-minute trace")
	ticks := fs.Bool("ticks", false, "print every tick of one scenario: the plan, what its requests said, the next wake-up and the controller's own view")
	seeds := fs.Int("seeds", 0, "run every scenario under seeds 1..N and print the default's standing per scenario (mean, worst seed)")
	shapes := fs.String("shape", "", `requests per item: comma-separated counts and "file" (each scenario's own subrequests_per_item), one table each;`+
		` default "`+defaultShapesAll+`" with -scenario all, "`+shapeFile+`" otherwise`)
	variants := fs.Int("variants", 0, "draw N random variants of every scenario family and print the default's mean and worst standing per family against its peers (-shape does not apply: variants draw theirs)")
	listEach := fs.Bool("list", false, `with -variants: after the table, one row per variant (requests per item, vs-best, ÷oracle, refused %), worst first within each family; -json adds each family's "variant_list"`)
	variantSeed := fs.Uint64("seed", 1, "the seed -variants (and a -scenario variant name) draws from")
	params := fs.String("params", "", `tune the default controller: comma-separated Field=value of its ProbeParams ("PenaltyHolds=3,PenaltyWaitMin=30s"); a run's controller is then named "default:…"`)
	sweep := fs.String("sweep", "", `one ProbeParams field and its values ("PenaltyHolds=1,2,3"): run -seeds (5 unless set) once per value and print the default's standing per scenario and value`)
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
	tuned := tunedName(*params)
	if err := checkTuning(tuned); err != nil {
		fmt.Fprintf(stderr, "simulate: -params: %v\n", err)
		return exitUsage
	}
	for i, n := range controllers {
		if n == defaultAlias {
			controllers[i] = tuned
		}
	}
	if *listEach && *variants <= 0 {
		fmt.Fprintln(stderr, "simulate: -list lists the variants: it needs -variants N")
		return exitUsage
	}
	scenarios, code := resolveScenarios(stderr, *scenario, *variants > 0, *variantSeed)
	if code != exitOK {
		return code
	}
	if *sweep != "" && (*ticks || *variants > 0) {
		fmt.Fprintln(stderr, "simulate: -sweep runs seeds: not with -ticks or -variants")
		return exitUsage
	}
	if *ticks && (len(scenarios) != 1 || *variants > 0 || *seeds > 0) {
		fmt.Fprintln(stderr, "simulate: -ticks needs one -scenario, without -variants or -seeds")
		return exitUsage
	}
	if *variants > 0 {
		// The variants judge the default against its peers: other
		// controllers (the seed rules) run only when -controller names them.
		judged := []string{tuned}
		fs.Visit(func(f *flag.Flag) {
			if f.Name == "controller" {
				judged = controllers
			}
		})
		return sweepVariants(stdout, stderr, scenarios, judged, variantOpts{n: *variants, seed: *variantSeed, asJSON: *asJSON, list: *listEach})
	}
	if *shapes == "" {
		*shapes = shapeFile
		if *scenario == allFlag {
			*shapes = defaultShapesAll
		}
	}
	atShapes, err := parseShapes(*shapes)
	if err != nil {
		fmt.Fprintf(stderr, "simulate: %v\n", err)
		return exitUsage
	}
	if *sweep != "" {
		n := *seeds
		if n <= 0 {
			n = defaultSweepSeeds
		}
		return sweepParam(stdout, stderr, scenarios, *params, *sweep, n, atShapes)
	}
	if *seeds > 0 {
		return sweepSeeds(stdout, stderr, scenarios, controllers, *seeds, atShapes)
	}
	return runTables(stdout, stderr, scenarios, controllers, atShapes, tableOpts{
		ticks: *ticks, trace: *trace, asJSON: *asJSON, all: *scenario == allFlag})
}

// tableOpts are the flags of a plain run's tables.
type tableOpts struct {
	ticks, trace, asJSON bool
	all                  bool // -scenario all: the tables compare across scenarios
}

// runTables runs every scenario under every controller at each shape and
// prints a table per shape (or one JSON array), then -ticks' lines.
func runTables(stdout, stderr io.Writer, scenarios []*Scenario, controllers []string, atShapes []shape, o tableOpts) int {
	var all []Metrics
	var tickLines bytes.Buffer // -ticks: printed after the tables
	for k, sh := range atShapes {
		var runs []Metrics
		for _, sc := range atShape(scenarios, sh) {
			for _, name := range controllers {
				if o.ticks {
					runs = append(runs, runTicks(&tickLines, sc, name, o.trace))
					continue
				}
				runs = append(runs, runOne(sc, name, o.trace))
			}
		}
		all = append(all, runs...)
		if o.asJSON && len(atShapes) > 1 {
			continue // one array of every shape's runs, below
		}
		sectionTitle(stdout, k, sh)
		if err := report(stdout, runs, controllers, o.all, o.asJSON); err != nil {
			fmt.Fprintf(stderr, "simulate: %v\n", err)
			return exitError
		}
	}
	if tickLines.Len() > 0 {
		_, _ = tickLines.WriteTo(stdout)
	}
	if o.asJSON && len(atShapes) > 1 {
		if err := writeJSON(stdout, all); err != nil {
			fmt.Fprintf(stderr, "simulate: %v\n", err)
			return exitError
		}
	}
	if len(all) == 1 && all[0].Error != "" {
		fmt.Fprintf(stderr, "simulate: %s\n", all[0].Error)
		return exitError
	}
	return exitOK
}

// resolveScenarios loads -scenario: families to draw from under -variants
// (a name that is none is a usage error), else what loadScenarioOrVariant
// takes. It returns exitOK or the exit code, having said why on stderr.
func resolveScenarios(stderr io.Writer, arg string, variants bool, seed uint64) ([]*Scenario, int) {
	load := func() ([]*Scenario, error) { return loadScenarioOrVariant(arg, seed) }
	if variants {
		load = func() ([]*Scenario, error) { return loadFamilies(arg) }
	}
	scenarios, err := load()
	switch {
	case errors.As(err, new(*notAFamilyError)):
		fmt.Fprintf(stderr, "simulate: %v\n", err)
		return nil, exitUsage
	case err != nil:
		fmt.Fprintf(stderr, "simulate: %v\n", err)
		return nil, exitError
	}
	return scenarios, exitOK
}

// sectionTitle heads the k-th table: none on a first table at the files'
// shape, so that table prints as it did before -shape existed.
func sectionTitle(w io.Writer, k int, sh shape) {
	if k > 0 {
		fmt.Fprintln(w)
	}
	if k > 0 || sh != 0 {
		fmt.Fprintf(w, "=== at %s ===\n\n", sh.title())
	}
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

func sweepSeeds(stdout, stderr io.Writer, scenarios []*Scenario, controllers []string, n int, shapes []shape) int {
	if n > maxSeeds {
		fmt.Fprintf(stderr, "simulate: -seeds %d: at most %d\n", n, maxSeeds)
		return exitUsage
	}
	for k, sh := range shapes {
		sectionTitle(stdout, k, sh)
		if err := writeSeedTable(stdout, seedSweep(atShape(scenarios, sh), withPeers(controllers), n), n); err != nil {
			fmt.Fprintf(stderr, "simulate: %v\n", err)
			return exitError
		}
	}
	return exitOK
}

// withPeers is controllers plus the default (unless they name it, tuned or
// not) and every peer it is judged against.
func withPeers(controllers []string) []string {
	seen := map[string]bool{}
	var out []string
	added := peerAlgorithms
	if !slices.ContainsFunc(controllers, isDefault) {
		added = append([]string{defaultAlias}, peerAlgorithms...)
	}
	for _, n := range append(append([]string{}, controllers...), added...) {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}
