package api

import (
	"context"
	"testing"
	"time"

	"storecrawl/worker/config"
	"storecrawl/worker/guard"
)

type fixedGuard struct{ u guard.Usage }

func (g fixedGuard) Status(_ context.Context, now time.Time) guard.Status {
	p := guard.Project(g.u, 0, now)
	return guard.Status{Throttle: guard.Decide(p), Projection: p}
}

// TestEnrichmentStatusShowsTheCostGuard: the controller's status carries
// cost_guard, its state, projection and what it slows.
func TestEnrichmentStatusShowsTheCostGuard(t *testing.T) {
	c := &recordingController{}
	s := NewServer(&Server{Controller: c, CostGuard: fixedGuard{guard.Usage{D1RowsWritten: 200e6}}})
	status, body := call(t, s, "GET", "/v1/enrichment/status", "", "")
	cg, _ := body["cost_guard"].(map[string]any)
	if status != 200 || body["running"] != true || cg == nil {
		t.Fatalf("%d %v", status, body)
	}
	throttled, _ := cg["throttled"].([]any)
	if cg["state"] != guard.StateThrottling || len(throttled) == 0 || throttled[0] != guard.WorkFirstSearches {
		t.Fatalf("cost_guard %v", cg)
	}
	if p, _ := cg["projection"].(map[string]any); p == nil || len(p["products"].([]any)) != len(guard.Products) {
		t.Fatalf("projection %v", cg["projection"])
	}
}

// TestEnrichmentStatusShowsTheSettings: the status carries the settings
// the one loader read, a secret as set or unset.
func TestEnrichmentStatusShowsTheSettings(t *testing.T) {
	cfg, _ := config.Load(func(k string) string {
		return map[string]string{"FACTS_RETENTION_DAYS": "60", "ADMIN_TOKEN": "hunter2"}[k]
	})
	s := NewServer(&Server{Controller: &recordingController{}, Settings: cfg.Values.Shown})
	status, body := call(t, s, "GET", "/v1/enrichment/status", "", "")
	got, _ := body["settings"].(map[string]any)
	if status != 200 || body["running"] != true || len(got) != len(config.Settings) {
		t.Fatalf("%d %v", status, body)
	}
	if got["FACTS_RETENTION_DAYS"] != "60" || got["CATALOGUE_STALE_AFTER_DAYS"] != "90" || got["ADMIN_TOKEN"] != "set" || got["READ_TOKEN"] != "unset" {
		t.Fatalf("settings %v", got)
	}
}
