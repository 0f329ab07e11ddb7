package upstream

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"storecrawl/internal/objects"
)

func TestGetClassifies(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("User-Agent") != "" && r.Header.Get("X-Custom") != "" {
			t.Error("unexpected custom headers")
		}
		w.Write([]byte(`{"a":1}`))
	})
	mux.HandleFunc("/limited", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "7")
		w.WriteHeader(429)
	})
	mux.HandleFunc("/blocked", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(403) })
	mux.HandleFunc("/boom", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(503) })
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) { time.Sleep(300 * time.Millisecond) })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	c := &Client{HTTP: srv.Client(), Timeout: 100 * time.Millisecond}
	cases := []struct {
		path  string
		class objects.Class
		ra    int
	}{
		{"/ok", objects.ClassOK, 0},
		{"/limited", objects.ClassRateLimit, 7},
		{"/blocked", objects.ClassRateLimit, 0},
		{"/boom", objects.ClassServerError, 0},
		{"/missing", objects.ClassNotFound, 0},
		{"/slow", objects.ClassTimeout, 0},
	}
	for _, tc := range cases {
		r := c.Get(context.Background(), srv.URL+tc.path)
		if r.Class != tc.class || r.RetryAfterS != tc.ra {
			t.Errorf("%s: class=%s ra=%d err=%v; want %s %d", tc.path, r.Class, r.RetryAfterS, r.Err, tc.class, tc.ra)
		}
		if (tc.class == objects.ClassOK) != (r.Err == nil) {
			t.Errorf("%s: err=%v", tc.path, r.Err)
		}
	}
	srv.Close()
	if r := c.Get(context.Background(), srv.URL+"/ok"); r.Class != objects.ClassTimeout {
		t.Errorf("refused connection: %s", r.Class)
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := map[string]int{
		"":                              0,
		"30":                            30,
		"-3":                            0,
		"soon":                          0,
		"Thu, 01 Jan 2026 00:01:00 GMT": 60,
		"Wed, 31 Dec 2025 00:01:00 GMT": 0,
	}
	for in, want := range cases {
		if got := RetryAfter(in, now); got != want {
			t.Errorf("RetryAfter(%q) = %d, want %d", in, got, want)
		}
	}
}

func TestRateLimitBudget(t *testing.T) {
	cases := []struct {
		h         map[string]string
		remaining int
		reset     time.Duration
	}{
		{map[string]string{}, -1, 0},
		{map[string]string{"RateLimit-Remaining": "3", "RateLimit-Reset": "7"}, 3, 7 * time.Second},
		{map[string]string{"X-RateLimit-Minute-Remaining": "0"}, 0, 0},
		{map[string]string{"RateLimit": "limit=10, remaining=0, reset=12"}, 0, 12 * time.Second},
		{map[string]string{"X-RateLimit-Remaining": "abc"}, -1, 0},
	}
	for _, c := range cases {
		h := http.Header{}
		for k, v := range c.h {
			h.Set(k, v)
		}
		r, d := RateLimitBudget(h)
		if r != c.remaining || d != c.reset {
			t.Errorf("%v: %d %s; want %d %s", c.h, r, d, c.remaining, c.reset)
		}
	}
}

// TestHostileHoldsAreCapped: no header can hold the crawler longer than
// MaxHold, whatever form or size it takes.
func TestHostileHoldsAreCapped(t *testing.T) {
	headers := map[string][2]string{
		"/day":          {"Retry-After", "86400"},
		"/epoch":        {"RateLimit-Reset", "9999999999"},
		"/combined":     {"RateLimit", "remaining=0, reset=99999999999999999"},
		"/overflow":     {"Retry-After", "99999999999999999999999999"},
		"/date":         {"Retry-After", "Fri, 31 Dec 9999 23:59:59 GMT"},
		"/xreset-epoch": {"X-RateLimit-Reset", "4102444800"},
		"/fine":         {"Retry-After", "30"},
	}
	mux := http.NewServeMux()
	for path, h := range headers {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set(h[0], h[1])
			w.WriteHeader(429)
		})
	}
	srv := httptest.NewServer(mux)
	defer srv.Close()
	c := &Client{HTTP: srv.Client(), MaxHold: 90 * time.Second}
	for path, h := range headers {
		r := c.Get(context.Background(), srv.URL+path)
		if r.RetryAfterS < 0 || r.RetryAfterS > 90 || r.Reset < 0 || r.Reset > 90*time.Second {
			t.Errorf("%s %s: hold %ds / %s escapes the cap", h[0], h[1], r.RetryAfterS, r.Reset)
		}
		capped := path != "/fine"
		if (r.HoldHint > 0) != capped {
			t.Errorf("%s: hint %s, capped %v", path, r.HoldHint, capped)
		}
	}
	if r := c.Get(context.Background(), srv.URL+"/fine"); r.RetryAfterS != 30 {
		t.Errorf("an honest Retry-After is kept: %d", r.RetryAfterS)
	}
	if r := (&Client{HTTP: srv.Client()}).Get(context.Background(), srv.URL+"/day"); r.RetryAfterS != int(DefaultMaxHold/time.Second) {
		t.Errorf("default cap: %d", r.RetryAfterS)
	}
}

// A client's Header goes with every request, redirects included; a
// client without one sends none of it.
func TestClientHeader(t *testing.T) {
	var got []string
	mux := http.NewServeMux()
	mux.HandleFunc("/hop", func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get("X-Apple-Store-Front"))
		http.Redirect(w, r, "/end", http.StatusFound)
	})
	mux.HandleFunc("/end", func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get("X-Apple-Store-Front"))
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	doer := srv.Client()
	doer.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	c := &Client{HTTP: doer, Header: http.Header{"X-Apple-Store-Front": {"143441-1,29"}}}
	if r := c.Get(context.Background(), srv.URL+"/hop"); r.Class != objects.ClassOK {
		t.Fatalf("%+v", r)
	}
	(&Client{HTTP: doer}).Get(context.Background(), srv.URL+"/end")
	if len(got) != 3 || got[0] != "143441-1,29" || got[1] != "143441-1,29" || got[2] != "" {
		t.Fatalf("headers sent: %q", got)
	}
}
