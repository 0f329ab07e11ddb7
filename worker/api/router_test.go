package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"storecrawl/durable/ledger"
	"storecrawl/worker/catalogue"
	"storecrawl/worker/d1"
	"storecrawl/worker/ledgerdb"
	"storecrawl/worker/reviews"
)

type recordingController struct {
	calls []string
	fail  bool
}

func (c *recordingController) CallController(_ context.Context, method, path string, body []byte) (int, []byte, error) {
	if c.fail {
		return 0, nil, errors.New("stub unreachable")
	}
	c.calls = append(c.calls, method+" "+path+" "+string(body))
	return 200, []byte(`{"running":true}`), nil
}

type oneApp struct{}

func (oneApp) App(_ context.Context, id int64) (json.RawMessage, bool, error) {
	if id == 7 {
		return json.RawMessage(`{"track_id":7}`), true, nil
	}
	return nil, false, nil
}

type noCron struct{}

func (noCron) LastCronRuns(context.Context) (json.RawMessage, error) {
	return json.RawMessage(`{}`), nil
}

func newTestServer(c *recordingController) *Server {
	return NewServer(&Server{Controller: c, Apps: oneApp{}, Cron: noCron{}, AdminToken: func() string { return "secret" }})
}

func call(t *testing.T, s http.Handler, method, path, token, body string) (int, map[string]any) {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	raw, _ := io.ReadAll(rec.Body)
	var out map[string]any
	json.Unmarshal(raw, &out)
	return rec.Code, out
}

func TestControlPlaneAuthAndValidation(t *testing.T) {
	c := &recordingController{}
	s := newTestServer(c)
	cases := []struct {
		name, method, path, token, body string
		status                          int
		field                           string
	}{
		{"no token", "POST", "/v1/enrichment/stop", "", "", 401, "authorization"},
		{"wrong token", "POST", "/v1/enrichment/start", "nope", "", 401, "authorization"},
		{"no token", "POST", "/v1/enrichment/resume-pages", "", "", 401, "authorization"},
		{"tune out of range", "POST", "/v1/enrichment/tune", "secret", `{"batch_size": 500}`, 400, "batch_size"},
		{"tune malformed", "POST", "/v1/enrichment/tune", "secret", `{"batch_size": `, 400, "body"},
		{"tune unknown field", "POST", "/v1/enrichment/tune", "secret", `{"turbo": true}`, 400, "turbo"},
		{"stop with a body", "POST", "/v1/enrichment/stop", "secret", `{"now": true}`, 400, "body"},
		{"bad app id", "GET", "/v1/apps/abc", "", "", 400, "id"},
		{"missing app", "GET", "/v1/apps/8", "", "", 404, "id"},
		{"unknown route", "GET", "/v2/x", "", "", 404, "path"},
	}
	for _, tc := range cases {
		status, body := call(t, s, tc.method, tc.path, tc.token, tc.body)
		if status != tc.status || body["field"] != tc.field {
			t.Errorf("%s: %d %v; want %d field %q", tc.name, status, body, tc.status, tc.field)
		}
	}
	if len(c.calls) != 0 {
		t.Fatalf("rejected calls reached the controller: %v", c.calls)
	}
	for _, ok := range []struct{ method, path, token, body, want string }{
		{"GET", "/v1/enrichment/status", "", "", "GET /status "},
		{"POST", "/v1/enrichment/stop", "secret", "", "POST /stop "},
		{"POST", "/v1/enrichment/start", "secret", "{}", "POST /start "},
		{"POST", "/v1/enrichment/resume-pages", "secret", "", "POST /resume-pages "},
		{"POST", "/v1/enrichment/tune", "secret", `{"interval_ms": 20000}`, `POST /tune {"interval_ms": 20000}`},
	} {
		c.calls = nil
		if status, _ := call(t, s, ok.method, ok.path, ok.token, ok.body); status != 200 || len(c.calls) != 1 || c.calls[0] != ok.want {
			t.Errorf("%s %s: %d %v", ok.method, ok.path, status, c.calls)
		}
	}
	if status, body := call(t, s, "GET", "/v1/apps/7", "", ""); status != 200 || body["track_id"] != 7.0 {
		t.Errorf("app: %d %v", status, body)
	}
}

func TestNoTokenConfiguredRefusesEverything(t *testing.T) {
	c := &recordingController{}
	s := NewServer(&Server{Controller: c, AdminToken: func() string { return "" }})
	if status, _ := call(t, s, "POST", "/v1/enrichment/stop", "", ""); status != 401 {
		t.Fatalf("status %d", status)
	}
	if status, _ := call(t, s, "POST", "/v1/enrichment/stop", " ", ""); status != 401 {
		t.Fatalf("blank token accepted: %d", status)
	}
}

func TestControllerUnavailableIs502(t *testing.T) {
	s := newTestServer(&recordingController{fail: true})
	if status, _ := call(t, s, "GET", "/v1/enrichment/status", "", ""); status != 502 {
		t.Fatalf("status %d", status)
	}
}

func TestHealthCountsRequests(t *testing.T) {
	s := newTestServer(&recordingController{})
	_, a := call(t, s, "GET", "/health", "", "")
	_, b := call(t, s, "GET", "/health", "", "")
	if a["ok"] != true || a["instance_id"] != b["instance_id"] || b["requests_served"].(float64) != a["requests_served"].(float64)+1 {
		t.Fatalf("%v %v", a, b)
	}
}

// fakeLedger records the history queries it was asked.
type fakeLedger struct {
	asked []ledgerdb.HistoryQuery
	pages []string // "after/n" of each LedgerPage
}

func (f *fakeLedger) History(_ context.Context, q ledgerdb.HistoryQuery) (ledgerdb.History, error) {
	f.asked = append(f.asked, q)
	return ledgerdb.BuildHistory(q, nil, nil), nil
}
func (f *fakeLedger) PipelineCounts(context.Context) (map[string]int64, error) {
	return map[string]int64{"apps_known": 7, "apps_pending": 2}, nil
}
func (f *fakeLedger) LedgerPage(_ context.Context, after string, n int) (ledgerdb.Page, error) {
	f.pages = append(f.pages, fmt.Sprintf("%s/%d", after, n))
	return ledgerdb.Page{Writers: []ledger.Result{{Source: "limiter:client:a", Status: ledger.StatusOK}}, Next: "limiter:client:a"}, nil
}
func (f *fakeLedger) Mismatches(context.Context) (ledgerdb.Mismatches, error) {
	return ledgerdb.Mismatches{Repaired: []ledger.Mismatch{{Source: "scheduler:v1", Delta: map[string]int64{"runs.a": 1},
		FirstSeen: 1, ClosedAt: 2, DurationMs: 1, Resolution: ledger.ResolutionRepaired}}}, nil
}
func (f *fakeLedger) ConsumerStats() map[string]int64 { return map[string]int64{} }

func TestHistoryRoutesValidateBeforeReading(t *testing.T) {
	l := &fakeLedger{}
	s := NewServer(&Server{Ledger: l})
	for _, bad := range []struct{ query, field string }{
		{"target=elsewhere", "target"}, {"since=tomorrow", "since"}, {"bucket_s=0", "bucket_s"},
	} {
		if code, body := call(t, s, "GET", "/v1/history?"+bad.query, "", ""); code != 400 || body["field"] != bad.field {
			t.Errorf("%s: %d %v", bad.query, code, body)
		}
	}
	if len(l.asked) != 0 {
		t.Fatalf("a bad request reached the store: %+v", l.asked)
	}
	code, body := call(t, s, "GET", "/v1/history?bucket_s=300", "", "")
	if code != 200 || body["bucket_s"] != float64(300) || body["points"] == nil || len(l.asked) != 1 {
		t.Fatalf("history: %d %v", code, body)
	}
	code, body = call(t, s, "GET", "/v1/pipeline/counts", "", "")
	if code != 200 || body["apps_known"] != float64(7) || body["clusters"] != float64(0) || body["as_of"] == nil {
		t.Fatalf("counts: %d %v", code, body)
	}
}

type deadLetters struct {
	limit  int
	cursor string
}

func (d *deadLetters) DeadLetters(_ context.Context, limit int, cursor string) ([]json.RawMessage, string, error) {
	d.limit, d.cursor = limit, cursor
	if cursor == "bad" {
		return nil, "", d1.ErrBadCursor
	}
	return []json.RawMessage{json.RawMessage(`{"message_id":"m1"}`)}, "c2", nil
}

type sentEvents []string

func (s *sentEvents) Send(_ context.Context, body string) error {
	*s = append(*s, body)
	return nil
}

func TestDeadLettersAndTestOnlyEventInjection(t *testing.T) {
	dl := &deadLetters{}
	sent := &sentEvents{}
	s := NewServer(&Server{Dead: dl, AdminToken: func() string { return "secret" }})

	if code, out := call(t, s, "GET", "/v1/system/dead-letters?limit=0", "", ""); code != 400 || out["field"] != "limit" {
		t.Fatalf("bad limit: %d %v", code, out)
	}
	code, out := call(t, s, "GET", "/v1/system/dead-letters?limit=1&cursor=c1", "", "")
	if items, _ := out["items"].([]any); code != 200 || len(items) != 1 || out["next_cursor"] != "c2" || dl.limit != 1 || dl.cursor != "c1" {
		t.Fatalf("list: %d %v", code, out)
	}
	for q, field := range map[string]string{"offset=3": "offset", "cursor=bad": "cursor", "format=xml": "format"} {
		if code, out := call(t, s, "GET", "/v1/system/dead-letters?"+q, "", ""); code != 400 || out["field"] != field {
			t.Errorf("%s: %d %v, want 400 naming %s", q, code, out, field)
		}
	}

	// Off (production): the route does not exist, even with the token.
	if code, _ := call(t, s, "POST", "/__test/events", "secret", `{"type":"x"}`); code != 404 || len(*sent) != 0 {
		t.Fatalf("test route must be absent when off: %d", code)
	}
	s = NewServer(&Server{Dead: dl, TestEvents: sent, AdminToken: func() string { return "secret" }})
	if code, _ := call(t, s, "POST", "/__test/events", "", `{"type":"x"}`); code != 401 || len(*sent) != 0 {
		t.Fatalf("unauthenticated: %d", code)
	}
	if code, out := call(t, s, "POST", "/__test/events", "secret", `[1]`); code != 400 || out["field"] != "body" || len(*sent) != 0 {
		t.Fatalf("not an object: %d %v", code, out)
	}
	if code, _ := call(t, s, "POST", "/__test/events", "secret", `{"type":"e2e-poison"}`); code != 202 || len(*sent) != 1 || (*sent)[0] != `{"type":"e2e-poison"}` {
		t.Fatalf("sent %v", *sent)
	}
}

type recordingReparse struct{ started []string }

func (r *recordingReparse) StartReparse(_ context.Context, scope string) (json.RawMessage, error) {
	r.started = append(r.started, scope)
	return json.RawMessage(`{"id":1,"scope":"` + scope + `"}`), nil
}
func (r *recordingReparse) ReparseStatus(context.Context) (json.RawMessage, error) {
	return json.RawMessage(`{"id":1}`), nil
}

type recordingScheduler struct{ calls []string }

func (s *recordingScheduler) CallScheduler(_ context.Context, method, path string, body []byte) (int, []byte, error) {
	s.calls = append(s.calls, method+" "+path+" "+string(body))
	return 200, []byte(`{}`), nil
}

func TestReparseRoute(t *testing.T) {
	rp, sch := &recordingReparse{}, &recordingScheduler{}
	s := NewServer(&Server{Reparse: rp, Scheduler: sch, AdminToken: func() string { return "secret" }})
	for _, bad := range []struct{ token, body, field string }{
		{"", `{"scope":"all"}`, "authorization"},
		{"secret", `{"scope":"everything"}`, "scope"},
		{"secret", `{"scope":"all","now":true}`, "scope"},
	} {
		if status, body := call(t, s, "POST", "/v1/enrichment/reparse", bad.token, bad.body); body["field"] != bad.field || status/100 != 4 {
			t.Errorf("%s: %d %v", bad.body, status, body)
		}
	}
	if len(rp.started)+len(sch.calls) != 0 {
		t.Fatalf("a refused request changed something: %v %v", rp.started, sch.calls)
	}
	if status, body := call(t, s, "POST", "/v1/enrichment/reparse", "secret", ""); status != 202 || body["scope"] != "failed" {
		t.Fatalf("default scope: %d %v", status, body)
	}
	if status, _ := call(t, s, "POST", "/v1/enrichment/reparse", "secret", `{"scope":"incomplete"}`); status != 202 {
		t.Fatalf("incomplete: %d", status)
	}
	if len(rp.started) != 2 || rp.started[1] != "incomplete" || len(sch.calls) != 2 || sch.calls[0] != `POST /run-now {"task":"page-reparse"}` {
		t.Fatalf("started %v, scheduler %v", rp.started, sch.calls)
	}
	if status, body := call(t, s, "GET", "/v1/enrichment/reparse", "", ""); status != 200 || body["id"] != 1.0 {
		t.Fatalf("status: %d %v", status, body)
	}
}

type recordingFailed struct {
	classes []string
	n       int
}

func (f *recordingFailed) RetryFailed(_ context.Context, class string, olderThan, now time.Time) (int, error) {
	f.classes = append(f.classes, class)
	return f.n, nil
}

func TestRetryFailedRoute(t *testing.T) {
	f := &recordingFailed{n: 3}
	s := NewServer(&Server{Failed: f, RetryFailedBatch: 3, AdminToken: func() string { return "secret" }})
	for _, bad := range []struct{ token, body, field string }{
		{"", `{}`, "authorization"},
		{"secret", `{"class":"rate_limit"}`, "class"},
		{"secret", `{"class":"parse_error","all":true}`, "class"},
		{"secret", `[1]`, "class"},
	} {
		if status, body := call(t, s, "POST", "/v1/enrichment/retry-failed", bad.token, bad.body); body["field"] != bad.field || status/100 != 4 {
			t.Errorf("%s: %d %v", bad.body, status, body)
		}
	}
	if len(f.classes) != 0 {
		t.Fatalf("a refused request requeued something: %v", f.classes)
	}
	if status, body := call(t, s, "POST", "/v1/enrichment/retry-failed", "secret", ""); status != 200 || body["requeued"] != 3.0 || body["more"] != true {
		t.Fatalf("all classes: %d %v", status, body)
	}
	f.n = 1
	if status, body := call(t, s, "POST", "/v1/enrichment/retry-failed", "secret", `{"class":"parse_error"}`); status != 200 || body["more"] != false {
		t.Fatalf("one class: %d %v", status, body)
	}
	if len(f.classes) != 2 || f.classes[0] != "" || f.classes[1] != "parse_error" {
		t.Fatalf("classes %v", f.classes)
	}
}

type recordingReplay struct{ ids []string }

func (r *recordingReplay) ReplayDeadLetters(ctx context.Context, id string, send func(context.Context, string) error) (ledgerdb.ReplayResult, error) {
	r.ids = append(r.ids, id)
	if id == "gone" {
		return ledgerdb.ReplayResult{}, ledgerdb.ErrNoSuchDeadLetter
	}
	if err := send(ctx, `{"type":"facts"}`); err != nil {
		return ledgerdb.ReplayResult{}, err
	}
	return ledgerdb.ReplayResult{Replayed: []string{"m1"}, Skipped: []ledgerdb.ReplaySkip{}}, nil
}

func TestDeadLetterReplayRoute(t *testing.T) {
	rp, q := &recordingReplay{}, &sentEvents{}
	s := NewServer(&Server{Replay: rp, Requeue: q, AdminToken: func() string { return "secret" }})
	for _, bad := range []struct{ token, body, field string }{
		{"", `{}`, "authorization"},
		{"secret", `{"message_id":1}`, "message_id"},
		{"secret", `{"id":"m1"}`, "message_id"},
		{"secret", `{"message_id":"` + strings.Repeat("m", MaxMessageIDLen+1) + `"}`, "message_id"},
	} {
		if status, body := call(t, s, "POST", "/v1/system/dead-letters/replay", bad.token, bad.body); body["field"] != bad.field || status/100 != 4 {
			t.Errorf("%s: %d %v", bad.body, status, body)
		}
	}
	if len(rp.ids)+len(*q) != 0 {
		t.Fatal("a refused call replayed something")
	}
	if status, body := call(t, s, "POST", "/v1/system/dead-letters/replay", "secret", ""); status != 200 || len(body["replayed"].([]any)) != 1 {
		t.Fatalf("replay: %d %v", status, body)
	}
	if status, body := call(t, s, "POST", "/v1/system/dead-letters/replay", "secret", `{"message_id":"gone"}`); status != 404 || body["field"] != "message_id" {
		t.Fatalf("unknown id: %d %v", status, body)
	}
	if len(*q) != 1 || rp.ids[0] != "" {
		t.Fatalf("sent %v, ids %v", *q, rp.ids)
	}
	// The test-only faults route exists only when wired.
	if status, _ := call(t, s, "POST", "/__test/faults", "secret", `{"facts_fail_before_write":true}`); status != 404 {
		t.Fatalf("faults route without TEST_ROUTES: %d", status)
	}
}

// TestLedgerIsPaged: GET /v1/ledger reads one bounded page of writers:
// before, it reconciled every writer D1 had ever seen in
// one request. Bad paging is a 400 naming the field, and reads nothing.
func TestLedgerIsPaged(t *testing.T) {
	l := &fakeLedger{}
	s := NewServer(&Server{Ledger: l})
	for _, bad := range []struct{ query, field string }{
		{"limit=0", "limit"}, {fmt.Sprintf("limit=%d", ledgerdb.ReconcileBatch+1), "limit"}, {"limit=x", "limit"},
		{"after=" + strings.Repeat("a", ledger.MaxNameLen+1), "after"},
	} {
		if code, body := call(t, s, "GET", "/v1/ledger?"+bad.query, "", ""); code != 400 || body["field"] != bad.field {
			t.Errorf("%s: %d %v", bad.query, code, body)
		}
	}
	if len(l.pages) != 0 {
		t.Fatalf("a bad request read writers: %v", l.pages)
	}
	code, body := call(t, s, "GET", "/v1/ledger", "", "")
	if code != 200 || body["next_after"] != "limiter:client:a" || len(body["writers"].([]any)) != 1 || body["consumer"] == nil {
		t.Fatalf("first page: %d %v", code, body)
	}
	// The mismatch record: empty lists, not null.
	if m, ok := body["mismatches"].(map[string]any); !ok || m["open"] == nil || m["repaired"] == nil ||
		len(m["open"].([]any)) != 0 || len(m["repaired"].([]any)) != 1 || m["repaired"].([]any)[0].(map[string]any)["resolution"] != "repaired" {
		t.Fatalf("mismatches: %v", body["mismatches"])
	}
	call(t, s, "GET", "/v1/ledger?after=limiter:client:a&limit=3", "", "")
	if want := []string{fmt.Sprintf("/%d", ledgerdb.ReconcileBatch), "limiter:client:a/3"}; strings.Join(l.pages, " ") != strings.Join(want, " ") {
		t.Fatalf("pages asked %v, want %v", l.pages, want)
	}
}

// reviewsFake is the stored reviews of app 7 and the themes of cluster
// "photo"; it records what it was asked.
type reviewsFake struct{ asked []string }

func (f *reviewsFake) AppReviews(_ context.Context, id int64, limit int, cursor string) ([]json.RawMessage, string, error) {
	f.asked = append(f.asked, fmt.Sprintf("app %d %d %q", id, limit, cursor))
	if id != 7 {
		return nil, "", nil
	}
	return []json.RawMessage{json.RawMessage(`{"id":"r1","rating":1}`)}, "", nil
}

func (f *reviewsFake) ClusterThemes(_ context.Context, id string) ([]reviews.Theme, int, bool, error) {
	f.asked = append(f.asked, "cluster "+id)
	if id != "photo" {
		return nil, 0, false, nil
	}
	return []reviews.Theme{{Phrase: "log in", Reviews: 3, Share: 0.3, ExampleIDs: []string{"r1"}}}, 10, true, nil
}

func TestReviewAndThemeRoutes(t *testing.T) {
	f := &reviewsFake{}
	s := NewServer(&Server{Reviews: f})
	get := func(path string) (int, map[string]any) {
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		var out map[string]any
		json.Unmarshal(rec.Body.Bytes(), &out)
		return rec.Code, out
	}
	if code, out := get("/v1/apps/7/reviews?limit=5&cursor=c"); code != 200 || len(out["items"].([]any)) != 1 || out["limit"] != 5.0 || out["next_cursor"] != nil {
		t.Fatalf("reviews: %d %v", code, out)
	}
	for path, field := range map[string]string{"/v1/apps/x/reviews": "id", "/v1/apps/7/reviews?limit=0": "limit", "/v1/apps/7/reviews?offset=0": "offset"} {
		if code, out := get(path); code != 400 || out["field"] != field {
			t.Errorf("%s: %d %v, want 400 naming %s", path, code, out, field)
		}
	}
	if code, out := get("/v1/clusters/photo/themes"); code != 200 || out["reviews"] != 10.0 || len(out["themes"].([]any)) != 1 {
		t.Fatalf("themes: %d %v", code, out)
	}
	if code, out := get("/v1/clusters/nope/themes"); code != 404 || out["field"] != "id" {
		t.Fatalf("unknown cluster: %d %v", code, out)
	}
	if code, _ := get("/v1/clusters/" + strings.Repeat("k", MaxClusterIDLen+1) + "/themes"); code != 400 {
		t.Fatalf("long cluster id: %d", code)
	}
	if fmt.Sprint(f.asked) != `[app 7 5 "c" cluster photo cluster nope]` {
		t.Fatalf("asked %v (bad input must reach no store)", f.asked)
	}
}

type fakeHistory struct{ asked []string }

func (f *fakeHistory) AppHistory(_ context.Context, q catalogue.HistoryQuery, _ time.Time) (json.RawMessage, bool, error) {
	f.asked = append(f.asked, fmt.Sprintf("%d/%d/%d", q.TrackID, q.Days, q.Limit))
	if q.TrackID == 7 {
		return json.RawMessage(`{"track_id":7,"ratings":[]}`), true, nil
	}
	if q.TrackID == 9 {
		return nil, false, errors.New("D1 down")
	}
	return nil, false, nil
}

// TestAppHistoryRoute: 400 naming the field for a bad id, days or limit
// (and no read), 404 for an unknown app, 500 for a failed read, else the
// reader's JSON.
func TestAppHistoryRoute(t *testing.T) {
	h := &fakeHistory{}
	s := NewServer(&Server{Apps: oneApp{}, AppHistory: h, Cron: noCron{}, AdminToken: func() string { return "secret" }})
	for _, c := range []struct {
		path   string
		status int
		field  string
	}{
		{"/v1/apps/abc/history", 400, "id"},
		{"/v1/apps/-1/history", 400, "id"},
		{"/v1/apps/7/history?days=0", 400, "days"},
		{"/v1/apps/7/history?days=9999", 400, "days"},
		{"/v1/apps/7/history?limit=abc", 400, "limit"},
		{"/v1/apps/8/history", 404, "id"},
		{"/v1/apps/9/history", 500, ""},
	} {
		code, body := call(t, s, "GET", c.path, "", "")
		if code != c.status || (c.field != "" && body["field"] != c.field) {
			t.Errorf("%s: %d %v", c.path, code, body)
		}
	}
	if len(h.asked) != 2 {
		t.Fatalf("bad requests must not read: %v", h.asked)
	}
	code, body := call(t, s, "GET", "/v1/apps/7/history?days=30&limit=5", "", "")
	if code != 200 || body["track_id"] != 7.0 || h.asked[2] != "7/30/5" {
		t.Fatalf("%d %v %v", code, body, h.asked)
	}
	// The record route is still its own.
	if code, body := call(t, s, "GET", "/v1/apps/7", "", ""); code != 200 || body["track_id"] != 7.0 {
		t.Fatalf("record: %d %v", code, body)
	}
}
