package limiter

import (
	"testing"

	"storecrawl/durable/ledger"
)

// A ledger repair brings a key's closed counters (what its facts sum to)
// back to its facts, with its status counters; the fact and the closed
// counters come back together for the shim to store. An object this
// instance does not hold asks for a restore first.
func TestLedgerRepairCorrectsClosedCounters(t *testing.T) {
	var o Objects
	body := `{"key":"k","delta":{"allowed":4},"first_seen":1}`
	repair := Call{Method: "POST", Path: "/ledger/repair", Body: body}
	if a := o.Handle("id", repair, t0); !a.RestoreStored || a.Fact != nil {
		t.Fatalf("unknown object: %+v", a)
	}
	o.Restore("id", Stored{Policy: Policy{Algorithm: GCRA, Limit: 10, Window: 60}, Closed: &Counters{Allowed: 10, Refused: 2}, Key: "k"}, t0)
	if a := o.Handle("id", Call{Method: "POST", Path: "/ledger/repair", Body: `{"key":"k","delta":{"nope":1},"first_seen":1}`}, t0); a.Response.Status != 409 || a.Fact != nil {
		t.Fatalf("unknown counter: %+v", a)
	}
	a := o.Handle("id", repair, t0)
	if a.Response.Status != 200 || a.Fact == nil || a.Fact.Kind != ledger.KindMismatch || a.Fact.Source != "limiter:k" ||
		a.Closed == nil || *a.Closed != (Counters{Allowed: 6, Refused: 2}) {
		t.Fatalf("repair: %+v", a)
	}
	st := o.Handle("id", Call{Method: "GET", Path: "/status"}, t0)
	if c := st.Response.Body.(StatusBody).Usage.Counters; c.Allowed != 6 || c.Refused != 2 {
		t.Fatalf("status counters %+v", c)
	}
}
