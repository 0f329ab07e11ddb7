package main

import (
	"bytes"
	"encoding/xml"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
)

// hintsGet asks the simulator's hints for q, with storefront sf ("" sends
// no header).
func hintsGet(t *testing.T, base, q, sf string) response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+hintsPath+"?clientApplication=Software&q="+q, nil)
	if sf != "" {
		req.Header.Set("X-Apple-Store-Front", sf)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{resp.StatusCode, resp.Header, b}
}

// plistTerms reads the hint terms of a plist answer, and its element
// paths (the shape, without values).
func plistTerms(t *testing.T, b []byte) (terms, shape []string) {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(b))
	var path []string
	seen := map[string]bool{}
	nextIsTerm := false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return terms, shape
		}
		if err != nil {
			t.Fatalf("%v: %s", err, b)
		}
		switch e := tok.(type) {
		case xml.StartElement:
			path = append(path, e.Name.Local)
			if p := strings.Join(path, "/"); !seen[p] {
				seen[p] = true
				shape = append(shape, p)
			}
		case xml.EndElement:
			path = path[:len(path)-1]
		case xml.CharData:
			s := strings.TrimSpace(string(e))
			if len(path) > 0 && path[len(path)-1] == "key" {
				nextIsTerm = s == "term"
			} else if nextIsTerm && s != "" {
				terms, nextIsTerm = append(terms, s), false
			}
		}
	}
}

func TestHintsServeTheCataloguesTermsMostPopularFirst(t *testing.T) {
	ts, _ := newTestServer(t, calmConfig())
	r := hintsGet(t, ts.URL, "bud", "143441-1,29")
	if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/xml") {
		t.Fatalf("%d %v", r.status, r.header)
	}
	terms, shape := plistTerms(t, r.body)
	if len(terms) == 0 || len(terms) > 10 {
		t.Fatalf("terms %q", terms)
	}
	// Popularity: the ratings of the apps whose names carry the term.
	pop := func(term string) int64 {
		var n int64
		ts := testCatalogue()
		ts.Each(func(a *App) {
			if slices.Contains(strings.Fields(strings.ToLower(a.Name)), term) || strings.Contains(" "+strings.ToLower(a.Name)+" ", " "+term+" ") {
				n += a.RatingCount
			}
		})
		return n
	}
	for i, term := range terms {
		if !strings.HasPrefix(term, "bud") {
			t.Errorf("%q does not complete bud", term)
		}
		if i > 0 && pop(term) > pop(terms[i-1]) {
			t.Errorf("%q (%d) after %q (%d)", term, pop(term), terms[i-1], pop(terms[i-1]))
		}
	}
	if terms[0] != "budget" {
		t.Errorf("the single word is the most typed: %q", terms)
	}
	// The real answer's shape (the fixture built from a 2026 capture).
	fixture, err := os.ReadFile("../../worker/appstore/testdata/hints_us_software_budget_BUILT.xml")
	if err != nil {
		t.Fatal(err)
	}
	if _, want := plistTerms(t, fixture); !slices.Equal(shape, want) {
		t.Errorf("shape %q, want %q", shape, want)
	}
	// No storefront, no match: an empty array, a 200.
	for _, r := range []response{hintsGet(t, ts.URL, "bud", ""), hintsGet(t, ts.URL, "qqqq", "143441-1,29")} {
		if terms, _ := plistTerms(t, r.body); r.status != 200 || len(terms) != 0 || !bytes.Contains(r.body, []byte("<key>hints</key>")) {
			t.Errorf("%d %s", r.status, r.body)
		}
	}
	if st := decodeJSON[Stats](t, get(t, ts.URL+"/__stats").body); st.ByRoute[routeHints].Served != 3 {
		t.Errorf("stats %+v", st.ByRoute)
	}
}

// A living catalogue's hints complete to its apps' terms too: the first
// word of a rated app's title is among its prefix's completions or
// behind more popular ones.
func TestHintsServeTheLivingCataloguesTerms(t *testing.T) {
	ts, _ := newLivingServer(t, calmConfig())
	var word string
	for off := int64(1); off <= 50 && word == ""; off++ {
		for _, a := range lookupIDs(t, ts.URL, baseTrackID+off) {
			if w := strings.Fields(strings.ToLower(a.TrackName)); a.UserRatingCount != nil && *a.UserRatingCount > 0 && len(w) > 0 && len(w[0]) >= 4 {
				word = w[0]
			}
		}
	}
	if word == "" {
		t.Fatal("no rated app with a title word of 4 letters among the first 50")
	}
	terms, _ := plistTerms(t, hintsGet(t, ts.URL, word[:3], "143441-1,29").body)
	if len(terms) == 0 {
		t.Fatalf("%q completes to nothing (%q is a rated app's word)", word[:3], word)
	}
	for _, term := range terms {
		if !strings.HasPrefix(term, word[:3]) {
			t.Errorf("%q does not complete %q", term, word[:3])
		}
	}
}
