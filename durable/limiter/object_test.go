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

// fakeShim plays shim/omni_limiter.mjs's call loop against one object's
// storage: the stored policy first (restore_stored), then the caller's.
type fakeShim struct {
	o        *Objects
	policy   *Policy // meta "policy"
	restores int
}

func (f *fakeShim) acquire(t *testing.T, id, body string, now time.Time) Answer {
	t.Helper()
	for i := 0; i < 4; i++ {
		a := f.o.Handle(id, Call{Method: "POST", Path: "/acquire", Body: body, StartedMs: now.UnixMilli()}, now)
		switch {
		case a.RestoreStored && f.policy != nil:
			f.o.Restore(id, Stored{Policy: *f.policy, Key: a.Key}, now)
		case a.Restore != nil:
			p := *a.Restore
			f.policy = &p
			f.o.Restore(id, Stored{Policy: p, Key: a.Key}, now)
		default:
			return a
		}
		f.restores++
	}
	t.Fatalf("%s: the call loop did not settle", body)
	return Answer{}
}

// TestClientPolicyChangesOnlyWhenAsked: a client key's policy is set by
// its first acquire and changed only by one that says "replace": true; a
// different policy otherwise is a 409 naming the fields that differ, and
// changes nothing, in the instance that holds the key and in a fresh one
// restoring it from storage. The crawler's keys take the caller's policy
// as before (ratelimit.Limits is the code's).
func TestClientPolicyChangesOnlyWhenAsked(t *testing.T) {
	now := time.UnixMilli(1_700_000_000_000)
	shim := &fakeShim{o: &Objects{}}
	const first = `{"key":"client:claude","limit":5,"windowInSeconds":10}`
	if a := shim.acquire(t, "c", first, now); a.Response == nil || a.Response.Status != 200 || shim.policy.Limit != 5 {
		t.Fatalf("no stored policy: set by the first acquire: %+v %+v", a, shim.policy)
	}
	if a := shim.acquire(t, "c", first, now); a.Response.Status != 200 {
		t.Fatalf("same policy: %+v", a.Response)
	}
	conflict := func(o *fakeShim, body string, fields ...string) {
		t.Helper()
		a := o.acquire(t, "c", body, now)
		c, ok := a.Response.Body.(*PolicyConflict)
		if a.Response.Status != 409 || !ok || c.Field != fields[0] || len(c.Fields) != len(fields) || c.Policy.Limit != 5 || a.Write != nil {
			t.Fatalf("%s: %+v; want 409 naming %v", body, a.Response, fields)
		}
		for i, f := range fields {
			if c.Fields[i] != f {
				t.Fatalf("%s: fields %v, want %v", body, c.Fields, fields)
			}
		}
		if o.policy.Limit != 5 || o.policy.Window != 10 || o.policy.Algorithm != SlidingWindow {
			t.Fatalf("%s: a refused change changed the stored policy: %+v", body, o.policy)
		}
	}
	conflict(shim, `{"key":"client:claude","limit":1000,"windowInSeconds":10}`, "limit")
	conflict(shim, `{"key":"client:claude","limit":5,"windowInSeconds":3600,"algorithm":"gcra"}`, "windowInSeconds", "algorithm")
	conflict(shim, `{"key":"client:claude","limit":5,"windowInSeconds":10,"replace":false,"algorithm":"token_bucket"}`, "algorithm")

	// A fresh instance (or an evicted entry) compares with storage's policy.
	fresh := &fakeShim{o: &Objects{}, policy: shim.policy}
	conflict(fresh, `{"key":"client:claude","limit":6,"windowInSeconds":10}`, "limit")
	if a := fresh.acquire(t, "c", first, now); a.Response.Status != 200 {
		t.Fatalf("fresh instance, same policy: %+v", a.Response)
	}

	// Asked for: the policy changes, and stays changed.
	const replaced = `{"key":"client:claude","limit":7,"windowInSeconds":10,"replace":true}`
	if a := shim.acquire(t, "c", replaced, now); a.Response.Status != 200 || shim.policy.Limit != 7 {
		t.Fatalf("replace: %+v %+v", a.Response, shim.policy)
	}
	if a := shim.acquire(t, "c", `{"key":"client:claude","limit":7,"windowInSeconds":10}`, now); a.Response.Status != 200 {
		t.Fatalf("the new policy without replace: %+v", a.Response)
	}
	if _, fe := ParseClientAcquire([]byte(`{"key":"k","limit":1,"windowInSeconds":1,"replace":"yes"}`)); fe == nil || fe.Field != "replace" {
		t.Fatalf("replace must be a boolean: %+v", fe)
	}

	// The crawler's keys: the caller's policy wins, one restore on a cold start.
	internal := &fakeShim{o: &Objects{}, policy: &Policy{Limit: 60, Window: 60, Algorithm: GCRA}}
	if a := internal.acquire(t, "i", `{"key":"upstream-reviews","limit":120,"windowInSeconds":60,"algorithm":"gcra"}`, now); a.Response.Status != 200 ||
		internal.policy.Limit != 120 || internal.restores != 1 {
		t.Fatalf("internal key: %+v %+v, %d restores", a.Response, internal.policy, internal.restores)
	}
}
