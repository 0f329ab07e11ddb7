//go:build integration

package e2e

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// startLLMSim builds and starts cmd/llm-sim on a free loopback port.
func startLLMSim(t *testing.T, dir string) *sim {
	t.Helper()
	return startSimulator(t, dir, "llm-sim")
}

type analystStatus struct {
	State        string  `json:"state"`
	Message      string  `json:"message"`
	StoppedAtCap bool    `json:"stopped_at_cap"`
	Spent        float64 `json:"spent_today_micro_usd"`
	Reserved     float64 `json:"reserved_micro_usd"`
	Cap          float64 `json:"daily_cap_micro_usd"`
	Calls        float64 `json:"calls_today"`
	Top          []struct {
		ClusterID string `json:"cluster_id"`
		Headline  string `json:"headline"`
	} `json:"top_opportunities"`
}

type briefView struct {
	BriefID  string `json:"brief_id"`
	State    string `json:"state"`
	Headline string `json:"headline"`
	Brief    struct {
		Leaders []struct {
			AppID      int64    `json:"app_id"`
			Weaknesses []string `json:"weaknesses"`
		} `json:"leaders"`
		Confidence string `json:"confidence"`
	} `json:"brief"`
	Input struct {
		Leaders []struct {
			AppID  int64 `json:"app_id"`
			Themes []any `json:"complaint_themes"`
		} `json:"leaders"`
		ClusterThemes []any `json:"cluster_complaint_themes"`
	} `json:"input"`
	PromptHash       string  `json:"prompt_hash"`
	PromptTokens     float64 `json:"prompt_tokens"`
	CompletionTokens float64 `json:"completion_tokens"`
	Cost             float64 `json:"cost_micro_usd"`
	Calls            []struct {
		State     string  `json:"state"`
		Outcome   string  `json:"outcome"`
		Cost      float64 `json:"cost_micro_usd"`
		Reserved  float64 `json:"reserved_micro_usd"`
		EstTokens float64 `json:"est_tokens"`
		CreatedAt string  `json:"created_at"`
	} `json:"calls"`
}

// TestAnalystBriefsUnderCapAndRateLimits: reviews fetched and themes
// computed for the top cluster; a tiny daily cap stops the analyst before
// any call (nothing spent, the brief kept); under a normal cap the same
// brief resumes through a 429 storm (paced by Retry-After, nothing lost)
// and is written from the stored input, its spend in the ledger.
func TestAnalystBriefsUnderCapAndRateLimits(t *testing.T) {
	t.Parallel()
	dir := outputDir(t)
	s := startSim(t, dir)
	llm := startLLMSim(t, dir)
	persist := filepath.Join(dir, "state")
	prepareDB(t, persist, dir, 0)
	var sql strings.Builder
	for i, kw := range []string{"budget", "budget planner", "chat"} {
		fmt.Fprintf(&sql, "INSERT INTO crawl_keywords (keyword, source, created_at, searched_at, result_count) VALUES ('%s','title','2026-01-01T00:00:00.000Z','2026-01-01T00:00:00.000Z',4);\n", kw)
		for j := 0; j < 4; j++ {
			id := 100000001 + i*10 + j
			ratings := 1000 * (j + 1)
			if kw == "chat" && j == 0 {
				ratings = 5_000_000
			}
			fmt.Fprintf(&sql, "INSERT OR IGNORE INTO app_registry (track_id, name, rating_count, average_rating) VALUES (%d, 'App %d', %d, %.1f);\n", id, id, ratings, 3.5+float64(j)*0.2)
			fmt.Fprintf(&sql, "INSERT INTO crawl_rankings (keyword, track_id, rank, seen_at) VALUES ('%s', %d, %d, '2026-01-01T00:00:00.000Z');\n", kw, id, j+1)
		}
	}
	seedSQL(t, persist, sql.String())

	// A cap of $0.0005: below one brief call's worst case (its prompt's
	// bytes at the input price plus 1,000 completion tokens at the output price).
	const tinyCap = "0.0005"
	w := &worker{persist: persist, simBase: s.base, dir: dir, owner: t,
		vars: []string{"LLM_BASE_URL:" + llm.base + "/v1", "LLM_DAILY_CAP_USD:" + tinyCap}}
	w.start(t, "wrangler-1.log")
	doJSON(t, "GET", w.base+"/__scheduled?cron="+strings.ReplaceAll("0 */6 * * *", " ", "+"), "", nil, nil)
	var page struct {
		Items []struct {
			ClusterID string `json:"cluster_id"`
		} `json:"items"`
	}
	eventually(t, 20*time.Second, "markets published", func() (bool, string) {
		page.Items = nil
		doJSON(t, "GET", w.base+"/v1/opportunities?limit=3", "", nil, &page)
		return len(page.Items) == 3, jsonString(page)
	})
	top := page.Items[0].ClusterID
	doJSON(t, "POST", w.base+"/v1/scheduler/run-now", adminToken, `{"task":"reviews-refresh"}`, nil)
	var themes struct {
		Reviews float64 `json:"reviews"`
		Themes  []any   `json:"themes"`
	}
	eventually(t, 60*time.Second, "reviews fetched and themes computed for the top cluster", func() (bool, string) {
		doJSON(t, "GET", w.base+"/v1/clusters/"+url.PathEscape(top)+"/themes", "", nil, &themes)
		return themes.Reviews > 0 && len(themes.Themes) > 0, jsonString(themes)
	})

	// Route validation: a 400 naming the field.
	var out map[string]any
	if code := doJSON(t, "POST", w.base+"/v1/analyst/run", adminToken, `{"cluster":"x"}`, &out); code != 400 || out["field"] != "cluster" {
		t.Fatalf("bad body: %d %v", code, out)
	}
	if code := doJSON(t, "POST", w.base+"/v1/analyst/run", adminToken, `{"cluster_id":""}`, &out); code != 400 || out["field"] != "cluster_id" {
		t.Fatalf("empty cluster_id: %d %v", code, out)
	}
	if code := doJSON(t, "POST", w.base+"/v1/analyst/run", "", `{"cluster_id":"`+top+`"}`, &out); code != 401 {
		t.Fatalf("unauthenticated: %d", code)
	}
	// 202 with the cluster's brief (the scheduled run may have queued it already).
	var req map[string]any
	if code := doJSON(t, "POST", w.base+"/v1/analyst/run", adminToken, map[string]string{"cluster_id": top}, &req); code != 202 || req["brief_id"] == "" || req["cluster_id"] != top {
		t.Fatalf("run: %d %v", code, req)
	}
	var st analystStatus
	eventually(t, 30*time.Second, "the analyst stopped at the tiny cap", func() (bool, string) {
		doJSON(t, "GET", w.base+"/v1/analyst/status", "", nil, &st)
		return st.StoppedAtCap, jsonString(st)
	})
	if st.State != "stopped_at_cap" || st.Spent != 0 || st.Reserved != 0 || st.Spent > st.Cap || st.Calls != 0 || !strings.Contains(st.Message, "cap") {
		t.Fatalf("at the cap: %s", jsonString(st))
	}
	if n := llm.stats(t)["requests"].(float64); n != 0 {
		t.Fatalf("the LLM was called %v times under a cap below one call", n)
	}
	var b briefView
	if code := doJSON(t, "GET", w.base+"/v1/opportunities/"+url.PathEscape(top)+"/brief", "", nil, &b); code != 200 || (b.State != "ready" && b.State != "queued") || b.BriefID != req["brief_id"] {
		t.Fatalf("the brief the cap stopped must wait: %d %s", code, jsonString(b))
	}
	t.Logf("tiny cap: %s", st.Message)

	// Normal cap, and a 429 storm: three refusals with Retry-After 2 s. The
	// storm is set before the restart: the restarted scheduler's first tick
	// may resume the open brief before this test asks for it.
	llm.setConfig(t, map[string]any{"fail_next": 3, "retry_after_s": 2})
	w.vars = []string{"LLM_BASE_URL:" + llm.base + "/v1"}
	w.restart(t, "wrangler-2.log")
	if code := doJSON(t, "POST", w.base+"/v1/analyst/run", adminToken, map[string]string{"cluster_id": top}, &req); code != 202 || req["created"] != false || req["brief_id"] != b.BriefID {
		t.Fatalf("the open brief is resumed, not duplicated: %d %v", code, req)
	}
	eventually(t, 90*time.Second, "the brief written through the storm", func() (bool, string) {
		doJSON(t, "GET", w.base+"/v1/opportunities/"+url.PathEscape(top)+"/brief", "", nil, &b)
		return b.State == "done", jsonString(b)
	})
	if b.BriefID != req["brief_id"] || b.Headline == "" || len(b.Brief.Leaders) == 0 || len(b.Input.Leaders) == 0 || len(b.Input.ClusterThemes) == 0 || b.PromptHash == "" {
		t.Fatalf("brief: %s", jsonString(b))
	}
	limited, var429Cost, sum := 0, 0.0, 0.0
	for _, c := range b.Calls {
		if c.Outcome == "rate_limited" {
			limited++
			var429Cost += c.Cost
		}
		if c.State == "reserved" || c.Cost > c.Reserved {
			t.Fatalf("call not settled within its reservation: %s", jsonString(c))
		}
		sum += c.Cost
	}
	first, _ := time.Parse(time.RFC3339, b.Calls[0].CreatedAt)
	last, _ := time.Parse(time.RFC3339, b.Calls[len(b.Calls)-1].CreatedAt)
	stats := llm.stats(t)
	if limited != 3 || var429Cost != 0 || stats["rate_limited"].(float64) != 3 || sum != b.Cost || b.Cost <= 0 {
		t.Fatalf("storm: %d rate-limited calls costing %v, sim %v; brief cost %v vs calls %v", limited, var429Cost, jsonString(stats), b.Cost, sum)
	}
	if gap := last.Sub(first); gap < 4*time.Second {
		t.Fatalf("the 429s were not waited out (Retry-After 2 s each): %s between first and last call", gap)
	}
	eventually(t, 30*time.Second, "the status shows the top brief's headline", func() (bool, string) {
		doJSON(t, "GET", w.base+"/v1/analyst/status", "", nil, &st)
		return len(st.Top) == 3 && st.Top[0].ClusterID == top && st.Top[0].Headline == b.Headline, jsonString(st)
	})
	if st.StoppedAtCap || st.Spent <= 0 || st.Spent > st.Cap || st.Reserved != 0 {
		t.Fatalf("status after the briefs: %s", jsonString(st))
	}
	// The spend is in the replicated ledger: the scheduler's analyst-run
	// facts carry it as counter deltas, summing to the day's spend.
	eventually(t, 60*time.Second, "the spend replicated to the facts ledger", func() (bool, string) {
		rows := d1Rows(t, persist, `SELECT COALESCE(SUM(json_extract(counters, '$."analyst-run.llm-cost-micro-usd"')), 0) AS cost,
  COALESCE(SUM(json_extract(counters, '$."analyst-run.llm-calls"')), 0) AS calls FROM facts WHERE source = 'scheduler:v1' AND kind = 'scheduler.task_run'`)
		return rows[0]["cost"].(float64) == st.Spent && rows[0]["calls"].(float64) == st.Calls, jsonString(rows) + " vs " + jsonString(st)
	})
	var lim map[string]any
	if code := doJSON(t, "GET", w.base+"/v1/limiter/status?namespace=internal&key=llm-tokens", "", nil, &lim); code != 200 || lim["counters"].(map[string]any)["allowed"].(float64) < 3 {
		t.Fatalf("LLM calls did not acquire from the llm-tokens limiter: %d %v", code, lim)
	}
	stats = llm.stats(t)
	briefs := stats["briefs"].(float64) // the sim counts answered brief prompts
	okCall := b.Calls[len(b.Calls)-1]
	t.Logf("measured: %v briefs served; sim counted %v prompt + %v completion tokens; top brief: %v prompt + %v completion tokens, $%.6f at the default prices ($0.00015/$0.0006 per 1k); its call acquired %v estimated tokens and reserved $%.6f (worst case); spent today $%.6f over %v calls",
		briefs, stats["prompt_tokens"], stats["completion_tokens"], b.PromptTokens, b.CompletionTokens, b.Cost/1e6, okCall.EstTokens, okCall.Reserved/1e6, st.Spent/1e6, st.Calls)
}
