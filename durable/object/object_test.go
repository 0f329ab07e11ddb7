package object

import (
	"encoding/json"
	"strings"
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

// TestDecodeErrorNamesFieldAndRule: an encoding/json error reaches a client
// as the field and the rule, never a Go type or struct name.
func TestDecodeErrorNamesFieldAndRule(t *testing.T) {
	type inner struct {
		N int `json:"n"`
	}
	type body struct {
		Task  string   `json:"task"`
		Count int      `json:"count"`
		Rate  float64  `json:"rate"`
		On    *bool    `json:"on"`
		Tags  []string `json:"tags"`
		In    inner    `json:"in"`
	}
	for _, c := range []struct{ in, field, msg string }{
		{`{"task": 5}`, "task", "task must be a string"},
		{`{"count": "5"}`, "count", "count must be an integer"},
		{`{"count": 1.5}`, "count", "count must be an integer"},
		{`{"rate": "x"}`, "rate", "rate must be a number"},
		{`{"on": 1}`, "on", "on must be a boolean"},
		{`{"tags": "a"}`, "tags", "tags must be an array"},
		{`{"in": 1}`, "in", "in must be an object"},
		{`{"in": {"n": "x"}}`, "in.n", "in.n must be an integer"},
		{`{"task": `, "body", "body: not valid JSON"},
		{`{task: 1}`, "body", "body: not valid JSON"},
		{``, "body", "body: not valid JSON"},
		{`[1]`, "body", "body must be a JSON object"},
		{`{"what": 1}`, "what", `unknown field "what"`},
	} {
		dec := json.NewDecoder(strings.NewReader(c.in))
		dec.DisallowUnknownFields()
		var b body
		fe := DecodeError(dec.Decode(&b))
		if fe.Field != c.field || fe.Error != c.msg {
			t.Errorf("%s: %+v; want %q %q", c.in, fe, c.field, c.msg)
		}
		if strings.Contains(fe.Error, "Go ") || strings.Contains(fe.Error, "json:") {
			t.Errorf("%s: Go's words in %q", c.in, fe.Error)
		}
	}
}
