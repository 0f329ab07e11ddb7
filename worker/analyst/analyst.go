// Package analyst is the LLM stage: for each top opportunity
// cluster (and on demand) it writes a brief from the cluster's scores,
// leaders and complaint themes, stores it with the exact input it saw, and
// keeps LLM spend within a daily cap.
//
// It runs as resumable steps under the scheduler (the analyst-run task):
// a brief moves queued → ready → calling → ready (retry) | done | failed,
// and every move is one D1 batch, so a crash resumes from the last step.
// Every call first reserves its worst-case cost in the spend ledger
// (llm_spend, a conditional insert that admits it only within the day's
// cap), then acquires its estimated tokens from the OmniLimiter (the
// llm-tokens key's per-minute budget), then settles at the reported usage.
package analyst

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"storecrawl/worker/d1"
	"storecrawl/worker/llm"
	"storecrawl/worker/logx"
	"storecrawl/worker/ratelimit"
)

// Bounds of the analyst.
const (
	// TopClusters is how many of the top opportunity clusters are briefed
	// without being asked.
	TopClusters = 3
	// BriefRefreshAge: a cluster is briefed again (automatically) once its
	// newest brief is this old.
	BriefRefreshAge = 7 * 24 * time.Hour
	// MaxCallsPerRun bounds one task run's LLM calls (each a few seconds).
	MaxCallsPerRun = 4
	// MaxCallsPerBrief bounds the calls one brief may ever start (attempts,
	// 429s and lost calls together), so no brief can spend without end.
	MaxCallsPerBrief = 6
	// StaleCall is how long a brief may stay "calling" before its call is
	// presumed lost (the run crashed): longer than any call takes.
	StaleCall = 3 * time.Minute
	// MaxRateLimitWaits is the 429s one run waits out (each for the
	// endpoint's Retry-After, at most MaxRateLimitWait) before it stops and
	// leaves the brief to the scheduler's backoff.
	MaxRateLimitWaits = 3
	MaxRateLimitWait  = 10 * time.Second
	minRateLimitWait  = time.Second
	// MaxOpenBriefs bounds the briefs waiting (POST /v1/analyst/run).
	MaxOpenBriefs = 20
	// maxStoredAnswer caps the raw answer kept (the validator refuses more).
	maxStoredAnswer = 32 << 10
	// maxErrorText caps an error kept on a brief.
	maxErrorText = 500
	// LimiterKey is the OmniLimiter key every LLM call acquires from.
	LimiterKey = ratelimit.LLMTokens
)

// Pacer runs fn once the per-minute token budget admits cost tokens
// (ratelimit.Client.ScheduleKey under LimiterKey); ratelimit.ErrRateLimited
// when it does not within its wait.
type Pacer interface {
	Schedule(ctx context.Context, cost int, fn func(context.Context) error) error
}

// Analyst writes briefs.
type Analyst struct {
	Store  Store
	Client llm.Client // nil: no model configured
	Pacer  Pacer
	Config Config
	// Model is the model asked for (Config.Model, or the Workers AI one).
	Model string
	Now   func() time.Time
	Sleep func(time.Duration)
	// NewID makes brief ids (uuid by default).
	NewID func() string
}

// RunResult is one run of the analyst-run task.
type RunResult struct {
	Queued, Calls, Done, Failed, Retries int
	// EvalsQueued, EvalSteps (LLM steps done), EvalsDone, EvalsFailed:
	// the segment evaluations' part of the run.
	EvalsQueued, EvalSteps, EvalsDone, EvalsFailed int
	StoppedAtCap                                   bool
	RateLimited                                    bool
	RetryAfterS                                    int
	Err                                            string
	// Charges are the calls this run settled (or found lost), for the
	// scheduler's ledger fact.
	Charges []Charge
}

// Charge is one call's spend.
type Charge struct {
	BriefID, ClusterID       string
	Cost                     llm.MicroUSD
	PromptTokens, Completion int64
}

// Counters are the run's additions to the analyst-run task's lifetime
// counters (the scheduler's ledger fact carries them as deltas).
func (r RunResult) Counters() map[string]int64 {
	c := map[string]int64{"llm-calls": int64(len(r.Charges)), "briefs-done": int64(r.Done), "briefs-failed": int64(r.Failed),
		"evaluations-done": int64(r.EvalsDone), "evaluations-failed": int64(r.EvalsFailed)}
	for _, ch := range r.Charges {
		c["llm-cost-micro-usd"] += ch.Cost
		c["llm-prompt-tokens"] += ch.PromptTokens
		c["llm-completion-tokens"] += ch.Completion
	}
	for k, v := range c {
		if v == 0 {
			delete(c, k)
		}
	}
	return c
}

// maxDetailCharges bounds the charges listed in a run's fact detail.
const maxDetailCharges = 8

// Detail lists the run's spend per cluster and brief ("cluster/brief:µ$").
func (r RunResult) Detail() string {
	parts := make([]string, 0, min(len(r.Charges), maxDetailCharges))
	for _, ch := range r.Charges[:min(len(r.Charges), maxDetailCharges)] {
		parts = append(parts, fmt.Sprintf("%s/%s:%d", cutText(ch.ClusterID, 40), cutText(ch.BriefID, 8), ch.Cost))
	}
	return strings.Join(parts, " ")
}

// Summary is the task's one-line result.
func (r RunResult) Summary() string {
	s := fmt.Sprintf("%d queued, %d calls, %d done, %d failed, %d retries", r.Queued, r.Calls, r.Done, r.Failed, r.Retries)
	if r.EvalsQueued+r.EvalSteps+r.EvalsFailed > 0 {
		s += fmt.Sprintf("; evaluations: %d queued, %d steps, %d done, %d failed", r.EvalsQueued, r.EvalSteps, r.EvalsDone, r.EvalsFailed)
	}
	if r.StoppedAtCap {
		s += " (stopped at the daily cap)"
	}
	if r.RateLimited {
		s += " (rate limited)"
	}
	return s
}

func (a *Analyst) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

func (a *Analyst) newID() string {
	if a.NewID != nil {
		return a.NewID()
	}
	return uuid.NewString()
}

// Request queues a brief for a cluster now (POST /v1/analyst/run): the
// cluster's open brief if it has one (created false). found is false for an
// unknown cluster; ErrTooManyOpen when MaxOpenBriefs wait already.
func (a *Analyst) Request(ctx context.Context, clusterID string) (b BriefRow, found, created bool, err error) {
	ok, err := a.Store.ClusterExists(ctx, clusterID)
	if err != nil || !ok {
		return BriefRow{}, false, false, err
	}
	if b, open, err := a.Store.OpenFor(ctx, clusterID); err != nil || open {
		return b, true, false, err
	}
	if n, err := a.Store.OpenCount(ctx); err != nil {
		return BriefRow{}, true, false, err
	} else if n >= MaxOpenBriefs {
		return BriefRow{}, true, false, ErrTooManyOpen
	}
	id := a.newID()
	if err := a.Store.Enqueue(ctx, id, clusterID, TriggerAPI, a.Model, a.now()); err != nil {
		return BriefRow{}, true, false, err
	}
	b, _, err = a.Store.Get(ctx, id)
	return b, true, true, err
}

// ErrTooManyOpen: MaxOpenBriefs briefs are waiting already. Not
// fmt.Errorf: the first fmt call compiles fmt's code, which a package
// initialiser would add to every cold start of the Worker.
var ErrTooManyOpen = errors.New("analyst: " + strconv.Itoa(MaxOpenBriefs) + " briefs are waiting already")

// Run is one run of the analyst-run task: queue the top clusters that need
// a brief, then advance open briefs, oldest first, for at most
// MaxCallsPerRun calls; then the segment evaluations (runEvaluations). It stops at the daily cap (saying so in the
// status), on a rate limit it could not wait out, and on an endpoint error.
func (a *Analyst) Run(ctx context.Context) (res RunResult) {
	defer func() {
		if res.Err != "" {
			logx.Event("analyst.run_failed", map[string]any{"level": logx.Error, "error": res.Err, "summary": res.Summary()})
		}
	}()
	now := a.now()
	if a.Client == nil {
		msg := "no model configured: set " + VarBaseURL + " or bind env.AI"
		if err := a.Store.SetStatus(ctx, "disabled", msg, false, now); err != nil {
			res.Err = "status: " + err.Error()
		}
		return res
	}
	top, err := a.Store.TopWithoutBrief(ctx, TopClusters, now.Add(-BriefRefreshAge))
	if err != nil {
		res.Err = "top clusters: " + err.Error()
		return res
	}
	for i, c := range top {
		// A millisecond apart, so the best cluster is the oldest: briefed first.
		if err := a.Store.Enqueue(ctx, a.newID(), c, TriggerSchedule, a.Model, now.Add(time.Duration(i)*time.Millisecond)); err != nil {
			res.Err = "enqueue: " + err.Error()
			return res
		}
		res.Queued++
	}
	waits := 0
	for res.Calls < MaxCallsPerRun {
		if err := ctx.Err(); err != nil {
			res.Err = err.Error()
			break
		}
		now = a.now()
		b, ok, err := a.Store.NextOpen(ctx, now)
		if err != nil {
			res.Err = "next brief: " + err.Error()
			break
		}
		if !ok {
			break
		}
		out := a.step(ctx, b, now, &res)
		if a.afterStep(out, &waits, "brief_id", b.BriefID, &res) {
			continue
		}
		if out.stop {
			break
		}
	}
	// The segment evaluations share the cap and the endpoint: they run
	// only while neither stopped the briefs.
	if !res.StoppedAtCap && !res.RateLimited && res.Err == "" {
		a.runEvaluations(ctx, &res)
	}
	a.finishStatus(ctx, &res)
	return res
}

func (a *Analyst) sleep(d time.Duration) {
	if a.Sleep != nil {
		a.Sleep(d)
		return
	}
	time.Sleep(d)
}

func (a *Analyst) finishStatus(ctx context.Context, res *RunResult) {
	now := a.now()
	state, msg := "idle", "last run: "+res.Summary()
	switch {
	case res.StoppedAtCap:
		held, _ := a.Store.Held(ctx, llm.Day(now))
		state = "stopped_at_cap"
		msg = fmt.Sprintf("stopped at the daily LLM spend cap: $%s of $%s held on %s; open briefs and segment evaluations resume tomorrow (UTC) or under a higher %s",
			llm.USD(held), llm.USD(a.Config.DailyCap), llm.Day(now), VarDailyCap)
	case res.RateLimited:
		state = "rate_limited"
	case res.Err != "":
		state, msg = "error", "last run failed: "+res.Err
	}
	if n, err := a.Store.OpenCount(ctx); err == nil && n > 0 && state == "idle" {
		state = "working"
	}
	if n, err := a.Store.OpenEvalCount(ctx); err == nil && n > 0 && state == "idle" {
		state = "working"
	}
	if err := a.Store.SetStatus(ctx, state, msg, res.StoppedAtCap, now); err != nil {
		logx.Err("analyst.status_write_failed", err, nil)
	}
}

// stepOut is what one step did.
type stepOut struct {
	stop        bool // end the run
	rateLimited bool
	retryAfter  time.Duration
	err         string
}

// step advances one brief by one step.
func (a *Analyst) step(ctx context.Context, b BriefRow, now time.Time, res *RunResult) stepOut {
	switch b.State {
	case StateQueued:
		return a.gather(ctx, b, now, res)
	case StateCalling:
		return a.recoverLost(ctx, b, now, res)
	case StateReady:
		return a.call(ctx, b, now, res)
	}
	return stepOut{stop: true, err: "brief " + b.BriefID + " in unknown state " + b.State}
}

// gather stores the brief's input and first prompt (queued → ready).
func (a *Analyst) gather(ctx context.Context, b BriefRow, now time.Time, res *RunResult) stepOut {
	in, err := a.Store.GatherInput(ctx, b.ClusterID)
	if errors.Is(err, ErrNoCluster) || errors.Is(err, ErrNoLeaders) {
		res.Failed++
		return a.fail(ctx, b, err.Error(), now)
	}
	if err != nil {
		return stepOut{stop: true, err: "gather " + b.ClusterID + ": " + err.Error()}
	}
	msgs, shown, err := BuildBriefPrompt(in)
	if err != nil {
		res.Failed++
		return a.fail(ctx, b, err.Error(), now)
	}
	_, err = a.Store.DB.Exec(ctx, d1.Stmt{SQL: storeInputSQL,
		Args: []any{string(shown), llm.PromptHash(msgs), mustJSON(msgs), PromptVersion, a.Model, d1.Time(now), b.BriefID}})
	if err != nil {
		return stepOut{stop: true, err: "store input: " + err.Error()}
	}
	return stepOut{}
}

func (a *Analyst) fail(ctx context.Context, b BriefRow, reason string, now time.Time) stepOut {
	logx.Event("analyst.brief_failed", map[string]any{"level": logx.Warn, "brief_id": b.BriefID, "cluster_id": b.ClusterID, "reason": reason})
	_, err := a.Store.DB.Exec(ctx, d1.Stmt{SQL: failBriefSQL,
		Args: []any{cutText(reason, maxErrorText), d1.Time(now), d1.Time(now), b.BriefID}})
	if err != nil {
		return stepOut{stop: true, err: "record failure: " + err.Error()}
	}
	return stepOut{}
}

func callID(briefID string, n int) string { return fmt.Sprintf("%s/%d", briefID, n) }

// recoverLost handles a brief left "calling" by a crashed run: its call
// stays charged at its worst case (chargeLost) and the brief is ready for
// another call.
func (a *Analyst) recoverLost(ctx context.Context, b BriefRow, now time.Time, res *RunResult) stepOut {
	id := callID(b.BriefID, b.Calls)
	err := a.chargeLost(ctx, res, b.BriefID, b.ClusterID, id, now, d1.Stmt{SQL: readyAfterLostSQL,
		Args: []any{"call " + id + " lost mid-flight; charged at its worst case", d1.Time(now), b.BriefID, b.Calls}})
	if err != nil {
		return stepOut{stop: true, err: "recover lost call: " + err.Error()}
	}
	return stepOut{}
}

// call makes one LLM call for a ready brief: reserve, pace, call, settle.
func (a *Analyst) call(ctx context.Context, b BriefRow, now time.Time, res *RunResult) stepOut {
	if b.Calls >= MaxCallsPerBrief {
		res.Failed++
		return a.fail(ctx, b, fmt.Sprintf("gave up after %d calls; last error: %s", b.Calls, b.Error), now)
	}
	var msgs []llm.Message
	var in BriefInput
	if err := json.Unmarshal([]byte(b.MessagesJSON), &msgs); err != nil || len(msgs) == 0 {
		res.Failed++
		return a.fail(ctx, b, "stored prompt unreadable", now)
	}
	if err := json.Unmarshal([]byte(b.InputJSON), &in); err != nil {
		res.Failed++
		return a.fail(ctx, b, "stored input unreadable", now)
	}
	req := llm.Request{Model: a.Model, Messages: msgs, MaxTokens: BriefMaxTokens, JSON: true}
	n := b.Calls + 1
	id := callID(b.BriefID, n)
	// The brief moves to calling in the reservation's batch, only if the
	// reservation was inserted.
	resp, cerr, out, sent := a.reserveAndCall(ctx, capCall{ID: id, ClusterID: b.ClusterID, OwnerID: b.BriefID, Req: req,
		Start:  d1.Stmt{SQL: startCallingSQL, Args: []any{n, d1.Time(now), b.BriefID, b.Calls, id}},
		Unsent: d1.Stmt{SQL: readyAfterUnsentSQL, Args: []any{b.Calls, d1.Time(a.now()), b.BriefID, n}}}, now, res)
	if !sent {
		return out
	}
	settledAt := a.now()
	if cerr != nil {
		outcome, out := callErrorOutcome(cerr)
		if err := a.settle(ctx, res, b.BriefID, b.ClusterID, id, n, llm.Usage{}, outcome, settledAt, d1.Stmt{SQL: readyAfterErrorSQL,
			Args: []any{cutText(cerr.Error(), maxErrorText), d1.Time(settledAt), b.BriefID, n}}); err != nil {
			return stepOut{stop: true, err: "settle: " + err.Error()}
		}
		return out
	}
	brief, verr := ValidateBrief(resp.Text, in)
	next := NextStep(b.Attempt, msgs, resp.Text, verr)
	answer := cutText(resp.Text, maxStoredAnswer)
	var upd d1.Stmt
	outcome := "ok"
	switch next.Action {
	case Accept:
		res.Done++
		upd = d1.Stmt{SQL: briefDoneSQL,
			Args: []any{answer, mustJSON(brief), brief.Headline, brief.Confidence, resp.Usage.PromptTokens, resp.Usage.CompletionTokens,
				d1.Time(settledAt), d1.Time(settledAt), b.BriefID, n}}
		logx.Event("analyst.brief_done", map[string]any{"brief_id": b.BriefID, "cluster_id": b.ClusterID, "calls": n})
	case Retry:
		outcome = "invalid"
		res.Retries++
		upd = d1.Stmt{SQL: briefRetrySQL,
			Args: []any{mustJSON(next.Messages), answer, cutText(next.Reason, maxErrorText), resp.Usage.PromptTokens, resp.Usage.CompletionTokens,
				d1.Time(settledAt), b.BriefID, n}}
	default:
		outcome = "invalid"
		res.Failed++
		upd = d1.Stmt{SQL: briefFailedSQL,
			Args: []any{answer, cutText(next.Reason, maxErrorText), resp.Usage.PromptTokens, resp.Usage.CompletionTokens,
				d1.Time(settledAt), d1.Time(settledAt), b.BriefID, n}}
		logx.Event("analyst.brief_failed", map[string]any{"level": logx.Warn, "brief_id": b.BriefID, "cluster_id": b.ClusterID, "reason": cutText(next.Reason, maxErrorText)})
	}
	if err := a.settle(ctx, res, b.BriefID, b.ClusterID, id, n, resp.Usage, outcome, settledAt, upd); err != nil {
		return stepOut{stop: true, err: "settle: " + err.Error()}
	}
	return stepOut{}
}

func cutText(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "")
}

// afterStep records a step's error and, when the model rate-limited it,
// sleeps its Retry-After (clamped to [minRateLimitWait, MaxRateLimitWait])
// and answers true to retry the step, at most MaxRateLimitWaits times a
// run; past that it marks the run rate-limited. idKey and id name the
// brief or evaluation in the log.
func (a *Analyst) afterStep(out stepOut, waits *int, idKey, id string, res *RunResult) (retry bool) {
	if out.err != "" {
		res.Err = out.err
	}
	if !out.rateLimited {
		return false
	}
	wait := min(max(out.retryAfter, minRateLimitWait), MaxRateLimitWait)
	if *waits < MaxRateLimitWaits {
		*waits++
		logx.Event("analyst.rate_limited", map[string]any{"level": logx.Warn, idKey: id, "wait_ms": wait.Milliseconds()})
		a.sleep(wait)
		return true
	}
	res.RateLimited, res.RetryAfterS = true, int((wait+time.Second-1)/time.Second)
	return false
}
