//go:build integration

package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// largeBody is past every route's bound by three orders of magnitude: a
// client's 6 MB upload (the size that made workerd answer 500 "Network
// connection lost" when the Worker answered before reading it).
const largeBody = 6 << 20

// largeBodyRounds is how often each route gets the large body: the 500 came
// now and then, not every time.
const largeBodyRounds = 20

// TestLargeBodies sends a 6 MB body with the right token to every route
// that takes one, 20 times each: every answer is a 413 naming the field
// body, never a 500 (wrangler dev's "Network connection lost") nor a
// dropped connection; so is a chunked one; a wrong token's is a 401; and
// the Worker still answers afterwards.
func TestLargeBodies(t *testing.T) {
	t.Parallel()
	dir := outputDir(t)
	s := startSim(t, dir)
	persist := filepath.Join(dir, "state")
	prepareDB(t, persist, dir, 0)
	w := startWorker(t, dir, persist, s.base)

	routes := []struct{ path, token string }{
		{"/v1/enrichment/start", adminToken},
		{"/v1/enrichment/stop", adminToken},
		{"/v1/enrichment/reset", adminToken},
		{"/v1/enrichment/tune", adminToken},
		{"/v1/enrichment/reparse", adminToken},
		{"/v1/enrichment/retry-failed", adminToken},
		{"/v1/scheduler/pause", adminToken},
		{"/v1/scheduler/resume", adminToken},
		{"/v1/scheduler/run", adminToken},
		{"/v1/scheduler/run-now", adminToken},
		{"/v1/analyst/run", adminToken},
		{"/v1/system/dead-letters/replay", adminToken},
		{"/v1/limiter/acquire", clientToken},
	}
	// A JSON string, so that a route reading it whole would see valid JSON
	// of the wrong shape, not a syntax error.
	body := append(append([]byte(`{"pad":"`), bytes.Repeat([]byte("a"), largeBody)...), `"}`...)
	counts := map[int]int{}
	for round := 0; round < largeBodyRounds; round++ {
		for _, r := range routes {
			req, _ := http.NewRequest("POST", w.base+r.path, bytes.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+r.token)
			req.Header.Set("Content-Type", "application/json")
			resp, err := client.Do(req)
			if err != nil {
				t.Fatalf("round %d %s: %v", round, r.path, err)
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			counts[resp.StatusCode]++
			var e struct{ Field, Error string }
			json.Unmarshal(raw, &e)
			if resp.StatusCode != http.StatusRequestEntityTooLarge || e.Field != "body" || !strings.Contains(e.Error, "bytes") {
				t.Errorf("round %d %s: %d %s (want 413 naming body and its limit)", round, r.path, resp.StatusCode, tail(string(raw), 300))
			}
		}
	}
	t.Logf("answers by status over %d large bodies: %v", largeBodyRounds*len(routes), counts)

	// A chunked upload (no Content-Length) is cut at the bound, not read whole.
	for round := 0; round < 3; round++ {
		req, _ := http.NewRequest("POST", w.base+"/v1/enrichment/tune", io.MultiReader(bytes.NewReader(body)))
		req.Header.Set("Authorization", "Bearer "+adminToken)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("chunked round %d: %v", round, err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("chunked round %d: %d %s (want 413)", round, resp.StatusCode, tail(string(raw), 300))
		}
	}

	// Without the token: a 401, the body drained all the same.
	for round := 0; round < 3; round++ {
		req, _ := http.NewRequest("POST", w.base+"/v1/enrichment/tune", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer wrong")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("wrong token round %d: %v", round, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("wrong token round %d: %d (want 401)", round, resp.StatusCode)
		}
	}

	var h map[string]any
	if code := doJSON(t, "GET", w.base+"/health", "", nil, &h); code != 200 || h["ok"] != true {
		t.Fatalf("health after the large bodies: %d %v", code, h)
	}
}
