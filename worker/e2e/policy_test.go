//go:build integration

package e2e

import (
	"path/filepath"
	"testing"
)

// TestLimiterPolicyNeedsReplace runs the client key policy rule through
// the shim's call loop (storage's policy first): the first acquire sets
// it, the same policy is served, another is a 409 naming the fields that
// differ and changes nothing, and "replace": true changes it.
func TestLimiterPolicyNeedsReplace(t *testing.T) {
	t.Parallel()
	dir := outputDir(t)
	s := startSim(t, dir)
	persist := filepath.Join(dir, "state")
	prepareDB(t, persist, dir, 0)
	w := startWorker(t, dir, persist, s.base)
	acquire := w.base + "/v1/limiter/acquire"

	var out map[string]any
	if code := doJSON(t, "POST", acquire, clientToken, `{"key":"e2e-policy","limit":5,"windowInSeconds":60}`, &out); code != 200 || out["allowed"] != true {
		t.Fatalf("first acquire: %d %v", code, out)
	}
	if code := doJSON(t, "POST", acquire, clientToken, `{"key":"e2e-policy","limit":5,"windowInSeconds":60}`, &out); code != 200 {
		t.Fatalf("same policy: %d %v", code, out)
	}
	out = nil
	code := doJSON(t, "POST", acquire, clientToken, `{"key":"e2e-policy","limit":500,"windowInSeconds":60,"algorithm":"gcra"}`, &out)
	if fields, _ := out["fields"].([]any); code != 409 || out["field"] != "limit" || len(fields) != 2 || fields[1] != "algorithm" {
		t.Fatalf("another policy without replace: %d %v", code, out)
	}
	var st map[string]any
	if code := doJSON(t, "GET", acquire[:len(acquire)-len("acquire")]+"status?key=e2e-policy", clientToken, nil, &st); code != 200 || jsonString(st["policy"]) != `{"algorithm":"sliding_window","limit":5,"windowInSeconds":60}` {
		t.Fatalf("status after the refused change: %d %v", code, st)
	}
	if code := doJSON(t, "POST", acquire, clientToken, `{"key":"e2e-policy","limit":500,"windowInSeconds":60,"algorithm":"gcra","replace":true}`, &out); code != 200 || out["allowed"] != true {
		t.Fatalf("replace: %d %v", code, out)
	}
	if code := doJSON(t, "POST", acquire, clientToken, `{"key":"e2e-policy","limit":500,"windowInSeconds":60,"algorithm":"gcra"}`, &out); code != 200 {
		t.Fatalf("the new policy: %d %v", code, out)
	}
	if code := doJSON(t, "POST", acquire, clientToken, `{"key":"e2e-policy","limit":5,"windowInSeconds":60}`, &out); code != 409 {
		t.Fatalf("the old policy after the replace: %d %v", code, out)
	}
}
