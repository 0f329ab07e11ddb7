package sim

import (
	"net/http"
	"testing"
	"time"

	"storecrawl/durable/pacing"
)

// A Host is the simulator's upstream for other drivers: the bucket's
// burst is served, the next request refused with the phase's status and
// Retry-After, and a token comes back at the phase's rate.
func TestHostServesTheScenariosBucket(t *testing.T) {
	sc := Scenario{Name: "host", DurationS: 600, Items: 1, SubrequestsPerItem: 1, Seed: 1, Phases: []Phase{
		{CapacityPerMin: 6, Burst: 2, LatencyMS: 20, LatencyJitterMS: 10, RetryAfterS: 7},
		{AtS: 300, CapacityPerMin: 60, Burst: 1, OnExceed: exceed403},
	}}
	h, err := NewHost(sc)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if a := h.Serve(0, 0); a.Kind != pacing.KindOK || a.Status != http.StatusOK || a.Latency < 10*time.Millisecond || a.Latency > 30*time.Millisecond {
			t.Fatalf("request %d of the burst: %+v", i, a)
		}
	}
	if a := h.Serve(time.Second, 0); a.Status != http.StatusTooManyRequests || a.RetryAfter != 7*time.Second || a.Remaining != -1 {
		t.Fatalf("over the burst: %+v", a)
	}
	// 6/min: a token 10 s later. A request stamped earlier than the last
	// one is served as arriving with it.
	if a := h.Serve(11*time.Second, 0); a.Kind != pacing.KindOK {
		t.Fatalf("a token after 10 s: %+v", a)
	}
	if a := h.Serve(5*time.Second, 0); a.Kind != pacing.KindThrottled {
		t.Fatalf("an earlier stamp refilled the bucket: %+v", a)
	}
	if a := h.Serve(301*time.Second, 0); a.Kind != pacing.KindOK {
		t.Fatalf("the next phase: %+v", a)
	}
	if a := h.Serve(301*time.Second, 0); a.Status != http.StatusForbidden || a.RetryAfter != 0 {
		t.Fatalf("the next phase refuses with its own status: %+v", a)
	}
	if _, err := NewHost(Scenario{}); err == nil {
		t.Fatal("an invalid scenario was accepted")
	}
}
