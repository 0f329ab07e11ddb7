package api

import (
	"net/http/httptest"
	"net/url"
	"testing"
)

// FuzzPageParams: limit/offset are either refused naming the field or in bounds.
func FuzzPageParams(f *testing.F) {
	for _, seed := range [][2]string{{"", ""}, {"100", "10000"}, {"101", "-1"}, {"18446744073709551616", "0"}, {"1e2", " 5"}} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, limit, offset string) {
		q := url.Values{"limit": {limit}, "offset": {offset}}
		r := httptest.NewRequest("GET", "/v1/clusters?"+q.Encode(), nil)
		l, o, field := pageParams(r)
		if field != "" {
			if field != "limit" && field != "offset" {
				t.Fatalf("field %q", field)
			}
			return
		}
		if l < 1 || l > MaxPageSize || o < 0 || o > MaxOffset {
			t.Fatalf("limit=%q offset=%q accepted as %d, %d", limit, offset, l, o)
		}
	})
}
