package api

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// writeRoutes are every route that takes a body, with the token it needs.
var writeRoutes = []struct{ path, token string }{
	{"/v1/enrichment/start", "secret"},
	{"/v1/enrichment/stop", "secret"},
	{"/v1/enrichment/reset", "secret"},
	{"/v1/enrichment/tune", "secret"},
	{"/v1/enrichment/reparse", "secret"},
	{"/v1/enrichment/retry-failed", "secret"},
	{"/v1/crawl/seeds", "secret"},
	{"/v1/scheduler/pause", "secret"},
	{"/v1/scheduler/resume", "secret"},
	{"/v1/scheduler/run", "secret"},
	{"/v1/scheduler/run-now", "secret"},
	{"/v1/analyst/run", "secret"},
	{"/v1/system/dead-letters/replay", "secret"},
	{"/v1/limiter/acquire", clientToken},
	{"/__test/events", "secret"},
	{"/__test/faults", "secret"},
}

// countingBody is a request body that counts what was read of it and
// whether it was closed.
type countingBody struct {
	r      io.Reader
	read   int64
	closed bool
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.read += int64(n)
	return n, err
}

func (b *countingBody) Close() error { b.closed = true; return nil }

func allRoutesServer() (*Server, *recordingController, *recordingScheduler, *sentEvents) {
	c, sch, sent := &recordingController{}, &recordingScheduler{}, &sentEvents{}
	s := NewServer(&Server{
		Controller: c, Scheduler: sch, Reparse: &recordingReparse{}, Failed: &recordingFailed{}, Seeds: &recordingSeeds{},
		TestEvents: sent, TestFaults: &faults{}, Requeue: sent,
		AdminToken: func() string { return "secret" }, ClientToken: func() string { return clientToken },
	})
	return s, c, sch, sent
}

type faults struct{ on bool }

func (f *faults) SetFailBeforeWrite(on bool) { f.on = on }

// TestLargeBodiesAre413 (a 5 MB+ body got a 500 "Network connection lost"
// under wrangler dev, a 1 MB one a 400): a body past a route's limit is a
// 413 naming body and the limit on every route that takes one; one whose
// Content-Length says so is refused before a byte is read; a chunked one
// is cut at the limit; and whatever the handler left unread is drained (up
// to MaxDrainBody) and closed before the answer goes out.
func TestLargeBodiesAre413(t *testing.T) {
	s, c, sch, sent := allRoutesServer()
	const size = 6 << 20
	for _, rt := range writeRoutes {
		for _, declared := range []bool{true, false} {
			body := &countingBody{r: bytes.NewReader(bytes.Repeat([]byte("a"), size))}
			req := httptest.NewRequest("POST", rt.path, nil)
			req.Body, req.ContentLength = body, -1
			if declared {
				req.ContentLength = size
			}
			req.Header.Set("Authorization", "Bearer "+rt.token)
			rec := &drainCheck{ResponseRecorder: httptest.NewRecorder(), body: body}
			s.ServeHTTP(rec, req)
			var out map[string]string
			json.Unmarshal(rec.Body.Bytes(), &out)
			if rec.Code != http.StatusRequestEntityTooLarge || out["field"] != "body" || !strings.Contains(out["error"], "bytes") {
				t.Errorf("%s (declared %v): %d %s; want 413 naming body and its limit", rt.path, declared, rec.Code, rec.Body)
			}
			if rec.readBeforeAnswer > MaxControlBody+1 || declared && rec.readBeforeAnswer != 0 {
				t.Errorf("%s (declared %v): %d bytes read before answering", rt.path, declared, rec.readBeforeAnswer)
			}
			if body.read != size || !body.closed {
				t.Errorf("%s (declared %v): %d of %d bytes drained, closed %v", rt.path, declared, body.read, size, body.closed)
			}
		}
	}
	if len(c.calls)+len(sch.calls)+len(*sent) != 0 {
		t.Fatalf("a refused request reached an object: %v %v %v", c.calls, sch.calls, *sent)
	}

	// No route takes more than MaxBody: the shim hands Go a request whose
	// Content-Length is past it without its body.
	for _, rt := range writeRoutes {
		req := httptest.NewRequest("POST", rt.path, strings.NewReader(strings.Repeat(" ", MaxBody+1)))
		req.Header.Set("Authorization", "Bearer "+rt.token)
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		if rec.Code != http.StatusRequestEntityTooLarge {
			t.Errorf("%s takes %d bytes, more than MaxBody: %d", rt.path, MaxBody+1, rec.Code)
		}
	}

	// Past MaxDrainBody the rest is left to Close (the JS reader's cancel).
	body := &countingBody{r: io.LimitReader(zeros{}, MaxDrainBody*2)}
	req := httptest.NewRequest("POST", "/v1/enrichment/tune", nil)
	req.Body, req.ContentLength = body, MaxDrainBody*2
	req.Header.Set("Authorization", "Bearer secret")
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	if rec.Code != 413 || body.read != MaxDrainBody || !body.closed {
		t.Fatalf("huge body: %d, %d bytes drained (bound %d), closed %v", rec.Code, body.read, MaxDrainBody, body.closed)
	}

	// A body within the limit is still read and judged: a 400 naming the field.
	if code, out := call(t, s, "POST", "/v1/enrichment/tune", "secret", `{"rate_per_min": 0}`); code != 400 || out["field"] != "rate_per_min" {
		t.Fatalf("small bad tune: %d %v", code, out)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// drainCheck notes how much of the body was read when the answer began.
type drainCheck struct {
	*httptest.ResponseRecorder
	body             *countingBody
	readBeforeAnswer int64
	answered         bool
}

func (d *drainCheck) WriteHeader(code int) {
	if !d.answered {
		d.answered, d.readBeforeAnswer = true, d.body.read
	}
	d.ResponseRecorder.WriteHeader(code)
}

// TestWrongMethodIs405WithAllow: a known path under a method it does not
// serve is a 405 with the Allow header and a JSON body naming the method
// (it was a 404: the "/" catch-all shadowed ServeMux's 405); an unknown
// path stays a 404 naming the path.
func TestWrongMethodIs405WithAllow(t *testing.T) {
	s, _, _, _ := allRoutesServer()
	for _, c := range []struct{ method, path, allow string }{
		{"GET", "/v1/enrichment/tune", "POST"},
		{"DELETE", "/v1/limiter/acquire", "POST"},
		{"POST", "/health", "GET, HEAD"},
		{"PUT", "/v1/enrichment/reparse", "GET, HEAD, POST"},
		{"POST", "/v1/apps/7", "GET, HEAD"},
	} {
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, httptest.NewRequest(c.method, c.path, nil))
		var out map[string]string
		json.Unmarshal(rec.Body.Bytes(), &out)
		if rec.Code != 405 || rec.Header().Get("Allow") != c.allow || out["field"] != "method" || !strings.Contains(out["error"], c.method) ||
			rec.Header().Get("Content-Type") != "application/json" {
			t.Errorf("%s %s: %d Allow %q %v; want 405 Allow %q", c.method, c.path, rec.Code, rec.Header().Get("Allow"), out, c.allow)
		}
	}
	for _, c := range []struct{ method, path string }{{"GET", "/no/such/route"}, {"POST", "/v1/nothing"}, {"GET", "/"}} {
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, httptest.NewRequest(c.method, c.path, nil))
		var out map[string]string
		json.Unmarshal(rec.Body.Bytes(), &out)
		if rec.Code != 404 || out["field"] != "path" || rec.Header().Get("Allow") != "" {
			t.Errorf("%s %s: %d %v; want 404 naming path", c.method, c.path, rec.Code, out)
		}
	}
	// The routes themselves still answer.
	if code, _ := call(t, s, "POST", "/v1/enrichment/stop", "secret", ""); code != 200 {
		t.Fatalf("stop: %d", code)
	}
}

// TestBearerSchemeIsCaseInsensitive (RFC 7235 §2.1): "bearer" and "BEARER"
// are the Bearer scheme; the token itself is compared exactly.
func TestBearerSchemeIsCaseInsensitive(t *testing.T) {
	for _, h := range []string{"Bearer secret", "bearer secret", "BEARER secret", "BeArEr secret"} {
		if !bearerOK(h, "secret") {
			t.Errorf("%q refused", h)
		}
	}
	for _, h := range []string{"Bearer Secret", "Basic secret", "Bearersecret", "secret", "Bearer  secret", "Bearer secret ", ""} {
		if bearerOK(h, "secret") {
			t.Errorf("%q admitted", h)
		}
	}
	if bearerOK("bearer ", "") {
		t.Error("an empty token admitted someone")
	}
	s, c, _, _ := allRoutesServer()
	req := httptest.NewRequest("POST", "/v1/enrichment/stop", nil)
	req.Header.Set("Authorization", "bearer secret")
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	if rec.Code != 200 || len(c.calls) != 1 {
		t.Fatalf("lower-case scheme on a route: %d %s", rec.Code, rec.Body)
	}
}

// TestJSONErrorsNameFieldAndRule: a body of the wrong shape is a 400
// naming the field and the rule, never encoding/json's words or a Go type
// (the scheduler's said `json: cannot unmarshal … Control.task`).
func TestJSONErrorsNameFieldAndRule(t *testing.T) {
	s, _, sch, _ := allRoutesServer()
	for _, c := range []struct{ path, body, field, msg string }{
		{"/v1/scheduler/run", `{"task": 5}`, "task", "task must be a string"},
		{"/v1/scheduler/pause", `{"until": 5}`, "until", "until must be a string"},
		{"/v1/scheduler/pause", `{"task": "charts"`, "body", "body: not valid JSON"},
		{"/v1/scheduler/run", `{"task": "charts-refresh", "wait": "yes"}`, "wait", "wait must be a boolean"},
		{"/v1/scheduler/run", `{"task": "all", "wait": true}`, "wait", `wait runs one task, not "all"`},
		{"/v1/enrichment/reparse", `{"scope": 5}`, "scope", "scope must be a string"},
		{"/v1/enrichment/retry-failed", `{"class": true}`, "class", "class must be a string"},
		{"/v1/system/dead-letters/replay", `{"message_id": 7}`, "message_id", "message_id must be a string"},
		{"/__test/faults", `{"facts_fail_before_write": "yes"}`, "facts_fail_before_write", "facts_fail_before_write must be a boolean"},
	} {
		code, out := call(t, s, "POST", c.path, "secret", c.body)
		if code != 400 || out["field"] != c.field || out["error"] != c.msg {
			t.Errorf("%s %s: %d %v; want 400 %q %q", c.path, c.body, code, out, c.field, c.msg)
		}
	}
	if len(sch.calls) != 0 {
		t.Fatalf("a refused request reached the scheduler: %v", sch.calls)
	}
}
