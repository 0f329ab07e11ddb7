package analyst

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"storecrawl/worker/config"
	"storecrawl/worker/llm"
)

// The analyst's vars (wrangler.jsonc; LLM_API_KEY is a secret) and their
// defaults. Prices are list prices in USD per 1,000 tokens.
const (
	VarBaseURL         = "LLM_BASE_URL"
	VarAPIKey          = "LLM_API_KEY"
	VarModel           = "LLM_MODEL"
	VarPriceIn         = "LLM_PRICE_IN_PER_1K_USD"
	VarPriceOut        = "LLM_PRICE_OUT_PER_1K_USD"
	VarDailyCap        = "LLM_DAILY_CAP_USD"
	VarTokensPerMinute = "LLM_TOKENS_PER_MINUTE"
	// BindingAI is the Workers AI binding; when bound it is used instead of
	// LLM_BASE_URL.
	BindingAI = "AI"

	// DefaultModel is the OpenAI-compatible model asked for by default (the
	// llm-sim answers any name).
	DefaultModel = "gpt-4o-mini"
	// DefaultWorkersAIModel is used with the AI binding when LLM_MODEL does
	// not name a Workers AI model (@cf/...).
	DefaultWorkersAIModel = "@cf/meta/llama-3.1-8b-instruct"
	// DefaultPriceIn/Out are gpt-4o-mini's list prices ($0.15 / $0.60 per
	// million tokens).
	DefaultPriceIn  = 0.00015
	DefaultPriceOut = 0.0006
	// DefaultDailyCapUSD bounds a day's LLM spend.
	DefaultDailyCapUSD = 1.0
	// DefaultTokensPerMinute is the OmniLimiter budget of the llm-tokens key
	// (estimated tokens a minute across every isolate).
	DefaultTokensPerMinute = 20000
	// maxPricePer1K, maxDailyCapUSD, min/maxTokensPerMinute bound the vars
	// (a typo must not lift the cap to infinity or starve every call).
	maxPricePer1K       = 1.0
	maxDailyCapUSD      = 10000.0
	minTokensPerMinute  = 2 * BriefMaxTokens
	maxTokensPerMinute  = 1_000_000
	microUSDPerUSD      = 1_000_000
	tokensPer1K         = 1000
	microPerMTokPer1KUS = microUSDPerUSD * 1_000_000 / tokensPer1K // $x per 1k tokens = x·1e9 µ$ per Mtok
)

// Config is the analyst's configuration.
type Config struct {
	BaseURL         string
	APIKey          string
	Model           string
	Price           llm.Price
	DailyCap        llm.MicroUSD
	TokensPerMinute int64
}

// Configured reports whether an OpenAI-compatible endpoint is set (the AI
// binding is checked by the wiring).
func (c Config) Configured() bool { return c.BaseURL != "" }

// LoadConfig reads the analyst's vars; a bad one is a Problem and its
// default is used.
func LoadConfig(getenv func(string) string) (Config, []config.Problem) {
	c := Config{
		BaseURL: strings.TrimRight(strings.TrimSpace(getenv(VarBaseURL)), "/"),
		APIKey:  strings.TrimSpace(getenv(VarAPIKey)),
		Model:   strings.TrimSpace(getenv(VarModel)),
	}
	if c.Model == "" {
		c.Model = DefaultModel
	}
	var probs []config.Problem
	num := func(name string, def, lo, hi float64) float64 {
		raw := strings.TrimSpace(getenv(name))
		if raw == "" {
			return def
		}
		v, err := strconv.ParseFloat(raw, 64)
		if err != nil || math.IsNaN(v) || v < lo || v > hi {
			probs = append(probs, config.Problem{Var: name, Value: raw, Error: fmt.Sprintf("must be a number from %g to %g", lo, hi)})
			return def
		}
		return v
	}
	in := num(VarPriceIn, DefaultPriceIn, 0, maxPricePer1K)
	out := num(VarPriceOut, DefaultPriceOut, 0, maxPricePer1K)
	// Rounded up: spend is never under-counted.
	c.Price = llm.Price{InputPerMTok: int64(math.Ceil(in * microPerMTokPer1KUS)), OutputPerMTok: int64(math.Ceil(out * microPerMTokPer1KUS))}
	// Rounded down: the cap is never lifted by rounding.
	c.DailyCap = int64(math.Floor(num(VarDailyCap, DefaultDailyCapUSD, 0, maxDailyCapUSD) * microUSDPerUSD))
	c.TokensPerMinute = int64(num(VarTokensPerMinute, DefaultTokensPerMinute, minTokensPerMinute, maxTokensPerMinute))
	return c, probs
}
