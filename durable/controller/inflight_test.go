package controller

import (
	"encoding/json"
	"testing"
	"time"
)

func TestRunPlanCarriesTheStoreHostsBoundOnRequestsInFlight(t *testing.T) {
	st := ""
	d := decide(t, &st, "tick", TickRequest{}, t0)
	if d.Run == nil || d.Run.MaxInFlight != 0 {
		t.Fatalf("no evidence yet: %+v, want no bound", d.Run)
	}
	// The store host's probe learned a burst of 5 (pacing's in_flight).
	var s map[string]any
	if err := json.Unmarshal([]byte(st), &s); err != nil {
		t.Fatal(err)
	}
	ps := s["pacing_state"].(map[string]any)
	ps["in_flight"] = 5
	s["pacing_state"], s["run_started_at"] = ps, 0
	raw, _ := json.Marshal(s)
	st = string(raw)
	d = decide(t, &st, "tick", TickRequest{}, t0.Add(time.Minute))
	if d.Run == nil || d.Run.MaxInFlight != 5 {
		t.Fatalf("run plan %+v, want MaxInFlight 5 from the store host's pacing", d.Run)
	}
}
