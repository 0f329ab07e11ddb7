//go:build integration

package e2e

import (
	"path/filepath"
	"testing"
)

func TestHealthServedByOneReusedGoInstance(t *testing.T) {
	t.Parallel()
	dir := outputDir(t)
	s := startSim(t, dir)
	persist := filepath.Join(dir, "state")
	prepareDB(t, persist, dir, 0)
	w := startWorker(t, dir, persist, s.base)
	var first, second map[string]any
	if code := doJSON(t, "GET", w.base+"/health", "", nil, &first); code != 200 || first["ok"] != true {
		t.Fatalf("health: %d %v", code, first)
	}
	doJSON(t, "GET", w.base+"/health", "", nil, &second)
	if first["instance_id"] != second["instance_id"] {
		t.Fatalf("each call started a new Go instance: %v vs %v", first["instance_id"], second["instance_id"])
	}
	if second["requests_served"].(float64) <= first["requests_served"].(float64) {
		t.Fatalf("request counter did not advance: %v then %v", first, second)
	}
	var nf map[string]any
	if code := doJSON(t, "GET", w.base+"/no/such/route", "", nil, &nf); code != 404 || nf["field"] != "path" {
		t.Fatalf("unknown route: %d %v", code, nf)
	}
}
