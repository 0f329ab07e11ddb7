package limiter

import (
	"math/rand/v2"
	"sort"
	"sync"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

type admitted struct {
	at   time.Time
	cost int
}

// maxInWindow is the largest number of units admitted in any closed interval of length w.
func maxInWindow(adm []admitted, w time.Duration) int {
	sort.Slice(adm, func(i, j int) bool { return adm[i].at.Before(adm[j].at) })
	best, sum, lo := 0, 0, 0
	for hi := range adm {
		sum += adm[hi].cost
		for adm[hi].at.Sub(adm[lo].at) > w {
			sum -= adm[lo].cost
			lo++
		}
		best = max(best, sum)
	}
	return best
}

// maxInAnyInterval checks limit + t·rate for every pair of admissions.
func overBurstBound(adm []admitted, limit int, w time.Duration) (int, bool) {
	sort.Slice(adm, func(i, j int) bool { return adm[i].at.Before(adm[j].at) })
	for i := range adm {
		sum := 0
		for j := i; j < len(adm); j++ {
			sum += adm[j].cost
			t := adm[j].at.Sub(adm[i].at)
			bound := float64(limit) + t.Seconds()*float64(limit)/w.Seconds()
			if float64(sum) > bound+1e-9 {
				return sum, true
			}
		}
	}
	return 0, false
}

// hammer runs callers goroutines that acquire at random virtual times,
// serialised by a mutex as the Durable Object serialises them.
func hammer(t *testing.T, alg Algorithm, limit int, w time.Duration, callers, perCaller int) []admitted {
	t.Helper()
	s := New(Policy{Limit: limit, Window: w.Seconds(), Algorithm: alg})
	var mu sync.Mutex
	var adm []admitted
	clock := t0
	var wg sync.WaitGroup
	for c := 0; c < callers; c++ {
		wg.Add(1)
		go func(seed uint64) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, 7))
			for i := 0; i < perCaller; i++ {
				cost := 1 + rng.IntN(3)
				mu.Lock()
				clock = clock.Add(time.Duration(rng.IntN(int(w.Milliseconds())/limit*2+2)) * time.Millisecond)
				now := clock
				if d := s.Acquire(now, min(cost, limit)); d.Allowed {
					adm = append(adm, admitted{now, min(cost, limit)})
					if d.Write == nil {
						t.Error("allowed acquire without its storage write")
					}
				} else if d.Write != nil || d.RetryAfter <= 0 {
					t.Errorf("refusal must carry a Retry-After and no write: %+v", d)
				}
				mu.Unlock()
			}
		}(uint64(c))
	}
	wg.Wait()
	if len(adm) == 0 {
		t.Fatal("nothing admitted")
	}
	return adm
}

func TestSlidingWindowIsExactUnderConcurrency(t *testing.T) {
	for _, tc := range []struct {
		limit int
		w     time.Duration
	}{{5, 10 * time.Second}, {100, time.Second}, {1, 50 * time.Millisecond}} {
		adm := hammer(t, SlidingWindow, tc.limit, tc.w, 32, 200)
		if got := maxInWindow(adm, tc.w); got > tc.limit {
			t.Fatalf("limit %d per %s: %d units in one window", tc.limit, tc.w, got)
		}
	}
}

func TestGCRAAndTokenBucketStayWithinBurstPlusRate(t *testing.T) {
	for _, alg := range []Algorithm{GCRA, TokenBucket} {
		adm := hammer(t, alg, 20, 2*time.Second, 16, 150)
		if sum, over := overBurstBound(adm, 20, 2*time.Second); over {
			t.Fatalf("%s: %d units exceed limit + t·rate", alg, sum)
		}
	}
}

func TestSlidingWindowRetryAfterIsWhenRoomFrees(t *testing.T) {
	s := New(Policy{Limit: 3, Window: 10, Algorithm: SlidingWindow})
	for i := 0; i < 3; i++ {
		if d := s.Acquire(t0.Add(time.Duration(i)*time.Second), 1); !d.Allowed || d.Remaining != 2-i {
			t.Fatalf("acquire %d: %+v", i, d)
		}
	}
	d := s.Acquire(t0.Add(5*time.Second), 1)
	if d.Allowed || d.RetryAfter != 5001*time.Millisecond {
		t.Fatalf("refusal: %+v", d)
	}
	if d := s.Acquire(t0.Add(5*time.Second+d.RetryAfter), 1); !d.Allowed {
		t.Fatalf("at Retry-After the slot must be free: %+v", d)
	}
	if u := s.Usage(t0.Add(10 * time.Second)); u.Counters.Allowed != 4 || u.Counters.Refused != 1 {
		t.Fatalf("counters %+v", u)
	}
}

func TestRingSlotsAndRestore(t *testing.T) {
	p := Policy{Limit: 4, Window: 60, Algorithm: SlidingWindow}
	s := New(p)
	var rows = map[int]Entry{}
	for i := 0; i < 10; i++ {
		now := t0.Add(time.Duration(i) * 20 * time.Second)
		if d := s.Acquire(now, 1); d.Allowed {
			rows[d.Write.Entry.Slot] = *d.Write.Entry // upsert: one row per slot
		}
	}
	if len(rows) > p.Limit {
		t.Fatalf("storage rows %d exceed limit %d", len(rows), p.Limit)
	}
	var entries []Entry
	for _, e := range rows {
		entries = append(entries, e)
	}
	now := t0.Add(200 * time.Second)
	r := Restore(p, entries, 0, 0, 0, now)
	for i := 0; i < 6; i++ {
		a, b := s.Acquire(now.Add(time.Duration(i)*time.Second), 1), r.Acquire(now.Add(time.Duration(i)*time.Second), 1)
		if a.Allowed != b.Allowed || a.Remaining != b.Remaining {
			t.Fatalf("restored limiter diverges at %d: %+v vs %+v", i, a, b)
		}
		if a.Allowed && a.Write.Entry.Slot != b.Write.Entry.Slot {
			t.Fatalf("restored limiter writes slot %d, original %d", b.Write.Entry.Slot, a.Write.Entry.Slot)
		}
	}
	g := New(Policy{Limit: 2, Window: 1, Algorithm: GCRA})
	d := g.Acquire(t0, 1)
	rg := Restore(g.Policy, nil, *d.Write.TAT, 0, 0, t0)
	if a, b := g.Acquire(t0, 2), rg.Acquire(t0, 2); a.Allowed != b.Allowed {
		t.Fatal("gcra restore diverges")
	}
}

func TestParseAcquire(t *testing.T) {
	bad := []struct{ body, field string }{
		{`nope`, "body"},
		{`{"limit":5,"windowInSeconds":10}`, "key"},
		{`{"key":"","limit":5,"windowInSeconds":10}`, "key"},
		{`{"key":"a\u0000b","limit":5,"windowInSeconds":10}`, "key"},
		{`{"key":"k","limit":0,"windowInSeconds":10}`, "limit"},
		{`{"key":"k","limit":1000001,"windowInSeconds":10}`, "limit"},
		{`{"key":"k","limit":2.5,"windowInSeconds":10}`, "limit"},
		{`{"key":"k","limit":5,"windowInSeconds":0.0009}`, "windowInSeconds"},
		{`{"key":"k","limit":5,"windowInSeconds":86401}`, "windowInSeconds"},
		{`{"key":"k","limit":5}`, "windowInSeconds"},
		{`{"key":"k","limit":5,"windowInSeconds":1,"algorithm":"leaky"}`, "algorithm"},
		{`{"key":"k","limit":5,"windowInSeconds":1,"cost":6}`, "cost"},
		{`{"key":"k","limit":5,"windowInSeconds":1,"waitMs":-1}`, "waitMs"},
		{`{"key":"k","limit":5,"windowInSeconds":1,"extra":1}`, "extra"},
	}
	for _, c := range bad {
		if _, fe := ParseAcquire([]byte(c.body)); fe == nil || fe.Field != c.field {
			t.Errorf("%s: %+v, want field %s", c.body, fe, c.field)
		}
	}
	long := make([]byte, MaxKeyLen+1)
	for i := range long {
		long[i] = 'k'
	}
	if _, fe := ParseAcquire([]byte(`{"key":"` + string(long) + `","limit":5,"windowInSeconds":1}`)); fe == nil || fe.Field != "key" {
		t.Errorf("129-char key accepted")
	}
	a, fe := ParseAcquire([]byte(`{"key":"claude","limit":5,"windowInSeconds":10,"cost":2,"algorithm":"gcra","waitMs":500}`))
	if fe != nil || a.Key != "claude" || a.Policy.Limit != 5 || a.Cost != 2 || a.Policy.Algorithm != GCRA || a.Wait != 500*time.Millisecond {
		t.Fatalf("%+v %+v", a, fe)
	}
	if a, _ := ParseAcquire([]byte(`{"key":"k","limit":5,"windowInSeconds":1}`)); a.Policy.Algorithm != DefaultAlgorithm || a.Cost != 1 {
		t.Fatalf("defaults: %+v", a)
	}
}

// TestWindowHasOneRulePerNamespace: a client key's windowInSeconds that is
// 0, missing, not a number or past the hour gets one message naming the
// field and the client range (0 said "to 86400", 3601 "to 3600"); the
// crawler's keys keep the 24 h range, in the same words.
func TestWindowHasOneRulePerNamespace(t *testing.T) {
	const client = "windowInSeconds must be a number of seconds from 0.001 to 3600"
	for _, w := range []string{`,"windowInSeconds":0`, `,"windowInSeconds":3601`, ``, `,"windowInSeconds":"10"`, `,"windowInSeconds":-1`, `,"windowInSeconds":0.0001`} {
		_, fe := ParseClientAcquire([]byte(`{"key":"k","limit":1` + w + `}`))
		if fe == nil || fe.Field != "windowInSeconds" || fe.Error != client {
			t.Errorf("client %q: %+v; want %q", w, fe, client)
		}
		_, fe = ParseAcquire([]byte(`{"key":"client:k","limit":1` + w + `}`))
		if fe == nil || fe.Error != client {
			t.Errorf("client key at the object %q: %+v", w, fe)
		}
	}
	const internal = "windowInSeconds must be a number of seconds from 0.001 to 86400"
	for _, w := range []string{`,"windowInSeconds":0`, `,"windowInSeconds":86401`, ``} {
		_, fe := ParseAcquire([]byte(`{"key":"upstream-catalogue","limit":1` + w + `}`))
		if fe == nil || fe.Field != "windowInSeconds" || fe.Error != internal {
			t.Errorf("internal %q: %+v; want %q", w, fe, internal)
		}
	}
	for _, ok := range []string{`{"key":"k","limit":1,"windowInSeconds":3600}`, `{"key":"k","limit":1,"windowInSeconds":0.001}`} {
		if _, fe := ParseClientAcquire([]byte(ok)); fe != nil {
			t.Errorf("%s: %+v", ok, fe)
		}
	}
	if _, fe := ParseAcquire([]byte(`{"key":"upstream-catalogue","limit":1,"windowInSeconds":86400}`)); fe != nil {
		t.Errorf("internal day: %+v", fe)
	}
}
