//go:build !js

package api

import (
	"fmt"
	"net/http"
	"testing"

	"storecrawl/worker/alerts"
	"storecrawl/worker/d1/d1test"
)

// The watch and rule routes: writes need the admin token; bad input is a
// 400 naming the field and changes nothing; an unknown id is a 404.
func TestAlertRoutes(t *testing.T) {
	db, drv := d1test.New(t)
	svc := &alerts.Service{DB: db}
	s := NewServer(&Server{Alerts: svc, AdminToken: func() string { return "secret" }})
	count := func(table string) int64 { return drv.Int(t, "SELECT count(*) FROM "+table) }

	for _, c := range []struct{ method, path, body string }{
		{"POST", "/v1/watches", `{"kind":"app","target":"1"}`},
		{"DELETE", "/v1/watches/1", ""},
		{"POST", "/v1/alert-rules", `{"type":"new_version","channel":"slack","url":"https://hooks.example.com/x"}`},
	} {
		if code, out := call(t, s, c.method, c.path, "", c.body); code != http.StatusUnauthorized || out["field"] != "authorization" {
			t.Errorf("%s %s without the token: %d %v", c.method, c.path, code, out)
		}
		if code, _ := call(t, s, c.method, c.path, "wrong", c.body); code != http.StatusUnauthorized {
			t.Errorf("%s %s with a wrong token: %d", c.method, c.path, code)
		}
	}
	for body, field := range map[string]string{
		`{"kind":"apps","target":"1"}`:         "kind",
		`{"kind":"app","target":"x"}`:          "target",
		`{"kind":"app","target":"1","x":true}`: "x",
		`not json`:                             "body",
	} {
		if code, out := call(t, s, "POST", "/v1/watches", "secret", body); code != http.StatusBadRequest || out["field"] != field {
			t.Errorf("watch %s: %d %v, want 400 naming %s", body, code, out, field)
		}
	}
	if n := count("alert_watches"); n != 0 {
		t.Fatalf("%d watches after bad input", n)
	}
	code, out := call(t, s, "POST", "/v1/watches", "secret", `{"kind":"keyword","target":"Budget"}`)
	if code != http.StatusCreated || out["target"] != "budget" || out["id"] == nil {
		t.Fatalf("add watch: %d %v", code, out)
	}
	id := int64(out["id"].(float64))
	if code, out := call(t, s, "POST", "/v1/watches", "secret", `{"kind":"keyword","target":"budget"}`); code != http.StatusConflict || out["field"] != "target" {
		t.Fatalf("duplicate watch: %d %v", code, out)
	}

	for body, field := range map[string]string{
		`{"type":"rank_change","channel":"slack","url":"https://hooks.example.com/x"}`:                                   "places",
		`{"type":"rank_change","places":3,"channel":"slack","url":"http://hooks.example.com/x"}`:                         "url",
		`{"type":"rank_change","places":3,"channel":"slack","url":"https://10.1.2.3/x"}`:                                 "url",
		`{"type":"rank_change","places":3,"channel":"webhook","url":"http://127.0.0.1:8080/x"}`:                          "url",
		`{"type":"rank_change","places":3,"channel":"slack","url":"https://[::1]/x"}`:                                    "url",
		`{"type":"rank_change","places":3,"watch_id":999,"channel":"slack","url":"https://hooks.example.com/x"}`:         "watch_id",
		`{"type":"new_version","watch_id":` + fmt.Sprint(id) + `,"channel":"slack","url":"https://hooks.example.com/x"}`: "watch_id",
		`{"type":"new_version","places":3,"channel":"slack","url":"https://hooks.example.com/x"}`:                        "places",
	} {
		if code, out := call(t, s, "POST", "/v1/alert-rules", "secret", body); code != http.StatusBadRequest || out["field"] != field {
			t.Errorf("rule %s: %d %v, want 400 naming %s", body, code, out, field)
		}
	}
	if n := count("alert_rules"); n != 0 {
		t.Fatalf("%d rules after bad input", n)
	}
	code, out = call(t, s, "POST", "/v1/alert-rules", "secret", `{"type":"rank_change","places":3,"watch_id":`+fmt.Sprint(id)+`,"channel":"slack","url":"https://hooks.example.com/services/T/B/x"}`)
	if code != http.StatusCreated || out["secret"] == nil || out["places"] != 3.0 {
		t.Fatalf("add rule: %d %v", code, out)
	}
	code, out = call(t, s, "GET", "/v1/alert-rules", "", "")
	items, _ := out["items"].([]any)
	if code != http.StatusOK || len(items) != 1 {
		t.Fatalf("rules: %d %v", code, out)
	}
	if r := items[0].(map[string]any); r["secret"] != nil || r["url"] != "https://hooks.example.com/…" {
		t.Fatalf("a listed rule shows its secret or its URL's path: %v", r)
	}

	if code, out := call(t, s, "DELETE", "/v1/watches/abc", "secret", ""); code != http.StatusBadRequest || out["field"] != "id" {
		t.Fatalf("bad id: %d %v", code, out)
	}
	if code, out := call(t, s, "DELETE", "/v1/watches/999", "secret", ""); code != http.StatusNotFound || out["field"] != "id" {
		t.Fatalf("unknown id: %d %v", code, out)
	}
	if code, _ := call(t, s, "DELETE", fmt.Sprintf("/v1/watches/%d", id), "secret", ""); code != http.StatusOK || count("alert_watches") != 0 || count("alert_rules") != 0 {
		t.Fatalf("delete: %d", code)
	}

	for q, field := range map[string]string{"cursor=abc": "cursor", "cursor=0": "cursor", "limit=101": "limit", "limit=0": "limit"} {
		if code, out := call(t, s, "GET", "/v1/alerts?"+q, "", ""); code != http.StatusBadRequest || out["field"] != field {
			t.Errorf("alerts?%s: %d %v", q, code, out)
		}
	}
	if code, out := call(t, s, "GET", "/v1/alerts", "", ""); code != http.StatusOK || out["next_cursor"] != nil {
		t.Fatalf("alerts: %d %v", code, out)
	}
	if code, _ := call(t, NewServer(&Server{}), "GET", "/v1/watches", "", ""); code != http.StatusServiceUnavailable {
		t.Fatalf("unbound: %d", code)
	}
}
