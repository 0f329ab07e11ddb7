package refresh

import (
	"math"
	"testing"
	"time"
)

var now = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

func TestTierAndNextRefresh(t *testing.T) {
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
		next := NextRefresh(c.f, now)
		iv := Interval(c.tier)
		if lo, hi := enriched.Add(iv), enriched.Add(iv+time.Duration(SpreadFraction*float64(iv))); next.Before(lo) || !next.Before(hi) {
			t.Errorf("%s: next %v outside [%v, %v)", c.name, next, lo, hi)
		}
	}
	// Warm apps carry most of the value: within a day (the freshness bench
	// measured 12 h keeping it above 95%, 24 h not), hot ones more often,
	// the long tail about monthly.
	if !(HotInterval < WarmInterval && WarmInterval <= 12*time.Hour && ColdInterval >= 28*24*time.Hour) {
		t.Fatalf("hot %v < warm %v ≤ 12 h, the long tail about monthly: %v", HotInterval, WarmInterval, ColdInterval)
	}
}

func TestNextRefreshEdges(t *testing.T) {
	if got := NextRefresh(Facts{TrackID: 1}, now); !got.Equal(now) {
		t.Fatalf("never enriched is due now: %v", got)
	}
	failed := Facts{TrackID: 1, LastEnriched: now, LastFailed: true, InTopCharts: true}
	if got := NextRefresh(failed, now); !got.Equal(now.Add(RetryInterval)) {
		t.Fatalf("a failed refresh retries after RetryInterval: %v", got)
	}
	// The spread is stable per app and differs between apps.
	a := Facts{TrackID: 100000001, LastEnriched: now, Velocity7d: math.NaN()}
	b := a
	b.TrackID = 100000002
	if NextRefresh(a, now) != NextRefresh(a, now.Add(time.Hour)) {
		t.Fatal("the due time depends on the facts, not on when it is computed")
	}
	if NextRefresh(a, now) == NextRefresh(b, now) {
		t.Fatal("apps enriched together must not all come due together")
	}
	// Over many apps the spread covers the range.
	var lo, hi float64 = 1, 0
	for id := int64(1); id <= 1000; id++ {
		s := spread(id)
		lo, hi = min(lo, s), max(hi, s)
	}
	if lo > 0.05 || hi < 0.95 {
		t.Fatalf("spread [%v, %v] does not cover [0, 1)", lo, hi)
	}
	if Priority(Facts{InTopCharts: true}) <= Priority(Facts{RatingCount: WarmRatingCount}) ||
		Priority(Facts{RatingCount: WarmRatingCount}) <= Priority(Facts{Velocity7d: math.NaN()}) {
		t.Fatal("hot before warm before cold")
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
		{"share rounds up", 10, 1000, 1000, 0.25, 3, 7},
		{"no refresh due: all discovery", 100, 1000, 0, 0.25, 0, 100},
		{"no discovery: all refreshes", 100, 0, 1000, 0.25, 100, 0},
		{"few pending: refreshes take the rest", 100, 10, 1000, 0.25, 90, 10},
		{"few due: discovery takes the rest", 100, 1000, 5, 0.25, 5, 95},
		{"both short", 100, 20, 30, 0.25, 30, 20},
		{"zero share still serves refreshes when nothing else waits", 100, 0, 7, 0, 7, 0},
		{"zero share: discovery first", 100, 1000, 1000, 0, 0, 100},
		{"full share: refreshes first", 100, 1000, 1000, 1, 100, 0},
		{"share above 1 is clamped", 100, 1000, 1000, 3, 100, 0},
		{"NaN share is the default", 100, 1000, 1000, math.NaN(), 25, 75},
		{"no slots", 0, 1000, 1000, 0.25, 0, 0},
		{"negative counts are none", 10, -1, -1, 0.25, 0, 0},
	}
	for _, c := range cases {
		r, d := Split(c.n, c.pending, c.due, c.share)
		if r != c.refreshes || d != c.discovery {
			t.Errorf("%s: Split(%d, %d, %d, %v) = %d, %d; want %d, %d", c.name, c.n, c.pending, c.due, c.share, r, d, c.refreshes, c.discovery)
		}
	}
	// Invariants over a grid.
	for n := 0; n <= 20; n++ {
		for p := 0; p <= 25; p += 5 {
			for due := 0; due <= 25; due += 5 {
				for _, sh := range []float64{0, 0.1, 0.25, 0.5, 1} {
					r, d := Split(n, p, due, sh)
					if r+d > n || r > due || d > p || r < 0 || d < 0 {
						t.Fatalf("Split(%d,%d,%d,%v) = %d,%d breaks a bound", n, p, due, sh, r, d)
					}
					if r+d < min(n, p+due) {
						t.Fatalf("Split(%d,%d,%d,%v) = %d,%d leaves a slot idle while work waits", n, p, due, sh, r, d)
					}
					if p > 0 && due > 0 && n > 0 && sh > 0 && r == 0 {
						t.Fatalf("Split(%d,%d,%d,%v): discovery starved refreshes", n, p, due, sh)
					}
				}
			}
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
