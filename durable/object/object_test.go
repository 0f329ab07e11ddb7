package object

import (
	"encoding/json"
	"testing"

	"storecrawl/durable/ledger"
)

func TestMergeKeepsSetFieldsAndAddsEventsAndFacts(t *testing.T) {
	d := Decision[[]string]{State: "a", AlarmAt: 5, Events: []Event{{"event": "one"}}}
	d.Merge(Decision[[]string]{AlarmBy: 7, Run: []string{"task"}, Events: []Event{{"event": "two"}}, Facts: []ledger.Fact{{ID: "f"}}})
	if d.State != "a" || d.AlarmAt != 5 || d.AlarmBy != 7 || len(d.Run) != 1 || len(d.Events) != 2 || len(d.Facts) != 1 {
		t.Fatalf("merge: %+v", d)
	}
	d.Merge(Decision[[]string]{State: "b"})
	if d.State != "b" || len(d.Run) != 1 {
		t.Fatalf("an unset Run must not clear the plan: %+v", d)
	}
}

func TestEnvelopeAndFailAreTellApart(t *testing.T) {
	var ok struct {
		OK    map[string]any `json:"ok"`
		Error *string        `json:"error"`
	}
	// A value that itself has an "error" field (a task's result) is still a success.
	if err := json.Unmarshal([]byte(Envelope(map[string]any{"error": "task failed"})), &ok); err != nil || ok.Error != nil || ok.OK["error"] != "task failed" {
		t.Fatalf("envelope: %+v %v", ok, err)
	}
	var bad struct {
		OK    any    `json:"ok"`
		Error string `json:"error"`
	}
	if err := json.Unmarshal([]byte(Fail(`go panic: "x"`)), &bad); err != nil || bad.Error != `go panic: "x"` || bad.OK != nil {
		t.Fatalf("fail: %+v %v", bad, err)
	}
	// An unencodable value becomes a failure, not a panic.
	if err := json.Unmarshal([]byte(Envelope(func() {})), &bad); err != nil || bad.Error == "" {
		t.Fatalf("unencodable: %+v", bad)
	}
}
