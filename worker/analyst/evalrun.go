package analyst

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"storecrawl/worker/d1"
	"storecrawl/worker/llm"
	"storecrawl/worker/logx"
)

// Bounds of the segment evaluations.
const (
	// TopSegments is how many of the top segments by opportunity are
	// evaluated without being asked.
	TopSegments = 3
	// EvalRefreshAge: a segment is evaluated again once its newest
	// evaluation (of any state) is this old.
	EvalRefreshAge = 7 * 24 * time.Hour
	// MaxEvalStepsPerRun bounds the evaluation moves of one analyst-run:
	// each reads D1 (steps 1–2 together count as one) or makes one call.
	// Four moves finish one evaluation whose calls all succeed.
	MaxEvalStepsPerRun = 4
)

// The evaluations' step moves. A step's cost and tokens add the settled
// (or lost) ledger row of its call, read in the same batch after the
// ledger's update; an evaluation's cost is the sum of its ledger rows.
const (
	stepCallCostSQL = `cost_micro_usd = cost_micro_usd + COALESCE((SELECT cost_micro_usd FROM llm_spend WHERE call_id = ?), 0)`
	stepComputedSQL = `UPDATE segment_evaluation_steps SET state = 'done', input_json = ?, output_json = ?, updated_at = ?, finished_at = ?
WHERE eval_id = ? AND step = ? AND state = 'pending'`
	// stepStartSQL moves a step to calling with its input and prompt, only
	// if its call's reservation was inserted; the prompt hash is the first
	// attempt's.
	stepStartSQL = `UPDATE segment_evaluation_steps SET state = 'calling', calls = ?, attempt = MAX(attempt, 1), input_json = ?,
  prompt_hash = COALESCE(prompt_hash, ?), messages_json = ?, updated_at = ?
WHERE eval_id = ? AND step = ? AND state IN ('pending', 'ready') AND calls = ? AND EXISTS (SELECT 1 FROM llm_spend WHERE call_id = ?)`
	stepUnsentSQL = `UPDATE segment_evaluation_steps SET state = 'ready', calls = ?, updated_at = ?
WHERE eval_id = ? AND step = ? AND state = 'calling' AND calls = ?`
	// stepReadySQL: a failed, lost or invalid call leaves the step ready
	// (with the retry's messages when there is one).
	stepReadySQL = `UPDATE segment_evaluation_steps SET state = 'ready', error = ?, messages_json = COALESCE(?, messages_json),
  attempt = attempt + ?, answer = COALESCE(?, answer), prompt_tokens = prompt_tokens + ?, completion_tokens = completion_tokens + ?,
  ` + stepCallCostSQL + `, updated_at = ? WHERE eval_id = ? AND step = ? AND state = 'calling' AND calls = ?`
	stepDoneSQL = `UPDATE segment_evaluation_steps SET state = 'done', answer = ?, output_json = ?, error = NULL,
  prompt_tokens = prompt_tokens + ?, completion_tokens = completion_tokens + ?, ` + stepCallCostSQL + `, updated_at = ?, finished_at = ?
WHERE eval_id = ? AND step = ? AND state = 'calling' AND calls = ?`
	stepFailedSQL = `UPDATE segment_evaluation_steps SET state = 'failed', error = ?, answer = COALESCE(?, answer),
  prompt_tokens = prompt_tokens + ?, completion_tokens = completion_tokens + ?, ` + stepCallCostSQL + `, updated_at = ?, finished_at = ?
WHERE eval_id = ? AND step = ? AND state IN ('pending', 'ready', 'calling')`
	// evalUpdateSQL sets an evaluation's state (open, done, failed) and
	// its cost from the ledger (llm_spend_by_brief).
	evalUpdateSQL = `UPDATE segment_evaluations SET state = ?, error = COALESCE(?, error),
  cost_micro_usd = (SELECT COALESCE(SUM(cost_micro_usd), 0) FROM llm_spend WHERE brief_id = segment_evaluations.eval_id AND state != 'reserved'),
  updated_at = ?, finished_at = ? WHERE eval_id = ? AND state = 'open'`
)

// evalCluster is what an evaluation's spend is shown under in llm_spend
// and /v1/analyst/status's spend_by_cluster.
func evalCluster(segmentID int64) string { return "segment:" + strconv.FormatInt(segmentID, 10) }

func evalCallID(st EvalStepRow, n int) string { return fmt.Sprintf("%s/%d/%d", st.EvalID, st.Step, n) }

// evalStmt updates an evaluation: state, an error (nil keeps it), its cost.
func evalStmt(evalID, state string, errText any, now time.Time) d1.Stmt {
	var finished any
	if state != EvalOpen {
		finished = d1.Time(now)
	}
	return d1.Stmt{SQL: evalUpdateSQL, Args: []any{state, errText, d1.Time(now), finished, evalID}}
}

// runEvaluations queues the top segments that need an evaluation, then
// advances open evaluations, oldest first, for at most MaxEvalStepsPerRun
// moves. It stops at the daily cap, on a rate limit it could not wait out
// and on an endpoint error, as the briefs do.
func (a *Analyst) runEvaluations(ctx context.Context, res *RunResult) {
	now := a.now()
	top, err := a.Store.TopSegmentsWithoutEval(ctx, TopSegments, now.Add(-EvalRefreshAge))
	if err != nil {
		res.Err = "top segments: " + err.Error()
		return
	}
	for i, id := range top {
		if err := a.Store.EnqueueEval(ctx, a.newID(), id, TriggerSchedule, a.Model, now.Add(time.Duration(i)*time.Millisecond)); err != nil {
			res.Err = "enqueue evaluation: " + err.Error()
			return
		}
		res.EvalsQueued++
	}
	waits := 0
	for moves := 0; moves < MaxEvalStepsPerRun; moves++ {
		if err := ctx.Err(); err != nil {
			res.Err = err.Error()
			return
		}
		now = a.now()
		st, ok, err := a.Store.NextEvalStep(ctx, now)
		if err != nil {
			res.Err = "next evaluation step: " + err.Error()
			return
		}
		if !ok {
			return
		}
		out := a.evalStep(ctx, st, now, res)
		if a.afterStep(out, &waits, "eval_id", st.EvalID, res) {
			continue
		}
		if out.stop {
			return
		}
	}
}

// evalStep makes one move of an evaluation.
func (a *Analyst) evalStep(ctx context.Context, st EvalStepRow, now time.Time, res *RunResult) stepOut {
	switch {
	case st.Step <= StepThemes && st.State == StepPending:
		return a.evalGather(ctx, st, now, res)
	case st.State == StateCalling:
		id := evalCallID(st, st.Calls)
		err := a.chargeLost(ctx, res, st.EvalID, evalCluster(st.SegmentID), id, now,
			d1.Stmt{SQL: stepReadySQL, Args: []any{"call " + id + " lost mid-flight; charged at its worst case", nil, 0, nil, 0, 0,
				id, d1.Time(now), st.EvalID, st.Step, st.Calls}},
			evalStmt(st.EvalID, EvalOpen, nil, now))
		if err != nil {
			return stepOut{stop: true, err: "recover lost call: " + err.Error()}
		}
		return stepOut{}
	case st.Step >= StepMethods && (st.State == StepPending || st.State == StateReady):
		return a.evalCall(ctx, st, now, res)
	}
	return stepOut{stop: true, err: fmt.Sprintf("evaluation %s step %d in unknown state %s", st.EvalID, st.Step, st.State)}
}

// evalFail records a step and its evaluation as failed, for good.
func (a *Analyst) evalFail(ctx context.Context, st EvalStepRow, reason string, now time.Time, res *RunResult) stepOut {
	res.EvalsFailed++
	logx.Event("analyst.evaluation_failed", map[string]any{"level": logx.Warn, "eval_id": st.EvalID, "segment_id": st.SegmentID,
		"step": st.Name, "reason": reason})
	reason = cutText(reason, maxErrorText)
	if _, err := a.Store.DB.ExecAtomic(ctx,
		d1.Stmt{SQL: stepFailedSQL, Args: []any{reason, nil, 0, 0, "", d1.Time(now), d1.Time(now), st.EvalID, st.Step}},
		evalStmt(st.EvalID, EvalFailed, reason, now)); err != nil {
		return stepOut{stop: true, err: "record evaluation failure: " + err.Error()}
	}
	return stepOut{}
}

// evalGather computes steps 1 and 2 from D1 (no call) and stores each
// with its exact input, in one batch.
func (a *Analyst) evalGather(ctx context.Context, st EvalStepRow, now time.Time, res *RunResult) stepOut {
	src, apps, err := a.Store.ReadReferenceApps(ctx, st.SegmentID)
	if errors.Is(err, ErrNoSegment) {
		return a.evalFail(ctx, st, err.Error(), now, res)
	}
	if err != nil {
		return stepOut{stop: true, err: "reference apps: " + err.Error()}
	}
	tsrc, themes, err := a.Store.ReadThemes(ctx, apps)
	if err != nil {
		return stepOut{stop: true, err: "complaint themes: " + err.Error()}
	}
	ts := d1.Time(now)
	_, err = a.Store.DB.ExecAtomic(ctx,
		d1.Stmt{SQL: stepComputedSQL, Args: []any{mustJSON(src), mustJSON(apps), ts, ts, st.EvalID, StepReferenceApps}},
		d1.Stmt{SQL: stepComputedSQL, Args: []any{mustJSON(tsrc), mustJSON(themes), ts, ts, st.EvalID, StepThemes}})
	if err != nil {
		return stepOut{stop: true, err: "store reference apps and themes: " + err.Error()}
	}
	return stepOut{}
}

// evalCall makes one LLM step's call: its input rebuilt from the stored
// outputs before it (or, on a retry, its stored prompt), reserved, paced,
// called and settled like a brief's (reserveAndCall, settle). A done step
// is never called again: NextEvalStep only returns the first unfinished one.
func (a *Analyst) evalCall(ctx context.Context, st EvalStepRow, now time.Time, res *RunResult) stepOut {
	if st.Calls >= MaxCallsPerBrief {
		return a.evalFail(ctx, st, fmt.Sprintf("gave up after %d calls; last error: %s", st.Calls, st.Error), now, res)
	}
	msgs, input, hash, err := a.stepPrompt(ctx, st)
	if errors.Is(err, errStepInput) {
		return a.evalFail(ctx, st, err.Error(), now, res)
	}
	if err != nil {
		return stepOut{stop: true, err: "step input: " + err.Error()}
	}
	req := llm.Request{Model: a.Model, Messages: msgs, MaxTokens: StepMaxTokens(st.Step), JSON: true}
	n := st.Calls + 1
	id, cluster := evalCallID(st, n), evalCluster(st.SegmentID)
	resp, cerr, out, sent := a.reserveAndCall(ctx, capCall{ID: id, ClusterID: cluster, OwnerID: st.EvalID, Req: req,
		Start:  d1.Stmt{SQL: stepStartSQL, Args: []any{n, input, hash, mustJSON(msgs), d1.Time(now), st.EvalID, st.Step, st.Calls, id}},
		Unsent: d1.Stmt{SQL: stepUnsentSQL, Args: []any{st.Calls, d1.Time(now), st.EvalID, st.Step, n}}}, now, res)
	if !sent {
		return out
	}
	at := a.now()
	ts := d1.Time(at)
	if cerr != nil {
		outcome, out := callErrorOutcome(cerr)
		if err := a.settle(ctx, res, st.EvalID, cluster, id, n, llm.Usage{}, outcome, at,
			d1.Stmt{SQL: stepReadySQL, Args: []any{cutText(cerr.Error(), maxErrorText), nil, 0, nil, 0, 0, id, ts, st.EvalID, st.Step, n}},
			evalStmt(st.EvalID, EvalOpen, nil, at)); err != nil {
			return stepOut{stop: true, err: "settle: " + err.Error()}
		}
		return out
	}
	u, answer := resp.Usage, cutText(resp.Text, maxStoredAnswer)
	output, verr := ValidateStep(st.Step, resp.Text)
	next := NextStep(max(st.Attempt, 1), msgs, resp.Text, verr)
	var upd []d1.Stmt
	outcome := "invalid"
	switch next.Action {
	case Accept:
		outcome, res.EvalSteps = "ok", res.EvalSteps+1
		upd = []d1.Stmt{{SQL: stepDoneSQL, Args: []any{answer, string(output), u.PromptTokens, u.CompletionTokens, id, ts, ts, st.EvalID, st.Step, n}}}
		state := EvalOpen
		if st.Step == EvalSteps {
			state, res.EvalsDone = EvalDone, res.EvalsDone+1
			logx.Event("analyst.evaluation_done", map[string]any{"eval_id": st.EvalID, "segment_id": st.SegmentID})
		}
		upd = append(upd, evalStmt(st.EvalID, state, nil, at))
	case Retry:
		res.Retries++
		upd = []d1.Stmt{{SQL: stepReadySQL, Args: []any{cutText(next.Reason, maxErrorText), mustJSON(next.Messages), 1, answer,
			u.PromptTokens, u.CompletionTokens, id, ts, st.EvalID, st.Step, n}}, evalStmt(st.EvalID, EvalOpen, nil, at)}
	default:
		res.EvalsFailed++
		reason := cutText(next.Reason, maxErrorText)
		upd = []d1.Stmt{{SQL: stepFailedSQL, Args: []any{reason, answer, u.PromptTokens, u.CompletionTokens, id, ts, ts, st.EvalID, st.Step}},
			evalStmt(st.EvalID, EvalFailed, reason, at)}
	}
	if err := a.settle(ctx, res, st.EvalID, cluster, id, n, u, outcome, at, upd...); err != nil {
		return stepOut{stop: true, err: "settle: " + err.Error()}
	}
	return stepOut{}
}

// errStepInput: a step whose input cannot be built (an earlier output
// unreadable): the evaluation fails, not retried.
var errStepInput = errors.New("analyst: step input")

// stepPrompt is a step's next call's messages, its input JSON and its
// prompt hash: built from the steps before it on the first call, the
// stored ones after (a retry keeps the input it saw).
func (a *Analyst) stepPrompt(ctx context.Context, st EvalStepRow) ([]llm.Message, string, string, error) {
	if st.State == StateReady && st.MessagesJSON != "" {
		var msgs []llm.Message
		if err := json.Unmarshal([]byte(st.MessagesJSON), &msgs); err != nil || len(msgs) == 0 {
			return nil, "", "", fmt.Errorf("%w: stored prompt unreadable", errStepInput)
		}
		return msgs, st.InputJSON, st.PromptHash, nil
	}
	steps, err := a.Store.EvalSteps(ctx, st.EvalID)
	if err != nil {
		return nil, "", "", err
	}
	in, err := evalInputOf(steps, st.Step)
	if err != nil {
		return nil, "", "", fmt.Errorf("%w: %v", errStepInput, err)
	}
	msgs, shown, err := BuildStepPrompt(st.Step, in)
	if err != nil {
		return nil, "", "", fmt.Errorf("%w: %v", errStepInput, err)
	}
	return msgs, string(shown), llm.PromptHash(msgs), nil
}
