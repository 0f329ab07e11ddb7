// Package config is the Worker's configuration, loaded once from its env
// (wrangler.jsonc vars and secrets): binding names, cron expressions, vars
// with their defaults. A var that does not parse is reported as a
// config.bad_config event and its default used, so a typo cannot stop the
// system. Pure Go: Load takes the getenv function.
package config

import (
	"fmt"
	"storecrawl/worker/upstream"
	"strconv"
	"strings"
	"time"

	"storecrawl/durable/enrichment"
	"storecrawl/durable/ledger"
	"storecrawl/durable/limiter"
	"storecrawl/durable/scheduler"
	"storecrawl/worker/refresh"
)

// Binding names, as wrangler.jsonc binds them (a test checks they agree).
const (
	BindingDB         = "DB"
	BindingHTML       = "HTML_CACHE"
	BindingKV         = "CACHE"
	BindingEvents     = "EVENTS"
	BindingController = "ENRICHMENT_CONTROLLER"
	BindingLimiter    = "OMNI_LIMITER"
	BindingScheduler  = "SCHEDULER"
)

// Queue names: the EVENTS queue and its dead-letter queue.
const (
	QueueEvents     = "storecrawl-events"
	DeadLetterQueue = "storecrawl-events-dlq"
)

// Cron expressions, as wrangler.jsonc triggers them.
const (
	CronCrawlCycle = "*/5 * * * *"
	CronClustering = "0 */6 * * *"
	CronDaily      = "0 3 * * *"
)

// Crons is every cron trigger the Worker handles.
var Crons = []string{CronCrawlCycle, CronClustering, CronDaily}

// Object names.
const (
	// SchedulerName is the versioned scheduler singleton (a new version starts afresh).
	SchedulerName = "v1"
	// LimiterPrefix names one OmniLimiter object per key; a regional
	// deployment can prefix the region as well (idFromName(region + key)).
	LimiterPrefix = "limiter_"
	// ControllerName addresses the controller of the default crawl target.
	ControllerName = enrichment.DefaultTarget
)

// Defaults of the vars.
const (
	DefaultCountry = "us"
)

// Bounds of UPSTREAM_MAX_HOLD_S.
const (
	minMaxHoldS = 1
	maxMaxHoldS = 3600
)

// ENRICHMENT_RETRY_FAILED_AFTER_H: how long a given-up item rests before
// the retry-failed task puts it back in the queue (0 turns the task off).
const (
	DefaultRetryFailedAfter = 24 * time.Hour
	maxRetryFailedAfterH    = 24 * 365
)

// FACTS_RETENTION_DAYS: how long D1 keeps raw ledger facts (the
// facts-prune task deletes older ones; /v1/history reads the per-minute
// rollups and reconciliation the totals, which outlive them).
const (
	DefaultFactsRetentionDays = 30
	// minFactsRetentionDays: a fact must outlive every redelivery of its
	// queue message (a queue keeps a message at most 14 days), or the
	// redelivered copy of a pruned fact would be stored and counted again.
	minFactsRetentionDays = 14
	maxFactsRetentionDays = 3650
)

// CATALOGUE_STALE_AFTER_DAYS: how long an app may go unseen (no chart, no
// search, no enrichment) before the catalogue-stale task marks it stale.
const (
	DefaultStaleAfterDays = 90
	// minStaleAfterDays: a week, so a category's weekly rescan (the high
	// tier) always comes before its apps could be marked.
	minStaleAfterDays = 7
	maxStaleAfterDays = 3650
)

// Config is every setting, parsed.
type Config struct {
	// APIBase and StoreBase are the upstream's base URLs, without a trailing slash.
	APIBase   string
	StoreBase string
	Country   string
	// MaxHold caps how long one upstream answer (Retry-After,
	// RateLimit-Reset) can hold the crawler (UPSTREAM_MAX_HOLD_S).
	MaxHold time.Duration
	// LocationHint is where the EnrichmentController is created.
	LocationHint string
	Enrichment   enrichment.Config
	Scheduler    scheduler.Config
	// RetryFailedAfter is ENRICHMENT_RETRY_FAILED_AFTER_H (0: never).
	RetryFailedAfter time.Duration
	// LedgerRetention is how long an object keeps its replicated facts.
	LedgerRetention time.Duration
	// FactsRetention is how long D1 keeps raw facts (FACTS_RETENTION_DAYS).
	FactsRetention time.Duration
	// StaleAfter is CATALOGUE_STALE_AFTER_DAYS.
	StaleAfter time.Duration
	// RefreshShare is REFRESH_SHARE_PCT as a fraction: the share of an
	// enrichment tick's slots due refreshes get while never-enriched apps
	// wait too (refresh.Split).
	RefreshShare float64
	// AdminToken guards the mutating routes; empty refuses them all.
	AdminToken string
	// ClientToken (LIMITER_CLIENT_TOKEN) guards POST /v1/limiter/acquire and
	// the status of client keys; empty refuses them all. It must differ from
	// AdminToken (a client holding it must not be an operator): when equal
	// it is reported and refuses everything, as if unset.
	ClientToken string
	// TestRoutes mounts the test-only routes (never set in wrangler.jsonc).
	TestRoutes bool
	// LedgerFaultFailAfterWrite makes the facts consumer fail its first N
	// batches after writing them (the exactly-once integration test).
	LedgerFaultFailAfterWrite int64
	// LimiterTally is the span of an OmniLimiter key's ledger facts
	// (LIMITER_TALLY_S, default a minute): the integration tests shorten it
	// so a key's facts and an idle key's retirement come in seconds.
	LimiterTally time.Duration
}

// Problem is a var that did not parse; its default is used.
type Problem struct {
	Var   string `json:"var"`
	Value string `json:"value"`
	Error string `json:"error"`
}

// Load reads every setting with getenv.
func Load(getenv func(string) string) (Config, []Problem) {
	var probs []Problem
	bad := func(name, value string, err error) {
		probs = append(probs, Problem{Var: name, Value: value, Error: err.Error()})
	}
	c := Config{
		APIBase:      strings.TrimRight(getenv("UPSTREAM_API_BASE"), "/"),
		StoreBase:    strings.TrimRight(getenv("UPSTREAM_STORE_BASE"), "/"),
		Country:      getenv("UPSTREAM_COUNTRY"),
		LocationHint: getenv("ENRICHMENT_LOCATION_HINT"),
		AdminToken:   getenv("ADMIN_TOKEN"),
		ClientToken:  getenv("LIMITER_CLIENT_TOKEN"),
		TestRoutes:   getenv("TEST_ROUTES") == "1",
	}
	if c.ClientToken != "" && c.ClientToken == c.AdminToken {
		// The value is a secret: the event names the var, never the value.
		bad("LIMITER_CLIENT_TOKEN", "(redacted)", fmt.Errorf("must differ from ADMIN_TOKEN; client calls are refused until it does"))
		c.ClientToken = ""
	}
	if c.Country == "" {
		c.Country = DefaultCountry
	}

	c.Enrichment = enrichment.DefaultConfig()
	cooldown, pacingName := getenv("ENRICHMENT_COOLDOWN_S"), getenv("ENRICHMENT_PACING")
	secs, err := intVar(cooldown)
	if err == nil {
		var cfg enrichment.Config
		if cfg, err = enrichment.NewConfig(pacingName, secs); err == nil {
			c.Enrichment = cfg
		}
	}
	if err != nil {
		bad("ENRICHMENT_COOLDOWN_S/ENRICHMENT_PACING", cooldown+"/"+pacingName, err)
	}
	if raw := getenv("ENRICHMENT_PARSER_PROBE_S"); raw != "" {
		secs, err := intVar(raw)
		if err == nil {
			err = c.Enrichment.SetParserProbe(secs)
		}
		if err != nil {
			bad("ENRICHMENT_PARSER_PROBE_S", raw, err)
		}
	}
	if raw := getenv("ENRICHMENT_IDLE_S"); raw != "" {
		secs, err := intVar(raw)
		if err == nil {
			err = c.Enrichment.SetIdleSeconds(secs)
		}
		if err != nil {
			bad("ENRICHMENT_IDLE_S", raw, err)
		}
	}

	if raw := getenv("LOOKUP_BATCH"); raw != "" {
		n, err := strconv.Atoi(raw)
		if err == nil {
			err = c.Enrichment.SetLookupBatch(n)
		}
		if err != nil {
			bad("LOOKUP_BATCH", raw, err)
		}
	}

	if raw := getenv("LOOKUP_FRESH_H"); raw != "" {
		n, err := strconv.Atoi(raw)
		if err == nil {
			err = c.Enrichment.SetLookupFreshHours(n)
		}
		if err != nil {
			bad("LOOKUP_FRESH_H", raw, err)
		}
	}

	if raw := getenv("SCHEDULER_BREAKER_THRESHOLD"); raw != "" {
		n, err := strconv.Atoi(raw)
		if err == nil {
			c.Scheduler, err = scheduler.NewConfig(n)
		}
		if err != nil {
			c.Scheduler = scheduler.Config{}
			bad("SCHEDULER_BREAKER_THRESHOLD", raw, err)
		}
	}

	c.MaxHold = upstream.DefaultMaxHold
	if raw := getenv("UPSTREAM_MAX_HOLD_S"); raw != "" {
		secs, err := intVar(raw)
		if err == nil && (secs < minMaxHoldS || secs > maxMaxHoldS) {
			err = fmt.Errorf("must be in [%d, %d]", minMaxHoldS, maxMaxHoldS)
		}
		if err != nil {
			bad("UPSTREAM_MAX_HOLD_S", raw, err)
		} else {
			c.MaxHold = time.Duration(secs) * time.Second
		}
	}

	c.RetryFailedAfter = DefaultRetryFailedAfter
	if raw := getenv("ENRICHMENT_RETRY_FAILED_AFTER_H"); raw != "" {
		h, err := intVar(raw)
		if err == nil && (h < 0 || h > maxRetryFailedAfterH) {
			err = fmt.Errorf("must be in [0, %d] hours", maxRetryFailedAfterH)
		}
		if err != nil {
			bad("ENRICHMENT_RETRY_FAILED_AFTER_H", raw, err)
		} else {
			c.RetryFailedAfter = time.Duration(h) * time.Hour
		}
	}

	c.LedgerRetention = ledger.DefaultRetention
	if raw := getenv("LEDGER_RETENTION_DAYS"); raw != "" {
		days, err := strconv.ParseFloat(raw, 64)
		if err == nil {
			c.LedgerRetention, err = ledger.RetentionFromDays(days)
		}
		if err != nil {
			c.LedgerRetention = ledger.DefaultRetention
			bad("LEDGER_RETENTION_DAYS", raw, err)
		}
	}

	c.FactsRetention = DefaultFactsRetentionDays * 24 * time.Hour
	if raw := getenv("FACTS_RETENTION_DAYS"); raw != "" {
		days, err := strconv.Atoi(raw)
		if err == nil && (days < minFactsRetentionDays || days > maxFactsRetentionDays) {
			err = fmt.Errorf("must be whole days in [%d, %d]", minFactsRetentionDays, maxFactsRetentionDays)
		}
		if err != nil {
			bad("FACTS_RETENTION_DAYS", raw, err)
		} else {
			c.FactsRetention = time.Duration(days) * 24 * time.Hour
		}
	}

	c.StaleAfter = DefaultStaleAfterDays * 24 * time.Hour
	if raw := getenv("CATALOGUE_STALE_AFTER_DAYS"); raw != "" {
		days, err := strconv.Atoi(raw)
		if err == nil && (days < minStaleAfterDays || days > maxStaleAfterDays) {
			err = fmt.Errorf("must be whole days in [%d, %d]", minStaleAfterDays, maxStaleAfterDays)
		}
		if err != nil {
			bad("CATALOGUE_STALE_AFTER_DAYS", raw, err)
		} else {
			c.StaleAfter = time.Duration(days) * 24 * time.Hour
		}
	}

	c.RefreshShare = refresh.DefaultRefreshShare
	if raw := getenv("REFRESH_SHARE_PCT"); raw != "" {
		pct, err := strconv.Atoi(raw)
		if err == nil && (pct < 0 || pct > 100) {
			err = fmt.Errorf("must be a whole percentage in [0, 100]")
		}
		if err != nil {
			bad("REFRESH_SHARE_PCT", raw, err)
		} else {
			c.RefreshShare = float64(pct) / 100
		}
	}

	c.LimiterTally = limiter.TallyPeriod
	if raw := getenv("LIMITER_TALLY_S"); raw != "" {
		s, err := strconv.Atoi(raw)
		d := time.Duration(s) * time.Second
		if err == nil && (d < limiter.MinTallyPeriod || d > limiter.MaxTallyPeriod || limiter.TallyPeriod%d != 0) {
			err = fmt.Errorf("want whole seconds in [%d, %d] dividing a minute", int(limiter.MinTallyPeriod.Seconds()), int(limiter.MaxTallyPeriod.Seconds()))
		}
		if err != nil {
			bad("LIMITER_TALLY_S", raw, err)
		} else {
			c.LimiterTally = d
		}
	}

	if raw := getenv("LEDGER_FAULT_FAIL_AFTER_WRITE"); raw != "" {
		n, err := strconv.ParseInt(raw, 10, 64)
		if err != nil || n < 0 {
			bad("LEDGER_FAULT_FAIL_AFTER_WRITE", raw, fmt.Errorf("want a count ≥ 0"))
		} else {
			c.LedgerFaultFailAfterWrite = n
		}
	}
	return c, probs
}

// intVar parses an optional integer var ("" is 0: the default).
func intVar(raw string) (int, error) {
	if raw == "" {
		return 0, nil
	}
	return strconv.Atoi(raw)
}
