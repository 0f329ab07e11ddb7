package keywords

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"storecrawl/worker/appstore"
	"testing"
)

// builtHints reads the BUILT hints fixtures (testdata/README.md) by prefix.
func builtHints(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, p := range []string{"p", "ph", "pho"} {
		body, err := os.ReadFile(filepath.Join("testdata", "hints_BUILT_us_"+p+".plist"))
		if err != nil {
			t.Fatal(err)
		}
		hints, err := appstore.ParseHints(body)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		out[p] = Terms(hints)
	}
	return out
}

func TestPrefixesAreOneACharacterSkippingSpacesUpToTheCap(t *testing.T) {
	if got, want := Prefixes("  Photo  Editor "), []string{"p", "ph", "pho", "phot", "photo", "photo e", "photo ed", "photo edi", "photo edit", "photo edito", "photo editor"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("prefixes: %q, want %q", got, want)
	}
	if got := Prefixes("abcdefghijklmnopqrstuvwxyz"); len(got) != PopularityMaxPrefix || got[len(got)-1] != "abcdefghijklmno" {
		t.Fatalf("a long term's prefixes stop at %d characters: %q", PopularityMaxPrefix, got)
	}
	if got := Prefixes("çàé"); !reflect.DeepEqual(got, []string{"ç", "çà", "çàé"}) {
		t.Fatalf("prefixes are characters, not bytes: %q", got)
	}
}

func TestPopularityScoresHowEarlyAndWhereTheTermIsSuggested(t *testing.T) {
	hints := builtHints(t)
	// "photo editor" is first suggested at "pho", first among its hints.
	if s := Find("Photo Editor", hints); s != (Suggested{Prefix: 3, Position: 0}) {
		t.Fatalf("found %+v, want prefix 3 position 0", s)
	}
	// 1 + 99 × (12 + 0.8) / 14.8 = 87
	if got := Popularity("photo editor", hints); got != 87 {
		t.Fatalf("popularity %d, want 87", got)
	}
	// "photoshop" is suggested at "ph", second: 1 + 99 × (13 + 0.6) / 14.8 = 92.
	if got := Popularity("photoshop", hints); got != 92 {
		t.Fatalf("photoshop %d, want 92", got)
	}
	// Never suggested at the prefixes asked: 0; a prefix not asked stops the read.
	if got := Popularity("photo collage maker", map[string][]string{"p": nil}); got != 0 {
		t.Fatalf("not suggested: %d", got)
	}
	for _, c := range []struct {
		s    Suggested
		want int
	}{{Suggested{1, 0}, 100}, {Suggested{15, 4}, 1}, {Suggested{15, 9}, 1}, {Suggested{15, 0}, 6}, {Suggested{14, 4}, 8}, {Suggested{}, 0}} {
		if got := c.s.Score(); got != c.want {
			t.Errorf("%+v scores %d, want %d", c.s, got, c.want)
		}
	}
	// A character earlier outranks any place; at the same prefix, earlier
	// in the list is more popular.
	if !(Suggested{2, 0}.Score() > Suggested{3, 0}.Score() && Suggested{3, 0}.Score() > Suggested{3, 1}.Score() && Suggested{3, 4}.Score() > Suggested{4, 0}.Score()) {
		t.Fatal("the order of scores")
	}
}

// fetcher answers hints from a map and counts its requests.
type fetcher struct {
	hints map[string][]string
	asked []string
	err   error
}

func (f *fetcher) Hints(_ context.Context, prefix string) ([]string, error) {
	f.asked = append(f.asked, prefix)
	if f.err != nil {
		return nil, f.err
	}
	return f.hints[prefix], nil
}

func TestMeasureAsksUntilSuggestedWithinItsBudget(t *testing.T) {
	f := &fetcher{hints: builtHints(t)}
	s, n, ok, err := Measure(context.Background(), f, "photo editor", 20)
	if err != nil || !ok || s != (Suggested{3, 0}) || n != 3 || !reflect.DeepEqual(f.asked, []string{"p", "ph", "pho"}) {
		t.Fatalf("measure: %+v %d %v %v, asked %q", s, n, ok, err, f.asked)
	}
	// A budget below the term's prefixes asks nothing.
	f.asked = nil
	if _, n, ok, _ := Measure(context.Background(), f, "photo editor", 10); ok || n != 0 || len(f.asked) != 0 {
		t.Fatalf("under budget: %d requests, ok %v", n, ok)
	}
	// Never suggested: every prefix asked, measured as not suggested.
	f.asked = nil
	if s, n, ok, _ := Measure(context.Background(), f, "zzz", 20); !ok || s.Prefix != 0 || n != 3 {
		t.Fatalf("never suggested: %+v %d %v", s, n, ok)
	}
	// A refusal stops it.
	f.err = &RateLimited{RetryAfterS: 30}
	_, n, ok, err = Measure(context.Background(), f, "photo editor", 20)
	if limited, after := IsRateLimited(err); ok || n != 1 || !limited || after != 30 {
		t.Fatalf("rate limited: %d %v %v", n, ok, err)
	}
	if limited, _ := IsRateLimited(errors.New("x")); limited {
		t.Fatal("a plain error is no refusal")
	}
}
