package api

import (
	"net/http/httptest"
	"net/url"
	"testing"

	"storecrawl/worker/d1"
)

// FuzzPageParams: limit and cursor are either refused naming the field or
// in bounds; an offset is always refused, naming offset.
func FuzzPageParams(f *testing.F) {
	for _, seed := range [][3]string{{"", "", ""}, {"100", "abc", ""}, {"101", "", "0"}, {"18446744073709551616", "", ""}, {"1e2", " 5", ""}} {
		f.Add(seed[0], seed[1], seed[2])
	}
	f.Fuzz(func(t *testing.T, limit, cursor, offset string) {
		q := url.Values{"limit": {limit}, "cursor": {cursor}}
		if offset != "" {
			q.Set("offset", offset)
		}
		r := httptest.NewRequest("GET", "/v1/clusters?"+q.Encode(), nil)
		l, c, field, _ := pageParams(r)
		switch {
		case offset != "":
			if field != "offset" {
				t.Fatalf("offset=%q accepted (field %q)", offset, field)
			}
		case field != "":
			if field != "limit" && field != "cursor" {
				t.Fatalf("field %q", field)
			}
		case l < 1 || l > MaxPageSize || len(c) > d1.MaxCursorLen:
			t.Fatalf("limit=%q cursor=%q accepted as %d, %q", limit, cursor, l, c)
		}
	})
}
