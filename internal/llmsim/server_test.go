package llmsim

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"storecrawl/worker/analyst"
	"storecrawl/worker/llm"
	"storecrawl/worker/markets"
)

type fakeClock struct {
	mu    sync.Mutex
	t     time.Time
	slept []time.Duration
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) sleep(_ context.Context, d time.Duration) {
	c.mu.Lock()
	c.slept = append(c.slept, d)
	c.mu.Unlock()
}
func (c *fakeClock) advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

func newSim(t *testing.T, cfg Config, key string) (*httptest.Server, *fakeClock) {
	t.Helper()
	clk := &fakeClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	srv := httptest.NewServer(NewServer(Options{Config: cfg, APIKey: key, Now: clk.now, Sleep: clk.sleep}))
	t.Cleanup(srv.Close)
	return srv, clk
}

func client(srv *httptest.Server, key string) llm.OpenAI {
	return llm.OpenAI{BaseURL: srv.URL + "/v1", APIKey: key, Model: "any", Doer: srv.Client()}
}

func ptr(f float64) *float64 { return &f }

func sampleInput() analyst.BriefInput {
	return analyst.BriefInput{
		ClusterID: "bill splitting", Label: "bill splitting", Keywords: []string{"split", "bill", "receipt"},
		Market: markets.Scores{ClusterID: "bill splitting", OpportunityScore: ptr(33.5), Demand: ptr(4.2), AppCount: 9},
		Leaders: []analyst.LeaderInput{
			{AppID: 595068606, Name: "Tab", Reviews: 25, Themes: []analyst.ThemeInput{{Phrase: "venmo", Share: 0.12}, {Phrase: "receipt", Share: 0.08}}},
			{AppID: 1, Name: "Splitwise", Reviews: 20},
		},
		ClusterThemes: []analyst.ThemeInput{{Phrase: "venmo", Share: 0.1}},
	}
}

func getStats(t *testing.T, srv *httptest.Server) Stats {
	t.Helper()
	resp, err := srv.Client().Get(srv.URL + "/__stats")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st Stats
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	return st
}

func postConfig(t *testing.T, srv *httptest.Server, body string) int {
	t.Helper()
	resp, err := srv.Client().Post(srv.URL+"/__config", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestBriefRoundTripThroughTheRealClient(t *testing.T) {
	srv, clk := newSim(t, Config{LatencyMS: 100, MSPerToken: 2}, "sk-test")
	msgs, _, err := analyst.BuildBriefPrompt(sampleInput())
	if err != nil {
		t.Fatal(err)
	}
	c := client(srv, "sk-test")
	resp, err := c.Complete(context.Background(), llm.Request{Messages: msgs, MaxTokens: analyst.BriefMaxTokens, JSON: true})
	if err != nil {
		t.Fatal(err)
	}
	b, err := analyst.ValidateBrief(resp.Text, sampleInput())
	if err != nil {
		t.Fatalf("the simulator's brief is invalid: %v\n%s", err, resp.Text)
	}
	if b.Leaders[0].AppID != 595068606 || !strings.Contains(b.Leaders[0].Weaknesses[0], "venmo") || b.Confidence != "high" {
		t.Errorf("brief not built from the input: %+v", b)
	}
	// Usage: the simulator's own counts, reported and totalled.
	u := resp.Usage
	if u.Estimated || u.PromptTokens != countPrompt(msgs) || u.CompletionTokens != countText(resp.Text) || u.TotalTokens != u.PromptTokens+u.CompletionTokens {
		t.Errorf("usage %+v", u)
	}
	// The analyst's estimates are in the simulator's ballpark, and the
	// budget's upper bound is really above it.
	if est := llm.EstimatePrompt(msgs); est < u.PromptTokens/2 || est > 2*u.PromptTokens || llm.MaxPromptTokens(msgs) < u.PromptTokens {
		t.Errorf("estimate %d / upper %d vs counted %d", est, llm.MaxPromptTokens(msgs), u.PromptTokens)
	}
	// Latency: base + per completion token.
	if want := time.Duration(100+2*int(u.CompletionTokens)) * time.Millisecond; len(clk.slept) != 1 || clk.slept[0] != want {
		t.Errorf("slept %v, want [%v]", clk.slept, want)
	}
	// Deterministic: the same prompt gets the same answer.
	again, _ := c.Complete(context.Background(), llm.Request{Messages: msgs, MaxTokens: analyst.BriefMaxTokens})
	if again.Text != resp.Text {
		t.Error("same prompt, different answer")
	}
	st := getStats(t, srv)
	if st.Served != 2 || st.Briefs != 2 || st.PromptTokens != 2*u.PromptTokens || st.CompletionTokens != 2*u.CompletionTokens {
		t.Errorf("stats %+v", st)
	}
	// A wrong key is a permanent refusal.
	if _, err := client(srv, "nope").Complete(context.Background(), llm.Request{Messages: msgs}); !errors.Is(err, llm.ErrPermanent) {
		t.Errorf("bad key: %v", err)
	}
}

func TestStormAndRateLimits(t *testing.T) {
	srv, clk := newSim(t, Config{RetryAfterS: 3}, "")
	c := client(srv, "")
	req := llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hello"}}}
	if code := postConfig(t, srv, `{"fail_next":2}`); code != 200 {
		t.Fatalf("config: %d", code)
	}
	for i := range 2 {
		_, err := c.Complete(context.Background(), req)
		if !errors.Is(err, llm.ErrRateLimited) || llm.RetryAfterOf(err) != 3*time.Second {
			t.Fatalf("storm call %d: %v", i, err)
		}
	}
	if _, err := c.Complete(context.Background(), req); err != nil {
		t.Fatalf("after the storm: %v", err)
	}
	// Requests per minute, on the injected clock.
	postConfig(t, srv, `{"requests_per_min":2}`)
	for i := range 2 {
		if _, err := c.Complete(context.Background(), req); err != nil {
			t.Fatalf("call %d within the limit: %v", i, err)
		}
	}
	if _, err := c.Complete(context.Background(), req); !errors.Is(err, llm.ErrRateLimited) {
		t.Fatalf("third call in the minute: %v", err)
	}
	clk.advance(time.Minute)
	if _, err := c.Complete(context.Background(), req); err != nil {
		t.Fatalf("next minute: %v", err)
	}
	// Tokens per minute.
	postConfig(t, srv, `{"requests_per_min":0,"tokens_per_min":30}`)
	big := llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: strings.Repeat("abcde ", 40)}}}
	if _, err := c.Complete(context.Background(), big); !errors.Is(err, llm.ErrRateLimited) {
		t.Fatalf("over the token budget: %v", err)
	}
	if _, err := c.Complete(context.Background(), req); err != nil {
		t.Fatalf("a small call fits: %v", err)
	}
	if st := getStats(t, srv); st.RateLimited != 4 || st.Served != 5 {
		t.Errorf("stats %+v", st)
	}
	for _, bad := range []string{`{"fail_next":-1}`, `{"invalid":"sometimes"}`, `{"latency_ms":999999}`, `{"nope":1}`, `[`} {
		if code := postConfig(t, srv, bad); code != 400 {
			t.Errorf("config %s: %d", bad, code)
		}
	}
}

func TestInvalidFirstThenRetryIsValid(t *testing.T) {
	srv, _ := newSim(t, Config{Invalid: "first"}, "")
	c := client(srv, "")
	in := sampleInput()
	msgs, _, _ := analyst.BuildBriefPrompt(in)
	resp, err := c.Complete(context.Background(), llm.Request{Messages: msgs, MaxTokens: analyst.BriefMaxTokens})
	if err != nil {
		t.Fatal(err)
	}
	_, verr := analyst.ValidateBrief(resp.Text, in)
	step := analyst.NextStep(1, msgs, resp.Text, verr)
	if verr == nil || step.Action != analyst.Retry {
		t.Fatalf("first answer should be invalid: %v %+v", verr, step.Action)
	}
	resp2, err := c.Complete(context.Background(), llm.Request{Messages: step.Messages, MaxTokens: analyst.BriefMaxTokens})
	if err != nil {
		t.Fatal(err)
	}
	_, verr2 := analyst.ValidateBrief(resp2.Text, in)
	if s := analyst.NextStep(2, step.Messages, resp2.Text, verr2); s.Action != analyst.Accept {
		t.Fatalf("retry: %v %+v", verr2, s)
	}
	postConfig(t, srv, `{"invalid":"always"}`)
	resp3, _ := c.Complete(context.Background(), llm.Request{Messages: step.Messages})
	_, verr3 := analyst.ValidateBrief(resp3.Text, in)
	if s := analyst.NextStep(2, step.Messages, resp3.Text, verr3); s.Action != analyst.Fail {
		t.Fatalf("always invalid: %+v", s)
	}
	if st := getStats(t, srv); st.InvalidAnswers != 2 || st.Briefs != 3 {
		t.Errorf("stats %+v", st)
	}
}

func TestMaxTokensTruncatesAndBadRequests(t *testing.T) {
	srv, _ := newSim(t, Config{}, "")
	in := sampleInput()
	msgs, _, _ := analyst.BuildBriefPrompt(in)
	resp, err := client(srv, "").Complete(context.Background(), llm.Request{Messages: msgs, MaxTokens: 20})
	if err != nil {
		t.Fatal(err)
	}
	if resp.FinishReason != "length" || resp.Usage.CompletionTokens > 20 {
		t.Errorf("finish %q, %d tokens", resp.FinishReason, resp.Usage.CompletionTokens)
	}
	if _, verr := analyst.ValidateBrief(resp.Text, in); verr == nil {
		t.Error("a cut brief validated")
	}
	for _, body := range []string{`{`, `{"messages":[]}`, `{"messages":[{"role":"user","content":"x"}],"stream":true}`} {
		resp, err := srv.Client().Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		var e struct {
			Error struct{ Message string } `json:"error"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if resp.StatusCode != 400 || e.Error.Message == "" {
			t.Errorf("%s: %d %q", body, resp.StatusCode, e.Error.Message)
		}
	}
}

func TestCountText(t *testing.T) {
	for _, tc := range []struct {
		s    string
		want int64
	}{{"", 0}, {"hello", 1}, {"hello world", 2}, {"internationalization", 4}, {`{"a":1}`, 7}, {"é日本", 1}} {
		if got := countText(tc.s); got != tc.want {
			t.Errorf("countText(%q) = %d, want %d", tc.s, got, tc.want)
		}
	}
}

// shapeKeys lists an object's keys and its nested objects' as "a.b" paths,
// the first element standing for each array.
func shapeKeys(prefix string, v any, out map[string]bool) {
	switch x := v.(type) {
	case map[string]any:
		for k, sub := range x {
			out[prefix+k] = true
			shapeKeys(prefix+k+".", sub, out)
		}
	case []any:
		if len(x) > 0 {
			shapeKeys(prefix, x[0], out)
		}
	}
}

// TestAnswersInTheRealShape: every key the simulator's answer carries is
// one a real chat-completions answer carries (worker/llm/testdata), and
// the keys the client reads are there.
func TestAnswersInTheRealShape(t *testing.T) {
	realBody, err := os.ReadFile("../../worker/llm/testdata/chat_completion_gpt4omini_2024.json")
	if err != nil {
		t.Fatal(err)
	}
	var realAns any
	json.Unmarshal(realBody, &realAns)
	real := map[string]bool{}
	shapeKeys("", realAns, real)

	srv, _ := newSim(t, Config{}, "")
	body := `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hello"}]}`
	resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var simAns any
	if err := json.NewDecoder(resp.Body).Decode(&simAns); err != nil {
		t.Fatal(err)
	}
	sim := map[string]bool{}
	shapeKeys("", simAns, sim)
	for k := range sim {
		if !real[k] {
			t.Errorf("the simulator answers %q, which a real answer does not carry", k)
		}
	}
	for _, k := range []string{"model", "choices.message.content", "choices.finish_reason", "usage.prompt_tokens", "usage.completion_tokens", "usage.total_tokens"} {
		if !sim[k] || !real[k] {
			t.Errorf("%q: simulator %v, real %v", k, sim[k], real[k])
		}
	}
}

// The simulated brief quotes scores as given, on the API's scales, and says
// plainly when the cluster has no complaint themes.
func TestMarketTextQuotesScoresAsGiven(t *testing.T) {
	in := sampleInput()
	got := marketText(in)
	for _, want := range []string{"9 apps", "opportunity 33.5/100", "demand 4.2", "leaders' competitiveness not scored yet"} {
		if !strings.Contains(got, want) {
			t.Errorf("%q lacks %q", got, want)
		}
	}
	c := 64.8
	in.LeadersCompetitiveness = &c
	in.ThemesMissingReason = analyst.NoReviewsFetched
	got = marketText(in)
	if !strings.Contains(got, "leaders' competitiveness 64.8/100") || !strings.Contains(got, "No complaint themes: "+analyst.NoReviewsFetched) {
		t.Errorf("%q", got)
	}
	if b := simBrief(in); b.Confidence != "low" {
		t.Errorf("a brief without themes is %s confidence", b.Confidence)
	}
}
