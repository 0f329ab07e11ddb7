package scheduler

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"storecrawl/durable/ledger"
)

// A ledger repair brings the scheduler's counters back to its facts (a
// task's runs here) and appends the ledger.mismatch fact with the state;
// a counter it does not keep changes nothing.
func TestLedgerRepairCorrectsCounters(t *testing.T) {
	var st string
	firstRuns(t, &st, t0)
	before := decide(t, &st, "http", Request{Method: "GET", Path: "/ledger"}, t0).Response.Body.(map[string]any)["counters"].(map[string]int64)
	task := Registry[0].Name
	runs := "runs." + task
	if before[runs] < 1 {
		t.Fatalf("counters %v", before)
	}
	now := t0.Add(time.Minute)
	if d := decide(t, &st, "http", Request{Method: "POST", Path: "/ledger/repair", Body: `{"delta":{"runs.nope":1},"first_seen":1}`}, now); d.Response.Status != 409 || len(d.Facts) != 0 {
		t.Fatalf("unknown counter: %+v", d)
	}
	body := fmt.Sprintf(`{"delta":{%q:-2},"first_seen":%d}`, runs, t0.UnixMilli())
	d := decide(t, &st, "http", Request{Method: "POST", Path: "/ledger/repair", Body: body}, now)
	if d.Response.Status != 200 || len(d.Facts) != 1 || d.Facts[0].Kind != ledger.KindMismatch || d.Facts[0].Counters != nil {
		t.Fatalf("repair: %+v", d)
	}
	after := decide(t, &st, "http", Request{Method: "GET", Path: "/ledger"}, now).Response.Body.(map[string]any)["counters"].(map[string]int64)
	want := map[string]int64{}
	for k, v := range before {
		want[k] = v
	}
	want[runs] += 2
	b1, _ := json.Marshal(after)
	b2, _ := json.Marshal(want)
	if string(b1) != string(b2) {
		t.Fatalf("counters after the repair %s, want %s", b1, b2)
	}
}
