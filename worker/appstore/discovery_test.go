package appstore

import (
	"errors"
	"os"
	"testing"
)

func TestParsePortfolio(t *testing.T) {
	body, err := os.ReadFile("testdata/lookup_us_developer_uber_built.json")
	if err != nil {
		t.Fatal(err)
	}
	apps, err := ParsePortfolio(body, 368677371)
	if err != nil || len(apps) != 1 || apps[0].TrackID != 368677368 || apps[0].DeveloperID != 368677371 || apps[0].Name == "" {
		t.Fatalf("%+v %v", apps, err)
	}
	// The same answer for another artist is not that developer's lookup.
	if _, err := ParsePortfolio(body, 1); !errors.Is(err, ErrParse) {
		t.Fatalf("another artist's answer: %v", err)
	}
	// An app lookup (no artist wrapper) is not a developer lookup.
	app, _ := os.ReadFile("testdata/lookup_us_uber_2017.json")
	if _, err := ParsePortfolio(app, 368677371); !errors.Is(err, ErrParse) {
		t.Fatalf("an app lookup: %v", err)
	}
	// A developer the storefront does not know: no apps, no error.
	empty, _ := os.ReadFile("testdata/search_us_empty_mas_2018.json")
	if apps, err := ParsePortfolio(empty, 5); err != nil || len(apps) != 0 {
		t.Fatalf("unknown developer: %+v %v", apps, err)
	}
	// An app of another developer in the answer is left out.
	mixed := []byte(`{"resultCount":3,"results":[{"wrapperType":"artist","artistType":"Software Artist","artistId":7},
{"wrapperType":"software","trackId":11,"artistId":7,"trackName":"a"},{"wrapperType":"software","trackId":12,"artistId":8,"trackName":"b"}]}`)
	if apps, err := ParsePortfolio(mixed, 7); err != nil || len(apps) != 1 || apps[0].TrackID != 11 {
		t.Fatalf("mixed: %+v %v", apps, err)
	}
	if _, err := ParsePortfolio([]byte(`{}`), 7); !errors.Is(err, ErrParse) {
		t.Fatalf("no results: %v", err)
	}
}

// TestGenreList: every iOS genre of Apple's tree (testdata/genres_app_store.md):
// 6000–6027 but 6019, and the Games subgenres 7001–7019 but 7010, each once.
func TestGenreList(t *testing.T) {
	seen := map[int]bool{}
	for _, g := range AllGenres() {
		if seen[g.ID] || g.Name == "" {
			t.Fatalf("genre %+v repeated or unnamed", g)
		}
		seen[g.ID] = true
		switch {
		case g.ID >= 6000 && g.ID <= 6027 && g.ID != 6019:
			if g.Parent != GenreApps {
				t.Fatalf("%+v: a category of Apps", g)
			}
		case g.ID >= 7001 && g.ID <= 7019 && g.ID != 7010:
			if g.Parent != GenreGames {
				t.Fatalf("%+v: a subgenre of Games", g)
			}
		default:
			t.Fatalf("%+v is no iOS genre", g)
		}
	}
	if len(AppGenres) != 27 || len(GameGenres) != 18 || len(seen) != 45 {
		t.Fatalf("%d app genres, %d game genres", len(AppGenres), len(GameGenres))
	}
}
