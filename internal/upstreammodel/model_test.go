package upstreammodel

import (
	"math"
	"net/http"
	"slices"
	"testing"
	"time"
)

// t0 is the virtual clock's start; every test moves time by hand.
var t0 = time.Date(2026, time.January, 1, 0, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

// serve refills b at perMin up to t and takes a request under l.
func serve(b *Bucket, t time.Time, perMin float64, l Limit) Verdict {
	b.Refill(t, perMin, l.Burst)
	return b.Take(t, l)
}

// admitted counts how many of n requests at t are admitted.
func admitted(b *Bucket, t time.Time, n int, perMin float64, l Limit) int {
	k := 0
	for range n {
		if serve(b, t, perMin, l).Admitted {
			k++
		}
	}
	return k
}

func TestBurstThenRefillAtTheRate(t *testing.T) {
	l := Limit{Burst: 5}
	b := NewBucket(l.Burst, t0)
	if got := admitted(&b, t0, 7, 60, l); got != 5 {
		t.Fatalf("a full bucket admitted %d of 7, want the burst of 5", got)
	}
	// 60/min is a token a second; half a token admits nothing.
	if got := admitted(&b, at(500*time.Millisecond), 1, 60, l); got != 0 {
		t.Fatal("half a token admitted a request")
	}
	if got := admitted(&b, at(time.Second), 3, 60, l); got != 1 {
		t.Fatalf("after 1 s admitted %d, want 1", got)
	}
	// A long idle refills only up to the burst.
	if got := admitted(&b, at(time.Hour), 10, 60, l); got != 5 {
		t.Fatalf("after an hour admitted %d, want 5", got)
	}
	if b.Blocks != 0 {
		t.Fatalf("plain refusals began %d blocks", b.Blocks)
	}
}

func TestATokenDueExactlyIsServed(t *testing.T) {
	// 7/min: a token every 8.571428… s, which float seconds do not hit
	// exactly; seven of them make exactly a minute.
	l := Limit{Burst: 1}
	b := NewBucket(1, t0)
	serve(&b, t0, 7, l)
	for i := 1; i <= 7; i++ {
		due := at(time.Duration(i) * time.Minute / 7)
		if !serve(&b, due, 7, l).Admitted {
			t.Fatalf("token %d, due at %v, refused", i, due.Sub(t0))
		}
	}
}

func TestRefillRunsForwardOnly(t *testing.T) {
	l := Limit{Burst: 2}
	b := NewBucket(2, at(10*time.Second))
	admitted(&b, at(10*time.Second), 2, 60, l)
	b.Refill(at(5*time.Second), 60, 2) // earlier: nothing
	if b.Tokens != 0 || !b.RefilledAt.Equal(at(10*time.Second)) {
		t.Fatalf("an earlier refill moved the bucket: %v tokens as of %v", b.Tokens, b.RefilledAt.Sub(t0))
	}
}

func TestCapKeepsTokensUpToTheNewBurst(t *testing.T) {
	b := NewBucket(10, t0)
	b.Cap(3)
	if b.Tokens != 3 {
		t.Fatalf("tokens %v, want 3", b.Tokens)
	}
	b.Cap(20)
	if b.Tokens != 3 {
		t.Fatalf("a bigger burst added tokens: %v", b.Tokens)
	}
}

func TestStormBlocksAndEnds(t *testing.T) {
	l := Limit{Burst: 1, Block: 10 * time.Second, RetryAfter: 7 * time.Second}
	b := NewBucket(1, t0)
	if v := serve(&b, t0, 600, l); !v.Admitted || v.RetryAfter != 0 {
		t.Fatalf("first request: %+v", v)
	}
	v := serve(&b, t0, 600, l)
	if v.Admitted || v.Blocked || !v.BlockStarted || v.RetryAfter != 7*time.Second {
		t.Fatalf("the refusal that starts the storm: %+v", v)
	}
	if !b.BlockedUntil.Equal(at(10*time.Second)) || b.Blocks != 1 {
		t.Fatalf("blocked until %v, %d blocks", b.BlockedUntil.Sub(t0), b.Blocks)
	}
	// Tokens are back by 9 s (600/min), but the block refuses without
	// touching the bucket or extending the block.
	for range 3 {
		v := serve(&b, at(9*time.Second), 600, l)
		if v.Admitted || !v.Blocked || v.BlockStarted || v.RetryAfter != 7*time.Second {
			t.Fatalf("inside the block: %+v", v)
		}
	}
	if !b.BlockedUntil.Equal(at(10*time.Second)) || b.Blocks != 1 || b.Tokens != 1 {
		t.Fatalf("the block moved: until %v, %d blocks, %v tokens", b.BlockedUntil.Sub(t0), b.Blocks, b.Tokens)
	}
	if !b.Blocked(at(10*time.Second-1)) || b.Blocked(at(10*time.Second)) {
		t.Fatal("the block does not end at BlockedUntil")
	}
	if v := serve(&b, at(10*time.Second), 600, l); !v.Admitted {
		t.Fatalf("after the block: %+v", v)
	}
}

func TestLockoutAfterMoreThanNRefusalsInAMinute(t *testing.T) {
	l := Limit{Burst: 1, Block: 600 * time.Second, LockoutAfterRefusalsPerMin: 3}
	// Four refusals spread over more than a minute: no lockout.
	b := NewBucket(1, t0)
	for _, s := range []time.Duration{0, 40, 80, 120} {
		b.Tokens, b.RefilledAt = 0, at(s*time.Second)
		if v := b.Take(at(s*time.Second), l); v.Admitted || v.BlockStarted {
			t.Fatalf("at %d s: %+v", s, v)
		}
	}
	if b.Blocks != 0 || len(b.Refusals) != 2 {
		t.Fatalf("refusals 40 s apart: %d blocks, %d refusals in the window", b.Blocks, len(b.Refusals))
	}
	// Four within a minute: locked out for Block from the fourth.
	b = NewBucket(1, t0)
	admitted(&b, t0, 1, 60, l)
	if got := admitted(&b, at(time.Millisecond), 3, 60, l); got != 0 || b.Blocks != 0 {
		t.Fatalf("3 refusals: %d admitted, %d blocks (the rule allows 3)", got, b.Blocks)
	}
	if v := serve(&b, at(2*time.Millisecond), 60, l); !v.BlockStarted || !b.BlockedUntil.Equal(at(2*time.Millisecond+600*time.Second)) {
		t.Fatalf("the 4th refusal: %+v, blocked until %v", v, b.BlockedUntil.Sub(t0))
	}
	// Refusals during the lockout do not count towards another one.
	admitted(&b, at(599*time.Second), 10, 60, l)
	if v := serve(&b, at(600*time.Second+3*time.Millisecond), 60, l); !v.Admitted || b.Blocks != 1 {
		t.Fatalf("after the lockout: %+v, %d blocks", v, b.Blocks)
	}
}

func TestRefusalsConsumeDownToMinusBurst(t *testing.T) {
	l := Limit{Burst: 2, RefusalsConsume: true}
	b := NewBucket(2, t0)
	admitted(&b, t0, 10, 60, l) // 2 admitted, 8 refused
	if b.Tokens != -2 {
		t.Fatalf("tokens %v, want -2", b.Tokens)
	}
	// From -2 the next token is 3 s away, and a refusal at 2 s (0 tokens)
	// pushes it a second further.
	if serve(&b, at(2*time.Second), 60, l).Admitted || b.Tokens != -1 {
		t.Fatalf("at 2 s: %v tokens, want -1 and a refusal", b.Tokens)
	}
	if !serve(&b, at(5*time.Second), 60, l).Admitted {
		t.Fatal("at 5 s: refused")
	}
}

func TestHeaders(t *testing.T) {
	l := Limit{Burst: 2, Block: 30 * time.Second}
	b := NewBucket(2, t0)
	check := func(when time.Duration, perMin float64, wantRemaining int, wantReset time.Duration) {
		t.Helper()
		if r, reset := b.Headers(at(when), perMin); r != wantRemaining || reset != wantReset {
			t.Fatalf("at %v: remaining %d reset %v, want %d %v", when, r, reset, wantRemaining, wantReset)
		}
	}
	check(0, 60, 2, 0)
	serve(&b, t0, 60, l)
	check(0, 60, 1, 0)
	serve(&b, t0, 60, l)
	check(0, 60, 0, time.Second) // a token a second at 60/min
	b.Refill(at(time.Second/3), 60, 2)
	check(time.Second/3, 60, 0, 667*time.Millisecond) // 666.67 ms, rounded up
	check(time.Second/3, 120, 0, 334*time.Millisecond)
	serve(&b, at(time.Second/3), 60, l) // refused: a 30 s storm
	check(time.Second/3, 60, 0, 30*time.Second)
	b.Refill(at(10*time.Second), 60, 2)
	check(10*time.Second, 60, 0, 20334*time.Millisecond) // the block outlasts the token (rounded up to ms)
}

func TestLatencyDrawsBySeed(t *testing.T) {
	a, b, c := NewDraws(1), NewDraws(1), NewDraws(2)
	same, differ := true, false
	lo, hi := time.Duration(math.MaxInt64), time.Duration(0)
	for range 2000 {
		x, y, z := a.Latency(20, 10), b.Latency(20, 10), c.Latency(20, 10)
		same = same && x == y
		differ = differ || x != z
		lo, hi = min(lo, x), max(hi, x)
	}
	if !same || !differ {
		t.Fatalf("seed 1 twice the same: %v; seeds 1 and 2 differ: %v", same, differ)
	}
	if lo < 10*time.Millisecond || hi > 30*time.Millisecond || lo > 11*time.Millisecond || hi < 29*time.Millisecond {
		t.Fatalf("20 ± 10 ms drew [%v, %v]", lo, hi)
	}
	if got := NewDraws(1).Latency(20, 0); got != 20*time.Millisecond {
		t.Fatalf("no jitter: %v", got)
	}
	for range 1000 {
		if d := a.Latency(5, 10); d < 0 {
			t.Fatalf("a negative latency %v", d)
		}
	}
}

func TestFateSharesBySeed(t *testing.T) {
	const n = 100_000
	count := func(seed uint64) map[Kind]int {
		d, out := NewDraws(seed), map[Kind]int{}
		for range n {
			out[d.Fate(0.1, 0.2)]++
		}
		return out
	}
	got := count(7)
	for k, want := range map[Kind]float64{Timeout: 0.1, ServerError: 0.2, OK: 0.7} {
		if share := float64(got[k]) / n; math.Abs(share-want) > 0.01 {
			t.Errorf("kind %d: share %.3f, want %.1f ± 0.01", k, share, want)
		}
	}
	if again := count(7); again[Timeout] != got[Timeout] || again[ServerError] != got[ServerError] {
		t.Error("the same seed drew different fates")
	}
	if k := NewDraws(1).Fate(0, 0); k != OK {
		t.Errorf("no timeouts or errors: %d", k)
	}
}

func TestItemMissingIsTheItemsOwn(t *testing.T) {
	missing := 0
	for item := range 10_000 {
		m := ItemMissing(3, item, 0.2)
		if m != ItemMissing(3, item, 0.2) {
			t.Fatalf("item %d drew differently twice", item)
		}
		if m {
			missing++
		}
	}
	if share := float64(missing) / 10_000; math.Abs(share-0.2) > 0.02 {
		t.Fatalf("missing share %.3f, want 0.2", share)
	}
}

func TestStatus(t *testing.T) {
	for k, want := range map[Kind]int{OK: 200, NotFound: 404, ServerError: 503, Refused: http.StatusForbidden, Timeout: 0} {
		if got := Status(k, http.StatusForbidden); got != want {
			t.Errorf("kind %d: %d, want %d", k, got, want)
		}
	}
}

func TestHintsMostPopularFirst(t *testing.T) {
	ix := NewHintIndex([]HintApp{
		{"Bright Budget Pro", 500}, {"Budget Planner", 9000}, {"Tiny Budget", 40}, {"Budget Planner HD", 100},
		{"Unrated Budgeteer", 0}, {"Chess", 7},
	})
	got := ix.Complete(" Budget", 3)
	want := []string{"budget", "budget planner", "budget pro"}
	if !slices.Equal(got, want) {
		t.Fatalf("budget: %q, want %q", got, want)
	}
	// The popularity of "budget" is every rated app naming it.
	if all := ix.Complete("budget", MaxHintsSoftware); len(all) != 4 || slices.Contains(all, "budgeteer") {
		t.Fatalf("all: %q", all)
	}
	if got := ix.Complete("budget ", 10); !slices.Equal(got, []string{"budget planner", "budget pro", "budget planner hd"}) {
		t.Fatalf("after the word: %q", got)
	}
	if ix.Complete("", 10) != nil || len(ix.Complete("zzz", 10)) != 0 {
		t.Fatal("an empty or unknown prefix completed")
	}
}

func TestHintsMostTypedAcrossPrefixes(t *testing.T) {
	ix := NewHintIndex([]HintApp{{"Budget Planner", 9000}, {"Tiny Budget", 40}, {"Chess", 7}})
	// budget 9040; budget planner, planner 9000; tiny, tiny budget 40; chess 7.
	want := []string{"budget", "budget planner", "planner", "tiny", "tiny budget"}
	if got := ix.MostTyped(5); !slices.Equal(got, want) {
		t.Fatalf("%q, want %q", got, want)
	}
	if len(ix.MostTyped(100)) != 6 || ix.Len() != 6 || len(ix.MostTyped(-1)) != 0 {
		t.Fatal("bounds")
	}
}
