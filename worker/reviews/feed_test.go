package reviews

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustParse(t *testing.T, name string, appID int64, cc string) Page {
	t.Helper()
	p, err := Parse(fixture(t, name), appID, cc)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return p
}

func date(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t.UTC()
}

func TestParseRealFeeds(t *testing.T) {
	tests := []struct {
		file     string
		appID    int64
		cc       string
		count    int
		skipped  int
		lastPage int
		// spot checks: index in Reviews → the exact record
		want map[int]Review
	}{
		{
			file: "us_389801252_p1_2025.json", appID: 389801252, cc: "us", count: 25, lastPage: 10,
			want: map[int]Review{
				0: {ID: "13197352979", AppID: 389801252, Country: "us", Rating: 3, Title: "Irritating",
					Body:    "So I’ve had my account for around a few years now and I have a lot of highlights and I’ve never violated anything but my account recently got suspended and my boyfriends also got suspended and he got back in it but he wasn’t able to do anything and he lost his highlights \n\nI probably have over 100 highlights love the app but fix this please",
					Version: "399.0.0", AuthorHash: AuthorHash("https://itunes.apple.com/us/reviews/id1837485306", ""),
					Date: date("2025-09-28T11:55:46-07:00")},
				1: {ID: "13197323383", AppID: 389801252, Country: "us", Rating: 2, Title: "Problems with logging in",
					Version: "399.0.0", AuthorHash: AuthorHash("https://itunes.apple.com/us/reviews/id1785172874", ""),
					Date: date("2025-09-28T11:47:07-07:00")},
				24: {ID: "13196829727", AppID: 389801252, Country: "us", Rating: 3, Title: "Glitchy",
					Version: "399.0.0", AuthorHash: AuthorHash("https://itunes.apple.com/us/reviews/id1114099501", ""),
					Date: date("2025-09-28T09:34:38-07:00")},
			},
		},
		{
			// 2018: the app itself is entry[0] (skipped), no per-entry date.
			file: "al_382617920_p1_2018.json", appID: 382617920, cc: "AL", count: 20, skipped: 1, lastPage: 7,
			want: map[int]Review{
				0: {ID: "2221577708", AppID: 382617920, Country: "al", Rating: 1, Title: "Eldadedinca",
					Body:    "I cant open the viber the cod is arrive but when I write it doesnt work the viber said something acess cod doesnt work etc help me because i need for the viber can you open the viber for me please",
					Version: "8.2.1", AuthorHash: AuthorHash("https://itunes.apple.com/al/reviews/id714810812", "")},
				19: {ID: "1649011112", AppID: 382617920, Country: "al", Rating: 5, Title: "Nice app", Body: "Very good app",
					Version: "6.9.3", AuthorHash: AuthorHash("https://itunes.apple.com/al/reviews/id543056090", "")},
			},
		},
		{
			// 2021, Apple's own compact layout; a multi-line body.
			file: "fr_497799835_p1_2021.json", appID: 497799835, cc: "fr", count: 50, lastPage: 6,
			want: map[int]Review{
				1: {ID: "6856326071", AppID: 497799835, Country: "fr", Rating: 1, Title: "Not enought free space",
					Body:    "I have 39Go free on my main hard drive and more than 400Go free on my external hard drive.... But I cannot install this 11,6Go app because \"Not enough free space\"...\nThank you Apple !",
					Version: "12.3", AuthorHash: AuthorHash("https://itunes.apple.com/fr/reviews/id1223626019", "")},
			},
		},
		{
			file: "gb_1510826067_p1_2021.json", appID: 1510826067, cc: "gb", count: 4, lastPage: 1,
			want: map[int]Review{
				1: {ID: "6108405527", AppID: 1510826067, Country: "gb", Rating: 5, Title: "Great app",
					Body: "Easy to use and syncs my visited list on all my apple devices", Version: "1.0.1",
					AuthorHash: AuthorHash("https://itunes.apple.com/gb/reviews/id1181261973", "")},
				3: {ID: "6091772301", AppID: 1510826067, Country: "gb", Rating: 5, Title: "Informative, ads-free and very neat",
					Body: "Beautiful app for travellers with wanderlust.", Version: "1.0.0",
					AuthorHash: AuthorHash("https://itunes.apple.com/gb/reviews/id228631882", "")},
			},
		},
		{file: "us_415458524_p1_2025.json", appID: 415458524, cc: "us", count: 25, lastPage: 10},
		{file: "us_595068606_p1_2025.json", appID: 595068606, cc: "us", count: 25, lastPage: 10},
		{file: "us_640437525_p1_2025.json", appID: 640437525, cc: "us", count: 25, lastPage: 2}, // a two-page feed
		// Empty feeds: no entry key, links with empty hrefs.
		{file: "us_unknown_app_empty_2025.json", appID: 1, cc: "us"},
		{file: "gb_unknown_app_empty_2021.json", appID: 100000000, cc: "gb"},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			p := mustParse(t, tc.file, tc.appID, tc.cc)
			if len(p.Reviews) != tc.count || p.Skipped != tc.skipped || p.LastPage != tc.lastPage {
				t.Fatalf("got %d reviews, %d skipped, last page %d; want %d, %d, %d",
					len(p.Reviews), p.Skipped, p.LastPage, tc.count, tc.skipped, tc.lastPage)
			}
			for i, want := range tc.want {
				got := p.Reviews[i]
				if want.Body == "" {
					want.Body = got.Body // spot check without the long text
				}
				if got != want {
					t.Errorf("review %d:\n got %+v\nwant %+v", i, got, want)
				}
			}
			for _, r := range p.Reviews {
				if r.Rating < 1 || r.Rating > 5 || r.ID == "" || len(r.AuthorHash) != authorHashHexLen {
					t.Errorf("bad review %+v", r)
				}
			}
		})
	}
}

// The stored record never carries the reviewer's name.
func TestParseNeverStoresAuthorName(t *testing.T) {
	body := fixture(t, "gb_1510826067_p1_2021.json")
	p, err := Parse(body, 1510826067, "gb")
	if err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(p.Reviews)
	for _, name := range []string{"immeallme", "john7560", "Sidelacker", "Kel@Kai boon", "reviews/id"} {
		if !strings.Contains(string(body), name) {
			t.Fatalf("fixture lost %q", name)
		}
		if strings.Contains(string(out), name) {
			t.Errorf("stored reviews contain %q", name)
		}
	}
}

func TestAuthorHash(t *testing.T) {
	a := AuthorHash("https://itunes.apple.com/fr/reviews/id1223626019?l=en", "Maxime3874")
	if b := AuthorHash("https://itunes.apple.com/fr/reviews/id1223626019", "renamed"); a != b {
		t.Errorf("the profile URI identifies the reviewer whatever the query or name: %s != %s", a, b)
	}
	if c := AuthorHash("https://itunes.apple.com/fr/reviews/id1", "Maxime3874"); c == a {
		t.Error("different reviewers share a hash")
	}
	if d, e := AuthorHash("", "x"), AuthorHash("", "y"); d == e || len(d) != authorHashHexLen {
		t.Errorf("name fallback: %q %q", d, e)
	}
}

// reshape re-encodes a real fixture with its entry list replaced; it keeps
// every field of the entries it keeps.
func reshape(t *testing.T, name string, f func(entries []json.RawMessage) any) []byte {
	t.Helper()
	var doc map[string]map[string]json.RawMessage
	if err := json.Unmarshal(fixture(t, name), &doc); err != nil {
		t.Fatal(err)
	}
	var entries []json.RawMessage
	if err := json.Unmarshal(doc["feed"]["entry"], &entries); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(f(entries))
	if err != nil {
		t.Fatal(err)
	}
	doc["feed"]["entry"] = b
	out, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestParseShapes(t *testing.T) {
	// Apple turns a one-entry list into a bare object.
	single := reshape(t, "gb_1510826067_p1_2021.json", func(e []json.RawMessage) any { return e[2] })
	p, err := Parse(single, 1510826067, "gb")
	if err != nil || len(p.Reviews) != 1 || p.Reviews[0].ID != "6096833863" || p.Reviews[0].Body != "Good design. Intuitive to use." {
		t.Fatalf("single-object entry: %+v %v", p, err)
	}
	// The old app entry alone, as an object: no review, one skipped.
	appOnly := reshape(t, "al_382617920_p1_2018.json", func(e []json.RawMessage) any { return e[0] })
	if p, err := Parse(appOnly, 382617920, "al"); err != nil || len(p.Reviews) != 0 || p.Skipped != 1 {
		t.Fatalf("app-only feed: %+v %v", p, err)
	}
	// A repeated entry is stored once.
	dup := reshape(t, "gb_1510826067_p1_2021.json", func(e []json.RawMessage) any { return append(e, e[0]) })
	if p, err := Parse(dup, 1510826067, "gb"); err != nil || len(p.Reviews) != 4 || p.Skipped != 1 {
		t.Fatalf("duplicate entry: %d reviews, %d skipped, %v", len(p.Reviews), p.Skipped, err)
	}
	// Entries that are not reviews are skipped, not fatal.
	junk := reshape(t, "gb_1510826067_p1_2021.json", func(e []json.RawMessage) any {
		return append([]any{"text", 7, map[string]any{"id": map[string]string{"label": "x"}}}, e[0])
	})
	if p, err := Parse(junk, 1510826067, "gb"); err != nil || len(p.Reviews) != 1 || p.Skipped != 3 {
		t.Fatalf("junk entries: %+v %v", p, err)
	}
}

func TestParseRejectsBadRatingsAndIDs(t *testing.T) {
	var entry map[string]any
	if err := json.Unmarshal(reshape(t, "gb_1510826067_p1_2021.json", func(e []json.RawMessage) any { return e[0] }), &entry); err != nil {
		t.Fatal(err)
	}
	base := entry["feed"].(map[string]any)["entry"].(map[string]any)
	for _, tc := range []struct {
		field, value string
	}{
		{"im:rating", "0"}, {"im:rating", "6"}, {"im:rating", ""}, {"im:rating", "five"},
		{"id", ""}, {"id", "12a"}, {"id", strings.Repeat("9", MaxFieldRunes+1)},
	} {
		e := map[string]any{}
		for k, v := range base {
			e[k] = v
		}
		e[tc.field] = map[string]string{"label": tc.value}
		body, _ := json.Marshal(map[string]any{"feed": map[string]any{"entry": e}})
		p, err := Parse(body, 1, "gb")
		if err != nil || len(p.Reviews) != 0 || p.Skipped != 1 {
			t.Errorf("%s=%q: %+v %v", tc.field, tc.value, p, err)
		}
	}
}

func TestParseBounds(t *testing.T) {
	long := strings.Repeat("é", MaxBodyRunes+10)
	title := strings.Repeat("t", MaxTitleRunes+10)
	body := reshape(t, "gb_1510826067_p1_2021.json", func(e []json.RawMessage) any {
		var m map[string]any
		_ = json.Unmarshal(e[0], &m)
		m["content"] = map[string]string{"label": long}
		m["title"] = map[string]string{"label": title}
		m["im:version"] = map[string]string{"label": strings.Repeat("1", 100)}
		return m
	})
	p, err := Parse(body, 1, "gb")
	if err != nil || len(p.Reviews) != 1 {
		t.Fatal(p, err)
	}
	r := p.Reviews[0]
	if utf8.RuneCountInString(r.Body) != MaxBodyRunes || !r.Truncated || !utf8.ValidString(r.Body) {
		t.Errorf("body %d runes, truncated=%v", utf8.RuneCountInString(r.Body), r.Truncated)
	}
	if utf8.RuneCountInString(r.Title) != MaxTitleRunes || len(r.Version) != MaxFieldRunes {
		t.Errorf("title %d, version %d", utf8.RuneCountInString(r.Title), len(r.Version))
	}
	if mustParse(t, "gb_1510826067_p1_2021.json", 1, "gb").Reviews[0].Truncated {
		t.Error("a short body is marked truncated")
	}

	// Many entries: only MaxEntriesPerPage are read.
	many := reshape(t, "fr_497799835_p1_2021.json", func(e []json.RawMessage) any {
		var out []json.RawMessage
		for len(out) < MaxEntriesPerPage+50 {
			out = append(out, e...)
		}
		return out
	})
	p, err = Parse(many, 1, "fr")
	if err != nil || len(p.Reviews)+p.Skipped != MaxEntriesPerPage {
		t.Errorf("entries read: %d+%d, %v", len(p.Reviews), p.Skipped, err)
	}

	big := make([]byte, MaxFeedBytes+1)
	if _, err := Parse(big, 1, "us"); !errors.Is(err, ErrTooLarge) {
		t.Errorf("oversized body: %v", err)
	}
}

func TestParseErrors(t *testing.T) {
	if _, err := Parse(fixture(t, "us_555731861_p11_depth_limit.txt"), 555731861, "us"); !errors.Is(err, ErrPageDepth) {
		t.Errorf("page 11: %v", err)
	}
	for _, body := range []string{"", "<html>blocked</html>", `{"results":[]}`, `{"feed":{"entry":"x"}}`, `{"feed":{"entry":[1,}`} {
		if _, err := Parse([]byte(body), 1, "us"); !errors.Is(err, ErrParse) {
			t.Errorf("%q: %v, want ErrParse", body, err)
		}
	}
}

func TestHasNextAndURL(t *testing.T) {
	p := mustParse(t, "us_389801252_p1_2025.json", 389801252, "us")
	if !p.HasNext(1) || !p.HasNext(9) || p.HasNext(10) {
		t.Error("a 10-page feed has pages 2..10 only")
	}
	if gb := mustParse(t, "gb_1510826067_p1_2021.json", 1, "gb"); gb.HasNext(1) {
		t.Error("a one-page feed has no next page")
	}
	if empty := mustParse(t, "us_unknown_app_empty_2025.json", 1, "us"); empty.HasNext(1) {
		t.Error("an empty page ends the paging")
	}
	got := FeedURL("https://itunes.apple.com/", "US", 3, 389801252)
	if want := "https://itunes.apple.com/us/rss/customerreviews/page=3/id=389801252/sortby=mostrecent/json"; got != want {
		t.Errorf("FeedURL = %s", got)
	}
	if got := FeedURL("http://127.0.0.1:8790", "gb", 99, 1); !strings.Contains(got, "/page=10/") {
		t.Errorf("page not clamped: %s", got)
	}
}
