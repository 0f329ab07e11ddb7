//go:build integration

package e2e

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// simApp is one app as GET /__catalogue?id= shows it now.
type simApp struct {
	ID            int64   `json:"id"`
	RatingCount   int64   `json:"rating_count"`
	AverageRating float64 `json:"average_rating"`
	Version       string  `json:"version"`
}

func simCatalogue(t *testing.T, s *sim, ids []int64) map[int64]simApp {
	t.Helper()
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = fmt.Sprint(id)
	}
	var st struct{ Apps []simApp }
	if code := doJSON(t, "GET", s.base+"/__catalogue?id="+strings.Join(parts, ","), "", nil, &st); code != 200 {
		t.Fatalf("sim catalogue: %d", code)
	}
	out := map[int64]simApp{}
	for _, a := range st.Apps {
		out[a.ID] = a
	}
	return out
}

// The store changes an app's ratings and version; once its
// refresh comes due the change shows in /v1/apps/{id} and in its history,
// and the catalogue sweep computes a rating velocity from the real
// observations. Apps the store did not change cost a share of a lookup and
// no page.
func TestRefreshShowsUpstreamChanges(t *testing.T) {
	t.Parallel()
	const apps = 30
	dir := outputDir(t)
	s := startSim(t, dir, "-apps", itoa(apps), "-rate-per-min", "6000", "-burst", "100")
	persist := filepath.Join(dir, "state")
	prepareDB(t, persist, dir, apps)
	// An idle controller polls every testIdleS seconds instead of every two
	// minutes: the due refreshes are seen within seconds of the drain.
	w := &worker{persist: persist, simBase: s.base, dir: dir, owner: t, vars: []string{"ENRICHMENT_IDLE_S:" + itoa(testIdleS)}}
	w.start(t, "wrangler-1.log")

	eventually(t, 3*time.Minute, "the queue drained", func() (bool, string) {
		doJSON(t, "GET", w.base+"/v1/enrichment/status", "", nil, nil) // the controller starts on its first call
		rows := d1Rows(t, persist, `SELECT COUNT(*) AS queued FROM app_registry WHERE enriched_at IS NULL`)
		return rows[0]["queued"] == 0.0, jsonString(rows)
	})
	// The catalogue sweep gives every enriched app its refresh tier.
	doJSON(t, "POST", w.base+"/v1/scheduler/run-now", adminToken, `{"task":"catalogue-sweep"}`, nil)
	eventually(t, time.Minute, "every enriched app tiered", func() (bool, string) {
		rows := d1Rows(t, persist, `SELECT COUNT(*) AS untiered FROM app_registry WHERE enrichment_source = 'itunes+store' AND refresh_tier IS NULL`)
		return rows[0]["untiered"] == 0.0, jsonString(rows)
	})
	stored := map[int64]simApp{}
	var ids []int64
	for _, r := range d1Rows(t, persist, `SELECT track_id, rating_count, version FROM app_registry WHERE enrichment_source = 'itunes+store' ORDER BY track_id`) {
		id := int64(r["track_id"].(float64))
		stored[id] = simApp{ID: id, RatingCount: int64(r["rating_count"].(float64)), Version: r["version"].(string)}
		ids = append(ids, id)
	}
	if len(ids) < apps-1 {
		t.Fatalf("only %d of %d apps enriched", len(ids), apps)
	}

	// The store changes some apps: one simulated hour of 10 changes.
	s.setConfig(t, map[string]any{"catalogue_changes_per_hour": 10, "catalogue_hour_s": 2, "catalogue_seed": 16})
	time.Sleep(2500 * time.Millisecond)
	s.setConfig(t, map[string]any{"catalogue_changes_per_hour": 0})
	now := simCatalogue(t, s, ids)
	changed := 0
	var probe int64 // a changed app, the one whose velocity is checked
	for _, id := range ids {
		if a := now[id]; a.RatingCount != stored[id].RatingCount || a.Version != stored[id].Version {
			changed++
			if probe == 0 || a.RatingCount-stored[id].RatingCount > now[probe].RatingCount-stored[probe].RatingCount {
				probe = id
			}
		}
	}
	if changed == 0 || changed == len(ids) {
		t.Fatalf("the drift changed %d of %d apps; the test needs some of each", changed, len(ids))
	}

	// Two days pass for the history (the enrichment's observations, their
	// times in ms (migrations/0035), and an app's first values, held in its row since values_at, move back), and
	// every refresh comes due (each app on the retry list: its round would
	// take up to a month).
	wrangler(t, persist, "d1", "execute", "DB", "--local", "--command",
		`UPDATE app_snapshots SET taken_at = taken_at - 2 * 86400000;
UPDATE app_registry SET refresh_retry_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now'),
  values_at = strftime('%Y-%m-%dT%H:%M:%fZ', values_at, '-2 days'),
  discovered_at = strftime('%Y-%m-%dT%H:%M:%fZ', discovered_at, '-2 days') WHERE refresh_tier IS NOT NULL;`)
	pagesBefore := simRequests(t, s, "page")
	var st struct {
		Totals map[string]float64 `json:"totals"`
	}
	doJSON(t, "GET", w.base+"/v1/enrichment/status", "", nil, &st)
	refreshedBefore, unchangedBefore := st.Totals["refreshed"], st.Totals["refreshes_unchanged"]

	// The controller serves the due refreshes (its next idle poll sees them).
	eventually(t, 4*time.Minute, "every refresh done", func() (bool, string) {
		doJSON(t, "GET", w.base+"/v1/enrichment/status", "", nil, &st)
		return st.Totals["refreshed"]-refreshedBefore >= float64(len(ids)), jsonString(st.Totals)
	})
	pages := simRequests(t, s, "page") - pagesBefore
	unchanged := st.Totals["refreshes_unchanged"] - unchangedBefore
	t.Logf("%d apps refreshed, %d changed upstream: %v pages, %v unchanged refreshes (no page)", len(ids), changed, pages, unchanged)
	if int(unchanged) != len(ids)-changed || int(pages) != changed {
		t.Fatalf("unchanged apps must cost no page: %v pages for %d changed, %v unchanged of %d", pages, changed, unchanged, len(ids)-changed)
	}
	for _, id := range ids {
		var app struct {
			RatingCount int64  `json:"rating_count"`
			Version     string `json:"version"`
		}
		if code := doJSON(t, "GET", w.base+"/v1/apps/"+fmt.Sprint(id), "", nil, &app); code != 200 {
			t.Fatalf("app %d: %d", id, code)
		}
		if app.RatingCount != now[id].RatingCount || app.Version != now[id].Version {
			t.Errorf("app %d after its refresh: %d ratings, version %q; the store has %d, %q", id, app.RatingCount, app.Version, now[id].RatingCount, now[id].Version)
		}
	}

	// The sweep computes the velocity from the observations: the probe
	// gained its new ratings over the two days since its enrichment.
	doJSON(t, "POST", w.base+"/v1/scheduler/run-now", adminToken, `{"task":"catalogue-sweep"}`, nil)
	var h struct {
		Current struct {
			RatingCount *int64   `json:"rating_count"`
			Velocity7d  *float64 `json:"rating_velocity_7d"`
			Velocity30d *float64 `json:"rating_velocity_30d"`
		} `json:"current"`
		Ratings []struct {
			At          string `json:"at"`
			RatingCount int64  `json:"rating_count"`
		} `json:"ratings"`
		Versions []struct {
			Version      string  `json:"version"`
			ReleaseNotes *string `json:"release_notes"`
		} `json:"versions"`
	}
	eventually(t, time.Minute, "the probe's velocity", func() (bool, string) {
		doJSON(t, "GET", w.base+"/v1/apps/"+fmt.Sprint(probe)+"/history", "", nil, &h)
		return h.Current.Velocity7d != nil, jsonString(h)
	})
	gained := now[probe].RatingCount - stored[probe].RatingCount
	if len(h.Ratings) < 2 || h.Ratings[0].RatingCount != now[probe].RatingCount || h.Ratings[len(h.Ratings)-1].RatingCount != stored[probe].RatingCount {
		t.Fatalf("the probe's rating history: %s", jsonString(h.Ratings))
	}
	first, _ := time.Parse(time.RFC3339, h.Ratings[len(h.Ratings)-1].At)
	last, _ := time.Parse(time.RFC3339, h.Ratings[0].At)
	want := float64(gained) / (last.Sub(first).Hours() / 24)
	t.Logf("probe %d: %d → %d ratings over %s: velocity 7d %v, 30d %v (want %.3f a day)", probe, stored[probe].RatingCount,
		now[probe].RatingCount, last.Sub(first).Round(time.Second), *h.Current.Velocity7d, jsonString(h.Current.Velocity30d), want)
	if gained <= 0 || math.Abs(*h.Current.Velocity7d-want) > 0.01*want+0.001 || math.Abs(*h.Current.Velocity7d-float64(gained)/2) > 0.02*float64(gained)/2 {
		t.Fatalf("velocity %v, want %.3f (%d ratings in about 2 days)", *h.Current.Velocity7d, want, gained)
	}
	if now[probe].Version != stored[probe].Version {
		if len(h.Versions) < 2 || h.Versions[0].Version != now[probe].Version || h.Versions[0].ReleaseNotes == nil || *h.Versions[0].ReleaseNotes == "" {
			t.Fatalf("the probe's version history: %s", jsonString(h.Versions))
		}
	}
}
