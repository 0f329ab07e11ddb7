package reviews

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func rv(id string, app int64, stars int, title, body string) Review {
	return Review{ID: id, AppID: app, Rating: stars, Title: title, Body: body}
}

// checkInvariants asserts what every theme list guarantees.
func checkInvariants(t *testing.T, rs []Scored, themes []Theme, maxThemes int) {
	t.Helper()
	if len(themes) > maxThemes {
		t.Errorf("%d themes > %d", len(themes), maxThemes)
	}
	byID := map[string]Scored{}
	neg := 0
	for _, r := range rs {
		byID[r.ID] = r
		if IsComplaint(r) {
			neg++
		}
	}
	for i, th := range themes {
		if th.Reviews < MinThemeReviews || len(th.ExampleIDs) == 0 || len(th.ExampleIDs) > MaxExamples {
			t.Errorf("theme %q: %d reviews, %d examples", th.Key, th.Reviews, len(th.ExampleIDs))
		}
		if want := float64(th.Reviews) / float64(len(rs)); th.Share != want {
			t.Errorf("theme %q share %v, want %v", th.Key, th.Share, want)
		}
		if want := float64(th.Reviews) / float64(neg); th.NegativeShare != want {
			t.Errorf("theme %q negative share %v, want %v", th.Key, th.NegativeShare, want)
		}
		if i > 0 && themes[i-1].Reviews < th.Reviews {
			t.Errorf("themes not most-mentioned first: %v", themes)
		}
		for k, id := range th.ExampleIDs {
			r, ok := byID[id]
			if !ok || !IsComplaint(r) {
				t.Errorf("theme %q example %s is not a complaint of the input", th.Key, id)
			}
			if k > 0 && byID[th.ExampleIDs[k-1]].Score > r.Score {
				t.Errorf("theme %q examples not most negative first", th.Key)
			}
		}
	}
}

func TestComplaintThemesOnRealReviews(t *testing.T) {
	tests := []struct {
		file    string
		exclude []string
		top     []string // the leading theme keys
		has     string   // a theme expected somewhere in the list
	}{
		// Instagram: locked/suspended accounts and logging in dominate.
		{"us_389801252_p1_2025.json", []string{"Instagram"}, []string{"account", "login"}, "login"},
		// The bill-splitting app: the Venmo connection and receipts.
		{"us_595068606_p1_2025.json", []string{"Tab"}, nil, "receipt"},
		// Skyscanner: flights and prices.
		{"us_415458524_p1_2025.json", []string{"Skyscanner"}, []string{"flight", "price"}, "price"},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			p := mustParse(t, tc.file, 1, "us")
			rs := ScoreAll(p.Reviews)
			themes := ComplaintThemes(rs, ThemeOptions{Exclude: tc.exclude})
			checkInvariants(t, rs, themes, DefaultMaxThemes)
			var keys []string
			for _, th := range themes {
				keys = append(keys, th.Key)
				// Every example mentions the theme (in some inflection).
				for _, id := range th.ExampleIDs {
					i := slices.IndexFunc(rs, func(r Scored) bool { return r.ID == id })
					if _, ok := phrases(rs[i].Title + " . " + rs[i].Body)[th.Key]; !ok && !strings.Contains(th.Key, " ") {
						t.Errorf("example %s of %q does not use the phrase", id, th.Key)
					}
				}
			}
			if len(tc.top) > 0 && !slices.Equal(keys[:len(tc.top)], tc.top) {
				t.Errorf("themes %v, want them led by %v", keys, tc.top)
			}
			if !slices.Contains(keys, tc.has) {
				t.Errorf("themes %v lack %q", keys, tc.has)
			}
			for _, x := range tc.exclude {
				if slices.Contains(keys, strings.ToLower(x)) {
					t.Errorf("excluded name %q is a theme", x)
				}
			}
		})
	}
}

func TestComplaintThemesGrouping(t *testing.T) {
	rs := ScoreAll([]Review{
		rv("1", 7, 1, "Crashes", "The app crashes every time I open a photo."),
		rv("2", 7, 1, "Useless", "Keeps crashing on launch, terrible."),
		rv("3", 7, 2, "Crashed again", "It crashed twice today and I lost my photo edits."),
		rv("4", 7, 1, "Can't log in", "I cannot log in, the password reset email never arrives."),
		rv("5", 7, 1, "Login broken", "Logging in fails with an error every time."),
		rv("6", 7, 2, "Subscription", "Charged for a subscription I cancelled."),
		rv("7", 7, 5, "Love it", "Great photo editor, love the filters."),
		rv("8", 7, 5, "Best photo app", "Edits every photo beautifully."),
		rv("9", 7, 4, "Nice", "Nice filters for each photo."),
	})
	themes := ComplaintThemes(rs, ThemeOptions{})
	checkInvariants(t, rs, themes, DefaultMaxThemes)
	got := map[string]Theme{}
	for _, th := range themes {
		got[th.Key] = th
	}
	// Inflections meet: crashes / crashing / crashed → one theme of 3.
	if c := got["crash"]; c.Reviews != 3 || c.Phrase == "" || !reflect.DeepEqual(c.AppIDs, []int64{7}) {
		t.Errorf("crash theme %+v (all %+v)", c, themes)
	}
	// "log in", "logging in" and "login" are one feature.
	if l := got["login"]; l.Reviews != 2 || l.Phrase != "log in" {
		t.Errorf("login theme %+v", l)
	}
	// "photo" is in praise as much as in complaints: not a weakness.
	if _, ok := got["photo"]; ok {
		t.Error("a word as common in praise as in complaints became a theme")
	}
	// One reviewer's word is not a theme.
	if _, ok := got["subscription"]; ok {
		t.Error("a phrase of one review became a theme")
	}
}

func TestComplaintThemesFoldsOverlappingPhrases(t *testing.T) {
	rs := ScoreAll([]Review{
		rv("1", 1, 1, "Venmo", "The venmo integration is broken."),
		rv("2", 1, 1, "Broken", "Venmo integration never works."),
		rv("3", 1, 2, "Meh", "Venmo integration has been broken for months."),
		rv("4", 1, 1, "Bad", "Venmo login fails."),
	})
	themes := ComplaintThemes(rs, ThemeOptions{})
	var keys []string
	for _, th := range themes {
		keys = append(keys, th.Key)
	}
	// "venmo" (4 reviews) leads; "integration" and "venmo integration" (3,
	// all inside it and sharing its word) fold into it.
	if len(themes) == 0 || themes[0].Key != "venmo" || themes[0].Reviews != 4 || slices.Contains(keys, "venmo integration") {
		t.Errorf("themes %v", themes)
	}
	if slices.Contains(keys, "integration") && themes[0].Key == "venmo" {
		// integration shares no word with venmo, so it may stand alone;
		// it must then still count its own 3 reviews.
		i := slices.Index(keys, "integration")
		if themes[i].Reviews != 3 {
			t.Errorf("integration theme %+v", themes[i])
		}
	}
}

func TestComplaintThemesDeterministicAndBounded(t *testing.T) {
	var all []Review
	for _, f := range []string{"us_389801252_p1_2025.json", "us_415458524_p1_2025.json", "us_640437525_p1_2025.json"} {
		all = append(all, mustParse(t, f, int64(len(f)+len(all)), "us").Reviews...)
	}
	rs := ScoreAll(all)
	want := ComplaintThemes(rs, ThemeOptions{MaxThemes: 3})
	if len(want) != 3 {
		t.Fatalf("want 3 themes, got %v", want)
	}
	checkInvariants(t, rs, want, 3)
	r := rand.New(rand.NewPCG(1, 2))
	for range 5 {
		shuffled := slices.Clone(rs)
		r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		if got := ComplaintThemes(shuffled, ThemeOptions{MaxThemes: 3}); !reflect.DeepEqual(got, want) {
			t.Fatalf("order changed the themes:\n%v\n%v", got, want)
		}
	}
	// A cluster's themes name the apps they come from, most first.
	for _, th := range want {
		if len(th.AppIDs) == 0 {
			t.Errorf("theme %q has no apps", th.Key)
		}
	}
}

func TestComplaintThemesEdges(t *testing.T) {
	if th := ComplaintThemes(nil, ThemeOptions{}); th != nil {
		t.Errorf("no reviews: %v", th)
	}
	happy := ScoreAll([]Review{rv("1", 1, 5, "Great", "Love it"), rv("2", 1, 5, "Great", "Love it")})
	if th := ComplaintThemes(happy, ThemeOptions{}); th != nil {
		t.Errorf("no complaints: %v", th)
	}
	// Non-English complaints are counted but offer no phrases.
	fr := ScoreAll([]Review{
		rv("1", 1, 1, "Nul", "Les mises à jour ne marchent pas et les fichiers sont perdus"),
		rv("2", 1, 1, "Nul", "Les mises à jour plantent tout le temps sur mon mac"),
	})
	if th := ComplaintThemes(fr, ThemeOptions{}); len(th) != 0 {
		t.Errorf("French stop words became themes: %v", th)
	}
	if !EnglishReadable("The app keeps crashing when I open it") || EnglishReadable("Les mises à jour ne marchent pas et les fichiers sont perdus") {
		t.Error("EnglishReadable")
	}
}
