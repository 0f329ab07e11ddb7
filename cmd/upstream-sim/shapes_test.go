package main

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"testing"
)

// realCapture reads a real captured response kept with the parsers.
func realCapture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("../../worker/appstore/testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// keysOf lists an object's keys and, for nested objects, "key.sub" paths
// one level down (enough for the RSS label/attributes wrappers).
func keysOf(v any) []string {
	m, _ := v.(map[string]any)
	var out []string
	for k, sub := range m {
		out = append(out, k)
		if sm, ok := sub.(map[string]any); ok {
			for k2, sub2 := range sm {
				out = append(out, k+"."+k2)
				if sm2, ok := sub2.(map[string]any); ok {
					for k3 := range sm2 {
						out = append(out, k+"."+k2+"."+k3)
					}
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

func decodeAny(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestShapesFollowRealCaptures holds the simulator to the real site: every
// key it writes in a lookup result or a chart entry is one Apple writes
// (testdata/README.md says where each capture came from), and an unrated
// app has no rating keys, as in the real search answer.
func TestShapesFollowRealCaptures(t *testing.T) {
	ts, _ := newTestServer(t, calmConfig())
	cat := testCatalogue()

	real := decodeAny(t, realCapture(t, "lookup_us_uber_2017.json"))["results"].([]any)[0]
	realKeys := keysOf(real)
	var rated, unrated int
	for off := int64(1); off <= 60; off++ {
		a, _ := cat.Get(baseTrackID + off)
		res := decodeAny(t, get(t, fmt.Sprintf("%s/lookup?id=%d", ts.URL, a.ID)).body)["results"].([]any)[0]
		for _, k := range keysOf(res) {
			if !slices.Contains(realKeys, k) {
				t.Fatalf("simulator lookup key %q is not in the real lookup", k)
			}
		}
		_, hasRating := res.(map[string]any)["userRatingCount"]
		if hasRating != (a.RatingCount > 0) {
			t.Fatalf("app %d (%d ratings): userRatingCount present = %v", a.ID, a.RatingCount, hasRating)
		}
		if hasRating {
			rated++
		} else {
			unrated++
		}
	}
	if rated == 0 || unrated == 0 {
		t.Fatalf("coverage: %d rated, %d unrated", rated, unrated)
	}

	// A lookup of two ids, as the real one (lookup_us_two_apps_2017.json):
	// the same envelope, and the results in the order the ids were asked.
	realTwo := decodeAny(t, realCapture(t, "lookup_us_two_apps_2017.json"))
	trackID := func(v map[string]any, i int) any { return v["results"].([]any)[i].(map[string]any)["trackId"] }
	if realTwo["resultCount"] != 2.0 || trackID(realTwo, 0) != 418075935.0 || trackID(realTwo, 1) != 447188370.0 {
		t.Fatalf("real two-id lookup (asked 418075935,447188370): %v %v", trackID(realTwo, 0), trackID(realTwo, 1))
	}
	simTwo := decodeAny(t, get(t, fmt.Sprintf("%s/lookup?id=%d,%d", ts.URL, baseTrackID+9, baseTrackID+2)).body)
	if got, want := keysOf(simTwo), keysOf(realTwo); !slices.Equal(got, want) {
		t.Fatalf("two-id lookup keys\n sim  %v\n real %v", got, want)
	}
	if simTwo["resultCount"] != 2.0 || trackID(simTwo, 0) != float64(baseTrackID+9) || trackID(simTwo, 1) != float64(baseTrackID+2) {
		t.Fatalf("two-id lookup: %v", simTwo)
	}

	realFeed := decodeAny(t, realCapture(t, "chart_rss_hk_topfree_2018.json"))["feed"].(map[string]any)
	simFeed := decodeAny(t, get(t, ts.URL+"/us/rss/topfreeapplications/limit=3/json").body)["feed"].(map[string]any)
	simEntry := simFeed["entry"].([]any)[0]
	if got, want := keysOf(simEntry), keysOf(realFeed["entry"]); !slices.Equal(got, want) {
		t.Fatalf("chart entry keys\n sim  %v\n real %v", got, want)
	}
	simTop, realTop := keysOf(simFeed), keysOf(realFeed)
	for _, k := range []string{"author", "entry", "icon", "id", "link", "rights", "title", "updated"} {
		if !slices.Contains(simTop, k) || !slices.Contains(realTop, k) {
			t.Fatalf("feed key %q: sim %v real %v", k, simTop, realTop)
		}
	}
	// One entry: an object, as in the real limit=1 feed.
	one := decodeAny(t, get(t, ts.URL+"/us/rss/topfreeapplications/limit=1/json").body)["feed"].(map[string]any)
	if _, isObject := one["entry"].(map[string]any); !isObject {
		t.Fatalf("a one-entry feed must hold entry as an object: %T", one["entry"])
	}
}
