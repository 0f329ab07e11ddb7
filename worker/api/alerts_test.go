//go:build !js

package api

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
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
	// The page's rule form offers what the API accepts: the list carries
	// each kind's rule types with their threshold fields.
	offers, _ := out["rule_types"].([]any)
	if len(offers) != len(alerts.RuleTypes) || fmt.Sprint(offers[0]) != "map[fields:[places] kind:keyword type:rank_change]" {
		t.Fatalf("rule_types: %v", out["rule_types"])
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

// exportGet serves one GET and returns its status, content type and body.
func exportGet(s *Server, target string, hdr ...string) (int, string, string) {
	r := httptest.NewRequest("GET", target, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Set(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	return w.Code, w.Header().Get("Content-Type"), w.Body.String()
}

// The watch, rule and alert lists export as CSV and NDJSON like every
// list; alerts page by page from the cursor on.
func TestAlertListsExport(t *testing.T) {
	db, drv := d1test.New(t)
	svc := &alerts.Service{DB: db}
	s := NewServer(&Server{Alerts: svc, AdminToken: func() string { return "secret" }})
	if code, out := call(t, s, "POST", "/v1/watches", "secret", `{"kind":"keyword","target":"budget"}`); code != http.StatusCreated {
		t.Fatalf("watch: %d %v", code, out)
	}
	if code, out := call(t, s, "POST", "/v1/alert-rules", "secret", `{"type":"new_version","channel":"slack","url":"https://hooks.example.com/services/T/B/x"}`); code != http.StatusCreated {
		t.Fatalf("rule: %d %v", code, out)
	}
	for i := 1; i <= 5; i++ {
		drv.Exec(t, `INSERT INTO alerts (id, rule_id, type, payload, created_at) VALUES (?, 1, 'new_version', '{"n":1}', '2026-01-01T00:00:00.000Z')`, i)
	}
	code, ct, body := exportGet(s, "/v1/watches?format=csv")
	if lines := strings.Split(strings.TrimSpace(body), "\n"); code != 200 || ct != "text/csv; charset=utf-8" || len(lines) != 2 || !strings.HasPrefix(lines[0], "id,kind,target") || !strings.Contains(lines[1], "budget") {
		t.Errorf("watches csv: %d %s %q", code, ct, body)
	}
	code, ct, body = exportGet(s, "/v1/alert-rules", "Accept", "text/csv")
	if lines := strings.Split(strings.TrimSpace(body), "\n"); code != 200 || ct != "text/csv; charset=utf-8" || len(lines) != 2 || strings.Contains(body, "services/T") {
		t.Errorf("rules csv: %d %s %q", code, ct, body)
	}
	// Pages of two, all five from the top; from the cursor 3 on, two.
	code, ct, body = exportGet(s, "/v1/alerts?format=ndjson&limit=2")
	if lines := strings.Split(strings.TrimSpace(body), "\n"); code != 200 || ct != "application/x-ndjson" || len(lines) != 5 || !strings.HasPrefix(lines[0], `{"id":5,`) {
		t.Errorf("alerts ndjson: %d %s %q", code, ct, body)
	}
	code, _, body = exportGet(s, "/v1/alerts?format=ndjson&cursor=3")
	if lines := strings.Split(strings.TrimSpace(body), "\n"); code != 200 || len(lines) != 2 || !strings.HasPrefix(lines[0], `{"id":2,`) {
		t.Errorf("alerts resumed: %d %q", code, body)
	}
	for _, target := range []string{"/v1/watches?format=xml", "/v1/alert-rules?format=pdf", "/v1/alerts?format=json2"} {
		if code, out := call(t, s, "GET", target, "", ""); code != http.StatusBadRequest || out["field"] != "format" {
			t.Errorf("%s: %d %v", target, code, out)
		}
	}
}
