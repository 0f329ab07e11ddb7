package sim

import "testing"

// errors-5xx#164 at 1 request per item (capacity 2,805/min, 6.8 % 5xx,
// 119 ms): six connections carry ~3,000/min, so the loop's ticks near
// the ceiling go out latency-bound, at the connections' pace, and are
// refused there. Capped at the rate, the ceiling would ratchet down to
// 0.83 of the capacity; learned from the accepted rate, it holds the
// default at the floor below (`go run ./cmd/simulate -scenario
// 'errors-5xx#164' -controller default,oracle,aimd,aws-adaptive`).
func TestLatencyBoundRefusalsKeepTheCeiling(t *testing.T) {
	scs, err := loadScenarios("errors-5xx")
	if err != nil {
		t.Fatal(err)
	}
	v, err := newVariant(scs[0], 1, 164)
	if err != nil {
		t.Fatal(err)
	}
	var runs []Metrics
	for _, c := range append([]string{"default"}, peerAlgorithms...) {
		runs = append(runs, runOne(v, c, true))
	}
	got, ok := verdicts(runs)[0]
	t.Logf("%s: %.4f of %s", v.Name, got.share, got.best.Controller)
	if !ok || got.share < 0.93 {
		t.Errorf("%s: %.3f of the best peer (≥ 0.93)", v.Name, got.share)
	}
}
