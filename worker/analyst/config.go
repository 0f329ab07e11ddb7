package analyst

import (
	"math"
	"strings"

	"storecrawl/worker/llm"
	"storecrawl/worker/module"
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

// Settings are the analyst's vars, read by the Worker's one settings
// loader (worker/config).
var Settings = []module.Setting{
	{Name: VarBaseURL, Module: "analyst", Kind: module.Text, Doc: "OpenAI-compatible API root (ignored when `env.AI` is bound)"},
	{Name: VarAPIKey, Module: "analyst", Kind: module.Secret, Doc: "its Bearer key"},
	{Name: VarModel, Module: "analyst", Kind: module.Text, Default: DefaultModel, Doc: "model asked for"},
	{Name: VarPriceIn, Module: "analyst", Kind: module.Number, Default: module.FormatNumber(DefaultPriceIn), Bounds: module.In(0, maxPricePer1K),
		Doc: "list price per 1,000 input tokens, rounded up to µ$ per million tokens"},
	{Name: VarPriceOut, Module: "analyst", Kind: module.Number, Default: module.FormatNumber(DefaultPriceOut), Bounds: module.In(0, maxPricePer1K),
		Doc: "list price per 1,000 output tokens, rounded up likewise"},
	{Name: VarDailyCap, Module: "analyst", Kind: module.Number, Default: module.FormatNumber(DefaultDailyCapUSD), Bounds: module.In(0, maxDailyCapUSD),
		Doc: "daily (UTC) spend cap in USD, never passed"},
	{Name: VarTokensPerMinute, Module: "analyst", Kind: module.Number, Default: module.FormatNumber(DefaultTokensPerMinute), Bounds: module.In(minTokensPerMinute, maxTokensPerMinute),
		Doc: "the `llm-tokens` limiter's budget: estimated tokens a minute across every isolate"},
}

// ConfigFrom is the analyst's configuration from the loaded settings.
func ConfigFrom(v module.Values) Config {
	c := Config{
		BaseURL: strings.TrimRight(v.String(VarBaseURL), "/"),
		APIKey:  v.String(VarAPIKey),
		Model:   v.String(VarModel),
	}
	in, out := v.Float(VarPriceIn), v.Float(VarPriceOut)
	// Rounded up: spend is never under-counted.
	c.Price = llm.Price{InputPerMTok: int64(math.Ceil(in * microPerMTokPer1KUS)), OutputPerMTok: int64(math.Ceil(out * microPerMTokPer1KUS))}
	// Rounded down: the cap is never lifted by rounding.
	c.DailyCap = int64(math.Floor(v.Float(VarDailyCap) * microUSDPerUSD))
	c.TokensPerMinute = int64(v.Float(VarTokensPerMinute))
	return c
}
