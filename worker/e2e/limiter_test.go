//go:build integration

package e2e

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestLimiterExactUnderConcurrency fires concurrent acquires at one key
// through the real Worker and OmniLimiter object, and checks that exactly
// `limit` are admitted, that bad requests change nothing, that a waiting
// caller is held instead of refused, and that admissions survive a restart.
func TestLimiterExactUnderConcurrency(t *testing.T) {
	dir := outputDir(t)
	s := startSim(t, dir)
	persist := filepath.Join(dir, "state")
	prepareDB(t, persist, dir, 0)
	w := startWorker(t, dir, persist, s.base)
	acquire := w.base + "/v1/limiter/acquire"

	const limit, callers = 10, 48
	var mu sync.Mutex
	allowed, refused := 0, 0
	var wg sync.WaitGroup
	for i := 0; i < callers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var out map[string]any
			body := fmt.Sprintf(`{"key":"e2e-hot","limit":%d,"windowInSeconds":600}`, limit)
			code := doJSON(t, "POST", acquire, "", body, &out)
			mu.Lock()
			defer mu.Unlock()
			if code != 200 {
				t.Errorf("acquire: %d %v", code, out)
			} else if out["allowed"] == true {
				allowed++
			} else {
				refused++
			}
		}()
	}
	wg.Wait()
	if allowed != limit || refused != callers-limit {
		t.Fatalf("allowed %d, refused %d; want exactly %d allowed", allowed, refused, limit)
	}

	// Headers on a refusal.
	req, _ := http.NewRequest("POST", acquire, strings.NewReader(fmt.Sprintf(`{"key":"e2e-hot","limit":%d,"windowInSeconds":600}`, limit)))
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Header.Get("Retry-After") == "" || !strings.Contains(resp.Header.Get("RateLimit"), "r=0") || !strings.Contains(resp.Header.Get("RateLimit-Policy"), "q=10") {
		t.Fatalf("refusal headers: %v", resp.Header)
	}

	// Bad requests are 400s naming the field, and change nothing.
	var before, after map[string]any
	doJSON(t, "GET", w.base+"/v1/limiter/status?key=e2e-hot", "", nil, &before)
	for _, c := range []struct{ body, field string }{
		{`{"key":"e2e-hot","limit":0,"windowInSeconds":600}`, "limit"},
		{`{"key":"e2e-hot","limit":10,"windowInSeconds":100000}`, "windowInSeconds"},
		{`{"limit":10,"windowInSeconds":600}`, "key"},
		{`{"key":"e2e-hot","limit":10,"windowInSeconds":600,"algorithm":"leaky"}`, "algorithm"},
	} {
		var out map[string]any
		if code := doJSON(t, "POST", acquire, "", c.body, &out); code != 400 || out["field"] != c.field {
			t.Errorf("%s: %d %v", c.body, code, out)
		}
	}
	doJSON(t, "GET", w.base+"/v1/limiter/status?key=e2e-hot", "", nil, &after)
	delete(before, "resetMs") // the clock moves; everything else must not
	delete(after, "resetMs")
	if jsonString(before) != jsonString(after) {
		t.Fatalf("a bad request changed the limiter: %v → %v", before, after)
	}
	counters := after["counters"].(map[string]any)
	if counters["allowed"] != float64(limit) {
		t.Fatalf("status counters: %v", after)
	}

	// waitMs holds the caller until a slot frees instead of refusing.
	var out map[string]any
	doJSON(t, "POST", acquire, "", `{"key":"e2e-wait","limit":1,"windowInSeconds":1}`, &out)
	start := time.Now()
	doJSON(t, "POST", acquire, "", `{"key":"e2e-wait","limit":1,"windowInSeconds":1,"waitMs":3000}`, &out)
	if out["allowed"] != true || time.Since(start) < 500*time.Millisecond {
		t.Fatalf("waiting acquire: %v after %s", out, time.Since(start))
	}

	// Admissions are persisted: after a restart the key is still full.
	w.restart(t, "wrangler-2.log")
	doJSON(t, "POST", w.base+"/v1/limiter/acquire", "", fmt.Sprintf(`{"key":"e2e-hot","limit":%d,"windowInSeconds":600}`, limit), &out)
	if out["allowed"] != false {
		t.Fatalf("admissions lost across restart: %v", out)
	}
}
