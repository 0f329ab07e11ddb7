package analyst

import (
	"context"
	"encoding/json"
	"time"

	"storecrawl/durable/limiter"
	"storecrawl/worker/llm"
	"storecrawl/worker/ratelimit"
)

// LimiterPacer is the Pacer over the OmniLimiter: the llm-tokens key with
// the configured per-minute token budget.
type LimiterPacer struct {
	Limits          *ratelimit.Client
	TokensPerMinute int64
}

// Policy is the llm-tokens key's policy at a budget.
func Policy(tokensPerMinute int64) limiter.Policy {
	p := ratelimit.Limits[LimiterKey]
	p.Limit = int(tokensPerMinute)
	return p
}

// Schedule implements Pacer.
func (p LimiterPacer) Schedule(ctx context.Context, cost int, fn func(context.Context) error) error {
	return p.Limits.ScheduleKey(ctx, LimiterKey, Policy(p.TokensPerMinute), cost, fn)
}

// TopShown is how many top opportunities the status lists (the dashboard).
const TopShown = 5

// Status is GET /v1/analyst/status.
type Status struct {
	State        string            `json:"state"`
	Message      string            `json:"message"`
	StoppedAtCap bool              `json:"stopped_at_cap"`
	UpdatedAt    string            `json:"updated_at,omitempty"`
	Configured   bool              `json:"configured"`
	Model        string            `json:"model"`
	Day          string            `json:"day"`
	SpentUSD     string            `json:"spent_today_usd"`
	CapUSD       string            `json:"daily_cap_usd"`
	Spent        llm.MicroUSD      `json:"spent_today_micro_usd"`
	Reserved     llm.MicroUSD      `json:"reserved_micro_usd"`
	Cap          llm.MicroUSD      `json:"daily_cap_micro_usd"`
	Calls        int64             `json:"calls_today"`
	ByCluster    []ClusterDaySpend `json:"spend_by_cluster"`
	OpenBriefs   int64             `json:"open_briefs"`
	OpenEvals    int64             `json:"open_evaluations"`
	TokensPerMin int64             `json:"tokens_per_minute"`
	Price        llm.Price         `json:"price"`
	Top          []TopBrief        `json:"top_opportunities"`
}

// Status reports the analyst's state, today's spend against the cap, and
// the top opportunities with their briefs. stopped_at_cap holds only for
// the day it was recorded (a new UTC day starts a new budget).
func (a *Analyst) Status(ctx context.Context) (Status, error) {
	now := a.now()
	day := llm.Day(now)
	row, err := a.Store.Status(ctx)
	if err != nil {
		return Status{}, err
	}
	sp, err := a.Store.Spend(ctx, day)
	if err != nil {
		return Status{}, err
	}
	open, err := a.Store.OpenCount(ctx)
	if err != nil {
		return Status{}, err
	}
	openEvals, err := a.Store.OpenEvalCount(ctx)
	if err != nil {
		return Status{}, err
	}
	top, err := a.Store.TopBriefs(ctx, TopShown)
	if err != nil {
		return Status{}, err
	}
	s := Status{State: row.State, Message: row.Message, UpdatedAt: row.UpdatedAt, Configured: a.Client != nil, Model: a.Model,
		Day: day, Spent: sp.Spent, Reserved: sp.Reserved, Cap: a.Config.DailyCap, Calls: sp.Calls, ByCluster: sp.ByCluster,
		SpentUSD: llm.USD(sp.Spent), CapUSD: llm.USD(a.Config.DailyCap), OpenBriefs: open, OpenEvals: openEvals,
		TokensPerMin: a.Config.TokensPerMinute, Price: a.Config.Price, Top: top}
	if at, err := time.Parse(time.RFC3339, row.UpdatedAt); err == nil && row.StoppedAtCap != 0 && llm.Day(at) == day {
		s.StoppedAtCap = true
	} else if row.State == "stopped_at_cap" {
		s.State, s.Message = "idle", "a new day: the cap is lifted"
	}
	if !s.Configured && s.State != "disabled" {
		s.State, s.Message = "disabled", "no model configured: set "+VarBaseURL+" or bind env.AI"
	}
	return s, nil
}

// BriefView is GET /v1/opportunities/{id}/brief: the brief, the exact
// input and prompt it came from, and its calls with their cost.
type BriefView struct {
	BriefID    string          `json:"brief_id"`
	ClusterID  string          `json:"cluster_id"`
	State      string          `json:"state"`
	Trigger    string          `json:"trigger"`
	Headline   string          `json:"headline,omitempty"`
	Confidence string          `json:"confidence,omitempty"`
	Brief      json.RawMessage `json:"brief"`
	// ThemesMissingReason says why the brief had no complaint themes to
	// stand on (from its input); absent when it had them.
	ThemesMissingReason string          `json:"themes_missing_reason,omitempty"`
	Error               string          `json:"error,omitempty"`
	Model               string          `json:"model"`
	PromptVersion       string          `json:"prompt_version"`
	PromptHash          string          `json:"prompt_hash,omitempty"`
	Input               json.RawMessage `json:"input"`
	Attempts            int             `json:"attempts"`
	PromptTokens        int64           `json:"prompt_tokens"`
	CompletionTokens    int64           `json:"completion_tokens"`
	Cost                llm.MicroUSD    `json:"cost_micro_usd"`
	CostUSD             string          `json:"cost_usd"`
	Calls               []Call          `json:"calls"`
	CreatedAt           string          `json:"created_at"`
	FinishedAt          string          `json:"finished_at,omitempty"`
}

func rawOrNull(s string) json.RawMessage {
	if s == "" || !json.Valid([]byte(s)) {
		return json.RawMessage("null")
	}
	return json.RawMessage(s)
}

// Brief is a cluster's newest brief (a done one first); false when none.
func (a *Analyst) Brief(ctx context.Context, clusterID string) (BriefView, bool, error) {
	b, ok, err := a.Store.Latest(ctx, clusterID)
	if err != nil || !ok {
		return BriefView{}, false, err
	}
	calls, err := a.Store.Calls(ctx, b.BriefID)
	if err != nil {
		return BriefView{}, true, err
	}
	if calls == nil {
		calls = []Call{}
	}
	return BriefView{BriefID: b.BriefID, ClusterID: b.ClusterID, State: b.State, Trigger: b.Trigger, Headline: b.Headline,
		Confidence: b.Confidence, Brief: rawOrNull(b.BriefJSON), Error: b.Error, Model: b.Model, PromptVersion: b.PromptVersion,
		PromptHash: b.PromptHash, Input: rawOrNull(b.InputJSON), Attempts: b.Attempt, PromptTokens: b.PromptTokens,
		CompletionTokens: b.CompletionTokens, Cost: b.Cost, CostUSD: llm.USD(b.Cost), Calls: calls, CreatedAt: b.CreatedAt,
		FinishedAt: b.FinishedAt, ThemesMissingReason: themesMissingOf(b.InputJSON)}, true, nil
}

// themesMissingOf reads a stored input's themes_missing_reason ("" when
// the input is not stored yet or had themes).
func themesMissingOf(inputJSON string) string {
	var in struct {
		Reason string `json:"themes_missing_reason"`
	}
	_ = json.Unmarshal([]byte(inputJSON), &in)
	return in.Reason
}
