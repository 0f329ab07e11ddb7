package limiter

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"storecrawl/durable/ledger"
)

// TestClientKeysLiveInTheirOwnNamespace: an HTTP caller's key always lands
// under ClientPrefix, so naming the crawler's key reaches a different key,
// and a client key is held to the client bounds wherever it is parsed (the
// object parses again and trusts no caller). Internal keys keep the wide
// bounds.
func TestClientKeysLiveInTheirOwnNamespace(t *testing.T) {
	a, fe := ParseClientAcquire([]byte(`{"key":"upstream-catalogue","limit":1000,"windowInSeconds":60,"cost":1000}`))
	if fe != nil || a.Key != "client:upstream-catalogue" || !IsClientKey(a.Key) {
		t.Fatalf("client acquire: %+v %+v", a, fe)
	}
	// The body the object gets parses back to the same request.
	if b, fe := ParseAcquire(a.Body()); fe != nil || b != a {
		t.Fatalf("object's view %+v %+v, want %+v", b, fe, a)
	}
	// A client cannot name its way out: "client:x" becomes "client:client:x".
	if a, _ := ParseClientAcquire([]byte(`{"key":"client:x","limit":1,"windowInSeconds":1}`)); a.Key != "client:client:x" {
		t.Fatalf("prefixed key: %q", a.Key)
	}
	for _, c := range []struct{ body, field string }{
		{`{"key":"k","limit":1001,"windowInSeconds":1}`, "limit"},                                // a sliding window's rows
		{`{"key":"k","limit":10,"windowInSeconds":3601}`, "windowInSeconds"},                     // how long it may live
		{`{"key":"k","limit":10,"windowInSeconds":86400,"algorithm":"gcra"}`, "windowInSeconds"}, // any algorithm
		{`{"key":"` + strings.Repeat("k", MaxKeyLen+1) + `","limit":1,"windowInSeconds":1}`, "key"},
	} {
		if _, fe := ParseClientAcquire([]byte(c.body)); fe == nil || fe.Field != c.field {
			t.Errorf("client %s: %+v, want 400 naming %s", c.body, fe, c.field)
		}
		// The same request in the clients' namespace, as an object reads it.
		namespaced := strings.Replace(c.body, `"key":"`, `"key":"client:`, 1)
		if _, fe := ParseAcquire([]byte(namespaced)); fe == nil || fe.Field != c.field {
			t.Errorf("object %s: %+v, want 400 naming %s", namespaced, fe, c.field)
		}
	}
	// gcra and token_bucket keep two values whatever their limit.
	for _, alg := range []Algorithm{GCRA, TokenBucket} {
		body := fmt.Sprintf(`{"key":"k","limit":%d,"windowInSeconds":3600,"algorithm":%q}`, MaxLimit, alg)
		if _, fe := ParseClientAcquire([]byte(body)); fe != nil {
			t.Errorf("%s: %+v", alg, fe)
		}
	}
	// Internal keys (the crawler's) keep the wide bounds.
	if _, fe := ParseAcquire([]byte(`{"key":"upstream-catalogue","limit":100000,"windowInSeconds":86400}`)); fe != nil {
		t.Fatalf("internal key: %+v", fe)
	}
}

// TestUnknownKeysLeaveNoTrace: a status or ledger call, or a bad acquire,
// of a key this instance does not hold makes no entry (before, every call
// made one, never evicted).
func TestUnknownKeysLeaveNoTrace(t *testing.T) {
	var o Objects
	now := time.UnixMilli(1_700_000_000_000)
	o.Handle("a", Call{Method: "GET", Path: "/status"}, now)
	o.Handle("b", Call{Method: "GET", Path: "/ledger", Body: `{"key":"client:b"}`}, now)
	o.Handle("c", Call{Method: "POST", Path: "/acquire", Body: `{"key":"client:c","limit":0,"windowInSeconds":1}`}, now)
	o.Roll("d", now)
	if len(o.m) != 0 {
		t.Fatalf("entries made: %v", o.m)
	}
}

// TestObjectsAreBoundedByLRU: past MaxObjects entries the least recently
// used one is evicted; it restores from storage on its next call.
func TestObjectsAreBoundedByLRU(t *testing.T) {
	var o Objects
	now := time.UnixMilli(1_700_000_000_000)
	acquire := func(id string, at time.Time) Answer {
		c := Call{Method: "POST", Path: "/acquire", Body: `{"key":"client:` + id + `","limit":5,"windowInSeconds":1}`}
		a := o.Handle(id, c, at)
		if a.Restore != nil {
			o.Restore(id, Stored{Policy: *a.Restore, Key: a.Key}, at)
			a = o.Handle(id, c, at)
		}
		return a
	}
	for i := 0; i < MaxObjects; i++ {
		acquire(fmt.Sprint(i), now.Add(time.Duration(i)*time.Millisecond))
	}
	acquire("0", now.Add(time.Hour)) // "0" used again: "1" is now the least recent
	acquire("new", now.Add(time.Hour))
	if len(o.m) != MaxObjects || o.m["1"] != nil || o.m["0"] == nil || o.m["new"] == nil {
		t.Fatalf("%d entries; 0: %v, 1: %v, new: %v", len(o.m), o.m["0"] != nil, o.m["1"] != nil, o.m["new"] != nil)
	}
	if a := o.Handle("1", Call{Method: "POST", Path: "/acquire", Body: `{"key":"client:1","limit":5,"windowInSeconds":1}`}, now.Add(time.Hour)); a.Restore == nil {
		t.Fatalf("an evicted object must restore: %+v", a)
	}
}

// TestIdleClientKeyIsRetired: once a client key's window has passed after
// its last admission and its minute is closed, the alarm says Retire; the
// retirement fact carries the key's lifetime totals and the object is
// forgotten. Internal keys are never retired; a key used again is not.
func TestIdleClientKeyIsRetired(t *testing.T) {
	var o Objects
	t0 := time.UnixMilli(1_700_000_000_000).Truncate(time.Minute).Add(10 * time.Second)
	acquire := func(id, key string, at time.Time) Answer {
		c := Call{Method: "POST", Path: "/acquire", Body: `{"key":"` + key + `","limit":2,"windowInSeconds":30}`}
		a := o.Handle(id, c, at)
		if a.Restore != nil {
			if a.Key != key {
				t.Fatalf("a restore must name the key for storage: %+v", a)
			}
			o.Restore(id, Stored{Policy: *a.Restore, Key: a.Key}, at)
			a = o.Handle(id, c, at)
		}
		return a
	}
	for i := 0; i < 3; i++ { // two admitted, one refused
		acquire("c", "client:idle", t0)
		acquire("i", "upstream-catalogue", t0)
	}
	// At the minute's end: the minute closes into a fact; the window (30 s
	// after t0 + 10 s) has passed too, so the key is due.
	end := t0.Truncate(time.Minute).Add(time.Minute)
	r := o.Roll("c", end)
	if r.Fact == nil || r.Fact.Counters["allowed"] != 2 || !r.Retire || r.RetireAt != end.Add(RetireRetry).UnixMilli() {
		t.Fatalf("roll at the minute's end: %+v", r)
	}
	if r := o.Roll("i", end); r.Retire || r.RetireAt != 0 || r.Fact == nil {
		t.Fatalf("an internal key is never retired: %+v", r)
	}
	f := o.Retire("c", 1, end)
	if f == nil || f.Kind != ledger.KindRetired || f.Source != "limiter:client:idle" || f.Counters != nil {
		t.Fatalf("retirement fact: %+v", f)
	}
	totals := f.Data["totals"].(map[string]int64)
	if totals["allowed"] != 2 || totals["refused"] != 1 || totals[ledger.FactsCounter] != 2 {
		t.Fatalf("retirement totals: %v", totals)
	}
	if _, held := o.m["c"]; held || o.Retire("c", 1, end) != nil {
		t.Fatal("a retired object must be forgotten, once")
	}
	if r := o.Roll("c", end); !r.RestoreStored {
		t.Fatalf("an alarm after retirement finds nothing held: %+v", r)
	}

	// A fresh key whose window has not passed yet: the alarm names when.
	acquire("w", "client:window", end.Add(50*time.Second))
	r = o.Roll("w", end.Add(time.Minute))
	if r.Fact == nil || r.Retire || r.RetireAt != end.Add(80*time.Second).UnixMilli()+1 {
		t.Fatalf("minute closed, window open: %+v", r)
	}
	// Used again before its retirement: Retire refuses (a minute is open).
	acquire("w", "client:window", end.Add(2*time.Minute))
	if f := o.Retire("w", 1, end.Add(2*time.Minute)); f != nil {
		t.Fatalf("a key in use must not retire: %+v", f)
	}

	// A fresh instance: the alarm asks for storage, and then retires.
	var fresh Objects
	if r := fresh.Roll("w", end.Add(10*time.Minute)); !r.RestoreStored {
		t.Fatalf("a fresh instance's alarm: %+v", r)
	}
	fresh.Restore("w", Stored{Policy: Policy{Limit: 2, Window: 30, Algorithm: SlidingWindow}, Key: "client:window",
		Entries: []Entry{{Slot: 0, At: end.Add(2 * time.Minute).UnixMilli(), Cost: 1}}, Closed: &Counters{Allowed: 2}}, end.Add(10*time.Minute))
	if r := fresh.Roll("w", end.Add(10*time.Minute)); !r.Retire {
		t.Fatalf("a restored idle key must retire: %+v", r)
	}
	if f := fresh.Retire("w", 3, end.Add(10*time.Minute)); f == nil || f.Data["totals"].(map[string]int64)["allowed"] != 2 {
		t.Fatalf("restored retirement: %+v", f)
	}
}

// TestIdleAt: when each algorithm's state is a fresh one's again.
func TestIdleAt(t *testing.T) {
	now := time.UnixMilli(1_700_000_000_000)
	for _, c := range []struct {
		alg  Algorithm
		want int64 // ms after now
	}{{SlidingWindow, 10_001}, {GCRA, 4_000}, {TokenBucket, 4_000}} {
		s := New(Policy{Limit: 5, Window: 10, Algorithm: c.alg})
		if s.IdleAt() != 0 {
			t.Fatalf("%s: a fresh state is idle", c.alg)
		}
		s.Acquire(now, 2)
		if got := s.IdleAt() - now.UnixMilli(); got != c.want {
			t.Errorf("%s: idle %d ms after the acquire, want %d", c.alg, got, c.want)
		}
		// At that time the state decides as a fresh one: the whole limit is free.
		at := time.UnixMilli(s.IdleAt())
		if d := s.Acquire(at, 5); !d.Allowed {
			t.Errorf("%s: not fresh at IdleAt: %+v", c.alg, d)
		}
	}
}
