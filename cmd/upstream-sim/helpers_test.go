package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// testApps is large enough to contain several broken (/97) pages.
const testApps = 300

var testCatalogue = sync.OnceValue(func() *Catalogue { return NewCatalogue(testApps, 1) })

type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// calmConfig never refuses in a normal test and adds no latency.
func calmConfig() Config {
	return Config{RatePerMin: maxRatePerMin, Burst: maxBurst, OnExceed: http.StatusTooManyRequests}
}

// newTestServer starts the simulator over real HTTP on loopback.
func newTestServer(t *testing.T, cfg Config) (*httptest.Server, *fakeClock) {
	t.Helper()
	clock := &fakeClock{now: t0}
	ts := httptest.NewServer(NewServer(testCatalogue(), Options{Config: cfg, Seed: 1, Now: clock.Now}))
	t.Cleanup(ts.Close)
	return ts, clock
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func do(t *testing.T, method, url, body string) response {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{resp.StatusCode, resp.Header, b}
}

func get(t *testing.T, url string) response { return do(t, http.MethodGet, url, "") }

func post(t *testing.T, url, body string) response { return do(t, http.MethodPost, url, body) }

func decodeJSON[T any](t *testing.T, b []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	return v
}
