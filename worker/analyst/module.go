package analyst

import "storecrawl/worker/module"

// Module is the analyst's declaration: LLM briefs of the best
// opportunities under a daily spend cap.
var Module = module.Module{
	Name: "analyst",
	Doc:  "LLM-written briefs of the top opportunities, under a daily spend cap",
	Tables: []module.Table{
		{Name: "analyst_briefs", Writer: "worker/analyst", Doc: "one brief: its state, prompt, answer and cost"},
		{Name: "analyst_status", Writer: "worker/analyst", Doc: "the analyst's one status row: working, stopped at its cap, rate limited"},
		{Name: "llm_spend", Writer: "worker/analyst", Doc: "one LLM call's reservation and settled cost, by day"},
	},
}
