package main

import (
	"fmt"
	"net/http"
	"testing"
	"time"
)

// The HTTP simulator answers with the shared upstream model's rules: these
// check the wire side of each (the rules themselves are tested in
// internal/upstreammodel).

func TestRateLimitHeaders(t *testing.T) {
	cfg := Config{RatePerMin: 60, Burst: 2, OnExceed: http.StatusTooManyRequests, RatelimitHeaders: 1}
	ts, clock := newTestServer(t, cfg)
	lookup := fmt.Sprintf("%s/lookup?id=%d", ts.URL, baseTrackID+1)
	steps := []struct {
		advance          time.Duration
		status           int
		remaining, reset string
	}{
		{0, http.StatusOK, "1", "0"},
		{0, http.StatusOK, "0", "1"}, // the next token a second away at 60/min
		{0, http.StatusTooManyRequests, "0", "1"},
		{500 * time.Millisecond, http.StatusTooManyRequests, "0", "1"}, // 0.5 s, rounded up
		{500 * time.Millisecond, http.StatusOK, "0", "1"},
	}
	for i, s := range steps {
		clock.Advance(s.advance)
		r := get(t, lookup)
		if r.status != s.status || r.header.Get("RateLimit-Remaining") != s.remaining || r.header.Get("RateLimit-Reset") != s.reset {
			t.Fatalf("step %d: %d remaining %q reset %q, want %d %q %q", i, r.status,
				r.header.Get("RateLimit-Remaining"), r.header.Get("RateLimit-Reset"), s.status, s.remaining, s.reset)
		}
	}
	ts, _ = newTestServer(t, calmConfig())
	if r := get(t, ts.URL+"/lookup?id=1"); r.header.Get("RateLimit-Remaining") != "" {
		t.Fatal("RateLimit headers without ratelimit_headers")
	}
}

func TestLockoutAfterRefusalsPerMinute(t *testing.T) {
	cfg := Config{RatePerMin: 60, Burst: 1, OnExceed: http.StatusTooManyRequests, BlockS: 600, LockoutAfterRefusalsPerMin: 2}
	ts, clock := newTestServer(t, cfg)
	lookup := fmt.Sprintf("%s/lookup?id=%d", ts.URL, baseTrackID+1)
	for i, want := range []int{200, 429, 429} {
		if r := get(t, lookup); r.status != want {
			t.Fatalf("request %d: %d, want %d", i, r.status, want)
		}
	}
	if st := decodeJSON[Stats](t, get(t, ts.URL+"/__stats").body); st.BlockedUntilMS != 0 {
		t.Fatalf("2 refusals (the rule allows 2) blocked until %d", st.BlockedUntilMS)
	}
	get(t, lookup) // the third within the minute: locked out
	st := decodeJSON[Stats](t, get(t, ts.URL+"/__stats").body)
	if want := t0.Add(600 * time.Second).UnixMilli(); st.BlockedUntilMS != want {
		t.Fatalf("blocked_until_ms = %d, want %d", st.BlockedUntilMS, want)
	}
	clock.Advance(599 * time.Second) // the bucket is full, the lockout holds
	if r := get(t, lookup); r.status != http.StatusTooManyRequests {
		t.Fatalf("inside the lockout: %d", r.status)
	}
	clock.Advance(time.Second)
	if r := get(t, lookup); r.status != http.StatusOK {
		t.Fatalf("after the lockout: %d", r.status)
	}
}

func TestServerErrorsAndTimeouts(t *testing.T) {
	cfg := calmConfig()
	cfg.ErrorPct = 100
	ts, _ := newTestServer(t, cfg)
	if r := get(t, ts.URL+"/lookup?id=1"); r.status != http.StatusServiceUnavailable {
		t.Fatalf("error_pct 100: %d", r.status)
	}
	if st := decodeJSON[Stats](t, get(t, ts.URL+"/__stats").body); st.ByRoute[routeLookup].ServerErrors != 1 || st.ByHost[hostAPI].ServerErrors != 1 || st.Served != 0 {
		t.Fatalf("stats after a 503: %+v", st)
	}

	cfg = calmConfig()
	cfg.TimeoutPct = 100
	ts, _ = newTestServer(t, cfg)
	// The simulator holds a timeout for upstreammodel.RequestTimeout; a
	// client that gives up sooner sees no answer at all.
	client := &http.Client{Timeout: 200 * time.Millisecond}
	if resp, err := client.Get(ts.URL + "/lookup?id=1"); err == nil {
		resp.Body.Close()
		t.Fatalf("timeout_pct 100 answered %d", resp.StatusCode)
	}
	if st := decodeJSON[Stats](t, get(t, ts.URL+"/__stats").body); st.ByRoute[routeLookup].TimedOut != 1 || st.Served != 0 {
		t.Fatalf("stats after a timeout: %+v", st)
	}
}

func TestConfigRulesOfTheModel(t *testing.T) {
	for body, field := range map[string]string{
		`{"timeout_pct":60,"error_pct":50}`:    "error_pct",
		`{"lockout_after_refusals_per_min":3}`: "block_s",
		`{"refusals_consume":2}`:               "refusals_consume",
		`{"ratelimit_headers":-1}`:             "ratelimit_headers",
	} {
		if _, err := DefaultConfig().Patch([]byte(body)); err == nil || err.Field != field {
			t.Errorf("%s: err %v, want field %q", body, err, field)
		}
	}
	got, err := DefaultConfig().Patch([]byte(`{"lockout_after_refusals_per_min":3,"block_s":60,"refusals_consume":1,"ratelimit_headers":1}`))
	if err != nil || got.LockoutAfterRefusalsPerMin != 3 || got.RefusalsConsume != 1 || got.RatelimitHeaders != 1 {
		t.Fatalf("%+v %v", got, err)
	}
}
