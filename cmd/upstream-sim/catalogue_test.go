package main

import (
	"reflect"
	"testing"
)

func TestCatalogueDeterministic(t *testing.T) {
	a, b := NewCatalogue(testApps, 1), NewCatalogue(testApps, 1)
	if !reflect.DeepEqual(a.All(), b.All()) {
		t.Fatal("same seed produced different catalogues")
	}
	c := NewCatalogue(testApps, 2)
	if reflect.DeepEqual(a.All(), c.All()) {
		t.Fatal("different seeds produced identical catalogues")
	}
	// Each app draws from its own stream: only the fields sized by N
	// (developer, bundle id, similar ids) depend on it.
	small := NewCatalogue(10, 1)
	x, y := small.apps[3], a.apps[3]
	for _, p := range []*App{&x, &y} {
		p.DevID, p.DevName, p.BundleID, p.Similar = 0, "", "", nil
	}
	if !reflect.DeepEqual(x, y) {
		t.Fatalf("app 4 depends on catalogue size:\n%+v\n%+v", x, y)
	}
}

func TestCatalogueInvariants(t *testing.T) {
	cat := testCatalogue()
	devs := map[int64]bool{}
	var free, paid, withIAP, withSimilar, noRatings, longDesc int
	for _, a := range cat.All() {
		devs[a.DevID] = true
		var sum int64
		for _, c := range a.Histogram {
			sum += c
		}
		if sum != a.RatingCount {
			t.Errorf("%d: histogram sums to %d, rating count %d", a.ID, sum, a.RatingCount)
		}
		if (a.RatingCount == 0) != (a.AverageRating == 0) || a.AverageRating < 0 || a.AverageRating > 5 {
			t.Errorf("%d: average %v with %d ratings", a.ID, a.AverageRating, a.RatingCount)
		}
		if len(a.IAPs) > maxIAPs || len(a.Similar) > maxSimilar {
			t.Errorf("%d: %d IAPs, %d similar", a.ID, len(a.IAPs), len(a.Similar))
		}
		seen := map[int64]bool{}
		for _, id := range a.Similar {
			if _, ok := cat.Get(id); !ok || id == a.ID || seen[id] {
				t.Errorf("%d: bad similar id %d", a.ID, id)
			}
			seen[id] = true
		}
		if a.Slug == "" || a.Name == "" || a.BundleID == "" || a.Genre.ID == 0 {
			t.Errorf("%d: missing identity fields: %+v", a.ID, a)
		}
		if a.Price == 0 {
			free++
		} else {
			paid++
		}
		if len(a.IAPs) > 0 {
			withIAP++
		}
		if len(a.Similar) > 0 {
			withSimilar++
		}
		if a.RatingCount == 0 {
			noRatings++
		}
		if len([]rune(a.Description)) > longDescMinRunes {
			longDesc++
		}
	}
	if len(devs) >= cat.Len() || len(devs) < 2 {
		t.Errorf("%d developers for %d apps: want fewer developers than apps", len(devs), cat.Len())
	}
	if free <= paid || paid == 0 || withIAP == 0 || withSimilar == 0 || noRatings == 0 || longDesc == 0 {
		t.Errorf("unrealistic mix: free=%d paid=%d iap=%d similar=%d noRatings=%d longDesc=%d",
			free, paid, withIAP, withSimilar, noRatings, longDesc)
	}
}

func TestCatalogueIDs(t *testing.T) {
	cat := testCatalogue()
	tests := []struct {
		id     int64
		in     bool
		broken bool
	}{
		{baseTrackID, false, true}, // offset 0 is not an app
		{baseTrackID + 1, true, false},
		{baseTrackID + brokenPageEvery, true, true},
		{baseTrackID + 2*brokenPageEvery, true, true},
		{baseTrackID + testApps, true, false},
		{baseTrackID + testApps + 1, false, false},
		{42, false, false},
	}
	for _, tt := range tests {
		if _, ok := cat.Get(tt.id); ok != tt.in {
			t.Errorf("Get(%d) ok = %v, want %v", tt.id, ok, tt.in)
		}
		if tt.in && BrokenPage(tt.id) != tt.broken {
			t.Errorf("BrokenPage(%d) = %v, want %v", tt.id, !tt.broken, tt.broken)
		}
	}
}
