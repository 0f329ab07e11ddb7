package refresh

import (
	"math"
	"slices"
	"testing"
	"time"
)

var now = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

func TestTierAndInterval(t *testing.T) {
	enriched := now.Add(-time.Hour)
	nan := math.NaN()
	cases := []struct {
		name string
		f    Facts
		tier string
	}{
		{"long tail", Facts{RatingCount: 12, Velocity7d: nan}, TierCold},
		{"long tail, no movement", Facts{RatingCount: 999, Velocity7d: 0.5}, TierCold},
		{"in a top chart", Facts{InTopCharts: true, Velocity7d: nan}, TierHot},
		{"high-opportunity cluster", Facts{ClusterScore: HotClusterScore, Velocity7d: nan}, TierHot},
		{"middling cluster", Facts{ClusterScore: WarmClusterScore, Velocity7d: nan}, TierWarm},
		{"fast ratings", Facts{RatingCount: 1_000_000, Velocity7d: HotVelocity7d}, TierHot},
		{"small but fast relative to its size", Facts{RatingCount: 200, Velocity7d: 1}, TierHot},
		{"popular and quiet", Facts{RatingCount: WarmRatingCount, Velocity7d: 0}, TierWarm},
		{"moving a little", Facts{RatingCount: 500, Velocity7d: WarmVelocity7d}, TierWarm},
		{"infinite velocity is unknown", Facts{RatingCount: 5, Velocity7d: math.Inf(1)}, TierCold},
	}
	for _, c := range cases {
		c.f.TrackID, c.f.LastEnriched = 100000001, enriched
		if got := Tier(c.f); got != c.tier {
			t.Errorf("%s: tier %s, want %s", c.name, got, c.tier)
			continue
		}
	}
	// Warm apps carry most of the value: within a day (the freshness bench
	// measured 12 h keeping it above 95%, 24 h not), hot ones more often,
	// the long tail about monthly.
	if !(HotInterval < WarmInterval && WarmInterval <= 12*time.Hour && ColdInterval >= 28*24*time.Hour) {
		t.Fatalf("hot %v < warm %v ≤ 12 h, the long tail about monthly: %v", HotInterval, WarmInterval, ColdInterval)
	}
}

func TestSlotsSpreadApps(t *testing.T) {
	// Stable, in range, neighbours apart, and even over the slot space.
	buckets := make([]int, 16)
	for id := int64(100000001); id <= 100016384; id++ {
		s := Slot(id)
		if s < 0 || s >= Slots || s != Slot(id) {
			t.Fatalf("slot %d of %d", s, id)
		}
		buckets[s*16/Slots]++
	}
	for i, n := range buckets {
		if n < 900 || n > 1150 { // 1,024 each when even
			t.Fatalf("bucket %d holds %d of 16,384 consecutive ids", i, n)
		}
	}
	if d := Slot(100000002) - Slot(100000001); d < Slots/100 && d > -Slots/100 {
		t.Fatalf("neighbouring ids land %d slots apart", d)
	}
	// The largest id the schema's expression is safe for does not overflow.
	if Slot(9_999_999_999) < 0 {
		t.Fatal("overflow")
	}
}

func TestSplit(t *testing.T) {
	cases := []struct {
		name                 string
		n, pending, due      int
		share                float64
		refreshes, discovery int
	}{
		{"both wait: the share", 100, 1000, 1000, 0.25, 25, 75},
		{"share rounds down", 10, 1000, 1000, 0.25, 2, 8},
		{"a float's product is not rounded below its value", 100, 1000, 1000, 0.29, 29, 71},
		// The first of consecutive ticks: the share rounded down; a share of
		// 1.1 slots is one, never two (a ceiling's).
		{"a twentieth of 22, rounded down", 22, 1000, 1000, 0.05, 1, 21},
		{"under one slot: none in the first tick", 22, 1000, 1000, RefreshPageShareWhileBacklog, 0, 22},
		{"no new app waits: every slot", 22, 0, 1000, RefreshPageShareWhileBacklog, 22, 0},
		{"no refresh due: all discovery", 100, 1000, 0, 0.25, 0, 100},
		{"no discovery: all refreshes", 100, 0, 1000, 0.25, 100, 0},
		{"few pending: refreshes take the rest", 100, 10, 1000, 0.25, 90, 10},
		{"few due: discovery takes the rest", 100, 1000, 5, 0.25, 5, 95},
		{"both short", 100, 20, 30, 0.25, 30, 20},
		{"zero share still serves refreshes when nothing else waits", 100, 0, 7, 0, 7, 0},
		{"zero share: discovery first", 100, 1000, 1000, 0, 0, 100},
		{"full share: refreshes first", 100, 1000, 1000, 1, 100, 0},
		{"share above 1 is clamped", 100, 1000, 1000, 3, 100, 0},
		{"NaN share is the default", 100, 1000, 1000, math.NaN(), 3, 97},
		{"no slots", 0, 1000, 1000, 0.25, 0, 0},
		{"negative counts are none", 10, -1, -1, 0.25, 0, 0},
	}
	for _, c := range cases {
		r, d := Split(c.n, c.pending, c.due, c.share, 0)
		if r != c.refreshes || d != c.discovery {
			t.Errorf("%s: Split(%d, %d, %d, %v) = %d, %d; want %d, %d", c.name, c.n, c.pending, c.due, c.share, r, d, c.refreshes, c.discovery)
		}
	}
	// Invariants over a grid.
	for n := 0; n <= 20; n++ {
		for p := 0; p <= 25; p += 5 {
			for due := 0; due <= 25; due += 5 {
				for _, sh := range []float64{0, 0.1, 0.25, 0.5, 1} {
					r, d := Split(n, p, due, sh, 0)
					if r+d > n || r > due || d > p || r < 0 || d < 0 {
						t.Fatalf("Split(%d,%d,%d,%v) = %d,%d breaks a bound", n, p, due, sh, r, d)
					}
					if r+d < min(n, p+due) {
						t.Fatalf("Split(%d,%d,%d,%v) = %d,%d leaves a slot idle while work waits", n, p, due, sh, r, d)
					}
					if p >= n && float64(r) > float64(n)*sh {
						t.Fatalf("Split(%d,%d,%d,%v) = %d,%d: refreshes past their share while new apps wait", n, p, due, sh, r, d)
					}
					if p > 0 && due > 0 && float64(n)*sh >= 1 && r == 0 {
						t.Fatalf("Split(%d,%d,%d,%v): discovery starved refreshes", n, p, due, sh)
					}
				}
			}
		}
	}
}

// ShareSlots keeps a share under one slot a tick over consecutive ticks:
// the store host's pace in a 10 s tick (127 pages a minute, 22 a tick)
// gives the changed refreshes 0.66 pages a tick while new apps wait, 66
// in 100 ticks (3%), never more than one in a tick. Rounding each tick
// up gave them 2 of 22 (9.1%) at a twentieth, rounding down none.
func TestShareSlotsKeepsTheShareAcrossTicks(t *testing.T) {
	const n, ticks = 22, 100
	total := 0
	for seq := int64(0); seq < ticks; seq++ {
		k := ShareSlots(n, RefreshPageShareWhileBacklog, seq)
		if k < 0 || k > 1 {
			t.Fatalf("tick %d: %d slots of %d", seq, k, n)
		}
		total += k
		if r, d := Split(n, 1000, 1000, RefreshPageShareWhileBacklog, seq); r != k || d != n-k {
			t.Fatalf("tick %d: Split = %d, %d; want %d, %d", seq, r, d, k, n-k)
		}
	}
	if want := int(float64(ticks) * n * RefreshPageShareWhileBacklog); total != want {
		t.Fatalf("%d slots over %d ticks, want %d", total, ticks, want)
	}
	for _, c := range []struct {
		n     int
		share float64
		seq   int64
		want  int
	}{{100, 0.29, 0, 29}, {22, 0.05, 0, 1}, {22, 0.05, 9, 2}, {0, 0.5, 3, 0}, {22, 0, 7, 0}, {22, 1, 5, 22}, {22, 0.5, -4, 11}} {
		if got := ShareSlots(c.n, c.share, c.seq); got != c.want {
			t.Errorf("ShareSlots(%d, %v, %d) = %d, want %d", c.n, c.share, c.seq, got, c.want)
		}
	}
}

func TestUnchanged(t *testing.T) {
	stored := Fingerprint{Version: "2.1.0", RatingCount: 4410}
	if !Unchanged(stored, Fingerprint{Version: "2.1.0", RatingCount: 4410}) {
		t.Fatal("same version and count: no page")
	}
	for _, looked := range []Fingerprint{{"2.1.1", 4410}, {"2.1.0", 4411}, {"", 4410}} {
		if Unchanged(stored, looked) {
			t.Fatalf("%+v is a change", looked)
		}
	}
	if Unchanged(Fingerprint{RatingCount: 0}, Fingerprint{RatingCount: 0}) {
		t.Fatal("an unknown stored version is a change (the page was never fetched)")
	}
}

func TestVelocity(t *testing.T) {
	day := 24 * time.Hour
	at := func(d float64) time.Time { return now.Add(time.Duration(d * float64(day))) }
	cur := Observation{At: now, Count: 1300}
	cases := []struct {
		name   string
		hist   []Observation
		window time.Duration
		v      float64
		ok     bool
	}{
		{"no history", nil, Window7d, 0, false},
		{"baseline before the window: the count held until the window started",
			[]Observation{{at(-40), 100}, {at(-10), 600}, {at(-3), 1000}}, Window7d, 100, true}, // (1300-600)/7
		{"30 days from the latest before day -30",
			[]Observation{{at(-40), 100}, {at(-10), 600}}, Window30d, 40, true}, // (1300-100)/30
		{"first seen inside the window: from the earliest",
			[]Observation{{at(-4), 500}, {at(-2), 900}}, Window7d, 200, true}, // (1300-500)/4
		{"unsorted history", []Observation{{at(-2), 900}, {at(-4), 500}}, Window7d, 200, true},
		{"too short a span", []Observation{{at(-0.5), 1200}}, Window7d, 0, false},
		{"observations after current are ignored",
			[]Observation{{at(-7), 600}, {at(1), 5000}}, Window7d, 100, true},
		{"flat: zero, not unknown", []Observation{{at(-20), 1300}}, Window7d, 0, true},
		{"falling counts (ratings removed) are negative", []Observation{{at(-7), 2000}}, Window7d, -100, true},
	}
	for _, c := range cases {
		v, ok := Velocity(c.hist, cur, c.window)
		if ok != c.ok || v != c.v {
			t.Errorf("%s: %v, %v; want %v, %v", c.name, v, ok, c.v, c.ok)
		}
	}
}

// sweepSim runs one tier's cursor over apps (their slots) on a virtual
// clock: every step the window due is read up to limit apps and, unless
// down says the upstream is out, all of them are looked at.
func sweepSim(t *testing.T, tier string, slots []int64, from, to time.Time, step time.Duration, limit int, down func(time.Time) bool) []int {
	t.Helper()
	sorted := append([]int64(nil), slots...)
	slices.Sort(sorted)
	looks := make([]int, len(sorted))
	c := StartCursor(tier, from)
	for now := from; !now.After(to); now = now.Add(step) {
		if down != nil && down(now) {
			continue
		}
		for {
			w := Due(tier, c, now)
			if w.Empty() {
				break
			}
			var read []int
			for i, s := range sorted {
				p := Pos{Slot: s, TrackID: int64(i + 1)}
				if w.From.Less(p) && s < w.UpTo && len(read) < limit {
					read = append(read, i)
				}
			}
			for _, i := range read {
				looks[i]++
			}
			if len(read) == 0 {
				c = w.After(Pos{}, true)
			} else {
				last := read[len(read)-1]
				c = w.After(Pos{Slot: sorted[last], TrackID: int64(last + 1)}, len(read) < limit)
			}
			if len(read) < limit {
				break
			}
		}
	}
	return looks
}

// TestSweepLooksAtEachAppOncePerInterval: over a day on a virtual clock
// each hot app is looked at four times and each warm app twice, and over
// 30 days each cold app once; apps whose slots are passed in the day's
// part of the cold round once, the others not at all.
func TestSweepLooksAtEachAppOncePerInterval(t *testing.T) {
	var slots []int64
	for id := int64(100000001); id < 100000001+2000; id++ {
		slots = append(slots, Slot(id))
	}
	day := 24 * time.Hour
	start := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC) // a round boundary of each tier
	for _, c := range []struct {
		tier string
		span time.Duration
		want int
	}{{TierHot, day, 4}, {TierWarm, day, 2}, {TierCold, ColdInterval, 1}} {
		looks := sweepSim(t, c.tier, slots, start, start.Add(c.span), time.Minute, 50, nil)
		for i, n := range looks {
			if n != c.want {
				t.Fatalf("%s: app %d looked at %d times in %v, want %d", c.tier, i, n, c.span, c.want)
			}
		}
	}
	// A day of the cold round: the day's thirtieth of the slots, once.
	looks := sweepSim(t, TierCold, slots, start, start.Add(day), time.Minute, 50, nil)
	_, endTarget := RoundAt(TierCold, start.Add(day))
	_, startTarget := RoundAt(TierCold, start)
	sorted := append([]int64(nil), slots...)
	slices.Sort(sorted)
	for i, n := range looks {
		if want := b2i(sorted[i] >= startTarget && sorted[i] < endTarget); n != want {
			t.Fatalf("cold app in slot %d looked at %d times in a day, want %d", sorted[i], n, want)
		}
	}
	// Started mid-round (a deploy): nothing is due at once.
	mid := start.Add(3 * time.Hour)
	if w := Due(TierHot, StartCursor(TierHot, mid), mid); !w.Empty() || w.Behind() != 0 {
		t.Fatalf("a new cursor starts at its target: %+v", w)
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestSweepOutageSkipsNoApp: the upstream is out for 13 hours (more than
// two hot rounds); when it is back every hot app is looked at, once for
// all the rounds it missed, then on pace again.
func TestSweepOutageSkipsNoApp(t *testing.T) {
	var slots []int64
	for id := int64(100000001); id < 100000001+1000; id++ {
		slots = append(slots, Slot(id))
	}
	start := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	outFrom, outTo := start.Add(2*time.Hour), start.Add(15*time.Hour)
	down := func(t time.Time) bool { return !t.Before(outFrom) && t.Before(outTo) }
	looks := sweepSim(t, TierHot, slots, start, start.Add(48*time.Hour), time.Minute, 50, down)
	for i, n := range looks {
		// 8 rounds in two days; the outage covers rounds 1 and 2 whole and
		// parts of 0 and 3: each app misses one or two looks, never all.
		if n < 6 || n > 7 {
			t.Fatalf("app %d looked at %d times over two days with a 13-hour outage", i, n)
		}
	}
	// Behind, the most-behind tier says so: a cursor two rounds back.
	r, target := RoundAt(TierHot, outTo)
	w := Due(TierHot, Cursor{Round: r - 2, Pos: Pos{Slot: target}}, outTo)
	if b := w.Behind(); b < 1.99 || b > 2.01 || w.UpTo != Slots {
		t.Fatalf("two rounds behind: %v, window to %d", b, w.UpTo)
	}
}

func TestNextLook(t *testing.T) {
	at := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	// Slot 0 of the hot round: the round's first second; a slot half way:
	// three hours in; a slot passed: the next round's.
	if got := NextLook(TierHot, 0, at); !got.Equal(at.Add(time.Second)) {
		t.Fatalf("slot 0: %v", got)
	}
	if got := NextLook(TierHot, Slots/2, at); got.Sub(at) < 3*time.Hour || got.Sub(at) > 3*time.Hour+time.Second {
		t.Fatalf("half way: %v", got)
	}
	if got := NextLook(TierHot, 0, at.Add(time.Hour)); !got.Equal(at.Add(HotInterval + time.Second)) {
		t.Fatalf("passed: %v", got)
	}
}

// TestTopSegmentTierAndRaise: a top segment's app is hot whatever else it
// is; Raise moves a lower tier up at once, so its next look comes within
// a hot round, and leaves an untiered or hot app alone.
func TestTopSegmentTierAndRaise(t *testing.T) {
	quiet := Facts{TrackID: 7, RatingCount: 3, Velocity7d: math.NaN()}
	if Tier(quiet) != TierCold {
		t.Fatal("a quiet app is cold")
	}
	quiet.TopSegment = true
	if Tier(quiet) != TopSegmentTier {
		t.Fatal("a top segment's app is hot")
	}
	if got := Below(TierHot); len(got) != 2 || got[0] != TierWarm || got[1] != TierCold {
		t.Fatalf("below hot: %v", got)
	}
	if len(Below(TierCold)) != 0 || Below("nope") != nil {
		t.Fatal("nothing is below cold")
	}
	now := time.Date(2026, 11, 23, 7, 30, 0, 0, time.UTC)
	for _, id := range []int64{1, 100000001, 123456789, 987654321} {
		slot := Slot(id)
		for _, from := range []string{TierWarm, TierCold} {
			tier, next, raised := Raise(from, slot, now)
			if !raised || tier != TierHot {
				t.Fatalf("%s: %s %v", from, tier, raised)
			}
			if next.Before(now) || next.After(now.Add(HotInterval)) {
				t.Fatalf("%s app %d: next look %v, not within a hot round of %v", from, id, next, now)
			}
		}
		if _, _, raised := Raise(TierHot, slot, now); raised {
			t.Fatal("a hot app is not raised")
		}
		if _, _, raised := Raise("", slot, now); raised {
			t.Fatal("an untiered app is the sweep's")
		}
	}
}
