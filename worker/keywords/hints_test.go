package keywords

import (
	"context"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"storecrawl/internal/objects"
	"storecrawl/worker/appstore"
	"storecrawl/worker/upstream"
)

func TestParseHintsReadsTheTermsInOrder(t *testing.T) {
	hints := builtHints(t)
	if want := []string{"photo editor", "photoshop", "photo collage", "phone"}; !reflect.DeepEqual(hints["pho"], want) {
		t.Fatalf("pho: %q", hints["pho"])
	}
}

func TestHTTPHintsAsksThePrefixAndNamesARefusal(t *testing.T) {
	var asked string
	h := HTTPHints{Base: "http://up", Get: func(_ context.Context, u string) upstream.Response {
		asked = u
		if strings.Contains(u, "q=no") {
			return upstream.Response{Class: objects.ClassRateLimit, RetryAfterS: 7}
		}
		return upstream.Response{Class: objects.ClassOK, Status: 200, Body: []byte(`<plist><dict><key>hints</key><array><dict><key>term</key><string>photo editor</string></dict></array></dict></plist>`)}
	}}
	got, err := h.Hints(context.Background(), "photo e")
	u, _ := url.Parse(asked)
	if err != nil || !reflect.DeepEqual(got, []string{"photo editor"}) || u.Path != appstore.HintsPath || u.Query().Get("q") != "photo e" || u.Query().Get("clientApplication") != "Software" {
		t.Fatalf("%q %v, asked %s", got, err, asked)
	}
	if _, err := h.Hints(context.Background(), "no"); err == nil {
		t.Fatal("a refusal is an error")
	} else if limited, after := IsRateLimited(err); !limited || after != 7 {
		t.Fatalf("refusal: %v", err)
	}
}
