package main

import (
	"slices"
	"testing"
)

// A catalogue above EagerMaxApps generates each app exactly as an eager one
// of the same size would, and its index answers search, charts and the
// developer shelf as the eager catalogue's apps do.
func TestLazyCatalogueMatchesEager(t *testing.T) {
	const n = 3000
	eager := NewCatalogue(n, 7)
	lazy := &Catalogue{lazy: newLazyIndex(n, max(1, n/appsPerDeveloper), 7)}
	if lazy.Len() != n {
		t.Fatalf("Len %d", lazy.Len())
	}
	for _, id := range []int64{baseTrackID + 1, baseTrackID + 1234, baseTrackID + n} {
		a, _ := eager.Get(id)
		b, ok := lazy.Get(id)
		if !ok || a.Name != b.Name || a.RatingCount != b.RatingCount || a.Version != b.Version || !slices.Equal(a.Similar, b.Similar) {
			t.Fatalf("app %d differs: %+v vs %+v", id, a, b)
		}
		if !slices.Equal(eager.ByDeveloper(a.DevID), lazy.ByDeveloper(a.DevID)) {
			t.Fatalf("developer %d: %v vs %v", a.DevID, eager.ByDeveloper(a.DevID), lazy.ByDeveloper(a.DevID))
		}
	}
	if _, ok := lazy.Get(baseTrackID + n + 1); ok {
		t.Fatal("id past the catalogue found")
	}
	var e, l []int64
	eager.Each(func(a *App) {
		if s, in := chartScore(chartTopGrossing, a); in {
			e = append(e, a.ID*1_000_003+s%1_000_003)
		}
	})
	lazy.Each(func(a *App) {
		if s, in := chartScore(chartTopGrossing, a); in {
			l = append(l, a.ID*1_000_003+s%1_000_003)
		}
	})
	if !slices.Equal(e, l) {
		t.Fatalf("charts differ: %d vs %d entries", len(e), len(l))
	}
}
