//go:build unix

package main

import (
	"context"
	"errors"
	"math"
	"testing"

	"storecrawl/worker/enrichment"
)

func TestFreshWithin(t *testing.T) {
	for _, c := range []struct {
		stored, current int64
		want            bool
	}{
		{1000, 1000, true}, {990, 1000, true}, {1010, 1000, true}, // exactly 1% either way
		{989, 1000, false}, {1011, 1000, false},
		{0, 0, true}, {0, 1, false}, {1, 0, false}, // nobody rated: fresh only when equal
		{99, 100, true}, {98, 100, false},
	} {
		if got := freshWithin(c.stored, c.current); got != c.want {
			t.Errorf("freshWithin(%d, %d) = %v, want %v", c.stored, c.current, got, c.want)
		}
	}
}

// TestMeasureFreshness: the weighted share counts apps by their current
// rating count, the plain share by app, each tier on its own.
func TestMeasureFreshness(t *testing.T) {
	f := measureFreshness([]freshApp{
		{Stored: 900, Current: 1000, Tier: "warm"},  // stale, value 1000
		{Stored: 100, Current: 100, Tier: "warm"},   // fresh, value 100
		{Stored: 10, Current: 10, Tier: "cold"},     // fresh, value 10
		{Stored: 0, Current: 0, Tier: "cold"},       // fresh, no value
		{Stored: 5000, Current: 5040, Tier: "hot"},  // fresh (0.8%), value 5040
		{Stored: 5000, Current: 5100, Tier: "hot"},  // stale (2%), value 5100
		{Stored: 7, Current: 8, Tier: "cold"},       // stale, value 8
		{Stored: 300, Current: 300, Tier: "absent"}, // fresh
	})
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	total := 1000.0 + 100 + 10 + 0 + 5040 + 5100 + 8 + 300
	if f.All.Apps != 8 || f.All.Fresh != 5 || !near(f.All.Simple, 5.0/8) || !near(f.All.Weighted, (100+10+5040+300)/total) {
		t.Fatalf("all: %+v", f.All)
	}
	if w := f.ByTier["warm"]; w.Apps != 2 || !near(w.Weighted, 100.0/1100) || !near(w.Simple, 0.5) {
		t.Fatalf("warm: %+v", w)
	}
	if c := f.ByTier["cold"]; c.Apps != 3 || !near(c.Weighted, 10.0/18) || !near(c.Simple, 2.0/3) {
		t.Fatalf("cold: %+v", c)
	}
	if h := f.ByTier["hot"]; !near(h.Weighted, 5040.0/10140) {
		t.Fatalf("hot: %+v", h)
	}
	if z := measureFreshness(nil); z.All.Weighted != 0 || z.All.Simple != 0 {
		t.Fatalf("empty: %+v", z)
	}
}

// TestHourBudget: the hour's requests are shared by both hosts, refused
// with ErrLimited once spent (nothing sent), and given back each hour.
func TestHourBudget(t *testing.T) {
	b := &hourBudget{per: 3}
	lookup, page := b.limit(&b.lookups), b.limit(&b.pages)
	sent := 0
	fn := func(context.Context) error { sent++; return nil }
	for _, l := range []func(context.Context, int, func(context.Context) error) error{lookup, page, page} {
		if err := l(context.Background(), 1, fn); err != nil {
			t.Fatal(err)
		}
	}
	if err := lookup(context.Background(), 1, fn); !errors.Is(err, enrichment.ErrLimited) || sent != 3 {
		t.Fatalf("over budget: err %v, sent %d", err, sent)
	}
	if b.lookups != 1 || b.pages != 2 {
		t.Fatalf("counted %d lookups, %d pages", b.lookups, b.pages)
	}
	b.nextHour()
	if b.exhausted != 1 || b.maxUsedPct != 100 {
		t.Fatalf("hour closed: %+v", b)
	}
	if err := page(context.Background(), 1, fn); err != nil || sent != 4 {
		t.Fatalf("next hour: err %v, sent %d", err, sent)
	}
}
