package keywords

import (
	"os"
	"testing"
	"time"

	"storecrawl/worker/appstore"
)

// slackTop is a real search answer's apps as a term's rankings: the
// captured iTunes search for "slack" (macSoftware, ≤ 2018-11-13,
// worker/appstore/testdata/README.md), ranked in Apple's order.
func slackTop(t *testing.T) []RankedApp {
	t.Helper()
	body, err := os.ReadFile("../appstore/testdata/search_us_slack_mas_2018.json")
	if err != nil {
		t.Fatal(err)
	}
	apps, err := appstore.ParseSearch(body)
	if err != nil {
		t.Fatal(err)
	}
	top := make([]RankedApp, len(apps))
	for i, a := range apps {
		top[i] = RankedApp{TrackID: a.TrackID, Rank: i + 1, Name: a.Name, RatingCount: a.RatingCount,
			AverageRating: a.AverageRating, CurrentVersionReleaseDate: a.CurrentVersionReleaseDate}
	}
	return top
}

// slackCaptured is the capture's date: the answer's newest version date is
// 2018-10-27, the commit holding it 2018-11-13.
var slackCaptured = time.Date(2018, 11, 13, 0, 0, 0, 0, time.UTC)

func TestDifficultyOfARealSearchAnswer(t *testing.T) {
	top := slackTop(t)
	if len(top) != 6 || top[0].Name != "Slack" || top[0].RatingCount != 1415 {
		t.Fatalf("capture: %+v", top)
	}
	d := Difficulty("slack", top, slackCaptured)
	t.Logf("slack: %+v", d)
	// Six apps in ten slots, each with "slack" whole in its title (0.6);
	// Slack alone rated: log10(1416)/log10(1000001) = 0.525 → 0.053, 4.0/5
	// → 0.08; versions 42 and 17 days old (0.885 + 0.953), the rest over a
	// year → 0.184. 100 × (5 × 0.053 + 4 × 0.6 + 2 × 0.08 + 0.184) / 12 = 25.
	want := Strength{Ratings: 0.053, Rating: 0.08, TitleMatch: 0.6, Recency: 0.184}
	if d.Score != 25 || d.Apps != 6 || d.Parts != want {
		t.Fatalf("difficulty %+v, want 25 over 6 apps with %+v", d, want)
	}
	// The same apps a year on: nothing recent, only recency moves.
	if later := Difficulty("slack", top, slackCaptured.AddDate(1, 0, 0)); later.Parts.Recency != 0 || later.Score != 24 {
		t.Fatalf("a year later: %+v", later)
	}
	// A term the titles hold only a word of ("team", in QuickPlan's) is
	// easier against the same apps.
	if other := Difficulty("team chat", top, slackCaptured); other.Parts.TitleMatch != 0.025 || other.Score != 6 {
		t.Fatalf("team chat: %+v", other)
	}
	// Ten strong, fresh, exact apps are as hard as it gets.
	var strong []RankedApp
	for i := range 12 {
		strong = append(strong, RankedApp{Rank: i + 1, Name: "Slack", RatingCount: DifficultyRatingsSaturation, AverageRating: 5,
			CurrentVersionReleaseDate: slackCaptured.Format(time.RFC3339)})
	}
	if max := Difficulty("slack", strong, slackCaptured); max.Score != 100 || max.Apps != DifficultyTopApps {
		t.Fatalf("strongest: %+v", max)
	}
	if none := Difficulty("slack", nil, slackCaptured); none.Score != 0 || none.Apps != 0 {
		t.Fatalf("no results: %+v", none)
	}
}

func TestTitleMatchReadsWholeWords(t *testing.T) {
	for _, c := range []struct {
		term, title, subtitle string
		want                  float64
	}{
		{"photo editor", "Photo Editor: Pro Filters", "", 1},
		{"photo editor", "Lumi", "The photo-editor you need", 0.7},
		{"photo editor", "Editor for Photo Albums", "", 0.5},
		{"photo editor", "Photo Vault", "Hide pictures", 0.25},
		{"slack", "Slacker Radio", "", 0},
		{"slack", "Send It - For Slack", "", 1},
		{"", "Slack", "", 0},
	} {
		if got := TitleMatch(c.term, c.title, c.subtitle); got != c.want {
			t.Errorf("%q in %q / %q: %v, want %v", c.term, c.title, c.subtitle, got, c.want)
		}
	}
}
