package analyst

import (
	"context"
	"time"

	"storecrawl/worker/module"
)

// Module is the analyst's declaration: LLM briefs of the best
// opportunities under a daily spend cap.
var Module = module.Module{
	Name: "analyst",
	Doc:  "LLM-written briefs of the top opportunities and evaluations of the top segments, under a daily spend cap",
	Tables: []module.Table{
		{Name: "analyst_briefs", Writer: "worker/analyst", Doc: "one brief: its state, prompt, answer and cost"},
		{Name: "analyst_status", Writer: "worker/analyst", Doc: "the analyst's one status row: working, stopped at its cap, rate limited"},
		{Name: "llm_spend", Writer: "worker/analyst", Doc: "one LLM call's reservation and settled cost, by day"},
		{Name: "segment_evaluations", Writer: "worker/analyst", Doc: "one evaluation of a market segment: its state and total cost"},
		{Name: "segment_evaluation_steps", Writer: "worker/analyst", Doc: "one step of a segment evaluation: its exact input, prompt hash, output, tokens and cost"},
	},
	Settings: Settings,
}

// Tasks are the analyst's periodic work: analyst-run advances the briefs
// of the top opportunity clusters and those asked for (POST
// /v1/analyst/run), then the evaluations of the top segments, as
// resumable steps in D1, a few calls a run, within the daily spend cap.
// The spend rides on the run's ledger fact.
func Tasks(a *Analyst) []module.Task {
	return []module.Task{{
		Name: "analyst-run", Every: 10 * time.Minute, Jitter: time.Minute,
		Doc: "LLM briefs of the top opportunity clusters and those asked for, and evaluations of the top segments, a few calls a run, within the daily spend cap",
		Run: func(ctx context.Context, _ func() time.Time) module.Result {
			if a == nil {
				return module.Result{Error: "no analyst configured"}
			}
			out := a.Run(ctx)
			return module.Result{OK: out.Err == "" && !out.RateLimited, Summary: out.Summary(), Error: out.Err,
				RateLimited: out.RateLimited, RetryAfterS: out.RetryAfterS, Counters: out.Counters(), Detail: out.Detail()}
		},
	}}
}
