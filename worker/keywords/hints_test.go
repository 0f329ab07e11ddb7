package keywords

import (
	"context"
	"errors"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"storecrawl/internal/objects"
	"storecrawl/worker/upstream"
)

func TestParseHintsReadsTheTermsInOrder(t *testing.T) {
	hints := builtHints(t)
	if want := []string{"photo editor", "photoshop", "photo collage", "phone"}; !reflect.DeepEqual(hints["pho"], want) {
		t.Fatalf("pho: %q", hints["pho"])
	}
	// Older answers carry priority, newer displayTerm; bare strings too.
	got, err := ParseHints([]byte(`<?xml version="1.0"?><plist version="1.0"><dict><key>title</key><string>Suggestions</string><key>hints</key>
<array><dict><key>displayTerm</key><string>Meditation Free</string><key>term</key><string>meditation free</string><key>priority</key><integer>7557</integer></dict>
<string>meditation timer</string></array></dict></plist>`))
	if err != nil || !reflect.DeepEqual(got, []string{"meditation free", "meditation timer"}) {
		t.Fatalf("variants: %q %v", got, err)
	}
	empty, err := ParseHints([]byte(`<plist version="1.0"><dict><key>title</key><string>Suggestions</string><key>hints</key><array/></dict></plist>`))
	if err != nil || len(empty) != 0 {
		t.Fatalf("empty: %q %v", empty, err)
	}
	for _, bad := range []string{`{"hints": []}`, `<plist><dict><key>title</key><string>Suggestions</string></dict></plist>`, `<html><body>blocked</body></html>`} {
		if _, err := ParseHints([]byte(bad)); !errors.Is(err, ErrHintsParse) {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

func TestHTTPHintsAsksThePrefixAndNamesARefusal(t *testing.T) {
	var asked string
	h := HTTPHints{Base: "http://up", Country: "gb", Get: func(_ context.Context, u string) upstream.Response {
		asked = u
		if strings.Contains(u, "term=no") {
			return upstream.Response{Class: objects.ClassRateLimit, RetryAfterS: 7}
		}
		return upstream.Response{Class: objects.ClassOK, Status: 200, Body: []byte(`<plist><dict><key>hints</key><array><dict><key>term</key><string>photo editor</string></dict></array></dict></plist>`)}
	}}
	got, err := h.Hints(context.Background(), "photo e")
	u, _ := url.Parse(asked)
	if err != nil || !reflect.DeepEqual(got, []string{"photo editor"}) || u.Path != HintsPath || u.Query().Get("term") != "photo e" || u.Query().Get("cc") != "gb" || u.Query().Get("clientApplication") != "Software" {
		t.Fatalf("%q %v, asked %s", got, err, asked)
	}
	if _, err := h.Hints(context.Background(), "no"); err == nil {
		t.Fatal("a refusal is an error")
	} else if limited, after := IsRateLimited(err); !limited || after != 7 {
		t.Fatalf("refusal: %v", err)
	}
}
