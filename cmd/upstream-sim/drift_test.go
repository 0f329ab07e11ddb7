package main

import (
	"fmt"
	"net/http"
	"testing"
	"time"
)

// driftedAfter runs a drifter over the test catalogue for hours simulated
// hours at cfg and returns the apps.
func driftedAfter(cfg DriftConfig, hours int) ([]App, *drifter) {
	clock := &fakeClock{now: t0}
	d := newDrifter(testCatalogue().All(), clock.Now)
	d.set(cfg)
	clock.Advance(time.Duration(hours*cfg.HourS) * time.Second)
	return d.snapshot(), d
}

func TestDriftIsDeterministicAtItsRate(t *testing.T) {
	cfg := DriftConfig{ChangesPerHour: 20, HourS: 60, Seed: 7}
	a, d := driftedAfter(cfg, 10)
	b, _ := driftedAfter(cfg, 10)
	base := testCatalogue().All()
	changed, versions := 0, 0
	for i := range a {
		if a[i].RatingCount != b[i].RatingCount || a[i].Version != b[i].Version || a[i].AverageRating != b[i].AverageRating {
			t.Fatalf("app %d differs between two runs of one seed", a[i].ID)
		}
		if a[i].RatingCount < base[i].RatingCount {
			t.Fatalf("app %d lost ratings", a[i].ID)
		}
		var sum int64
		for _, n := range a[i].Histogram {
			sum += n
		}
		if sum != a[i].RatingCount {
			t.Fatalf("app %d: histogram %d != count %d", a[i].ID, sum, a[i].RatingCount)
		}
		if a[i].RatingCount != base[i].RatingCount {
			changed++
		}
		if a[i].Version != base[i].Version {
			versions++
		}
	}
	if d.changes != 200 || d.total != 10 {
		t.Fatalf("10 hours at 20 an hour: %d changes in %d hours", d.changes, d.total)
	}
	// 200 changes over 300 apps: some apps change twice, never more apps than changes.
	if changed < 100 || changed > 200 || versions == 0 || versions >= changed {
		t.Fatalf("%d apps changed, %d versions", changed, versions)
	}
	if testCatalogue().All()[0].RatingCount != base[0].RatingCount || &base[0] == &a[0] {
		t.Fatal("the base catalogue is never written")
	}
	other, _ := driftedAfter(DriftConfig{ChangesPerHour: 20, HourS: 60, Seed: 8}, 10)
	same := true
	for i := range a {
		same = same && a[i].RatingCount == other[i].RatingCount
	}
	if same {
		t.Fatal("another seed changes other apps")
	}
	// Part of an hour changes nothing; off changes nothing.
	if part, _ := driftedAfter(cfg, 0); &part[0] != &base[0] {
		t.Fatal("no whole hour yet: the catalogue as generated")
	}
	if off, _ := driftedAfter(DriftConfig{HourS: 60}, 100); &off[0] != &base[0] {
		t.Fatal("no changes per hour: frozen")
	}
}

func TestDriftConfigAndLookups(t *testing.T) {
	ts, clock := newTestServer(t, calmConfig())
	for body, field := range map[string]string{
		`{"catalogue_changes_per_hour": -1}`:      "catalogue_changes_per_hour",
		`{"catalogue_changes_per_hour": 2000000}`: "catalogue_changes_per_hour",
		`{"catalogue_hour_s": 0}`:                 "catalogue_hour_s",
		`{"catalogue_seed": "x"}`:                 "catalogue_seed",
		`{"catalogue_speed": 1}`:                  "catalogue_speed",
		`{"catalogue_hour_s": 60, "burst": 0}`:    "burst",
	} {
		r := post(t, ts.URL+"/__config", body)
		if got := decodeJSON[FieldError](t, r.body); r.status != http.StatusBadRequest || got.Field != field {
			t.Errorf("%s: %d %s", body, r.status, r.body)
		}
	}
	if st := decodeJSON[catalogueState](t, get(t, ts.URL+"/__catalogue").body); st.Config.HourS != defaultHourS || st.Config.ChangesPerHour != 0 {
		t.Fatalf("a refused patch changes nothing: %+v", st)
	}
	// Every app changes each simulated minute-long hour (300 changes over 300 apps).
	if r := post(t, ts.URL+"/__config", `{"catalogue_changes_per_hour": 300, "catalogue_hour_s": 60, "catalogue_seed": 3, "latency_ms": 0}`); r.status != http.StatusOK {
		t.Fatalf("config: %d %s", r.status, r.body)
	}
	ids := fmt.Sprintf("%d,%d,%d", baseTrackID+1, baseTrackID+2, baseTrackID+3)
	type lookup struct {
		Results []struct {
			TrackID         int64  `json:"trackId"`
			UserRatingCount int64  `json:"userRatingCount"`
			Version         string `json:"version"`
		} `json:"results"`
	}
	before := decodeJSON[lookup](t, get(t, ts.URL+"/lookup?id="+ids).body)
	clock.Advance(30 * time.Minute) // thirty simulated hours
	after := decodeJSON[lookup](t, get(t, ts.URL+"/lookup?id="+ids).body)
	truth := decodeJSON[catalogueState](t, get(t, ts.URL+"/__catalogue?id="+ids).body)
	if truth.Hours != 30 || truth.Changes != 9000 || len(truth.Apps) != 3 {
		t.Fatalf("catalogue: %+v", truth)
	}
	grew := 0
	for i := range after.Results {
		if after.Results[i].UserRatingCount != truth.Apps[i].RatingCount || after.Results[i].Version != truth.Apps[i].Version {
			t.Fatalf("the lookup serves the current values: %+v vs %+v", after.Results[i], truth.Apps[i])
		}
		if after.Results[i].UserRatingCount > before.Results[i].UserRatingCount {
			grew++
		}
	}
	if grew != 3 {
		t.Fatalf("thirty changes an app on average: %+v → %+v", before, after)
	}
	if r := get(t, ts.URL+"/__catalogue?id=abc"); r.status != http.StatusBadRequest || decodeJSON[FieldError](t, r.body).Field != "id" {
		t.Fatalf("bad id: %d %s", r.status, r.body)
	}
}

func TestBumpPatch(t *testing.T) {
	for in, want := range map[string]string{"2.3.9": "2.3.10", "1": "2", "4.0.x": "4.0.x.1"} {
		if got := bumpPatch(in); got != want {
			t.Errorf("%s: %s, want %s", in, got, want)
		}
	}
}
