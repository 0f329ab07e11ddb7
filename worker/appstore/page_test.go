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

// TestParseStorePageFixtures asserts every field extracted from each real
// captured page in testdata (provenance in testdata/README.md).
func TestParseStorePageFixtures(t *testing.T) {
	tests := []struct {
		fixture string
		want    StorePage
	}{
		{"legacy_netflix_us_2023.html", StorePage{
			Format: FormatLegacy, Name: "Netflix", Subtitle: "Start Watching",
			RatingShare:   [5]float64{0.56, 0.11, 0.06, 0.05, 0.22},
			RatingAverage: 3.7, RatingTotal: 342262, Price: 0, Category: "Entertainment",
			InAppPurchases: []IAP{
				{"Netflix 2 Screens - Unlimited Streaming", "$15.49"}, {"Netflix", "$15.49"}, {"Netflix Standard", "$15.49"},
			},
			// The "You Might Also Like" lockups only; "More By This
			// Developer" and "Featured In" are other shelves.
			SimilarAppIDs:   []int64{562782540, 545519333, 746894884, 1619723063, 1564334567, 751712884},
			MissingSections: []string{},
		}},
		{"legacy_sony_vn_2023.html", StorePage{
			Format: FormatLegacy, Name: "Sony Bảo hành điện tử",
			RatingShare:   [5]float64{1, 0, 0, 0, 0},
			RatingAverage: 5, RatingTotal: 1, Price: 0, Category: "Utilities",
			InAppPurchases:  []IAP{},
			SimilarAppIDs:   []int64{1485409290, 1500533330, 1502798014, 1231406584, 1208065009, 1460575259},
			MissingSections: []string{SectionInAppPurchases, SectionSubtitle},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			got, err := ParseStorePage(readFixture(t, tt.fixture))
			if err != nil {
				t.Fatalf("ParseStorePage: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("mismatch\n got: %+v\nwant: %+v", got, tt.want)
			}
		})
	}
}

// TestEveryPageFixtureParses keeps new captures honest: any page dropped
// into testdata must parse and name its format.
func TestEveryPageFixtureParses(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.html")
	if len(files) == 0 {
		t.Fatal("no page fixtures")
	}
	for _, f := range files {
		b, _ := os.ReadFile(f)
		p, err := ParseStorePage(b)
		if err != nil || (p.Format != FormatLegacy && p.Format != FormatCurrent) {
			t.Errorf("%s: %v (format %q)", f, err, p.Format)
		}
		if trimmed := TrimPage(b); !bytes.Equal(trimmed, b) {
			t.Errorf("%s: not trimmed (go run ./cmd/scrape trim): %d → %d bytes", f, len(b), len(trimmed))
		}
		if len(b) > 100_000 {
			t.Errorf("%s: %d bytes, over the 100 KB fixture budget", f, len(b))
		}
	}
}

func TestRatingCounts(t *testing.T) {
	netflix, err := ParseStorePage(readFixture(t, "legacy_netflix_us_2023.html"))
	if err != nil {
		t.Fatal(err)
	}
	// The lookup's exact total spread over the bar widths, summing exactly.
	if got := netflix.RatingCounts(342262); got != [5]int64{191667, 37649, 20536, 17113, 75297} {
		t.Errorf("counts %v", got)
	}
	if got := netflix.RatingCounts(3); got != [5]int64{2, 0, 0, 0, 1} {
		t.Errorf("small total: %v", got)
	}
	if got := (StorePage{}).RatingCounts(100); got != [5]int64{} {
		t.Errorf("unrated page: %v", got)
	}
	exact := [5]int64{9, 8, 7, 6, 5}
	if got := (StorePage{ExactCounts: &exact}).RatingCounts(1); got != exact {
		t.Errorf("exact counts must win: %v", got)
	}
}

func TestParseStorePageSections(t *testing.T) {
	page := string(readFixture(t, "legacy_netflix_us_2023.html"))
	cut := func(from, to string) string {
		i := strings.Index(page, from)
		j := strings.Index(page[i:], to)
		if i < 0 || j < 0 {
			t.Fatalf("fixture lacks %q…%q", from, to)
		}
		return page[:i] + page[i+j+len(to):]
	}
	tests := []struct {
		name    string
		html    string
		missing []string
		err     error
	}{
		{"no rating graph", cut(`<figure class="we-star-bar-graph">`, `</figure>`), []string{SectionRatings}, nil},
		{"unreadable bar width", strings.Replace(page, `style="width: 11%;"`, `style="width: wide;"`, 1), []string{SectionRatings}, nil},
		{"no JSON-LD summary", cut(`<script name="schema:software-application"`, `</script>`), []string{SectionSummary}, nil},
		{"cut before any product data", page[:strings.Index(page, `<script name="schema:software-application"`)], nil, ErrParse},
		{"a challenge page", `<html><body><form id="challenge-form">Please complete the captcha</form></body></html>`, nil, ErrSoftBlock},
		{"not html at all", "\x00\x01", nil, ErrParse},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseStorePage([]byte(tt.html))
			if !errors.Is(err, tt.err) {
				t.Fatalf("err %v, want %v", err, tt.err)
			}
			if tt.err == nil && !reflect.DeepEqual(got.MissingSections, tt.missing) {
				t.Fatalf("missing %v, want %v", got.MissingSections, tt.missing)
			}
			if tt.err == nil && tt.missing[0] == SectionRatings && got.RatingShare != ([5]float64{}) {
				t.Fatalf("a page without readable bars has no shares: %v", got.RatingShare)
			}
		})
	}
}
