package api

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"storecrawl/worker/keywords"
)

// storedKeywords knows one term and records what it was asked.
type storedKeywords struct{ asked []string }

func (k *storedKeywords) Keyword(_ context.Context, term, country string, _ time.Time) (keywords.Report, bool, error) {
	k.asked = append(k.asked, term+"/"+country)
	if term != "photo editor" {
		return keywords.Report{}, false, nil
	}
	p := 87
	return keywords.Report{Term: term, Country: country, Popularity: &p, Difficulty: 25, TopApps: []keywords.TopApp{}}, true, nil
}

func TestKeywordRouteValidatesAndAnswersPerStorefront(t *testing.T) {
	k := &storedKeywords{}
	s := NewServer(&Server{Keywords: k, Country: "us"})
	long := strings.Repeat("a", keywords.MaxTermLen+1)
	for _, c := range []struct {
		path   string
		status int
		field  string
	}{
		{"/v1/keywords/" + url.PathEscape("Photo  Editor"), 200, ""},
		{"/v1/keywords/photo%20editor?country=us", 200, ""},
		{"/v1/keywords/%20", 400, "term"},
		{"/v1/keywords/" + long, 400, "term"},
		{"/v1/keywords/photo%20editor?country=USA", 400, "country"},
		{"/v1/keywords/photo%20editor?country=gb", 404, "country"},
		{"/v1/keywords/unknown", 404, "term"},
	} {
		code, body := call(t, s, "GET", c.path, "", "")
		if code != c.status || (c.field != "" && body["field"] != c.field) {
			t.Errorf("%s: %d %v, want %d naming %q", c.path, code, body, c.status, c.field)
			continue
		}
		if code == 200 && (body["popularity"] != float64(87) || body["difficulty"] != float64(25) || body["country"] != "us" || body["term"] != "photo editor") {
			t.Errorf("%s: %v", c.path, body)
		}
	}
	// Only valid requests reach the store, normalized.
	if strings.Join(k.asked, ",") != "photo editor/us,photo editor/us,unknown/us" {
		t.Fatalf("asked %q", k.asked)
	}
	if code, _ := call(t, NewServer(&Server{Country: "us"}), "GET", "/v1/keywords/x", "", ""); code != 503 {
		t.Fatalf("no reader: %d", code)
	}
}
