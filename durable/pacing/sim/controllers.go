package sim

import (
	"fmt"
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

// newController builds the named controller for sc.
func newController(name string, sc *Scenario) (pacing.Algorithm, error) {
	cfg := pacing.Config{SubrequestsPerItem: sc.SubrequestsPerItem}
	if name == oracleName {
		return newOracle(sc.capacityAt, cfg), nil
	}
	return pacing.New(name, cfg)
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
