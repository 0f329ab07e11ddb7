package pacing

import (
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 22, 12, 0, 30, 0, time.UTC)

// itemOutcomes builds a tick of n items whose first `bad` items were throttled.
func itemOutcomes(n, bad int, at time.Time) []Outcome {
	var out []Outcome
	for i := 0; i < n; i++ {
		k := KindOK
		if i < bad {
			k = KindThrottled
		}
		out = append(out, Outcome{Item: i, SentAt: at, DoneAt: at.Add(100 * time.Millisecond), Kind: k, Remaining: -1})
	}
	return out
}

func TestSeedZones(t *testing.T) {
	cases := []struct {
		name           string
		batch          int
		interval       int64
		served, failed int
		zone           string
		wantBatch      int
		wantInterval   int64
		cooldown       bool
	}{
		{"too few samples: no change", 10, 30000, 0, 4, "insufficient_samples", 10, 30000, false},
		{"critical: cooldown, min batch, max interval", 20, 15000, 1, 9, "critical", SeedMinBatch, 120000, true},
		{"low: halve batch, interval x1.5", 10, 30000, 4, 6, "low", 5, 45000, false},
		{"low: floors at min batch", 3, 100000, 3, 7, "low", SeedMinBatch, 120000, false},
		{"dead zone: unchanged", 10, 30000, 7, 3, "dead_zone", 10, 30000, false},
		{"good: +10% rounded up, interval x0.95", 5, 30000, 9, 1, "good", 6, 28500, false},
		{"great: +25% rounded up, interval x0.8", 5, 30000, 20, 0, "great", 7, 24000, false},
		{"great: capped at bounds", 48, 11000, 20, 0, "great", SeedMaxBatch, 10000, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := NewSeed(Config{SubrequestsPerItem: 1})
			s.Batch, s.IntervalMs = c.batch, c.interval
			next := s.Done(t0, itemOutcomes(c.served+c.failed, c.failed, t0))
			if s.Zone != c.zone || s.Batch != c.wantBatch || s.IntervalMs != c.wantInterval {
				t.Fatalf("zone=%s batch=%d interval=%d; want %s %d %d", s.Zone, s.Batch, s.IntervalMs, c.zone, c.wantBatch, c.wantInterval)
			}
			if got := s.HoldUntil().After(t0); got != c.cooldown {
				t.Fatalf("cooldown = %v, want %v", got, c.cooldown)
			}
			if next != t0.Add(time.Duration(s.IntervalMs)*time.Millisecond) {
				t.Fatalf("next tick at +%s", next.Sub(t0))
			}
			if p := s.Plan(t0.Add(time.Second)); c.cooldown != (p.Items == 0) {
				t.Fatalf("plan during cooldown=%v: %+v", c.cooldown, p)
			}
		})
	}
}

func TestSeedWindowSlidesAndNotFoundIsServed(t *testing.T) {
	s := NewSeed(Config{SubrequestsPerItem: 2})
	// An item is throttled if any of its requests was; not-found items are served.
	out := []Outcome{
		{Item: 0, Kind: KindOK, Remaining: -1}, {Item: 0, Kind: KindThrottled, Remaining: -1},
		{Item: 1, Kind: KindNotFound, Remaining: -1}, {Item: 1, Kind: KindNotFound, Remaining: -1},
	}
	s.Done(t0, out)
	c, f := s.window(t0)
	if c != 1 || f != 1 {
		t.Fatalf("window completed=%d failed=%d", c, f)
	}
	// Six minutes later the window is empty again.
	later := t0.Add(6 * time.Minute)
	s.Done(later, nil)
	if c, f := s.window(later); c+f != 0 || len(s.Metrics) > 2 {
		t.Fatalf("window not pruned: %d %d %d buckets", c, f, len(s.Metrics))
	}
}

func TestChunkItemsFillConnections(t *testing.T) {
	for sub, want := range map[int]int{1: 6, 2: 3, 3: 2, 4: 3, 5: 6, 6: 1} {
		if got := chunkItems(sub); got != want || (got*sub)%MaxConnections != 0 {
			t.Errorf("chunkItems(%d) = %d, want %d", sub, got, want)
		}
	}
}

func TestRegistry(t *testing.T) {
	for _, n := range Names() {
		c, err := New(n, Config{SubrequestsPerItem: 2})
		if err != nil || c.Name() != n {
			t.Fatalf("%s: %v", n, err)
		}
	}
	if c, _ := New("default", Config{}); c.Name() != DefaultName {
		t.Fatalf("default is %s", c.Name())
	}
	if _, err := New("nope", Config{}); err == nil {
		t.Fatal("unknown name accepted")
	}
}
