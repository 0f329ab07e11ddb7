package sim

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

const validJSON = `{"name": "x", "duration_s": 3600, "items": 10, "subrequests_per_item": 4, "seed": 7,
  "phases": [{"at_s": 0, "capacity_per_min": 240, "burst": 20, "latency_ms": 120, "latency_jitter_ms": 40},
             {"at_s": 600, "capacity_per_min": 120, "burst": 10}]}`

func parse(t *testing.T, src string) (*Scenario, error) {
	t.Helper()
	return ParseScenario(strings.NewReader(src), "file")
}

func TestParseValidAndDefaults(t *testing.T) {
	s, err := parse(t, validJSON)
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "x" || s.Seed != 7 || len(s.Phases) != 2 {
		t.Fatalf("parsed %+v", s)
	}
	// on_exceed is the one default; everything else a phase omits is 0,
	// not inherited from the phase before.
	p := s.Phases[1]
	if p.OnExceed != exceed429 || s.Phases[0].OnExceed != exceed429 {
		t.Errorf("on_exceed defaults: %q %q", s.Phases[0].OnExceed, p.OnExceed)
	}
	if p.LatencyMS != 0 || p.LatencyJitterMS != 0 || p.RetryAfterS != 0 || p.RefusalsConsume {
		t.Errorf("phase 1 inherited: %+v", p)
	}

	unnamed, err := parse(t, strings.Replace(validJSON, `"name": "x", `, "", 1))
	if err != nil || unnamed.Name != "file" {
		t.Errorf("name from the file: %v %v", unnamed, err)
	}
}

func TestParseRejectsUnknownFields(t *testing.T) {
	for _, field := range []string{"capacity", "latency"} {
		src := strings.Replace(validJSON, `"burst": 20`, `"burst": 20, "`+field+`": 1`, 1)
		if _, err := parse(t, src); err == nil || !strings.Contains(err.Error(), `"`+field+`"`) {
			t.Errorf("unknown phase field %s: %v", field, err)
		}
	}
	src := strings.Replace(validJSON, `"seed": 7`, `"seed": 7, "durations": 3`, 1)
	if _, err := parse(t, src); err == nil || !strings.Contains(err.Error(), `"durations"`) {
		t.Errorf("unknown top-level field: %v", err)
	}
	if _, err := parse(t, validJSON+" {}"); err == nil || !strings.Contains(err.Error(), "trailing") {
		t.Errorf("trailing data: %v", err)
	}
}

// mutated parses the valid scenario after a change to its decoded form.
func mutated(t *testing.T, change func(m map[string]any, phases []map[string]any)) error {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(validJSON), &m); err != nil {
		t.Fatal(err)
	}
	var phases []map[string]any
	for _, p := range m["phases"].([]any) {
		phases = append(phases, p.(map[string]any))
	}
	change(m, phases)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	_, err = parse(t, string(b))
	return err
}

func TestParseRejectsBadValues(t *testing.T) {
	cases := []struct {
		field  string
		change func(m map[string]any, p []map[string]any)
	}{
		{"duration_s", func(m map[string]any, p []map[string]any) { m["duration_s"] = 0 }},
		{"items", func(m map[string]any, p []map[string]any) { m["items"] = -1 }},
		{"subrequests_per_item", func(m map[string]any, p []map[string]any) { m["subrequests_per_item"] = 0 }},
		{"phases", func(m map[string]any, p []map[string]any) { m["phases"] = []any{} }},
		{"phases[0].capacity_per_min", func(m map[string]any, p []map[string]any) { p[0]["capacity_per_min"] = 0 }},
		{"phases[1].capacity_per_min", func(m map[string]any, p []map[string]any) { delete(p[1], "capacity_per_min") }},
		{"phases[1].burst", func(m map[string]any, p []map[string]any) { delete(p[1], "burst") }},
		{"phases[0].on_exceed", func(m map[string]any, p []map[string]any) { p[0]["on_exceed"] = "500" }},
		{"phases[0].latency_jitter_ms", func(m map[string]any, p []map[string]any) { p[0]["latency_jitter_ms"] = 200 }},
		{"phases[0].latency_ms", func(m map[string]any, p []map[string]any) { p[0]["latency_ms"] = 15000 }},
		{"phases[0].error_rate", func(m map[string]any, p []map[string]any) { p[0]["error_rate"] = 1.5 }},
		{"phases[0].error_rate", func(m map[string]any, p []map[string]any) { p[0]["error_rate"], p[0]["timeout_rate"] = 0.6, 0.6 }},
		{"phases[0].not_found_rate", func(m map[string]any, p []map[string]any) { p[0]["not_found_rate"] = -0.1 }},
		{"phases[0].block_s", func(m map[string]any, p []map[string]any) { p[0]["lockout_after_refusals_per_min"] = 5 }},
		{"phases[0].retry_after_s", func(m map[string]any, p []map[string]any) { p[0]["retry_after_s"] = -1 }},
		{"phases[0].ramp_to_per_min", func(m map[string]any, p []map[string]any) { p[0]["ramp_to_per_min"] = -5 }},
	}
	for _, c := range cases {
		err := mutated(t, c.change)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != c.field {
			t.Errorf("%s: got %v", c.field, err)
		}
	}
}

func TestParsePhaseOrdering(t *testing.T) {
	cases := map[string]func(m map[string]any, p []map[string]any){
		"first not at 0":     func(m map[string]any, p []map[string]any) { p[0]["at_s"] = 5 },
		"not increasing":     func(m map[string]any, p []map[string]any) { p[1]["at_s"] = 0 },
		"after the run ends": func(m map[string]any, p []map[string]any) { p[1]["at_s"] = 3600 },
	}
	want := map[string]string{"first not at 0": "phases[0].at_s", "not increasing": "phases[1].at_s", "after the run ends": "phases[1].at_s"}
	for name, change := range cases {
		err := mutated(t, change)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != want[name] {
			t.Errorf("%s: got %v", name, err)
		}
	}
}

func TestShippedScenarios(t *testing.T) {
	all, err := loadScenarios(allFlag)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"doubled", "errors-5xx", "halved", "high-latency", "lockout", "not-found-20", "outage", "ratelimit-headers",
		"refusals-consume", "retry-after", "rise-linear", "rise-retry-after", "sawtooth", "slow-noisy", "small-burst",
		"steady-20", "steady-60", "steady-600", "steady-6000", "storm-403"}
	subrequests := map[string]int{"slow-noisy": 6} // the rest make 4 requests an item
	if len(all) != len(want) {
		t.Fatalf("%d scenarios, want %d", len(all), len(want))
	}
	for i, s := range all {
		if s.Name != want[i] {
			t.Errorf("scenario %d is %s, want %s", i, s.Name, want[i])
		}
		sub := subrequests[s.Name]
		if sub == 0 {
			sub = 4
		}
		if s.DurationS != 3600 || s.Items != 100000 || s.SubrequestsPerItem != sub {
			t.Errorf("%s: %+v", s.Name, s)
		}
	}
	h, err := loadScenarios("halved")
	if err != nil {
		t.Fatal(err)
	}
	if p := h[0].Phases; len(p) != 2 || p[0].CapacityPerMin != 600 || p[1].CapacityPerMin != 300 || p[1].AtS != 1800 {
		t.Errorf("halved: %+v", p)
	}
	if _, err := loadScenarios("no-such"); err == nil {
		t.Error("a missing scenario loaded")
	}
}
