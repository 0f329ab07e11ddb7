package appstore

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParseStorePage(t *testing.T) {
	tests := []struct {
		name    string
		fixture string
		want    StorePage
	}{
		{
			name:    "all parts",
			fixture: "page_full.html",
			want: StorePage{
				Subtitle:        "Envelope budgeting & bill alerts",
				RatingHistogram: [5]int64{40012, 4301, 1450, 650, 1800},
				InAppPurchases: []IAP{
					{"Ledgerleaf Premium (Monthly)", "$4.99"},
					{"Premium & Family (Yearly)", "$59.99"},
					{"Remove Ads", "$1.99"},
				},
				// Deduped, in page order; "More By This Developer" and
				// "See All" links are ignored.
				SimilarAppIDs: []int64{1101010101, 987654320, 1555000111},
			},
		},
		{
			name:    "no optional parts",
			fixture: "page_minimal.html",
			want:    StorePage{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
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

func TestParseStorePageErrors(t *testing.T) {
	full := string(readFixture(t, "page_full.html"))
	cut := strings.Index(full, `<header class="product-header`)
	if cut < 0 {
		t.Fatal("fixture has no product header")
	}
	badCount := strings.Replace(full, `data-count="4301"`, `data-count="4.3K"`, 1)
	noStars := strings.Replace(full, "we-star-bar-graph__stars--3", "we-star-bar-graph__stars--x", 1)

	tests := []struct {
		name string
		html string
	}{
		{"captcha page", string(readFixture(t, "page_blocked.html"))},
		{"truncated before header", full[:cut]},
		{"empty body", ""},
		{"json instead of html", `{"resultCount":0,"results":[]}`},
		{"non-integer histogram count", badCount},
		{"histogram row without star level", noStars},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseStorePage([]byte(tt.html))
			if !errors.Is(err, ErrParse) {
				t.Fatalf("err = %v, want ErrParse", err)
			}
		})
	}
}

// A page truncated after the header is still usable: we keep what is there.
func TestParseStorePageTruncatedAfterHeader(t *testing.T) {
	full := string(readFixture(t, "page_full.html"))
	cut := strings.Index(full, `<section class="l-content-width section section--bordered section--information">`)
	got, err := ParseStorePage([]byte(full[:cut]))
	if err != nil {
		t.Fatal(err)
	}
	if got.Subtitle != "Envelope budgeting & bill alerts" || got.RatingHistogram[0] != 40012 {
		t.Errorf("lost header/histogram: %+v", got)
	}
	if got.InAppPurchases != nil || got.SimilarAppIDs != nil {
		t.Errorf("expected no IAPs/similar after cut, got %+v", got)
	}
}

func TestTruncate(t *testing.T) {
	tests := []struct {
		name string
		in   string
		max  int
		want string
	}{
		{"shorter", "abc", 5, "abc"},
		{"exact", "abcde", 5, "abcde"},
		{"ascii cut", "abcdef", 3, "abc"},
		{"multibyte not split", "héllo wörld", 7, "héllo w"},
		{"emoji", "👍👍👍", 2, "👍👍"},
		{"zero", "abc", 0, ""},
		{"negative", "abc", -1, ""},
		{"empty", "", 3, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Truncate(tt.in, tt.max); got != tt.want {
				t.Errorf("Truncate(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
			}
		})
	}
}

func TestTruncateMaxTextLen(t *testing.T) {
	long := strings.Repeat("é", MaxTextLen+10)
	got := Truncate(long, MaxTextLen)
	if n := len([]rune(got)); n != MaxTextLen {
		t.Fatalf("rune len = %d, want %d", n, MaxTextLen)
	}
	if len(got) != 2*MaxTextLen {
		t.Fatalf("byte len = %d, want %d", len(got), 2*MaxTextLen)
	}
}
