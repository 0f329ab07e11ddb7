package pacing

import (
	"slices"
	"testing"
)

// TestRegistryHoldsTheProductsControllers: a Worker can be configured with
// probe or seed only; the simulator's peers are unknown here.
func TestRegistryHoldsTheProductsControllers(t *testing.T) {
	if got := Names(); !slices.Equal(got, []string{"probe", "seed"}) {
		t.Fatalf("registry: %v", got)
	}
	for _, n := range []string{"aimd", "aws-adaptive", "oracle"} {
		if _, err := New(n, Config{SubrequestsPerItem: 2}); err == nil {
			t.Errorf("%s built by the product's registry", n)
		}
	}
}
