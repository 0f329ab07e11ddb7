package sim

import (
	"time"

	"storecrawl/durable/pacing"
)

// newOracle builds the yardstick: a controller told the hidden capacity.
// It is the package's only reference to pacing.NewOracle.
func newOracle(capacityPerMin func(time.Time) float64, cfg pacing.Config) pacing.Algorithm {
	return pacing.NewOracle(capacityPerMin, cfg)
}
