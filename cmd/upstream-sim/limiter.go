package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"time"

	"storecrawl/internal/upstreammodel"
)

// Config is the hidden, runtime-changeable upstream behaviour.
type Config struct {
	// RatePerMin and Burst are the API host's limit (lookups, searches,
	// charts) and, unless StoreRatePerMin gives it its own, the store
	// host's too: one bucket for both, as a single-limit upstream.
	RatePerMin int `json:"rate_per_min"`
	Burst      int `json:"burst"`
	// StoreRatePerMin and StoreBurst give the store host (product pages)
	// its own limit, as on the real site, where itunes.apple.com and
	// apps.apple.com refuse separately; 0 = pages share the API host's
	// bucket. StoreBurst 0 means Burst. On-exceed, Retry-After and block
	// settings are the same for both hosts; each host's block is its own.
	StoreRatePerMin int `json:"store_rate_per_min"`
	StoreBurst      int `json:"store_burst"`
	// ChartRatePerMin and ChartBurst give the chart feeds their own limit
	// (the RSS feeds are served apart from the Search API); 0 = charts
	// share the API host's bucket. ChartBurst 0 means Burst.
	ChartRatePerMin int `json:"chart_rate_per_min"`
	ChartBurst      int `json:"chart_burst"`
	OnExceed        int `json:"on_exceed"`
	RetryAfterS     int `json:"retry_after_s"`
	// BlockS > 0 makes a refusal block the host for that long (a 403
	// storm) or, with LockoutAfterRefusalsPerMin N > 0, more than N
	// refusals within a minute (a lockout).
	BlockS                     int `json:"block_s"`
	LockoutAfterRefusalsPerMin int `json:"lockout_after_refusals_per_min"`
	// RefusalsConsume 1: a refusal takes a token too (down to -burst).
	RefusalsConsume int `json:"refusals_consume"`
	// RatelimitHeaders 1: every limited answer carries RateLimit-Remaining
	// and RateLimit-Reset.
	RatelimitHeaders int `json:"ratelimit_headers"`
	LatencyMS        int `json:"latency_ms"`
	LatencyJitterMS  int `json:"latency_jitter_ms"`
	// TimeoutPct and ErrorPct are the shares of admitted requests that
	// time out (held upstreammodel.RequestTimeout, then dropped) and that
	// answer 503.
	TimeoutPct int `json:"timeout_pct"`
	ErrorPct   int `json:"error_pct"`
	// CurrentMarkupPct and UnknownMarkupPct are the shares of apps (by id,
	// so an app keeps its markup) whose store page is served in the current
	// markup and in a markup no parser knows (parser drift); the rest get
	// the legacy markup.
	CurrentMarkupPct int `json:"current_markup_pct"`
	UnknownMarkupPct int `json:"unknown_markup_pct"`
	// OutagePct is the share of upstream requests that get no HTTP answer
	// at all, their connection dropped, as when the upstream is down; 100 is
	// a full outage. Such requests never reach the limiter.
	OutagePct int `json:"outage_pct"`
}

// Defaults, mirrored by the command-line flags.
const (
	defaultRatePerMin      = 600
	defaultBurst           = 20
	defaultOnExceed        = http.StatusTooManyRequests
	defaultLatencyMS       = 20
	defaultLatencyJitterMS = 10
)

// Validation bounds: generous enough for any test, small enough that a typo
// (e.g. block_s in ms) is rejected instead of wedging the simulator.
const (
	maxRatePerMin = 6_000_000 // 100k req/s: effectively unlimited
	maxBurst      = 100_000
	maxSeconds    = 3600
	maxLatencyMS  = 60_000
	maxRefusals   = 100_000 // lockout_after_refusals_per_min
)

// DefaultConfig is the flag-default behaviour.
func DefaultConfig() Config {
	return Config{
		RatePerMin:      defaultRatePerMin,
		Burst:           defaultBurst,
		OnExceed:        defaultOnExceed,
		LatencyMS:       defaultLatencyMS,
		LatencyJitterMS: defaultLatencyJitterMS,
	}
}

// FieldError is a rejected config field; it is also the 400 JSON body.
type FieldError struct {
	Msg   string `json:"error"`
	Field string `json:"field"`
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

type configField struct {
	name     string
	min, max int
	ptr      func(*Config) *int
}

// configFields lists every settable field with its bounds (on_exceed is
// restricted to exactly 429/403 in Validate).
var configFields = []configField{
	{"rate_per_min", 1, maxRatePerMin, func(c *Config) *int { return &c.RatePerMin }},
	{"burst", 1, maxBurst, func(c *Config) *int { return &c.Burst }},
	{"store_rate_per_min", 0, maxRatePerMin, func(c *Config) *int { return &c.StoreRatePerMin }},
	{"store_burst", 0, maxBurst, func(c *Config) *int { return &c.StoreBurst }},
	{"chart_rate_per_min", 0, maxRatePerMin, func(c *Config) *int { return &c.ChartRatePerMin }},
	{"chart_burst", 0, maxBurst, func(c *Config) *int { return &c.ChartBurst }},
	{"on_exceed", http.StatusForbidden, http.StatusTooManyRequests, func(c *Config) *int { return &c.OnExceed }},
	{"retry_after_s", 0, maxSeconds, func(c *Config) *int { return &c.RetryAfterS }},
	{"block_s", 0, maxSeconds, func(c *Config) *int { return &c.BlockS }},
	{"lockout_after_refusals_per_min", 0, maxRefusals, func(c *Config) *int { return &c.LockoutAfterRefusalsPerMin }},
	{"refusals_consume", 0, 1, func(c *Config) *int { return &c.RefusalsConsume }},
	{"ratelimit_headers", 0, 1, func(c *Config) *int { return &c.RatelimitHeaders }},
	{"latency_ms", 0, maxLatencyMS, func(c *Config) *int { return &c.LatencyMS }},
	{"latency_jitter_ms", 0, maxLatencyMS, func(c *Config) *int { return &c.LatencyJitterMS }},
	{"timeout_pct", 0, 100, func(c *Config) *int { return &c.TimeoutPct }},
	{"error_pct", 0, 100, func(c *Config) *int { return &c.ErrorPct }},
	{"current_markup_pct", 0, 100, func(c *Config) *int { return &c.CurrentMarkupPct }},
	{"unknown_markup_pct", 0, 100, func(c *Config) *int { return &c.UnknownMarkupPct }},
	{"outage_pct", 0, 100, func(c *Config) *int { return &c.OutagePct }},
}

// Validate reports the first invalid field.
func (c Config) Validate() *FieldError {
	if c.OnExceed != http.StatusTooManyRequests && c.OnExceed != http.StatusForbidden {
		return &FieldError{Msg: "must be 429 or 403", Field: "on_exceed"}
	}
	for _, f := range configFields {
		v := *f.ptr(&c)
		if v < f.min || v > f.max {
			return &FieldError{Msg: fmt.Sprintf("must be between %d and %d", f.min, f.max), Field: f.name}
		}
	}
	if c.CurrentMarkupPct+c.UnknownMarkupPct > 100 {
		return &FieldError{Msg: "current_markup_pct + unknown_markup_pct must be at most 100", Field: "unknown_markup_pct"}
	}
	if c.TimeoutPct+c.ErrorPct > 100 {
		return &FieldError{Msg: "timeout_pct + error_pct must be at most 100", Field: "error_pct"}
	}
	if c.LockoutAfterRefusalsPerMin > 0 && c.BlockS == 0 {
		return &FieldError{Msg: "a lockout (lockout_after_refusals_per_min) needs block_s > 0", Field: "block_s"}
	}
	return nil
}

// Patch returns c with a JSON object holding any subset of the fields
// applied. Unknown fields, non-integers and invalid values are rejected, and
// then c itself is returned unchanged.
func (c Config) Patch(body []byte) (Config, *FieldError) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil || raw == nil {
		return c, &FieldError{Msg: "body must be a JSON object", Field: ""}
	}
	next := c
	// Sorted so the reported field is deterministic.
	for _, k := range slices.Sorted(maps.Keys(raw)) {
		i := slices.IndexFunc(configFields, func(f configField) bool { return f.name == k })
		if i < 0 {
			return c, &FieldError{Msg: "unknown field", Field: k}
		}
		var v *int // pointer so that null is rejected, not read as 0
		if err := json.Unmarshal(raw[k], &v); err != nil || v == nil {
			return c, &FieldError{Msg: "must be an integer", Field: k}
		}
		*configFields[i].ptr(&next) = *v
	}
	if err := next.Validate(); err != nil {
		return c, err
	}
	return next, nil
}

// bucket is one host's limit: its config and the shared upstream model's
// state (internal/upstreammodel, which cmd/simulate runs too). It is not
// goroutine-safe: the server guards it with its mutex. Time is always
// passed in so tests can drive it with a fake clock.
type bucket struct {
	cfg   Config
	state upstreammodel.Bucket
}

// storeConfig is the store host's bucket config when it has a limit of
// its own (ok = false: pages share the API host's bucket).
func (c Config) storeConfig() (store Config, ok bool) {
	if c.StoreRatePerMin <= 0 {
		return c, false
	}
	store = c
	store.RatePerMin, store.Burst = c.StoreRatePerMin, cmp.Or(c.StoreBurst, c.Burst)
	return store, true
}

// chartConfig is the chart feeds' bucket config when they have a limit of
// their own (ok = false: they share the API host's bucket).
func (c Config) chartConfig() (charts Config, ok bool) {
	if c.ChartRatePerMin <= 0 {
		return c, false
	}
	charts = c
	charts.RatePerMin, charts.Burst = c.ChartRatePerMin, cmp.Or(c.ChartBurst, c.Burst)
	return charts, true
}

// Real limits (-real-limits): what the real store is documented or was
// observed to allow (docs/scale.md, "The living simulator").
const (
	// realAPIRatePerMin: Apple documents the Search API (search and
	// lookup) at about 20 calls a minute.
	realAPIRatePerMin = 20
	// realStoreRatePerMin: the design's observed pace, 1.1M pages in 6
	// days (seed 004): 7,639 an hour, 127 a minute.
	realStoreRatePerMin = 127
	// realChartRatePerMin: no documented or observed figure; the feeds
	// are held apart at the Search API's pace (an assumption).
	realChartRatePerMin = 20
	// realBurst: a minute's allowance of the API is the bucket (assumed:
	// the real bucket's size is not documented).
	realBurst = 20
)

// RealLimits is cfg with the real store's limits.
func RealLimits(cfg Config) Config {
	cfg.RatePerMin, cfg.Burst = realAPIRatePerMin, realBurst
	cfg.StoreRatePerMin, cfg.StoreBurst = realStoreRatePerMin, realBurst
	cfg.ChartRatePerMin, cfg.ChartBurst = realChartRatePerMin, realBurst
	return cfg
}

// limit is c's refusal rules in the model's terms.
func (c Config) limit() upstreammodel.Limit {
	return upstreammodel.Limit{
		Burst:                      c.Burst,
		RetryAfter:                 time.Duration(c.RetryAfterS) * time.Second,
		Block:                      time.Duration(c.BlockS) * time.Second,
		LockoutAfterRefusalsPerMin: c.LockoutAfterRefusalsPerMin,
		RefusalsConsume:            c.RefusalsConsume == 1,
	}
}

// reset installs cfg with a full bucket and no active block: a config
// change is a fresh start (the e2e tests lift a block by changing it).
func (b *bucket) reset(cfg Config, now time.Time) {
	*b = bucket{cfg: cfg, state: upstreammodel.NewBucket(cfg.Burst, now)}
}

// take decides a request arriving at now: the bucket refilled at the
// config's rate, then the model's rules (blocks, lockouts, Retry-After).
func (b *bucket) take(now time.Time) upstreammodel.Verdict {
	b.state.Refill(now, float64(b.cfg.RatePerMin), b.cfg.Burst)
	return b.state.Take(now, b.cfg.limit())
}

// headers are RateLimit-Remaining and RateLimit-Reset (whole seconds,
// rounded up) as of now.
func (b *bucket) headers(now time.Time) (remaining, resetS int) {
	remaining, reset := b.state.Headers(now, float64(b.cfg.RatePerMin))
	return remaining, int((reset + time.Second - 1) / time.Second)
}

// blockedUntilMS is the end of the active block in Unix ms, or 0.
func (b *bucket) blockedUntilMS(now time.Time) int64 {
	if !b.state.Blocked(now) {
		return 0
	}
	return b.state.BlockedUntil.UnixMilli()
}
