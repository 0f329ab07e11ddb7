//go:build integration

package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSegmentEvaluationEndToEnd: searched keywords in two niches become
// segments (segments-full); the analyst evaluates the top one against the
// llm-sim, and GET /v1/segments/{id}/evaluation serves it with every step
// done, each LLM step with its prompt hash, tokens and cost; 400 and 404
// name id.
func TestSegmentEvaluationEndToEnd(t *testing.T) {
	t.Parallel()
	dir := outputDir(t)
	s := startSim(t, dir)
	llm := startLLMSim(t, dir)
	persist := filepath.Join(dir, "state")
	prepareDB(t, persist, dir, 0)
	var sql strings.Builder
	for niche, words := range [][]string{{"budget", "expense", "money", "savings"}, {"photo", "camera", "filter", "collage"}} {
		for a := range 6 {
			id := 200000001 + niche*100 + a
			fmt.Fprintf(&sql, "INSERT INTO app_registry (track_id, name, developer_name, rating_count, average_rating, rating_velocity_7d) VALUES (%d, '%s app %d', 'Dev %d', %d, %.1f, %d);\n",
				id, words[0], a, a, 5000-700*a, 3.4+0.2*float64(a%3), a)
		}
		for w, kw := range words {
			fmt.Fprintf(&sql, "INSERT INTO crawl_keywords (keyword, source, created_at, searched_at, result_count) VALUES ('%s app','title','2026-01-01T00:00:00.000Z','2026-01-01T00:00:00.000Z',6);\n", kw)
			for r := range 6 {
				fmt.Fprintf(&sql, "INSERT INTO crawl_rankings (keyword, track_id, rank, seen_at) VALUES ('%s app', %d, %d, '2026-01-01T00:00:00.000Z');\n",
					kw, 200000001+niche*100+(w+r)%6, r+1)
			}
		}
	}
	seedSQL(t, persist, sql.String())
	w := &worker{persist: persist, simBase: s.base, dir: dir, owner: t, vars: []string{"LLM_BASE_URL:" + llm.base + "/v1"}}
	w.start(t, "wrangler-1.log")

	doJSON(t, "POST", w.base+"/v1/scheduler/run-now", adminToken, `{"task":"segments-full"}`, nil)
	var page struct {
		Items []struct {
			ID   int64  `json:"id"`
			Name string `json:"name"`
		} `json:"items"`
	}
	eventually(t, 60*time.Second, "two segments", func() (bool, string) {
		page.Items = nil
		doJSON(t, "GET", w.base+"/v1/segments?sort=opportunity", "", nil, &page)
		return len(page.Items) == 2, jsonString(page)
	})
	top := page.Items[0].ID
	var out map[string]any
	if code := doJSON(t, "GET", w.base+"/v1/segments/abc/evaluation", "", nil, &out); code != 400 || out["field"] != "id" {
		t.Fatalf("non-numeric id: %d %v", code, out)
	}
	if code := doJSON(t, "GET", w.base+"/v1/segments/999/evaluation", "", nil, &out); code != 404 || out["field"] != "id" {
		t.Fatalf("unknown segment: %d %v", code, out)
	}

	var ev struct {
		State string  `json:"state"`
		Cost  float64 `json:"cost_micro_usd"`
		Steps []struct {
			Name       string  `json:"name"`
			State      string  `json:"state"`
			LLM        bool    `json:"llm_call"`
			PromptHash string  `json:"prompt_hash"`
			Prompt     float64 `json:"prompt_tokens"`
			Completion float64 `json:"completion_tokens"`
			Cost       float64 `json:"cost_micro_usd"`
			Input      any     `json:"input"`
			Output     any     `json:"output"`
		} `json:"steps"`
	}
	path := fmt.Sprintf("%s/v1/segments/%d/evaluation", w.base, top)
	eventually(t, 120*time.Second, "the top segment evaluated", func() (bool, string) {
		doJSON(t, "POST", w.base+"/v1/scheduler/run-now", adminToken, `{"task":"analyst-run"}`, nil)
		ev.Steps = nil
		doJSON(t, "GET", path, "", nil, &ev)
		return ev.State == "done", jsonString(ev)
	})
	sum := 0.0
	for _, st := range ev.Steps {
		if st.State != "done" || st.Input == nil || st.Output == nil || (st.LLM && (st.PromptHash == "" || st.Prompt == 0 || st.Completion == 0 || st.Cost <= 0)) {
			t.Fatalf("step %s: %s", st.Name, jsonString(st))
		}
		sum += st.Cost
	}
	if len(ev.Steps) != 5 || sum != ev.Cost {
		t.Fatalf("evaluation: %s", jsonString(ev))
	}
	var st analystStatus
	doJSON(t, "GET", w.base+"/v1/analyst/status", "", nil, &st)
	if st.StoppedAtCap || st.Spent < ev.Cost || st.Spent > st.Cap {
		t.Fatalf("status: %s", jsonString(st))
	}
	t.Logf("segment %d (%s) evaluated for %v µ$; sim stats %s", top, page.Items[0].Name, ev.Cost, jsonString(llm.stats(t)))
}
