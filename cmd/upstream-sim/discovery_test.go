package main

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"storecrawl/worker/appstore"
)

// TestEveryGenreHasCharts: the RSS feed serves a chart for every App
// Store genre the crawl scans (appstore.AllGenres), a Games subgenre's
// from the games in it, and a game's lookup lists Games then its
// subgenre, as real lookups do.
func TestEveryGenreHasCharts(t *testing.T) {
	cat := NewCatalogue(20000, 1)
	ts := httptest.NewServer(NewServer(cat, Options{Config: calmConfig(), Seed: 1}))
	t.Cleanup(ts.Close)
	for _, g := range appstore.AllGenres() {
		r := do(t, "GET", appstore.ChartURL(ts.URL, "us", "topfreeapplications", g.ID, 10), "")
		entries, err := appstore.ParseChart(r.body)
		if r.status != 200 || err != nil || len(entries) == 0 {
			t.Fatalf("genre %d %s: %d, %d entries (%v)", g.ID, g.Name, r.status, len(entries), err)
		}
		a, _ := cat.Get(entries[0].TrackID)
		if !inGenre(a, g.ID) {
			t.Fatalf("genre %d's chart lists app %d of genre %d", g.ID, a.ID, a.Genre.ID)
		}
		if g.Parent == appstore.GenreGames {
			body := do(t, "GET", fmt.Sprintf("%s/lookup?id=%d", ts.URL, a.ID), "").body
			if app, err := appstore.ParseLookup(body); err != nil || app.GenreID != appstore.GenreGames || !strings.Contains(string(body), fmt.Sprintf(`"genreIds":["6014","%d"]`, g.ID)) {
				t.Fatalf("game %d: %+v %v %s", a.ID, app, err, body)
			}
		}
	}
}

func contains(s, sub string) bool {
	return len(sub) == 0 || len(s) >= len(sub) && (s[:len(sub)] == sub || contains(s[1:], sub))
}

// TestDeveloperPortfolioLookup: lookup?id=ARTIST&entity=software answers the
// artist's wrapper, then their apps, as the real endpoint does; an app id
// is still an app's lookup, and a developer without entity is no app.
func TestDeveloperPortfolioLookup(t *testing.T) {
	ts, _ := newTestServer(t, calmConfig())
	cat := testCatalogue()
	app, _ := cat.Get(baseTrackID + 1)
	ids := cat.ByDeveloper(app.DevID)
	body := do(t, "GET", fmt.Sprintf("%s/lookup?id=%d&entity=software&country=us", ts.URL, app.DevID), "").body
	apps, err := appstore.ParsePortfolio(body, app.DevID)
	if err != nil || len(apps) != len(ids) || apps[0].TrackID != ids[0] || apps[0].DeveloperID != app.DevID {
		t.Fatalf("%d apps of %d (%v): %s", len(apps), len(ids), err, body)
	}
	if body := do(t, "GET", fmt.Sprintf("%s/lookup?id=%d&entity=software&limit=1", ts.URL, app.DevID), "").body; len(ids) > 1 {
		if apps, _ := appstore.ParsePortfolio(body, app.DevID); len(apps) != 1 {
			t.Fatalf("limit=1: %d apps", len(apps))
		}
	}
	if a, err := appstore.ParseLookup(do(t, "GET", fmt.Sprintf("%s/lookup?id=%d&entity=software", ts.URL, app.ID), "").body); err != nil || a.TrackID != app.ID {
		t.Fatalf("an app id with entity=software: %+v %v", a, err)
	}
	if _, err := appstore.ParseLookup(do(t, "GET", fmt.Sprintf("%s/lookup?id=%d", ts.URL, app.DevID), "").body); err != appstore.ErrNotFound {
		t.Fatalf("a developer id without entity: %v", err)
	}
}
