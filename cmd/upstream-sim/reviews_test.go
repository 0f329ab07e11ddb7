package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"testing"

	"storecrawl/worker/reviews"
)

// keyPaths lists a JSON document's object key paths in first-seen order
// (array elements merged under "[]"): the shape of a feed, without values.
func keyPaths(t *testing.T, b []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	var out []string
	seen := map[string]bool{}
	var walk func(path string) error
	walk = func(path string) error {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'):
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return err
				}
				p := path + "." + k.(string)
				if !seen[p] {
					seen[p] = true
					out = append(out, p)
				}
				if err := walk(p); err != nil {
					return err
				}
			}
			_, err = dec.Token()
			return err
		case json.Delim('['):
			for dec.More() {
				if err := walk(path + "[]"); err != nil {
					return err
				}
			}
			_, err = dec.Token()
			return err
		}
		return nil
	}
	if err := walk(""); err != nil && !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	return out
}

func realFeed(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("../../worker/reviews/testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// appWithReviews finds a catalogue app with at least n reviews.
func appWithReviews(t *testing.T, n int) *App {
	t.Helper()
	for i := range testCatalogue().All() {
		a := &testCatalogue().All()[i]
		if reviewCount(a) >= n {
			return a
		}
	}
	t.Fatalf("no test app with %d reviews", n)
	return nil
}

func reviewsURL(base, cc string, page int, id int64) string {
	return fmt.Sprintf("%s/%s/rss/customerreviews/page=%d/id=%d/sortby=mostrecent/json", base, cc, page, id)
}

// The real captures are the spec: the simulator's feed has their shape,
// key for key and in their order.
func TestReviewsFeedMatchesRealShape(t *testing.T) {
	ts, _ := newTestServer(t, calmConfig())
	a := appWithReviews(t, 2*reviewsPerPage)
	full := get(t, reviewsURL(ts.URL, "us", 1, a.ID))
	if full.status != 200 {
		t.Fatalf("status %d: %s", full.status, full.body)
	}
	if got, want := keyPaths(t, full.body), keyPaths(t, realFeed(t, "us_389801252_p1_2025.json")); !slices.Equal(got, want) {
		t.Errorf("shape differs from the 2025 capture:\n sim  %v\n real %v", got, want)
	}
	empty := get(t, reviewsURL(ts.URL, "us", 1, 1)) // an id outside the catalogue
	if got, want := keyPaths(t, empty.body), keyPaths(t, realFeed(t, "us_unknown_app_empty_2025.json")); !slices.Equal(got, want) {
		t.Errorf("empty feed shape differs:\n sim  %v\n real %v", got, want)
	}
	depth := get(t, reviewsURL(ts.URL, "us", 11, a.ID))
	if string(depth.body) != strings.TrimSpace(string(realFeed(t, "us_555731861_p11_depth_limit.txt"))) {
		t.Errorf("page 11: %q", depth.body)
	}
}

// The worker's parser reads the simulator's pages as it reads Apple's.
func TestReviewsFeedParsesAndPages(t *testing.T) {
	ts, _ := newTestServer(t, calmConfig())
	a := appWithReviews(t, 2*reviewsPerPage+1)
	n := reviewCount(a)
	last := (n + reviewsPerPage - 1) / reviewsPerPage
	seen := map[string]bool{}
	var all []reviews.Review
	for page := 1; ; page++ {
		resp := get(t, reviewsURL(ts.URL, "gb", page, a.ID))
		p, err := reviews.Parse(resp.body, a.ID, "gb")
		if err != nil {
			t.Fatalf("page %d: %v", page, err)
		}
		if p.LastPage != last || p.Skipped != 0 {
			t.Fatalf("page %d: last %d (want %d), skipped %d", page, p.LastPage, last, p.Skipped)
		}
		for i, r := range p.Reviews {
			if seen[r.ID] {
				t.Fatalf("review %s served twice", r.ID)
			}
			seen[r.ID] = true
			if r.Version != a.Version || r.Date.IsZero() || r.Rating < 1 || r.Rating > 5 || r.Body == "" {
				t.Errorf("review %+v", r)
			}
			if i > 0 && r.Date.After(p.Reviews[i-1].Date) {
				t.Error("not most recent first")
			}
		}
		all = append(all, p.Reviews...)
		if !p.HasNext(page) {
			break
		}
	}
	if len(all) != n {
		t.Errorf("paged %d reviews, want %d", len(all), n)
	}
	// Past the last page: the empty shape, no error.
	if last < reviewsMaxPages {
		p, err := reviews.Parse(get(t, reviewsURL(ts.URL, "gb", last+1, a.ID)).body, a.ID, "gb")
		if err != nil || len(p.Reviews) != 0 || p.HasNext(last+1) {
			t.Errorf("past the last page: %+v %v", p, err)
		}
	}
	// Same request, same bytes.
	if !bytes.Equal(get(t, reviewsURL(ts.URL, "gb", 1, a.ID)).body, get(t, reviewsURL(ts.URL, "gb", 1, a.ID)).body) {
		t.Error("the feed is not deterministic")
	}
	// Complaints repeat the app's weaknesses, so themes exist to be found.
	themes := reviews.ComplaintThemes(reviews.ScoreAll(all), reviews.ThemeOptions{})
	if len(themes) == 0 {
		t.Error("no complaint themes in the simulated reviews")
	}
	// A parse error is never the answer for bad paths: 404 as for charts.
	for _, bad := range []string{"/us/rss/customerreviews/page=x/id=1/json", "/us/rss/customerreviews/id=1/xml", "/zzz/rss/customerreviews/id=1/json"} {
		if r := get(t, ts.URL+bad); r.status != 404 {
			t.Errorf("%s: %d", bad, r.status)
		}
	}
}

func TestReviewsFeedSingleEntryAndLimiter(t *testing.T) {
	ts, _ := newTestServer(t, calmConfig())
	var one *App
	for i := range testCatalogue().All() {
		if a := &testCatalogue().All()[i]; reviewCount(a)%reviewsPerPage == 1 {
			one = a
			break
		}
	}
	if one == nil {
		t.Fatal("no test app whose last page has one review")
	}
	{
		last := (reviewCount(one) + reviewsPerPage - 1) / reviewsPerPage
		body := get(t, reviewsURL(ts.URL, "us", last, one.ID)).body
		if !bytes.Contains(body, []byte(`"entry":{`)) {
			t.Errorf("a one-review page should have entry as an object: %.200s", body)
		}
		if p, err := reviews.Parse(body, one.ID, "us"); err != nil || len(p.Reviews) != 1 {
			t.Errorf("one-review page: %+v %v", p, err)
		}
	}
	st := decodeJSON[Stats](t, get(t, ts.URL+"/__stats").body)
	if st.ByRoute[routeReviews].Served != 1 {
		t.Errorf("reviews route stats %+v", st.ByRoute)
	}
	// The reviews route is limited like the others.
	post(t, ts.URL+"/__config", `{"rate_per_min":1,"burst":1}`)
	a := appWithReviews(t, 1)
	codes := []int{get(t, reviewsURL(ts.URL, "us", 1, a.ID)).status, get(t, reviewsURL(ts.URL, "us", 1, a.ID)).status}
	if codes[0] != 200 || codes[1] != 429 {
		t.Errorf("limited statuses %v", codes)
	}
}
