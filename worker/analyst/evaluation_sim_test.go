//go:build !js

package analyst_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"storecrawl/internal/llmsim"
	"storecrawl/worker/analyst"
	"storecrawl/worker/d1"
	"storecrawl/worker/d1/d1test"
	"storecrawl/worker/llm"
	"storecrawl/worker/module"
)

// simEndpoint is the llm-sim mounted in process, counting the calls of
// each evaluation step and answering the calls listed in fail with their
// status instead (500: an upstream error, 429: a rate limit).
type simEndpoint struct {
	mu    sync.Mutex
	calls map[string]int
	fail  map[string]int // "step#n" (the step's nth call) → status
}

func (e *simEndpoint) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		step := "other"
		if _, rest, ok := strings.Cut(string(body), analyst.EvalMarker); ok {
			step, _, _ = strings.Cut(rest, `\n`)
		}
		e.mu.Lock()
		e.calls[step]++
		status := e.fail[fmt.Sprintf("%s#%d", step, e.calls[step])]
		e.mu.Unlock()
		if status != 0 {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(status)
			fmt.Fprintf(w, `{"error": {"message": "injected %d", "type": "server_error"}}`, status)
			return
		}
		h.ServeHTTP(w, r)
	})
}

func (e *simEndpoint) count(step string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.calls[step]
}

type directPacer struct{}

func (directPacer) Schedule(ctx context.Context, _ int, fn func(context.Context) error) error {
	return fn(ctx)
}

var evalDay = time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)

// seedSegments makes two live segments (1: "budget planner", the better
// opportunity; 2: "photo editor") of 10 apps each, the apps' velocities,
// and crash complaints for the leaders of segment 1.
func seedSegments(t *testing.T, drv *d1test.Driver) {
	ts := d1.Time(evalDay)
	for seg, name := range map[int]string{1: "budget planner", 2: "photo editor"} {
		var apps []map[string]any
		for i := range 10 {
			id := seg*1000 + i
			apps = append(apps, map[string]any{"track_id": id, "keywords": 5 - i/2, "ratings": 1000 - 90*i, "share": 0.1})
			drv.Exec(t, `INSERT INTO app_registry (track_id, name, developer_name, rating_count, average_rating, rating_velocity_7d, rating_velocity_30d)
VALUES (?, ?, 'Dev Co', ?, 3.6, ?, 1.5)`, id, fmt.Sprintf("%s app %d", strings.Fields(name)[0], i), 1000-90*i, float64(i%4))
			if seg == 1 && i < 3 {
				drv.Exec(t, `INSERT INTO review_fetches (app_id, country, fetched_at, reviews) VALUES (?, 'us', ?, 6)`, id, ts)
				for k := range 6 {
					drv.Exec(t, `INSERT INTO app_reviews (id, app_id, country, rating, title, body, version, author_hash, reviewed_at, sentiment, fetched_at)
VALUES (?, ?, 'us', 1, 'Crashes on sync', 'It crashes every time I sync my bank account. Terrible sync, lost my budget.', '2.0', 'abcd', ?, -0.8, ?)`,
						fmt.Sprintf("r%d-%d", id, k), id, ts, ts)
				}
			}
		}
		appsJSON, _ := json.Marshal(apps)
		drv.Exec(t, `INSERT INTO segments (id, name, keyword_count, app_count, total_ratings, avg_rating, demand, hhi, fragmentation, quality_gap,
  competitiveness, opportunity, leaders_velocity_7d, leaders_velocity_30d, apps, trend, trend_score, trend_figures, created_at, updated_at)
VALUES (?, ?, 2, 10, 5950, 3.6, 3.77, 0.1, 0.9, 0.4, 45, ?, 6, 7.5, ?, 'heating', 5, '{"demand_growth_7d": 0.12}', ?, ?)`,
			seg, name, 80-10*seg, string(appsJSON), ts, ts)
		for _, kw := range strings.Fields(name) {
			drv.Exec(t, `INSERT INTO segment_keywords (keyword, segment_id, top_sum) VALUES (?, ?, 0)`, kw+" app", seg)
		}
	}
}

func newEvalAnalyst(t *testing.T, capUSD float64) (*analyst.Analyst, *d1test.Driver, *simEndpoint, *time.Time) {
	db, drv := d1test.New(t)
	seedSegments(t, drv)
	ep := &simEndpoint{calls: map[string]int{}, fail: map[string]int{}}
	cfg := llmsim.DefaultConfig()
	sim := llmsim.NewServer(llmsim.Options{Config: cfg, Sleep: func(context.Context, time.Duration) {}})
	srv := httptest.NewServer(ep.wrap(sim))
	t.Cleanup(srv.Close)
	v, probs := module.Load(analyst.Settings, func(k string) string {
		switch k {
		case analyst.VarBaseURL:
			return srv.URL + "/v1"
		case analyst.VarDailyCap:
			return fmt.Sprint(capUSD)
		}
		return ""
	})
	if len(probs) > 0 {
		t.Fatal(probs)
	}
	c := analyst.ConfigFrom(v)
	now := evalDay
	n := 0
	a := &analyst.Analyst{Store: analyst.Store{DB: db}, Config: c, Model: c.Model, Pacer: directPacer{},
		Client: llm.OpenAI{BaseURL: c.BaseURL, Model: c.Model, Doer: srv.Client()},
		Now:    func() time.Time { return now }, Sleep: func(d time.Duration) { now = now.Add(d) },
		NewID: func() string { n++; return fmt.Sprintf("e%d", n) }}
	return a, drv, ep, &now
}

// checkDone checks a done evaluation: every step done, each LLM step with
// its input, prompt hash, tokens and cost, and the total the ledger's.
func checkDone(t *testing.T, a *analyst.Analyst, drv *d1test.Driver, segmentID int64) analyst.EvaluationView {
	t.Helper()
	v, ok, err := a.Evaluation(context.Background(), segmentID)
	if err != nil || !ok || v.State != analyst.EvalDone || len(v.Steps) != analyst.EvalSteps {
		t.Fatalf("evaluation of %d: %v %v %+v", segmentID, ok, err, v)
	}
	var sum int64
	for _, s := range v.Steps {
		if s.State != analyst.StateDone || string(s.Output) == "null" || string(s.Input) == "null" {
			t.Fatalf("step %d %s: %+v", s.Step, s.Name, s)
		}
		if s.LLM && (s.PromptHash == "" || s.PromptTokens == 0 || s.CompletionTokens == 0 || s.Cost <= 0) {
			t.Fatalf("LLM step %s without its prompt hash, tokens or cost: %+v", s.Name, s)
		}
		if !s.LLM && (s.Cost != 0 || s.PromptHash != "") {
			t.Fatalf("computed step %s has a call: %+v", s.Name, s)
		}
		sum += s.Cost
		t.Logf("segment %d step %d %s: %d prompt + %d completion tokens, %d µ$, %d bytes of input", segmentID, s.Step, s.Name,
			s.PromptTokens, s.CompletionTokens, s.Cost, len(s.Input))
	}
	ledger := drv.Int(t, `SELECT SUM(cost_micro_usd) FROM llm_spend WHERE brief_id = ?`, v.EvalID)
	if v.Cost != sum || v.Cost != ledger || v.CostUSD == "" {
		t.Fatalf("evaluation cost %d, steps %d, ledger %d", v.Cost, sum, ledger)
	}
	t.Logf("segment %d evaluation: %d µ$ ($%s), worst case reserved %d µ$", segmentID, v.Cost, v.CostUSD,
		drv.Int(t, `SELECT SUM(reserved_micro_usd) FROM llm_spend WHERE brief_id = ? AND outcome = 'ok'`, v.EvalID))
	return v
}

// An evaluation is produced offline against the llm-sim with every step
// and its cost, under the cap; its D1 rows are counted.
func TestEvaluationOfflineEveryStepWithItsCost(t *testing.T) {
	a, drv, ep, _ := newEvalAnalyst(t, 1)
	ctx, cost := d1.WithCost(context.Background())
	before := drv.TotalChanges(t)
	res := a.Run(ctx)
	written := drv.TotalChanges(t) - before
	read := cost.View()
	t.Logf("first run: %s; %d queries, %d rows read, %d rows written", res.Summary(), read.Queries, read.RowsRead, written)
	if res.Err != "" || res.EvalsQueued != 2 || res.EvalsDone != 1 || res.Calls != 3 {
		t.Fatalf("first run %+v", res)
	}
	// One evaluation: 2 evaluations and 10 steps queued; a run of 4 moves
	// writes each step's row once or twice, and 3 ledger rows twice.
	if written > 40 || read.RowsRead > 2000 {
		t.Fatalf("one evaluation's run wrote %d rows and read %d", written, read.RowsRead)
	}
	v := checkDone(t, a, drv, 1)
	// Step 1: the leaders and the fastest risers; step 2: the crash theme
	// with its example reviews.
	var refs []analyst.RefApp
	var themes analyst.ThemesOutput
	json.Unmarshal(v.Steps[0].Output, &refs)
	json.Unmarshal(v.Steps[1].Output, &themes)
	if len(refs) != analyst.EvalLeaders+analyst.EvalRisers || refs[0].Role != "leader" || refs[analyst.EvalLeaders].Role != "riser" ||
		*refs[analyst.EvalLeaders].Velocity7d != 3 {
		t.Fatalf("reference apps %+v", refs)
	}
	if len(themes.Themes) == 0 || len(themes.Themes[0].Quotes) == 0 || themes.ReviewsRead != 18 {
		t.Fatalf("themes %+v", themes)
	}
	// The stored input of each LLM step reproduces its prompt hash.
	for _, s := range v.Steps[2:] {
		var in analyst.EvalInput
		if err := json.Unmarshal(s.Input, &in); err != nil {
			t.Fatal(err)
		}
		msgs, _, err := analyst.BuildStepPrompt(s.Step, in)
		if err != nil || llm.PromptHash(msgs) != s.PromptHash {
			t.Fatalf("step %s: input does not reproduce hash %s (%v)", s.Name, s.PromptHash, err)
		}
	}
	var synth analyst.SynthesisOutput
	json.Unmarshal(v.Steps[4].Output, &synth)
	if !strings.Contains(synth.Opportunity, "budget planner") || len(synth.TopMethods) == 0 || synth.Confidence != "medium" {
		t.Fatalf("synthesis %+v", synth)
	}
	// The second segment's in the next run; then nothing is left to do.
	if res := a.Run(ctx); res.EvalsDone != 1 || res.Calls != 3 {
		t.Fatalf("second run %+v", res)
	}
	checkDone(t, a, drv, 2)
	if res := a.Run(ctx); res.Calls != 0 || res.EvalsQueued != 0 || ep.count("methods") != 2 {
		t.Fatalf("third run %+v, methods called %d times", res, ep.count("methods"))
	}
	st, _ := a.Status(ctx)
	if st.OpenEvals != 0 || st.Calls != 6 || st.Spent > a.Config.DailyCap || st.Spent != drv.Int(t, `SELECT SUM(cost_micro_usd) FROM segment_evaluations`) {
		t.Fatalf("status %+v", st)
	}
}

// A call that fails mid-way (the critic's first call answers 500) stops
// the run; the next run retries the critic without calling the finished
// steps again, and every reservation is settled exactly once. A 429 is
// waited out within the run.
func TestEvaluationFailureMidWayIsRetriedWithoutRepaying(t *testing.T) {
	a, drv, ep, now := newEvalAnalyst(t, 1)
	drv.Exec(t, `UPDATE segments SET retired_at = ? WHERE id = 2`, d1.Time(evalDay))
	ep.fail["critic#1"] = http.StatusInternalServerError
	ep.fail["synthesis#1"] = http.StatusTooManyRequests
	ctx := context.Background()
	res := a.Run(ctx)
	if res.Err == "" || res.EvalSteps != 1 || ep.count("methods") != 1 || ep.count("critic") != 1 {
		t.Fatalf("failing run %+v; calls %v", res, ep.calls)
	}
	row := drv.Rows(t, `SELECT state, calls, error, cost_micro_usd FROM segment_evaluation_steps WHERE name = 'critic'`)[0]
	if row["state"] != "ready" || fmt.Sprint(row["calls"]) != "1" || !strings.Contains(fmt.Sprint(row["error"]), "500") {
		t.Fatalf("critic after the 500: %v", row)
	}
	methodsCost := drv.Int(t, `SELECT cost_micro_usd FROM segment_evaluation_steps WHERE name = 'methods'`)
	start := *now
	res = a.Run(ctx)
	if res.Err != "" || res.EvalsDone != 1 || ep.count("methods") != 1 || ep.count("critic") != 2 || ep.count("synthesis") != 2 {
		t.Fatalf("resumed run %+v; calls %v", res, ep.calls)
	}
	if now.Sub(start) < time.Second {
		t.Fatalf("the 429 was not waited out: %s", now.Sub(start))
	}
	v := checkDone(t, a, drv, 1)
	if v.Steps[2].Cost != methodsCost || v.Steps[2].Calls != 1 || v.Steps[3].Calls != 2 || v.Steps[4].Calls != 2 {
		t.Fatalf("steps after the retry %+v", v.Steps)
	}
	// Every call is one ledger row, settled once: the failed ones at 0.
	rows := drv.Rows(t, `SELECT call_id, state, outcome, cost_micro_usd FROM llm_spend ORDER BY call_id`)
	want := map[string]string{"e1/3/1": "ok", "e1/4/1": "error", "e1/4/2": "ok", "e1/5/1": "rate_limited", "e1/5/2": "ok"}
	if len(rows) != len(want) {
		t.Fatalf("ledger %v", rows)
	}
	for _, r := range rows {
		failed := r["outcome"] != "ok"
		if r["state"] != "settled" || r["outcome"] != want[r["call_id"].(string)] || (failed != (fmt.Sprint(r["cost_micro_usd"]) == "0")) {
			t.Fatalf("ledger row %v", r)
		}
	}
	// A call lost mid-flight (its run died after the reservation) is
	// charged at its worst case once, and the step is called again.
	b, drv2, ep2, now2 := newEvalAnalyst(t, 1)
	drv2.Exec(t, `UPDATE segments SET retired_at = ? WHERE id = 2`, d1.Time(evalDay))
	b.Run(ctx)
	drv2.Exec(t, `INSERT INTO segment_evaluations (eval_id, segment_id, state, trigger, prompt_version, created_at, updated_at)
VALUES ('x', 1, 'open', 'schedule', 'v', ?, ?)`, d1.Time(*now2), d1.Time(*now2))
	drv2.Exec(t, `INSERT INTO segment_evaluation_steps (eval_id, step, name, state, updated_at, input_json, output_json)
SELECT 'x', step, name, state, updated_at, input_json, output_json FROM segment_evaluation_steps WHERE eval_id = 'e1' AND step <= 3`)
	drv2.Exec(t, `INSERT INTO segment_evaluation_steps (eval_id, step, name, state, calls, attempt, input_json, prompt_hash, messages_json, updated_at)
SELECT 'x', 4, 'critic', 'calling', 1, 1, input_json, prompt_hash, messages_json, ? FROM segment_evaluation_steps WHERE eval_id = 'e1' AND step = 4`, d1.Time(*now2))
	drv2.Exec(t, `INSERT INTO segment_evaluation_steps (eval_id, step, name, state, updated_at) VALUES ('x', 5, 'synthesis', 'pending', ?)`, d1.Time(*now2))
	drv2.Exec(t, `INSERT INTO llm_spend (call_id, day, cluster_id, brief_id, state, est_tokens, reserved_micro_usd, created_at)
VALUES ('x/4/1', ?, 'segment:1', 'x', 'reserved', 900, 777, ?)`, llm.Day(*now2), d1.Time(*now2))
	if res := b.Run(ctx); res.Calls != 0 {
		t.Fatalf("a fresh call was taken over: %+v", res)
	}
	*now2 = now2.Add(analyst.StaleCall + time.Second)
	critics := ep2.count("critic")
	b.Run(ctx)
	lost := drv2.Rows(t, `SELECT state, cost_micro_usd FROM llm_spend WHERE call_id = 'x/4/1'`)[0]
	step := drv2.Rows(t, `SELECT state, calls, cost_micro_usd FROM segment_evaluation_steps WHERE eval_id = 'x' AND step = 4`)[0]
	if lost["state"] != "lost" || fmt.Sprint(lost["cost_micro_usd"]) != "777" || step["state"] != "done" || fmt.Sprint(step["calls"]) != "2" ||
		ep2.count("critic") != critics+1 || ep2.count("methods") != 1 {
		t.Fatalf("lost call %v, step %v, calls %v", lost, step, ep2.calls)
	}
	if c := drv2.Int(t, `SELECT cost_micro_usd FROM segment_evaluation_steps WHERE eval_id = 'x' AND step = 4`); c <= 777 {
		t.Fatalf("the lost call's worst case is not in the step's cost: %d", c)
	}
}

// At the cap the evaluations stop (the status says so) and resume the
// next UTC day, never spending more than the cap in a day.
func TestEvaluationStopsAtCapAndResumesNextDay(t *testing.T) {
	probe, pdrv, _, _ := newEvalAnalyst(t, 1)
	ctx := context.Background()
	probe.Run(ctx)
	worst := pdrv.Int(t, `SELECT MAX(reserved_micro_usd) FROM llm_spend`)
	// A cap of one call's worst case: a day admits a call or two (a
	// settled call costs less than its worst case), never an evaluation.
	a, drv, ep, now := newEvalAnalyst(t, float64(worst)/1e6)
	res := a.Run(ctx)
	if !res.StoppedAtCap || res.EvalsDone != 0 || res.Calls < 1 {
		t.Fatalf("capped run %+v", res)
	}
	st, _ := a.Status(ctx)
	if !st.StoppedAtCap || st.State != "stopped_at_cap" || st.OpenEvals != 2 || !strings.Contains(st.Message, "evaluations") {
		t.Fatalf("status %+v", st)
	}
	calls := ep.count("methods") + ep.count("critic") + ep.count("synthesis")
	if res := a.Run(ctx); !res.StoppedAtCap || ep.count("methods")+ep.count("critic")+ep.count("synthesis") != calls {
		t.Fatalf("same-day run %+v", res)
	}
	// A week at the cap: the open evaluations are resumed, not queued again.
	drv.Exec(t, `UPDATE segment_evaluations SET created_at = ?`, d1.Time(evalDay.Add(-8*24*time.Hour)))
	*now = now.Add(24 * time.Hour)
	if res := a.Run(ctx); res.EvalsQueued != 0 || drv.Int(t, `SELECT COUNT(*) FROM segment_evaluations`) != 2 {
		t.Fatalf("open evaluations queued again: %+v", res)
	}
	for day := 1; day <= 6; day++ {
		*now = now.Add(24 * time.Hour)
		a.Run(ctx)
	}
	checkDone(t, a, drv, 1)
	checkDone(t, a, drv, 2)
	for _, d := range drv.Rows(t, `SELECT day, SUM(cost_micro_usd) AS s FROM llm_spend GROUP BY day`) {
		if int64(d["s"].(float64)) > a.Config.DailyCap {
			t.Fatalf("day %v spent %v over the cap %d", d["day"], d["s"], a.Config.DailyCap)
		}
	}
	if n := drv.Int(t, `SELECT COUNT(*) FROM llm_spend WHERE state = 'reserved'`); n != 0 {
		t.Fatalf("%d reservations never settled", n)
	}
}
