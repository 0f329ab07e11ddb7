package analyst

import (
	"context"
	"errors"
	"time"

	"storecrawl/worker/d1"
	"storecrawl/worker/llm"
	"storecrawl/worker/logx"
	"storecrawl/worker/ratelimit"
)

// capCall is one LLM call under the daily cap, for any owner (a brief or
// an evaluation step): its llm_spend row and the owner's two moves.
type capCall struct {
	ID        string // llm_spend.call_id
	ClusterID string // llm_spend.cluster_id: what the spend is shown under
	OwnerID   string // llm_spend.brief_id: the brief or evaluation
	Req       llm.Request
	// Start moves the owner to calling; it must match only when the call's
	// reservation row exists (EXISTS on call_id), so a refused reservation
	// moves nothing.
	Start d1.Stmt
	// Unsent moves the owner back when the call was never sent.
	Unsent d1.Stmt
}

// reserveAndCall reserves the call's worst case (a conditional insert
// admitted only within the day's cap, in one batch with c.Start), acquires
// its estimated tokens from the Pacer and makes the call. sent is false when
// nothing went out: the cap refused it (res.StoppedAtCap), the limiter did
// (the reservation released, c.Unsent applied) or D1 failed; out says why.
// When sent, the caller settles the call exactly once (settle).
func (a *Analyst) reserveAndCall(ctx context.Context, c capCall, now time.Time, res *RunResult) (resp llm.Response, cerr error, out stepOut, sent bool) {
	call := llm.CallOf(c.ID, c.Req)
	worst := a.Config.Price.Cost(call.MaxPrompt, call.MaxTokens)
	day := llm.Day(now)
	got, err := a.Store.DB.ExecAtomic(ctx,
		d1.Stmt{SQL: reserveCallSQL,
			Args: []any{c.ID, day, c.ClusterID, c.OwnerID, call.Estimate, worst, d1.Time(now), day, worst, a.Config.DailyCap}},
		c.Start)
	if err != nil {
		return resp, nil, stepOut{stop: true, err: "reserve: " + err.Error()}, false
	}
	if got == 0 {
		res.StoppedAtCap = true
		logx.Event("analyst.stopped_at_cap", map[string]any{"level": logx.Warn, "owner_id": c.OwnerID, "cluster_id": c.ClusterID,
			"worst_case_micro_usd": worst, "cap_micro_usd": a.Config.DailyCap, "day": day})
		return resp, nil, stepOut{stop: true}, false
	}
	res.Calls++
	perr := a.Pacer.Schedule(ctx, int(call.Estimate), func(ctx context.Context) error {
		resp, cerr = a.Client.Complete(ctx, c.Req)
		return nil
	})
	if perr == nil {
		return resp, cerr, stepOut{}, true
	}
	// Never sent: the reservation is released and the owner is ready again.
	res.Calls--
	if _, err := a.Store.DB.ExecAtomic(ctx, d1.Stmt{SQL: releaseCallSQL, Args: []any{c.ID}}, c.Unsent); err != nil {
		return resp, nil, stepOut{stop: true, err: "release: " + err.Error()}, false
	}
	if errors.Is(perr, ratelimit.ErrRateLimited) {
		return resp, nil, stepOut{stop: true, rateLimited: true, retryAfter: MaxRateLimitWait}, false
	}
	return resp, nil, stepOut{stop: true, err: "limiter: " + perr.Error()}, false
}

// callErrorOutcome is the ledger outcome of a failed call and what the run
// does next: a 429 waits (rate limited), anything else stops the run.
func callErrorOutcome(cerr error) (string, stepOut) {
	if errors.Is(cerr, llm.ErrRateLimited) {
		return "rate_limited", stepOut{rateLimited: true, retryAfter: llm.RetryAfterOf(cerr)}
	}
	return "error", stepOut{stop: true, err: "model call: " + cerr.Error()}
}

// settle charges a call at its reported usage (0 when the endpoint counted
// nothing) and applies its owner's update, in one batch: a reservation is
// settled once (settleCallSQL matches only a reserved row).
func (a *Analyst) settle(ctx context.Context, res *RunResult, ownerID, clusterID, id string, n int, u llm.Usage, outcome string, now time.Time, upd ...d1.Stmt) error {
	cost := a.Config.Price.Cost(u.PromptTokens, u.CompletionTokens)
	_, err := a.Store.DB.ExecAtomic(ctx, append([]d1.Stmt{
		{SQL: settleCallSQL, Args: []any{u.PromptTokens, u.CompletionTokens, cost, outcome, d1.Time(now), id}}}, upd...)...)
	if err == nil {
		res.Charges = append(res.Charges, Charge{BriefID: ownerID, ClusterID: clusterID, Cost: cost, PromptTokens: u.PromptTokens, Completion: u.CompletionTokens})
		logx.Event("analyst.llm_charge", map[string]any{"owner_id": ownerID, "cluster_id": clusterID, "call_id": id, "call": n,
			"outcome": outcome, "prompt_tokens": u.PromptTokens, "completion_tokens": u.CompletionTokens, "cost_micro_usd": cost,
			"estimated_usage": u.Estimated})
	}
	return err
}

// chargeLost charges a call lost mid-flight (its run crashed) at its worst
// case, in one batch with the owner's move back to ready: whether it was
// billed is unknown, and the cap must hold either way.
func (a *Analyst) chargeLost(ctx context.Context, res *RunResult, ownerID, clusterID, id string, now time.Time, upd ...d1.Stmt) error {
	var held []struct {
		Reserved int64 `json:"reserved_micro_usd"`
	}
	if err := a.Store.DB.Query(ctx, &held, lostCallHeldSQL, id); err != nil {
		return err
	}
	logx.Event("analyst.call_lost", map[string]any{"level": logx.Warn, "owner_id": ownerID, "call_id": id})
	if _, err := a.Store.DB.ExecAtomic(ctx, append([]d1.Stmt{{SQL: chargeLostCallSQL, Args: []any{d1.Time(now), id}}}, upd...)...); err != nil {
		return err
	}
	if len(held) > 0 {
		res.Charges = append(res.Charges, Charge{BriefID: ownerID, ClusterID: clusterID, Cost: held[0].Reserved})
	}
	return nil
}
