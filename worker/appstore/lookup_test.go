package appstore

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseLookup(t *testing.T) {
	// A real lookup (testdata/README.md): every stored field asserted.
	want := App{
		TrackID:                   368677368,
		Name:                      "Uber",
		BundleID:                  "com.ubercab.UberClient",
		DeveloperID:               368677371,
		DeveloperName:             "Uber Technologies, Inc.",
		Price:                     0,
		Currency:                  "USD",
		Genre:                     "Travel",
		GenreID:                   6003,
		AverageRating:             3,
		RatingCount:               51392,
		Version:                   "3.258.2",
		ReleaseDate:               "2010-05-21T03:11:23Z",
		CurrentVersionReleaseDate: "2017-08-21T17:19:29Z",
		ContentRating:             "4+",
		TrackViewURL:              "https://itunes.apple.com/us/app/uber/id368677368?mt=8&uo=4",
		ArtworkURL:                "http://is2.mzstatic.com/image/thumb/Purple128/v4/75/9b/74/759b7472-c271-1ba4-146e-c06467368ba0/source/512x512bb.jpg",
		FileSizeBytes:             278819840,
		Languages: []string{"AR", "AZ", "BG", "HR", "CS", "DA", "NL", "EN", "ET", "FI", "FR", "DE", "EL", "HE", "HI", "HU",
			"ID", "IT", "JA", "KO", "LV", "LT", "MS", "NB", "PL", "PT", "RO", "RU", "ZH", "SK", "SL", "ES", "SW", "SV", "TL",
			"TH", "ZH", "TR", "UK", "UR", "VI"},
		ReleaseNotes: "We update the app as often as possible to make it faster and more reliable for you. Check back next week to see the latest features and fixes available.\n\n" +
			"Love the app? Rate us! Your feedback keeps the Uber engine running.\n\nHave a question? Tap Help in the Uber app or visit help.uber.com.",
	}
	got, err := ParseLookup(readFixture(t, "lookup_us_uber_2017.json"))
	if err != nil {
		t.Fatalf("ParseLookup: %v", err)
	}
	// The capture's description: 1,636 characters, kept up to MaxDescriptionLen.
	if len([]rune(got.Description)) != min(1636, MaxDescriptionLen) || got.Description[:4] != "Uber" {
		t.Errorf("description: %d bytes %.20q", len(got.Description), got.Description)
	}
	got.Description = ""
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ParseLookup mismatch\n got: %+v\nwant: %+v", got, want)
	}
}

func TestParseLookupStorefrontAndMultiID(t *testing.T) {
	// hk storefront: HKD prices, localised genre names in the raw body.
	a, err := ParseLookup(readFixture(t, "lookup_hk_whatsapp_2018.json"))
	if err != nil || a.TrackID != 310633997 || a.Currency != "HKD" || a.Genre != "Social Networking" || a.RatingCount != 98311 || a.FileSizeBytes != 158574592 {
		t.Fatalf("%+v %v", a, err)
	}
	// A two-id lookup answers in the order asked.
	apps, err := ParseSearch(readFixture(t, "lookup_us_two_apps_2017.json"))
	if err != nil || len(apps) != 2 || apps[0].TrackID != 418075935 || apps[1].TrackID != 447188370 ||
		apps[1].RatingCount != 326402 || apps[1].AverageRating != 2.5 || apps[1].Genre != "Photo & Video" {
		t.Fatalf("%+v %v", apps, err)
	}
}

func TestParseLookupErrors(t *testing.T) {
	tests := []struct {
		name string
		body []byte
		want error
	}{
		{"real empty answer", readFixture(t, "search_us_empty_mas_2018.json"), ErrNotFound},
		{"only a non-app result", []byte(`{"resultCount":1,"results":[{"wrapperType":"artist","artistId":5}]}`), ErrNotFound},
		{"zero count no results", []byte(`{"resultCount":0,"results":[]}`), ErrNotFound},
		{"malformed json", []byte(`{"resultCount":1,"results":[{"trackId":1`), ErrParse},
		{"empty body", nil, ErrParse},
		{"html error page", []byte(`<html><body>Too Many Requests</body></html>`), ErrParse},
		{"json null", []byte(`null`), ErrParse},
		{"no results key", []byte(`{"errorMessage":"Invalid value(s) for key(s): [id]"}`), ErrParse},
		{"result without trackId", []byte(`{"resultCount":1,"results":[{"trackName":"X"}]}`), ErrParse},
		{"non-numeric fileSizeBytes", []byte(`{"resultCount":1,"results":[{"trackId":5,"fileSizeBytes":"big"}]}`), ErrParse},
		{"wrong type trackId", []byte(`{"resultCount":1,"results":[{"trackId":"abc"}]}`), ErrParse},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseLookup(tt.body)
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			other := ErrParse
			if tt.want == ErrParse {
				other = ErrNotFound
			}
			if errors.Is(err, other) {
				t.Fatalf("err %v must not also match %v", err, other)
			}
		})
	}
}

func TestParseLookupFileSizeForms(t *testing.T) {
	tests := []struct {
		name string
		raw  string
		want int64
	}{
		{"string", `"1048576"`, 1048576},
		{"number", `2048`, 2048},
		{"absent-null", `null`, 0},
		{"empty string", `""`, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := []byte(`{"resultCount":1,"results":[{"trackId":7,"fileSizeBytes":` + tt.raw + `}]}`)
			app, err := ParseLookup(body)
			if err != nil {
				t.Fatal(err)
			}
			if app.FileSizeBytes != tt.want {
				t.Errorf("FileSizeBytes = %d, want %d", app.FileSizeBytes, tt.want)
			}
		})
	}
}

func TestParseSearch(t *testing.T) {
	// A real search body (Mac apps, entity=macSoftware): unrated apps carry
	// no averageUserRating / userRatingCount keys at all.
	apps, err := ParseSearch(readFixture(t, "search_us_slack_mas_2018.json"))
	if err != nil {
		t.Fatalf("ParseSearch: %v", err)
	}
	type row struct {
		id      int64
		name    string
		price   float64
		genreID int
		rating  float64
		count   int64
		size    int64
		langs   int
		devName string
	}
	want := []row{
		{803453959, "Slack", 0, 12001, 4, 1415, 74398324, 5, "Slack Technologies, Inc."},
		{1128645172, "QuickPlan Slack Bot - Project Management team Communication & Collaboration", 0, 12001, 0, 0, 10635879, 1, "Hao Li"},
		{1293799461, "Send It - For Slack", 0, 12014, 0, 0, 9480816, 1, "Alberto Moral"},
		{1271281910, "Activebot for Slack", 0, 12001, 0, 0, 4274788, 1, "Islandbit Inc."},
		{994537604, "ChannelScrobbler - Real-time scrobble bot for Last.fm/Slack", 2.99, 12016, 0, 0, 1202787, 1, "Eric DeLabar"},
		{1406123151, "Ratstash - For Slack", 1.99, 12001, 0, 0, 1870443, 4, "Touch Software"},
	}
	if len(apps) != len(want) {
		t.Fatalf("got %d apps, want %d", len(apps), len(want))
	}
	for i, w := range want {
		a := apps[i]
		got := row{a.TrackID, a.Name, a.Price, a.GenreID, a.AverageRating, a.RatingCount, a.FileSizeBytes, len(a.Languages), a.DeveloperName}
		if got != w {
			t.Errorf("result %d\n got: %+v\nwant: %+v", i, got, w)
		}
	}
	// An iOS search with entity=software, as the crawl sends it.
	ios, err := ParseSearch(readFixture(t, "search_us_software_tsubasa_2021.json"))
	if err != nil || len(ios) != 1 || ios[0].TrackID != 1293738123 || ios[0].GenreID != 6014 || ios[0].RatingCount != 7566 ||
		ios[0].AverageRating != 4.45057 || ios[0].FileSizeBytes != 303644672 || ios[0].BundleID != "com.klab.captain283.global" {
		t.Fatalf("ios search: %+v %v", ios, err)
	}
	if empty, err := ParseSearch(readFixture(t, "search_us_empty_mas_2018.json")); err != nil || len(empty) != 0 {
		t.Fatalf("empty search: %v %v", empty, err)
	}
}

func TestParseSearchEdgeCases(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		wantLen int
		wantErr error
	}{
		{"no hits is not an error", `{"resultCount":0,"results":[]}`, 0, nil},
		{"malformed", `{"resultCount":2,"results":[`, 0, ErrParse},
		{"missing results", `{"resultCount":0}`, 0, ErrParse},
		{"one bad result poisons the page", `{"resultCount":2,"results":[{"trackId":1},{"trackName":"no id"}]}`, 0, ErrParse},
		// Without entity=software a search also returns songs and films.
		{"only software kept", `{"resultCount":3,"results":[{"wrapperType":"track","kind":"song","trackId":9},{"wrapperType":"software","trackId":1},{"wrapperType":"collection","collectionId":4}]}`, 1, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			apps, err := ParseSearch([]byte(tt.body))
			if !errors.Is(err, tt.wantErr) { // errors.Is(err, nil) is err == nil
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if len(apps) != tt.wantLen {
				t.Fatalf("len = %d, want %d", len(apps), tt.wantLen)
			}
		})
	}
}

func TestParseLookupBatch(t *testing.T) {
	// The real answer to a lookup of 418075935,447188370 (testdata/README.md).
	two := readFixture(t, "lookup_us_two_apps_2017.json")
	empty := readFixture(t, "search_us_empty_mas_2018.json")
	const a, b, unknown = 418075935, 447188370, 999000001
	// One of the two results with a field of the wrong type.
	badSize := []byte(strings.Replace(string(two), `"fileSizeBytes": "`, `"fileSizeBytes": "x`, 1))
	type want struct {
		found    []int64 // ids answered with their app
		notFound []int64 // ids answered "no such app"
		bad      []int64 // ids whose outcome is a parse error
	}
	tests := []struct {
		name string
		body []byte
		ids  []int64
		want want
	}{
		{"both found, in the order asked", two, []int64{a, b}, want{found: []int64{a, b}}},
		{"matched by trackId, not position", two, []int64{b, a}, want{found: []int64{a, b}}},
		{"an unknown id is left out: not found for that app alone", two, []int64{a, unknown, b}, want{found: []int64{a, b}, notFound: []int64{unknown}}},
		{"duplicate ids asked", two, []int64{a, a, b, b}, want{found: []int64{a, b}}},
		{"real empty answer: none found", empty, []int64{a, unknown}, want{notFound: []int64{a, unknown}}},
		{"a result not asked for is not trusted, and the missing id is not guessed not found", two, []int64{a, unknown},
			want{found: []int64{a}, bad: []int64{unknown}}},
		{"an answer repeated for an asked id: the missing id is not guessed not found", []byte(`{"resultCount":2,"results":[{"trackId":5,"trackName":"Five"},{"trackId":5,"trackName":"Five"}]}`),
			[]int64{5, 6}, want{found: []int64{5}, bad: []int64{6}}},
		{"one result that does not parse costs its own id", badSize, []int64{a, b}, want{found: []int64{b}, bad: []int64{a}}},
		{"a result without trackId makes the missing ids parse errors", []byte(`{"resultCount":2,"results":[{"wrapperType":"software","trackId":5,"trackName":"Five"},{"trackName":"X"}]}`),
			[]int64{5, 6}, want{found: []int64{5}, bad: []int64{6}}},
		{"a result that is not an app: not found", []byte(`{"resultCount":1,"results":[{"wrapperType":"track","kind":"song","trackId":7}]}`),
			[]int64{7}, want{notFound: []int64{7}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lb, err := ParseLookupBatch(tt.body, tt.ids)
			if err != nil {
				t.Fatalf("ParseLookupBatch: %v", err)
			}
			for _, id := range tt.want.found {
				if app, err := lb.Lookup(id); err != nil || app.TrackID != id || app.Name == "" {
					t.Errorf("id %d: %+v %v, want its app", id, app.TrackID, err)
				}
			}
			for _, id := range tt.want.notFound {
				if _, err := lb.Lookup(id); !errors.Is(err, ErrNotFound) {
					t.Errorf("id %d: %v, want not found", id, err)
				}
			}
			for _, id := range tt.want.bad {
				if _, err := lb.Lookup(id); !errors.Is(err, ErrParse) || errors.Is(err, ErrNotFound) {
					t.Errorf("id %d: %v, want a parse error", id, err)
				}
			}
			if n := len(tt.want.found); len(lb.Found) != n {
				t.Errorf("found %d apps, want %d", len(lb.Found), n)
			}
		})
	}
	// The fields of a batch result are those of a single lookup.
	lb, _ := ParseLookupBatch(two, []int64{a, b})
	if _, ok := lb.Found[a]; !bytes.Contains(badSize, []byte(`"x85652480"`)) || !ok {
		t.Fatal("the broken field is in the first result")
	}
	if got := lb.Found[b]; got.RatingCount != 326402 || got.AverageRating != 2.5 || got.Genre != "Photo & Video" {
		t.Fatalf("%+v", got)
	}
}

func TestParseLookupBatchUnusableAnswers(t *testing.T) {
	two := readFixture(t, "lookup_us_two_apps_2017.json")
	for name, body := range map[string][]byte{
		"cut short":       two[:len(two)/2],
		"cut at the end":  two[:bytes.LastIndexByte(two, ']')],
		"empty body":      nil,
		"html error page": []byte(`<html><body>Too Many Requests</body></html>`),
		"no results key":  []byte(`{"errorMessage":"Invalid value(s) for key(s): [id]"}`),
		"json null":       []byte(`null`),
	} {
		if _, err := ParseLookupBatch(body, []int64{418075935, 447188370}); !errors.Is(err, ErrParse) {
			t.Errorf("%s: %v, want ErrParse", name, err)
		}
	}
}
