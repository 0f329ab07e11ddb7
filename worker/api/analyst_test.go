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

// GET /v1/segments/{id}/evaluation: the newest evaluation, a done one
// first, with each step's output, input, prompt hash, tokens and cost; 400
// and 404 naming id. Its reads are counted.
func TestSegmentEvaluationRoute(t *testing.T) {
	db, drv := d1test.New(t)
	ts := d1.Time(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC))
	later := d1.Time(time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC))
	for _, id := range []int{1, 2} {
		drv.Exec(t, `INSERT INTO segments (id, name, keyword_count, app_count, total_ratings, avg_rating, demand, hhi, fragmentation, quality_gap,
  opportunity, apps, created_at, updated_at) VALUES (?, 'budget', 1, 1, 10, 4, 1, 1, 0, 0, 50, '[]', ?, ?)`, id, ts, ts)
	}
	drv.Exec(t, `INSERT INTO segment_evaluations (eval_id, segment_id, state, trigger, model, prompt_version, cost_micro_usd, created_at, updated_at, finished_at)
VALUES ('done1', 1, 'done', 'schedule', 'm', 'v', 900, ?, ?, ?), ('open2', 1, 'open', 'schedule', 'm', 'v', 0, ?, ?, NULL)`, ts, ts, ts, later, later)
	for step, name := range analyst.StepNames[1:] {
		cost, hash := 0, ""
		if step+1 >= analyst.StepMethods {
			cost, hash = 300, "h"+name
		}
		drv.Exec(t, `INSERT INTO segment_evaluation_steps (eval_id, step, name, state, input_json, output_json, prompt_hash, prompt_tokens,
  completion_tokens, cost_micro_usd, updated_at) VALUES ('done1', ?, ?, 'done', '{"in": 1}', '{"out": 1}', NULLIF(?, ''), ?, 10, ?, ?)`,
			step+1, name, hash, cost, cost, ts)
	}
	v, _ := module.Load(analyst.Settings, func(string) string { return "" })
	cfg := analyst.ConfigFrom(v)
	a := &analyst.Analyst{Store: analyst.Store{DB: db}, Config: cfg, Model: cfg.Model}
	s := NewServer(&Server{Analyst: a})
	for path, field := range map[string]string{"/v1/segments/abc/evaluation": "id", "/v1/segments/0/evaluation": "id"} {
		if code, out := call(t, s, "GET", path, "", ""); code != 400 || out["field"] != field {
			t.Errorf("%s: %d %v", path, code, out)
		}
	}
	for _, path := range []string{"/v1/segments/99/evaluation", "/v1/segments/2/evaluation"} {
		if code, out := call(t, s, "GET", path, "", ""); code != 404 || out["field"] != "id" {
			t.Errorf("%s: %d %v", path, code, out)
		}
	}
	code, out := call(t, s, "GET", "/v1/segments/1/evaluation", "", "")
	steps, _ := out["steps"].([]any)
	if code != 200 || out["eval_id"] != "done1" || out["state"] != "done" || out["cost_micro_usd"] != 900.0 || len(steps) != analyst.EvalSteps {
		t.Fatalf("evaluation: %d %v", code, out)
	}
	for i, raw := range steps {
		st := raw.(map[string]any)
		for _, k := range []string{"step", "name", "state", "output", "input", "prompt_tokens", "completion_tokens", "cost_micro_usd", "llm_call"} {
			if _, ok := st[k]; !ok {
				t.Fatalf("step %d lacks %s: %v", i+1, k, st)
			}
		}
		if (i+1 >= analyst.StepMethods) != (st["prompt_hash"] != nil) {
			t.Fatalf("step %d prompt hash: %v", i+1, st)
		}
	}
	ctx, cost := d1.WithCost(context.Background())
	if _, ok, err := a.Evaluation(ctx, 1); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if c := cost.View(); c.Queries != 2 || c.RowsRead != 1+analyst.EvalSteps {
		t.Fatalf("an evaluation read %d queries, %d rows", c.Queries, c.RowsRead)
	}
}
