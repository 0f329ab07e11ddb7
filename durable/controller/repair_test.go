package controller

import (
	"encoding/json"
	"testing"
	"time"

	"storecrawl/durable/ledger"
)

// A ledger repair brings the controller's counters back to its facts and
// appends the ledger.mismatch fact in the same decision; a counter the
// controller does not keep, or a bad order, changes nothing.
func TestLedgerRepairCorrectsTotals(t *testing.T) {
	s := DefaultState()
	s.Totals = Totals{Completed: 30, Ticks: 9}
	s.LedgerSince = t0.UnixMilli()
	st := s.Encode(t0)
	repair := func(body string) Decision {
		return decide(t, &st, "http", Request{Method: "POST", Path: "/ledger/repair", Body: body}, t0.Add(time.Minute))
	}
	for _, bad := range []struct {
		body   string
		status int
	}{{`{"delta":{"nope":1},"first_seen":1}`, 409}, {`{"delta":{"completed":1}}`, 400}} {
		if d := repair(bad.body); d.Response.Status != bad.status || len(d.Facts) != 0 || d.State != "" {
			t.Fatalf("%s: %+v", bad.body, d)
		}
	}
	first := t0.UnixMilli()
	d := repair(`{"delta":{"completed":5},"first_seen":` + jsonInt(first) + `}`)
	if d.Response.Status != 200 || len(d.Facts) != 1 || d.Facts[0].Kind != ledger.KindMismatch || d.Facts[0].Counters != nil ||
		d.Facts[0].Source != "controller:main" || d.Facts[0].Data["duration_ms"] != int64(60_000) {
		t.Fatalf("repair: %+v", d)
	}
	var after State
	json.Unmarshal([]byte(st), &after)
	if after.Totals.Completed != 25 || after.Totals.Ticks != 9 {
		t.Fatalf("totals after the repair: %+v", after.Totals)
	}
}

func jsonInt(v int64) string { b, _ := json.Marshal(v); return string(b) }
