//go:build !js

package api

import (
	"context"
	"testing"
	"time"

	"storecrawl/worker/analyst"
	"storecrawl/worker/d1"
	"storecrawl/worker/d1/d1test"
	"storecrawl/worker/module"
)

type kicks struct{ bodies []string }

func (k *kicks) CallScheduler(_ context.Context, method, path string, body []byte) (int, []byte, error) {
	k.bodies = append(k.bodies, method+" "+path+" "+string(body))
	return 200, []byte(`{}`), nil
}

func TestAnalystRoutes(t *testing.T) {
	db, drv := d1test.New(t)
	ts := d1.Time(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC))
	drv.Exec(t, `INSERT INTO market_clusters (cluster_id, app_count, total_ratings, computed_at) VALUES ('budget planner', 1, 10, ?)`, ts)
	v, _ := module.Load(analyst.Settings, func(string) string { return "" })
	cfg := analyst.ConfigFrom(v)
	a := &analyst.Analyst{Store: analyst.Store{DB: db}, Config: cfg, Model: cfg.Model}
	k := &kicks{}
	s := NewServer(&Server{Analyst: a, Scheduler: k, AdminToken: func() string { return "secret" }})

	// Bad input: 400 naming the field, nothing queued, no kick.
	for _, c := range []struct{ body, field string }{
		{`{"cluster_id": ""}`, "cluster_id"}, {`{}`, "cluster_id"}, {`{"cluster_id": 7}`, "cluster_id"},
		{`{"cluster_id": "budget planner", "force": true}`, "force"}, {`[1]`, "body"}, {`nope`, "body"},
	} {
		if code, out := call(t, s, "POST", "/v1/analyst/run", "secret", c.body); code != 400 || out["field"] != c.field {
			t.Errorf("%s: %d %v, want 400 naming %s", c.body, code, out, c.field)
		}
	}
	if code, _ := call(t, s, "POST", "/v1/analyst/run", "", `{"cluster_id": "budget planner"}`); code != 401 {
		t.Errorf("unauthenticated run: %d", code)
	}
	if code, out := call(t, s, "POST", "/v1/analyst/run", "secret", `{"cluster_id": "nope"}`); code != 404 || out["field"] != "cluster_id" {
		t.Errorf("unknown cluster: %d %v", code, out)
	}
	if n := drv.Int(t, `SELECT COUNT(*) FROM analyst_briefs`); n != 0 || len(k.bodies) != 0 {
		t.Fatalf("refused requests queued %d briefs, kicked %v", n, k.bodies)
	}
	code, out := call(t, s, "POST", "/v1/analyst/run", "secret", `{"cluster_id": "budget planner"}`)
	if code != 202 || out["state"] != "queued" || out["created"] != true || len(k.bodies) != 1 || k.bodies[0] != `POST /run-now {"task":"analyst-run"}` {
		t.Fatalf("run: %d %v, kicks %v", code, out, k.bodies)
	}
	if code, again := call(t, s, "POST", "/v1/analyst/run", "secret", `{"cluster_id": "budget planner"}`); code != 202 || again["brief_id"] != out["brief_id"] || again["created"] != false {
		t.Fatalf("second run must return the open brief: %d %v", code, again)
	}
	if code, b := call(t, s, "GET", "/v1/opportunities/budget%20planner/brief", "", ""); code != 200 || b["state"] != "queued" || b["brief_id"] != out["brief_id"] {
		t.Fatalf("brief: %d %v", code, b)
	}
	if code, b := call(t, s, "GET", "/v1/opportunities/chat/brief", "", ""); code != 404 || b["field"] != "id" {
		t.Fatalf("no brief: %d %v", code, b)
	}
	code, st := call(t, s, "GET", "/v1/analyst/status", "", "")
	if code != 200 || st["state"] != "disabled" || st["configured"] != false || st["open_briefs"] != 1.0 || st["daily_cap_usd"] != "1.0000" || st["stopped_at_cap"] != false {
		t.Fatalf("status: %d %v", code, st)
	}
	if code, _ := call(t, NewServer(&Server{}), "GET", "/v1/analyst/status", "", ""); code != 503 {
		t.Fatalf("no analyst wired: %d", code)
	}
}
