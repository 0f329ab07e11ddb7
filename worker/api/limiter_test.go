package api

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"storecrawl/durable/limiter"
)

const clientToken = "client-secret"

func TestAcquireFrontValidatesBeforeAnyObjectIsCalled(t *testing.T) {
	f := AcquireFront("Bearer "+clientToken, []byte(`{"key":"claude","limit":5,"windowInSeconds":10}`), -1, clientToken)
	if f.Status != 0 || f.Key != "claude" || f.Object != "limiter_client:claude" || f.Binding != "OMNI_LIMITER" || f.Limit != 5 || f.Window != 10 {
		t.Fatalf("front: %+v", f)
	}
	// The object gets the key in the clients' namespace, and reads the
	// same request from it.
	a, fe := limiter.ParseAcquire([]byte(f.Send))
	if fe != nil || a.Key != "client:claude" || a.Policy.Limit != 5 || a.Cost != 1 {
		t.Fatalf("sent %s: %+v %+v", f.Send, a, fe)
	}
	for body, field := range map[string]string{
		`{"key":"claude","limit":0,"windowInSeconds":10}`: "limit",
		`not json`: "body",
		`{"key":"","limit":1,"windowInSeconds":1}`:        "key",
		`{"key":"k","limit":1,"windowInSeconds":1,"x":1}`: "x",
		// Client bounds: a ring of at most MaxClientRing rows, a window of at most an hour.
		`{"key":"k","limit":1001,"windowInSeconds":1}`:  "limit",
		`{"key":"k","limit":10,"windowInSeconds":3601}`: "windowInSeconds",
	} {
		if f := AcquireFront("Bearer "+clientToken, []byte(body), -1, clientToken); f.Status != 400 || f.Body == nil || f.Body.Field != field || f.Object != "" {
			t.Errorf("%.40s: want 400 naming %s, got %+v", body, field, f)
		}
	}
	// Past the bound, read (cut at MaxControlBody+1) or only declared, it
	// is a 413 naming body and the bound.
	long := []byte(`{"key":"` + strings.Repeat("k", MaxControlBody) + `"}`)
	for _, c := range []struct {
		body []byte
		size int64
	}{{long[:MaxControlBody+1], -1}, {nil, 6 << 20}, {long[:10], MaxControlBody + 1}} {
		f := AcquireFront("Bearer "+clientToken, c.body, c.size, clientToken)
		if f.Status != 413 || f.Body == nil || f.Body.Field != "body" || !strings.Contains(f.Body.Error, "4096 bytes") || f.Object != "" {
			t.Errorf("%d bytes read, size %d: want 413 naming body and 4096, got %+v", len(c.body), c.size, f)
		}
	}
}

// TestAcquireNeedsTheClientToken: an acquire without the client token (or
// with the admin token, or with none configured) is a 401 naming
// authorization, before the body is even read (acquire
// was anonymous).
func TestAcquireNeedsTheClientToken(t *testing.T) {
	body := []byte(`{"key":"claude","limit":5,"windowInSeconds":10}`)
	for _, c := range []struct{ auth, token string }{
		{"", clientToken}, {"Bearer wrong", clientToken}, {clientToken, clientToken}, {"Bearer admin-secret", clientToken},
		{"Bearer ", ""}, {"Bearer " + clientToken, ""},
	} {
		f := AcquireFront(c.auth, body, -1, c.token)
		if f.Status != 401 || f.Body == nil || f.Body.Field != "authorization" || f.Object != "" || f.Headers["WWW-Authenticate"] == "" {
			t.Errorf("auth %q, token %q: %+v", c.auth, c.token, f)
		}
	}
	// Checked first: an anonymous bad body learns nothing about the body.
	if f := AcquireFront("", []byte(`not json`), -1, clientToken); f.Status != 401 {
		t.Fatalf("anonymous bad body: %+v", f)
	}
}

func TestAcquireHeaders(t *testing.T) {
	f := Front{Key: "claude", Limit: 5, Window: 10}
	h := AcquireHeaders(f, []byte(`{"allowed":false,"retryAfterMs":1500,"remaining":0,"resetMs":1500}`))
	if h["Ratelimit-Policy"] != `"claude";q=5;w=10` || h["Ratelimit"] != `"claude";r=0;t=2` || h["Retry-After"] != "2" {
		t.Fatalf("refusal headers: %v", h)
	}
	h = AcquireHeaders(f, []byte(`{"allowed":true,"retryAfterMs":0,"remaining":4,"resetMs":10000}`))
	if h["Ratelimit"] != `"claude";r=4;t=10` || h["Retry-After"] != "" {
		t.Fatalf("admission headers: %v", h)
	}
	if AcquireHeaders(f, []byte(`{`)) != nil {
		t.Fatal("an unreadable answer gets no headers")
	}
}

// limiterCalls records the calls the router makes to limiter objects.
type limiterCalls struct{ calls []string }

func (l *limiterCalls) CallLimiter(_ context.Context, key, method, path string, body []byte) (int, []byte, error) {
	l.calls = append(l.calls, key+" "+method+" "+path+" "+string(body))
	if path == "/status" && key == "client:unknown" {
		return 404, []byte(`{"error":"no acquire has been made for this key","field":"key"}`), nil
	}
	if path == "/status" {
		return 200, []byte(`{"used":1}`), nil
	}
	return 200, []byte(`{"allowed":true,"retryAfterMs":0,"remaining":4,"resetMs":1000}`), nil
}

func limiterServer(l *limiterCalls, token string) *Server {
	return NewServer(&Server{Limiter: l, AdminToken: func() string { return "admin-secret" }, ClientToken: func() string { return token }})
}

// TestRouterAcquireLandsInTheClientNamespace: a client naming the crawler's
// key "upstream-catalogue" reaches "client:upstream-catalogue", never the
// crawler's own object; anonymous and admin-token acquires reach nothing.
func TestRouterAcquireLandsInTheClientNamespace(t *testing.T) {
	l := &limiterCalls{}
	s := limiterServer(l, clientToken)
	body := `{"key":"upstream-catalogue","limit":1000,"windowInSeconds":60,"cost":1000}`
	for _, token := range []string{"", "admin-secret", "wrong"} {
		if code, out := call(t, s, "POST", "/v1/limiter/acquire", token, body); code != 401 || out["field"] != "authorization" {
			t.Errorf("token %q: %d %v", token, code, out)
		}
	}
	if len(l.calls) != 0 {
		t.Fatalf("a refused acquire reached a limiter: %v", l.calls)
	}
	req := httptest.NewRequest("POST", "/v1/limiter/acquire", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+clientToken)
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	if rec.Code != 200 || len(l.calls) != 1 || !strings.HasPrefix(l.calls[0], "client:upstream-catalogue POST /acquire ") ||
		!strings.Contains(l.calls[0], `"key":"client:upstream-catalogue"`) {
		t.Fatalf("acquire: %d, calls %v", rec.Code, l.calls)
	}
	if h := rec.Header().Get("RateLimit-Policy"); h != `"upstream-catalogue";q=1000;w=60` {
		t.Fatalf("headers name the key as the client did: %q", h)
	}
	// No client token configured: every acquire is refused.
	l.calls = nil
	if code, _ := call(t, limiterServer(l, ""), "POST", "/v1/limiter/acquire", clientToken, body); code != 401 || len(l.calls) != 0 {
		t.Fatalf("unconfigured token: %d %v", code, l.calls)
	}
}

// TestRouterStatusNamespaces: a client key's status needs the client token
// and reads the client namespace; the internal limits are public, read only,
// and only the named ones; bad input is a 400 that calls nothing.
func TestRouterStatusNamespaces(t *testing.T) {
	l := &limiterCalls{}
	s := limiterServer(l, clientToken)
	if code, out := call(t, s, "GET", "/v1/limiter/status?key=claude", "", ""); code != 401 || out["field"] != "authorization" {
		t.Fatalf("anonymous client status: %d %v", code, out)
	}
	for _, c := range []struct{ query, token, field string }{
		{"key=", clientToken, "key"},
		{"key=nope&namespace=internal", "", "key"},
		{"key=client:x&namespace=internal", "", "key"},
		{"key=x&namespace=other", clientToken, "namespace"},
	} {
		if code, out := call(t, s, "GET", "/v1/limiter/status?"+c.query, c.token, ""); code != 400 || out["field"] != c.field {
			t.Errorf("%s: %d %v", c.query, code, out)
		}
	}
	if len(l.calls) != 0 {
		t.Fatalf("refused status calls reached a limiter: %v", l.calls)
	}
	if code, _ := call(t, s, "GET", "/v1/limiter/status?key=upstream-catalogue", clientToken, ""); code != 200 {
		t.Fatalf("client status: %d", code)
	}
	if code, _ := call(t, s, "GET", "/v1/limiter/status?key=upstream-catalogue&namespace=internal", "", ""); code != 200 {
		t.Fatalf("internal status: %d", code)
	}
	if code, out := call(t, s, "GET", "/v1/limiter/status?key=unknown", clientToken, ""); code != 404 || out["field"] != "key" {
		t.Fatalf("unknown key: %d %v", code, out)
	}
	want := []string{"client:upstream-catalogue GET /status ", "upstream-catalogue GET /status ", "client:unknown GET /status "}
	if strings.Join(l.calls, "|") != strings.Join(want, "|") {
		t.Fatalf("calls %q, want %q", l.calls, want)
	}
}
