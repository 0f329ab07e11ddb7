package sim

import (
	"fmt"
	"slices"
	"strings"

	"storecrawl/durable/pacing"
)

const (
	// oracleName is the simulator-only controller (it needs the scenario).
	oracleName = "oracle"
	// defaultAlias names the product's controller (pacing.New resolves it).
	defaultAlias = "default"
	// defaultControllers is the -controller default: every algorithm, the
	// product's default and the yardstick.
	defaultControllers = "seed,aimd,aws-adaptive,default,oracle"
)

// peers are the controllers the simulator compares the product's with. The
// product's registry (pacing.New) does not know them: they run here only.
var peers = map[string]func(pacing.Config) pacing.Algorithm{
	"aimd":         func(c pacing.Config) pacing.Algorithm { return NewAIMD(c) },
	"aws-adaptive": func(c pacing.Config) pacing.Algorithm { return NewAWSAdaptive(c) },
}

// controllerNames lists every controller the simulator can build, sorted,
// the aliases last.
func controllerNames() []string {
	names := pacing.Names()
	for n := range peers {
		names = append(names, n)
	}
	slices.Sort(names)
	return append(names, defaultAlias, oracleName)
}

// newController builds the named controller for sc. A name may tune the
// probe: "default:PenaltyHolds=3;PenaltyWaitMin=30s" (tunedName).
func newController(name string, sc *Scenario) (pacing.Algorithm, error) {
	cfg := pacing.Config{SubrequestsPerItem: sc.SubrequestsPerItem}
	if name == oracleName {
		return newOracle(sc.capacityAt, cfg), nil
	}
	if mk, ok := peers[name]; ok {
		return mk(cfg), nil
	}
	base, tuning, tuned := strings.Cut(name, tuningSep)
	if !tuned {
		c, err := pacing.New(name, cfg)
		if err != nil {
			return nil, fmt.Errorf("unknown controller %q (have: %v)", name, controllerNames())
		}
		return c, nil
	}
	params, err := probeParams(base, tuning)
	if err != nil {
		return nil, err
	}
	return pacing.NewProbeWith(cfg, params), nil
}

// tuningSep parts a controller's name from its tuning, and tuningListSep
// one setting from the next ("," already parts controllers in -controller).
const tuningSep, tuningListSep = ":", ";"

// tunedName is the default controller under tuning, a comma-separated
// list of Field=value (as -params takes it); the default itself if empty.
func tunedName(tuning string) string {
	list := splitNames(tuning)
	if len(list) == 0 {
		return defaultAlias
	}
	return defaultAlias + tuningSep + strings.Join(list, tuningListSep)
}

// probeParams is the default tuning with tuning's settings applied; base
// must name the probe.
func probeParams(base, tuning string) (pacing.ProbeParams, error) {
	q := pacing.DefaultProbeParams()
	if base != defaultAlias && base != pacing.DefaultName {
		return q, fmt.Errorf("controller %q: only %q (%s) takes a tuning", base+tuningSep+tuning, defaultAlias, pacing.DefaultName)
	}
	for setting := range strings.SplitSeq(tuning, tuningListSep) {
		field, value, ok := strings.Cut(strings.TrimSpace(setting), "=")
		if !ok {
			return q, fmt.Errorf("tuning %q: want Field=value", setting)
		}
		if err := q.Set(strings.TrimSpace(field), strings.TrimSpace(value)); err != nil {
			return q, err
		}
	}
	return q, nil
}

// checkTuning reads a controller name's tuning, as newController will:
// nil for a name without one.
func checkTuning(name string) error {
	base, tuning, tuned := strings.Cut(name, tuningSep)
	if !tuned {
		return nil
	}
	_, err := probeParams(base, tuning)
	return err
}

// isDefault reports whether name is the default controller, tuned or not.
func isDefault(name string) bool {
	return name == defaultAlias || strings.HasPrefix(name, defaultAlias+tuningSep)
}

// splitNames parses a comma-separated list, dropping blanks.
func splitNames(list string) []string {
	var out []string
	for n := range strings.SplitSeq(list, ",") {
		if n = strings.TrimSpace(n); n != "" {
			out = append(out, n)
		}
	}
	return out
}

// runOne simulates one scenario × controller; a controller that cannot be
// built, or panics, becomes the row's error instead of ending the program.
func runOne(sc *Scenario, name string, trace bool) Metrics {
	return runWrapped(sc, name, trace, nil)
}

// runWrapped is runOne with the controller wrapped (nil: as built), so
// -ticks can watch its decisions.
func runWrapped(sc *Scenario, name string, trace bool, wrap func(pacing.Algorithm) pacing.Algorithm) (m Metrics) {
	defer func() {
		if p := recover(); p != nil {
			m = Metrics{Scenario: sc.Name, Controller: name, Error: fmt.Sprintf("panic: %v", p), RecoveryS: []int{}}
		}
	}()
	ctl, err := newController(name, sc)
	if err != nil {
		return Metrics{Scenario: sc.Name, Controller: name, Error: err.Error(), RecoveryS: []int{}}
	}
	if wrap != nil {
		ctl = wrap(ctl)
	}
	m = simulate(sc, ctl)
	m.Controller = name
	if !trace {
		m.Trace = nil
	}
	return m
}
