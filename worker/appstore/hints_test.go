package appstore

import (
	"errors"
	"os"
	"reflect"
	"testing"
)

func TestParseHintsFixture(t *testing.T) {
	body, err := os.ReadFile("testdata/hints_us_software_budget_BUILT.xml")
	if err != nil {
		t.Fatal(err)
	}
	hints, err := ParseHints(body)
	if err != nil {
		t.Fatal(err)
	}
	var terms []string
	for _, h := range hints {
		terms = append(terms, h.Term)
	}
	want := []string{"budget", "budget planner", "budget app", "budget tracker", "budgeting app free", "budget planner app",
		"budget tracker & planner", "budget calculator", "budget app free", "budget book"}
	if !reflect.DeepEqual(terms, want) {
		t.Fatalf("terms %q, want %q", terms, want)
	}
	if h := hints[1]; h.URL != "https://search.itunes.apple.com/WebObjects/MZStore.woa/wa/search?clientApplication=Software&media=software&submit=edit&term=budget+planner" || h.Priority != 0 {
		t.Errorf("hint %+v", h)
	}
}

func TestParseHintsEmptyAndShapes(t *testing.T) {
	body, err := os.ReadFile("testdata/hints_us_empty_BUILT.xml")
	if err != nil {
		t.Fatal(err)
	}
	if hints, err := ParseHints(body); err != nil || hints == nil || len(hints) != 0 {
		t.Fatalf("empty answer: %v %v", hints, err)
	}
	// An older shape: a priority per hint, bare strings; duplicates and
	// blanks dropped.
	old := `<?xml version="1.0"?><plist version="1.0"><dict><key>title</key><string>建议</string><key>hints</key><array>
<dict><key>term</key><string>csgo</string><key>priority</key><integer>6859</integer><key>url</key><string>u</string></dict>
<string>csgo mobile</string><string> </string><string>csgo</string></array></dict></plist>`
	hints, err := ParseHints([]byte(old))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(hints, []Hint{{Term: "csgo", URL: "u", Priority: 6859}, {Term: "csgo mobile"}}) {
		t.Fatalf("%+v", hints)
	}
	for _, bad := range []string{``, `<html>error</html>`, `<plist><dict/></plist>`, `<plist><dict><key>hints</key><string>x</string></dict></plist>`, `<plist><dict><key>hints</key><array>`} {
		if _, err := ParseHints([]byte(bad)); !errors.Is(err, ErrNotHints) {
			t.Errorf("%q: %v, want ErrNotHints", bad, err)
		}
	}
}

func TestHintsRequest(t *testing.T) {
	if got := HintsURL("https://search.itunes.apple.com/", "budget planner"); got != "https://search.itunes.apple.com/WebObjects/MZSearchHints.woa/wa/hints?clientApplication=Software&q=budget+planner" {
		t.Errorf("url %s", got)
	}
	if sf, ok := StoreFront("US"); !ok || sf != "143441-1,29" {
		t.Errorf("us storefront %q %v", sf, ok)
	}
	if _, ok := StoreFront("zz"); ok {
		t.Error("an unknown country has a storefront")
	}
}
