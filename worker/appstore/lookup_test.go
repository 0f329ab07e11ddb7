package appstore

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
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
	want := App{
		TrackID:                   1462837591,
		Name:                      "Ledgerleaf: Budget & Bills",
		BundleID:                  "com.ledgerleaf.budget",
		DeveloperID:               1180045367,
		DeveloperName:             "Ledgerleaf Software Inc.",
		Price:                     0,
		Currency:                  "USD",
		Genre:                     "Finance",
		GenreID:                   6015,
		AverageRating:             4.71234,
		RatingCount:               48213,
		Version:                   "7.12.1",
		ReleaseDate:               "2019-05-21T07:00:00Z",
		CurrentVersionReleaseDate: "2024-11-04T16:12:48Z",
		Description:               "Take control of your money — without spreadsheets.\n\nLedgerleaf connects to 12,000+ banks, sorts every transaction and tells you what’s safe to spend.\n\nFEATURES\n• Envelope budgets\n• Bill reminders\n• Shared budgets with your partner",
		ContentRating:             "4+",
		TrackViewURL:              "https://apps.apple.com/us/app/ledgerleaf-budget-bills/id1462837591?uo=4",
		ArtworkURL:                "https://is1-ssl.mzstatic.com/image/thumb/Purple126/v4/12/34/56/12345678-9abc-def0-1234-56789abcdef0/AppIcon-0-0-1x_U007emarketing-0-7-0-85-220.png/512x512bb.jpg",
		FileSizeBytes:             187652096,
		Languages:                 []string{"EN", "FR", "DE", "JA", "ES"},
	}
	got, err := ParseLookup(readFixture(t, "lookup.json"))
	if err != nil {
		t.Fatalf("ParseLookup: %v", err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ParseLookup mismatch\n got: %+v\nwant: %+v", got, want)
	}
}

func TestParseLookupErrors(t *testing.T) {
	tests := []struct {
		name string
		body []byte
		want error
	}{
		{"empty fixture", readFixture(t, "lookup_empty.json"), ErrNotFound},
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
	apps, err := ParseSearch(readFixture(t, "search.json"))
	if err != nil {
		t.Fatalf("ParseSearch: %v", err)
	}
	type row struct {
		id       int64
		name     string
		price    float64
		genreID  int
		rating   float64
		count    int64
		size     int64
		artwork  string
		langs    int
		devName  string
		contentR string
	}
	want := []row{
		{1509876543, "Budget Blocks: Puzzle Saga", 0, 6014, 4.48, 1290, 254803968,
			"https://is1-ssl.mzstatic.com/image/thumb/Purple211/v4/aa/00/11/aa001122-3344-5566-7788-99aabbccddee/AppIcon.png/512x512bb.jpg", 1, "Pinecone Games", "9+"},
		// No artworkUrl512: falls back to artworkUrl100.
		{1234500001, "Budget Pro", 4.99, 6015, 3.9, 57, 31457280,
			"https://is1-ssl.mzstatic.com/image/thumb/Purple116/v4/bb/11/22/bb112233-4455-6677-8899-aabbccddeeff/AppIcon.png/100x100bb.jpg", 2, "Tally Labs", "4+"},
		// No ratings and no fileSizeBytes: zero values.
		{1600000002, "Budget Buddy", 0, 6015, 0, 0, 0,
			"https://is1-ssl.mzstatic.com/image/thumb/Purple1/v4/cc/AppIcon.png/512x512bb.jpg", 0, "Solo Dev", "4+"},
	}
	if len(apps) != len(want) {
		t.Fatalf("got %d apps, want %d", len(apps), len(want))
	}
	for i, w := range want {
		a := apps[i]
		got := row{a.TrackID, a.Name, a.Price, a.GenreID, a.AverageRating, a.RatingCount,
			a.FileSizeBytes, a.ArtworkURL, len(a.Languages), a.DeveloperName, a.ContentRating}
		if got != w {
			t.Errorf("result %d\n got: %+v\nwant: %+v", i, got, w)
		}
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
