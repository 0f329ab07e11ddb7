package pacing

import (
	"fmt"
	"sort"
)

// constructors lists the controllers the product can run (ENRICHMENT_PACING
// names one). The simulator's peers and its oracle are not here, so a Worker
// can be configured with neither and does not link them (durable/pacing/sim).
var constructors = map[string]func(Config) Algorithm{
	"seed":  func(c Config) Algorithm { return NewSeed(c) },
	"probe": func(c Config) Algorithm { return NewProbe(c) },
}

// DefaultName is the controller the product runs.
var DefaultName = "probe"

// New builds the named controller; "default" is DefaultName.
func New(name string, cfg Config) (Algorithm, error) {
	if name == "default" {
		name = DefaultName
	}
	mk, ok := constructors[name]
	if !ok {
		return nil, fmt.Errorf("unknown controller %q (have: %v, default)", name, Names())
	}
	return mk(cfg), nil
}

// Names lists the registered controllers, sorted.
func Names() []string {
	var out []string
	for n := range constructors {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
