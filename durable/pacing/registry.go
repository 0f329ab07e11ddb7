package pacing

import (
	"fmt"
	"sort"
)

// constructors lists every controller cmd/simulate and the product can run.
// The oracle is not here: it needs the simulator's hidden capacity (NewOracle).
var constructors = map[string]func(Config) Algorithm{
	"seed":         func(c Config) Algorithm { return NewSeed(c) },
	"aimd":         func(c Config) Algorithm { return NewAIMD(c) },
	"aws-adaptive": func(c Config) Algorithm { return NewAWSAdaptive(c) },
	"probe":        func(c Config) Algorithm { return NewProbe(c) },
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
