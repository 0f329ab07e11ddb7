package limiter

import (
	"testing"
	"time"
)

func TestObjectsRouteAcquireThroughRestoreWaitAndAnswer(t *testing.T) {
	var o Objects
	t0 := time.UnixMilli(1_700_000_000_000)
	body := `{"key":"k","limit":2,"windowInSeconds":10,"waitMs":20000}`
	call := Call{Method: "POST", Path: "/acquire", Body: body, StartedMs: t0.UnixMilli()}

	// Unknown object: restore first, nothing admitted.
	a := o.Handle("id1", call, t0)
	if a.Restore == nil || a.Restore.Limit != 2 || a.Response != nil || a.Write != nil {
		t.Fatalf("first call must ask for a restore: %+v", a)
	}
	o.Restore("id1", Stored{Policy: *a.Restore}, t0)
	for i := 0; i < 2; i++ {
		a = o.Handle("id1", call, t0)
		if a.Response == nil || a.Response.Status != 200 || !a.Response.Body.(AcquireAnswer).Allowed || a.Write == nil || a.Write.Entry == nil {
			t.Fatalf("acquire %d: %+v", i, a)
		}
	}
	// Full: the caller is held (its budget allows the 10 s wait), not answered.
	a = o.Handle("id1", call, t0)
	if a.Response != nil || a.WaitMs <= 0 || a.WaitMs > 10_001 || a.Write != nil {
		t.Fatalf("full limiter must hold the caller: %+v", a)
	}
	// Without a wait budget it is refused at once with Retry-After.
	noWait := call
	noWait.Body = `{"key":"k","limit":2,"windowInSeconds":10}`
	a = o.Handle("id1", noWait, t0)
	if a.Response == nil || a.Response.Body.(AcquireAnswer).Allowed || a.Response.Body.(AcquireAnswer).RetryAfterMs <= 0 {
		t.Fatalf("refusal: %+v", a)
	}
	// After the window, the held caller is admitted and counted as waited.
	held := call
	held.Waited = true
	a = o.Handle("id1", held, t0.Add(10001*time.Millisecond))
	if a.Response == nil || !a.Response.Body.(AcquireAnswer).Allowed {
		t.Fatalf("held caller after the window: %+v", a)
	}
	st := o.Handle("id1", Call{Method: "GET", Path: "/status"}, t0.Add(10001*time.Millisecond))
	u := st.Response.Body.(StatusBody).Usage
	if u.Counters.Allowed != 3 || u.Counters.Waited != 1 || u.Counters.Refused != 2 {
		t.Fatalf("counters: %+v", u.Counters)
	}
	// The minute closes into one fact, by the alarm's roll.
	r := o.Roll("id1", t0.Add(2*time.Minute))
	if r.Fact == nil || r.Fact.Source != "limiter:k" || r.Closed == nil || r.Closed.Allowed != 3 {
		t.Fatalf("roll: %+v", r)
	}
}

func TestObjectsRejectBadCallsAndAnswerLedgerAndUnknownStatus(t *testing.T) {
	var o Objects
	now := time.UnixMilli(1_700_000_000_000)
	a := o.Handle("x", Call{Method: "POST", Path: "/acquire", Body: `{"key":"k","limit":0,"windowInSeconds":1}`}, now)
	if a.Response == nil || a.Response.Status != 400 || a.Restore != nil {
		t.Fatalf("bad acquire must be a 400 and change nothing: %+v", a)
	}
	a = o.Handle("x", Call{Method: "GET", Path: "/status"}, now)
	if !a.RestoreStored || a.Response.Status != 404 {
		t.Fatalf("unknown status: %+v", a)
	}
	a = o.Handle("x", Call{Method: "GET", Path: "/ledger", Body: `{"key":"k"}`}, now)
	if a.Report != "limiter:k" {
		t.Fatalf("ledger: %+v", a)
	}
	if a = o.Handle("x", Call{Method: "DELETE", Path: "/acquire"}, now); a.Response.Status != 404 {
		t.Fatalf("unknown route: %+v", a)
	}
	// A policy change restores again and keeps the counters.
	body := `{"key":"k","limit":5,"windowInSeconds":1}`
	c := Call{Method: "POST", Path: "/acquire", Body: body}
	o.Restore("x", Stored{Policy: *o.Handle("x", c, now).Restore, Closed: &Counters{Allowed: 7}}, now)
	o.Handle("x", c, now)
	c.Body = `{"key":"k","limit":6,"windowInSeconds":1}`
	a = o.Handle("x", c, now)
	if a.Restore == nil || a.Restore.Limit != 6 {
		t.Fatalf("policy change must restore: %+v", a)
	}
	o.Restore("x", Stored{Policy: *a.Restore}, now)
	if u := o.Handle("x", Call{Method: "GET", Path: "/status"}, now).Response.Body.(StatusBody).Usage; u.Counters.Allowed != 8 {
		t.Fatalf("counters across a policy change: %+v", u.Counters)
	}
}
