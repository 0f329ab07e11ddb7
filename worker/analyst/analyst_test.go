//go:build !js

package analyst

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"storecrawl/worker/d1"
	"storecrawl/worker/d1/d1test"
	"storecrawl/worker/llm"
	"storecrawl/worker/logx"
	"storecrawl/worker/module"
	"storecrawl/worker/ratelimit"
)

// fakeLLM answers a brief prompt with a valid brief built from its input
// (or an invalid one while invalid > 0), 429s while limited > 0, and
// reports usage.
type fakeLLM struct {
	mu       sync.Mutex
	calls    int
	limited  int
	invalid  int
	failWith error
	// during runs inside each call (a crash mid-call is a panic here).
	during func()
}

func (f *fakeLLM) Complete(_ context.Context, req llm.Request) (llm.Response, error) {
	f.mu.Lock()
	f.calls++
	during := f.during
	f.mu.Unlock()
	if during != nil {
		during()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.limited > 0 {
		f.limited--
		return llm.Response{}, &llm.StatusError{Status: 429, RetryAfter: 2 * time.Second, Message: "slow down"}
	}
	if f.failWith != nil {
		return llm.Response{}, f.failWith
	}
	usage := llm.Usage{PromptTokens: llm.EstimatePrompt(req.Messages), CompletionTokens: 400}
	if f.invalid > 0 {
		f.invalid--
		return llm.Response{Text: `{"headline": ""}`, Usage: usage}, nil
	}
	var in BriefInput
	user := req.Messages[1].Content
	if err := json.Unmarshal([]byte(strings.TrimPrefix(user, "Market cluster:\n")), &in); err != nil {
		return llm.Response{}, err
	}
	b := Brief{Headline: in.Label + ": room for a calmer app", Market: "m", UnmetNeed: "u", ProductConcept: "p",
		Risks: []string{"r"}, Confidence: "medium",
		Leaders: []BriefLeader{{AppID: in.Leaders[0].AppID, Name: in.Leaders[0].Name, Weaknesses: []string{"w"}}}}
	out, _ := json.Marshal(b)
	return llm.Response{Text: string(out), Usage: usage}, nil
}

type fakePacer struct {
	costs  []int
	refuse bool
}

func (p *fakePacer) Schedule(ctx context.Context, cost int, fn func(context.Context) error) error {
	if p.refuse {
		return ratelimit.ErrRateLimited
	}
	p.costs = append(p.costs, cost)
	return fn(ctx)
}

var day0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// seed makes three clusters (budget > photo > chat by opportunity), each
// with two member apps and reviews complaining about crashes.
func seed(t *testing.T, drv *d1test.Driver) {
	ts := d1.Time(day0)
	for i, c := range []string{"budget", "photo", "chat"} {
		drv.Exec(t, `INSERT INTO market_clusters (cluster_id, app_count, total_ratings, computed_at) VALUES (?, 2, 1000, ?)`, c, ts)
		drv.Exec(t, `INSERT INTO opportunity_scores (cluster_id, score, demand, fragmentation, quality_gap, computed_at) VALUES (?, ?, 0.5, 0.5, 0.5, ?)`, c, 90-10*i, ts)
		for j := 0; j < 2; j++ {
			id := 100000001 + i*10 + j
			drv.Exec(t, `INSERT INTO app_registry (track_id, name, developer_name, rating_count, average_rating) VALUES (?, ?, 'Dev', 100, 3.5)`, id, fmt.Sprintf("App %d", id))
			drv.Exec(t, `INSERT INTO crawl_rankings (keyword, track_id, rank, seen_at) VALUES (?, ?, ?, '2026-11-01T00:00:00.000Z')`, c, id, j)
			drv.Exec(t, `INSERT INTO review_fetches (app_id, country, fetched_at, reviews) VALUES (?, 'us', ?, 4)`, id, ts)
			for k := 0; k < 4; k++ {
				drv.Exec(t, `INSERT INTO app_reviews (id, app_id, country, rating, title, body, version, author_hash, reviewed_at, sentiment, fetched_at)
VALUES (?, ?, 'us', 1, 'Crashes', 'It crashes every time I open it. Terrible sync too.', '1.0', 'abcd', ?, -0.8, ?)`, fmt.Sprintf("%d-%d", id, k), id, ts, ts)
			}
		}
	}
}

func newAnalyst(t *testing.T, capUSD float64) (*Analyst, *d1test.Driver, *fakeLLM, *fakePacer, *time.Time) {
	db, drv := d1test.New(t)
	seed(t, drv)
	cfg, probs := LoadConfig(func(k string) string {
		switch k {
		case VarBaseURL:
			return "http://127.0.0.1:1/v1"
		case VarDailyCap:
			return fmt.Sprint(capUSD)
		}
		return ""
	})
	if len(probs) > 0 {
		t.Fatal(probs)
	}
	now := day0
	f, p := &fakeLLM{}, &fakePacer{}
	n := 0
	a := &Analyst{Store: Store{DB: db}, Client: f, Pacer: p, Config: cfg, Model: cfg.Model,
		Now: func() time.Time { return now }, Sleep: func(d time.Duration) { now = now.Add(d) },
		NewID: func() string { n++; return fmt.Sprintf("b%d", n) }}
	return a, drv, f, p, &now
}

func TestRunWritesBriefsForTopClustersWithTheirInput(t *testing.T) {
	a, drv, f, p, _ := newAnalyst(t, 1)
	ctx := context.Background()
	res := a.Run(ctx)
	if res.Err != "" || res.Queued != TopClusters || res.Done != 3 || res.Calls != 3 || f.calls != 3 {
		t.Fatalf("run: %+v, llm calls %d", res, f.calls)
	}
	v, ok, err := a.Brief(ctx, "budget")
	if err != nil || !ok || v.State != StateDone || !strings.HasPrefix(v.Headline, "budget:") || v.Cost <= 0 || len(v.Calls) != 1 {
		t.Fatalf("brief: %v %v %+v", ok, err, v)
	}
	// The input stored is exactly what the prompt showed: rebuilding the
	// prompt from it gives the stored hash.
	var in BriefInput
	if err := json.Unmarshal(v.Input, &in); err != nil {
		t.Fatal(err)
	}
	msgs, _, _ := BuildBriefPrompt(in)
	if llm.PromptHash(msgs) != v.PromptHash || len(in.Leaders) != 2 || len(in.Leaders[0].Themes) == 0 {
		t.Fatalf("input %+v does not reproduce hash %s", in, v.PromptHash)
	}
	// Each call acquired its estimated tokens from the limiter.
	if len(p.costs) != 3 || int64(p.costs[0]) != llm.EstimatePrompt(msgs)+BriefMaxTokens {
		t.Fatalf("limiter costs %v", p.costs)
	}
	// The ledger's day total is the sum of the briefs' costs.
	total := drv.Int(t, `SELECT SUM(cost_micro_usd) FROM analyst_briefs`)
	st, _ := a.Status(ctx)
	if st.Spent != total || st.Calls != 3 || len(st.ByCluster) != 3 || st.StoppedAtCap || st.Top[0].Headline == "" {
		t.Fatalf("status %+v, briefs total %d", st, total)
	}
	// A second run has nothing to do: no brief is written twice.
	if res := a.Run(ctx); res.Calls != 0 || res.Queued != 0 {
		t.Fatalf("second run %+v", res)
	}
}

// A cluster whose members' reviews were never fetched is not briefed
// automatically (its brief would have no complaint themes); on demand it is.
func TestTopClustersWaitForTheirReviews(t *testing.T) {
	a, drv, f, _, _ := newAnalyst(t, 1)
	drv.Exec(t, `DELETE FROM review_fetches WHERE app_id IN (SELECT track_id FROM crawl_rankings WHERE keyword = 'budget')`)
	ctx := context.Background()
	if res := a.Run(ctx); res.Queued != 2 || f.calls != 2 {
		t.Fatalf("run %+v, %d calls", res, f.calls)
	}
	if _, ok, _ := a.Brief(ctx, "budget"); ok {
		t.Fatal("budget has no fetched reviews: no automatic brief")
	}
	a.Request(ctx, "budget")
	if res := a.Run(ctx); res.Done != 1 {
		t.Fatalf("requested brief: %+v", res)
	}
}

func TestInvalidAnswerIsRetriedOnceThenFails(t *testing.T) {
	a, drv, f, _, _ := newAnalyst(t, 1)
	f.invalid = 1
	ctx := context.Background()
	if _, _, _, err := a.Request(ctx, "chat"); err != nil {
		t.Fatal(err)
	}
	a.Run(ctx)
	row := drv.Rows(t, `SELECT state, attempt, calls FROM analyst_briefs WHERE cluster_id = 'chat'`)[0]
	if row["state"] != "done" || fmt.Sprint(row["attempt"]) != "2" || fmt.Sprint(row["calls"]) != "2" {
		t.Fatalf("retried brief %v", row)
	}
	// Two invalid answers: failed, and both calls charged.
	a2, drv2, f2, _, _ := newAnalyst(t, 1)
	f2.invalid = 2
	a2.Request(ctx, "chat")
	a2.Run(ctx)
	row = drv2.Rows(t, `SELECT state, error, cost_micro_usd FROM analyst_briefs WHERE cluster_id = 'chat'`)[0]
	charged := drv2.Int(t, `SELECT SUM(cost_micro_usd) FROM llm_spend WHERE cluster_id = 'chat' AND state = 'settled'`)
	if row["state"] != "failed" || !strings.Contains(row["error"].(string), "headline") || charged == 0 || fmt.Sprint(row["cost_micro_usd"]) != fmt.Sprint(charged) {
		t.Fatalf("failed brief %v, charged %d", row, charged)
	}
}

// A crash mid-call (the run dies after the reservation and the call went
// out) resumes: the lost call stays charged at its worst case, the brief
// is called again, and its input is not gathered again.
func TestCrashMidCallResumes(t *testing.T) {
	a, drv, f, _, now := newAnalyst(t, 1)
	ctx := context.Background()
	a.Request(ctx, "chat")
	f.during = func() { panic("isolate evicted") }
	func() {
		defer func() { recover() }()
		a.Run(ctx)
	}()
	row := drv.Rows(t, `SELECT state, calls, input_json FROM analyst_briefs WHERE cluster_id = 'chat'`)[0]
	if row["state"] != "calling" || fmt.Sprint(row["calls"]) != "1" {
		t.Fatalf("after the crash %v", row)
	}
	input := row["input_json"]
	f.during = nil
	// The reviews change: a resumed brief keeps the input it saw.
	drv.Exec(t, `DELETE FROM app_reviews`)
	// Too soon: the call may still be in flight, so the brief is left alone.
	if res := a.Run(ctx); drv.Rows(t, `SELECT state FROM analyst_briefs WHERE cluster_id = 'chat'`)[0]["state"] != "calling" {
		t.Fatalf("a fresh call was taken over: %+v", res)
	}
	*now = now.Add(StaleCall + time.Second)
	resumed := a.Run(ctx)
	row = drv.Rows(t, `SELECT state, calls, input_json, cost_micro_usd FROM analyst_briefs WHERE cluster_id = 'chat'`)[0]
	lost := drv.Rows(t, `SELECT state, cost_micro_usd, reserved_micro_usd FROM llm_spend WHERE call_id LIKE '%/1' AND cluster_id = 'chat'`)[0]
	if row["state"] != "done" || fmt.Sprint(row["calls"]) != "2" || row["input_json"] != input {
		t.Fatalf("resumed %v", row)
	}
	if lost["state"] != "lost" || lost["cost_micro_usd"] != lost["reserved_micro_usd"] {
		t.Fatalf("lost call %v", lost)
	}
	settled := drv.Int(t, `SELECT SUM(cost_micro_usd) FROM llm_spend WHERE brief_id = (SELECT brief_id FROM analyst_briefs WHERE cluster_id = 'chat')`)
	if fmt.Sprint(row["cost_micro_usd"]) != fmt.Sprint(settled) {
		t.Fatalf("brief cost %v, ledger %d", row["cost_micro_usd"], settled)
	}
	// What the scheduler's ledger fact carries for this run: the lost call
	// (at its worst case) and the new one, the same spend as llm_spend.
	if c := resumed.Counters(); c["llm-cost-micro-usd"] != settled || c["llm-calls"] != 2 || c["briefs-done"] != 1 ||
		!strings.Contains(resumed.Detail(), "chat/b1:") {
		t.Fatalf("run counters %v detail %q, ledger %d", c, resumed.Detail(), settled)
	}
}

// The cap is never passed: calls are admitted only while the day's spend
// plus every reservation plus the call's worst case fits; then the analyst
// stops and says so, and the brief waits (not lost) for the next day.
func TestCapStopsTheAnalystWithoutOverspending(t *testing.T) {
	// Find one call's worst case (about 3x a settled call), then cap at one
	// and a half of them: two calls fit (the first settles below its
	// reservation), the third would pass the cap.
	probe, _, _, _, _ := newAnalyst(t, 1)
	ctx := context.Background()
	probe.Request(ctx, "budget")
	probe.Run(ctx)
	worst := probe.Store.DB
	var rows []struct {
		R int64 `json:"reserved_micro_usd"`
	}
	if err := worst.Query(ctx, &rows, `SELECT reserved_micro_usd FROM llm_spend LIMIT 1`); err != nil || len(rows) == 0 {
		t.Fatal(err)
	}
	capMicro := rows[0].R * 3 / 2
	a, drv, f, _, now := newAnalyst(t, float64(capMicro)/1e6)
	res := a.Run(ctx)
	spent := drv.Int(t, `SELECT SUM(cost_micro_usd) FROM llm_spend`)
	if !res.StoppedAtCap || f.calls != 2 || spent > a.Config.DailyCap {
		t.Fatalf("run %+v: %d calls, spent %d of cap %d", res, f.calls, spent, a.Config.DailyCap)
	}
	st, _ := a.Status(ctx)
	if !st.StoppedAtCap || st.State != "stopped_at_cap" || !strings.Contains(st.Message, "cap") {
		t.Fatalf("status %+v", st)
	}
	open := drv.Int(t, `SELECT COUNT(*) FROM analyst_briefs WHERE state IN ('queued', 'ready')`)
	if open == 0 {
		t.Fatal("the brief the cap stopped must wait, not be dropped")
	}
	// Running again the same day calls nothing.
	before := f.calls
	if res := a.Run(ctx); !res.StoppedAtCap || f.calls != before {
		t.Fatalf("same-day run %+v", res)
	}
	// Next UTC day: a new budget, the waiting briefs finish.
	*now = now.Add(24 * time.Hour)
	a.Run(ctx)
	if n := drv.Int(t, `SELECT COUNT(*) FROM analyst_briefs WHERE state = 'done'`); n != 3 {
		t.Fatalf("%d done after the day rolled", n)
	}
	for _, d := range drv.Rows(t, `SELECT day, SUM(cost_micro_usd) AS s FROM llm_spend GROUP BY day`) {
		if int64(d["s"].(float64)) > a.Config.DailyCap {
			t.Fatalf("day %v spent %v over the cap %d", d["day"], d["s"], a.Config.DailyCap)
		}
	}
	// A cap below one call's worst case admits nothing at all.
	b, _, fb, _, _ := newAnalyst(t, float64(rows[0].R-1)/1e6)
	if res := b.Run(ctx); !res.StoppedAtCap || fb.calls != 0 {
		t.Fatalf("tiny cap: %+v, %d calls", res, fb.calls)
	}
}

// A 429 storm is waited out (Retry-After, bounded) and nothing is lost; a
// storm longer than a run's waits stops it rate limited, the brief ready.
func TestRateLimitStormIsPacedNotLost(t *testing.T) {
	a, drv, f, _, now := newAnalyst(t, 1)
	ctx := context.Background()
	a.Request(ctx, "chat")
	start := *now
	f.limited = 2
	res := a.Run(ctx)
	// Two 429s and two briefs fill the run's MaxCallsPerRun; the requested
	// (oldest) brief is done first.
	if res.RateLimited || res.Done != 2 || drv.Rows(t, `SELECT state FROM analyst_briefs WHERE cluster_id = 'chat'`)[0]["state"] != "done" {
		t.Fatalf("short storm: %+v", res)
	}
	if waited := now.Sub(start); waited < 4*time.Second {
		t.Fatalf("waited %s for two 429s with Retry-After 2s", waited)
	}
	if n := drv.Int(t, `SELECT COUNT(*) FROM llm_spend WHERE outcome = 'rate_limited' AND cost_micro_usd = 0 AND state = 'settled'`); n != 2 {
		t.Fatalf("%d rate-limited calls recorded at no cost", n)
	}
	b, drv2, f2, _, _ := newAnalyst(t, 1)
	f2.limited = 100
	res = b.Run(ctx)
	if !res.RateLimited || res.RetryAfterS < 1 || res.Done != 0 {
		t.Fatalf("long storm: %+v", res)
	}
	if n := drv2.Int(t, `SELECT COUNT(*) FROM analyst_briefs WHERE state = 'ready'`); n == 0 {
		t.Fatal("the storm lost the brief")
	}
	// The limiter refusing holds the call back: nothing sent, nothing held.
	c, drv3, f3, p3, _ := newAnalyst(t, 1)
	p3.refuse = true
	if res := c.Run(ctx); !res.RateLimited || f3.calls != 0 || drv3.Int(t, `SELECT COUNT(*) FROM llm_spend`) != 0 {
		t.Fatalf("limiter refusal: %+v, %d calls", res, f3.calls)
	}
	if n := drv3.Int(t, `SELECT COUNT(*) FROM analyst_briefs WHERE state = 'ready' AND calls = 0`); n == 0 {
		t.Fatal("a refused call must leave its brief ready")
	}
}

func TestEndpointErrorStopsAndBriefGivesUpAfterMaxCalls(t *testing.T) {
	a, drv, f, _, _ := newAnalyst(t, 1)
	f.failWith = fmt.Errorf("%w: HTTP 500", llm.ErrUpstream)
	ctx := context.Background()
	for i := 0; i < MaxCallsPerBrief+1; i++ {
		if res := a.Run(ctx); res.Err == "" && i < MaxCallsPerBrief {
			t.Fatalf("run %d: an endpoint error must be the run's error: %+v", i, res)
		}
	}
	row := drv.Rows(t, `SELECT state, calls, error FROM analyst_briefs ORDER BY created_at, brief_id LIMIT 1`)[0]
	if row["state"] != "failed" || fmt.Sprint(row["calls"]) != fmt.Sprint(MaxCallsPerBrief) {
		t.Fatalf("brief after %d failing calls: %v", MaxCallsPerBrief, row)
	}
	if n := drv.Int(t, `SELECT SUM(cost_micro_usd) FROM llm_spend`); n != 0 {
		t.Fatalf("failed calls with no usage cost %d", n)
	}
	if !errors.Is(f.failWith, llm.ErrUpstream) {
		t.Fatal("unreachable")
	}
}

func TestRequestAndDisabled(t *testing.T) {
	a, _, _, _, _ := newAnalyst(t, 1)
	ctx := context.Background()
	if _, found, _, err := a.Request(ctx, "nope"); err != nil || found {
		t.Fatalf("unknown cluster: %v %v", found, err)
	}
	b1, _, created, err := a.Request(ctx, "chat")
	b2, _, created2, _ := a.Request(ctx, "chat")
	if err != nil || !created || created2 || b1.BriefID != b2.BriefID || b1.State != StateQueued || b1.Trigger != TriggerAPI {
		t.Fatalf("request twice: %+v %v / %+v %v", b1, created, b2, created2)
	}
	a.Client = nil
	if res := a.Run(ctx); res.Calls != 0 {
		t.Fatalf("disabled run %+v", res)
	}
	if st, _ := a.Status(ctx); st.State != "disabled" || st.Configured {
		t.Fatalf("disabled status %+v", st)
	}
}

// LoadConfig reads the analyst's settings alone with the Worker's loader.
func LoadConfig(getenv func(string) string) (Config, []module.Problem) {
	v, probs := module.Load(Settings, getenv)
	return ConfigFrom(v), probs
}

func TestLoadConfig(t *testing.T) {
	env := map[string]string{VarPriceIn: "0.00015", VarPriceOut: "0.0006", VarDailyCap: "2.5", VarTokensPerMinute: "abc", VarBaseURL: "http://x/v1/"}
	c, probs := LoadConfig(func(k string) string { return env[k] })
	if c.Price.InputPerMTok != 150000 || c.Price.OutputPerMTok != 600000 || c.DailyCap != 2_500_000 || c.BaseURL != "http://x/v1" ||
		c.TokensPerMinute != DefaultTokensPerMinute || len(probs) != 1 || probs[0].Var != VarTokensPerMinute {
		t.Fatalf("%+v %v", c, probs)
	}
	if _, probs := LoadConfig(func(k string) string { return map[string]string{VarDailyCap: "-1"}[k] }); len(probs) != 1 {
		t.Fatal("a negative cap must be refused")
	}
	if int64(ratelimit.Limits[LimiterKey].Limit) != DefaultTokensPerMinute {
		t.Fatal("the llm-tokens key's default limit must be DefaultTokensPerMinute")
	}
}

func TestMain(m *testing.M) {
	logx.SetOutput(io.Discard)
	os.Exit(m.Run())
}

// The analyst's reads use their indexes (no full-table scan), on SQLite
// with the real migrations. A read marked Bounded walks the head of an
// index up to its LIMIT: worker/queryplan_test.go checks it at catalogue
// scale (it runs it and counts the rows walked).
func TestHotQueriesUseIndexes(t *testing.T) {
	_, drv := d1test.New(t)
	for _, q := range HotQueries() {
		if q.Bounded != "" {
			continue
		}
		plan := drv.Rows(t, "EXPLAIN QUERY PLAN "+q.SQL, q.Args...)
		// A json_each argument list, a constant row or a subquery's rows
		// (a co-routine, bounded by its own plan) is no table.
		notTable := map[string]bool{"SCAN CONSTANT ROW": true}
		for _, step := range plan {
			if name, ok := strings.CutPrefix(fmt.Sprint(step["detail"]), "CO-ROUTINE "); ok {
				notTable["SCAN "+name] = true
			}
		}
		for _, step := range plan {
			if d := fmt.Sprint(step["detail"]); strings.HasPrefix(d, "SCAN ") && !strings.HasPrefix(d, "SCAN json_each") && !notTable[d] {
				t.Errorf("%s: %s", q.Name, d)
			}
		}
	}
}
