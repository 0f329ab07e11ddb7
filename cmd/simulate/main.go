// Command simulate runs the EnrichmentController's pacing algorithms
// against a simulated rate-limited upstream on a virtual clock; see
// durable/pacing/sim for the model, the scenario format and the metrics.
//
//	go run ./cmd/simulate -scenario all
//	go run ./cmd/simulate -scenario halved -controller default -trace
//	go run ./cmd/simulate -scenario my.json -controller seed -json
package main

import (
	"os"

	"storecrawl/durable/pacing/sim"
)

func main() { os.Exit(sim.CLI(os.Args[1:], os.Stdout, os.Stderr)) }
