//go:build js && wasm

package worker

import (
	"strings"
	"sync"
	"time"

	"github.com/syumai/workers/cloudflare"

	"storecrawl/worker/analyst"
	"storecrawl/worker/cf"
	"storecrawl/worker/llm"
	"storecrawl/worker/ratelimit"
)

// analystService is the LLM analyst, made once per Go instance (after
// loadConfig, whose settings it runs with): Workers AI when env.AI is bound, else the OpenAI-compatible
// endpoint of LLM_BASE_URL, else none (the analyst reports "disabled").
var analystService = sync.OnceValue(func() *analyst.Analyst {
	c := cfg.Analyst
	a := &analyst.Analyst{Store: analyst.Store{DB: db}, Config: c, Model: c.Model, Now: time.Now, Sleep: cf.Sleep,
		Pacer: analyst.LimiterPacer{TokensPerMinute: c.TokensPerMinute,
			Limits: &ratelimit.Client{Caller: limiterCaller{}, MaxWait: analyst.MaxRateLimitWait, Sleep: cf.Sleep}}}
	if ai := cloudflare.GetBinding(analyst.BindingAI); !ai.IsUndefined() && !ai.IsNull() {
		if !strings.HasPrefix(a.Model, "@cf/") {
			a.Model = analyst.DefaultWorkersAIModel
		}
		a.Client = llm.WorkersAI{Runner: llm.AIBinding(analyst.BindingAI), Model: a.Model}
	} else if c.Configured() {
		a.Client = llm.OpenAI{BaseURL: c.BaseURL, APIKey: c.APIKey, Model: c.Model, Doer: cf.Fetcher{}}
	}
	return a
})
