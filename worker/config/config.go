// Package config is the Worker's configuration, loaded once from its env
// (wrangler.jsonc vars and secrets): binding names, cron expressions, vars
// with their defaults. A var that does not parse is reported as a
// config.bad_config event and its default used, so a typo cannot stop the
// system. Pure Go: Load takes the getenv function.
//
// It imports no controller: the Durable Objects' own vars are read here as
// set (ObjectVars) and parsed and bounded by the objects' constructors in
// the Worker's wiring (storecrawl/worker.loadSettings).
package config

import (
	"cmp"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"storecrawl/internal/objects"
	"storecrawl/worker/refresh"
)

// Binding names, as wrangler.jsonc binds them (a test checks they agree).
const (
	BindingDB         = "DB"
	BindingHTML       = "HTML_CACHE"
	BindingDatasets   = "DATASETS"
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

// MaxBudgetOverageUSD bounds BUDGET_OVERAGE_USD: a typo's extra digits
// must not switch the cost guard off.
const MaxBudgetOverageUSD = 100000

// Object names.
const (
	// SchedulerName is the versioned scheduler singleton (a new version starts afresh).
	SchedulerName = "v1"
	// LimiterPrefix names one OmniLimiter object per key; a regional
	// deployment can prefix the region as well (idFromName(region + key)).
	LimiterPrefix = "limiter_"
	// ControllerName addresses the controller of the default crawl target.
	ControllerName = objects.DefaultTarget
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

// ENRICHMENT_PAGE_REUSE_H: how old a retried item's stored page (R2) may
// be to be parsed again instead of fetched (0: always fetch). A day-old
// page is the page a fetch would bring back (LOOKUP_FRESH_H trusts a
// day-old lookup likewise); the bucket's lifecycle rule expires pages 30
// days after their tick, so none older is there to reuse.
const (
	DefaultPageReuse = 24 * time.Hour
	maxPageReuseH    = 30 * 24
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
	// HintsBase is the search-hints host's base URL (UPSTREAM_HINTS_BASE),
	// without a trailing slash.
	HintsBase string
	Country   string
	// MaxHold caps how long one upstream answer (Retry-After,
	// RateLimit-Reset) can hold the crawler (UPSTREAM_MAX_HOLD_S); 0 when
	// unset: the client's default (upstream.DefaultMaxHold).
	MaxHold time.Duration
	// LocationHint is where the EnrichmentController is created.
	LocationHint string
	// Objects are the Durable Objects' vars, as set.
	Objects ObjectVars
	// RetryFailedAfter is ENRICHMENT_RETRY_FAILED_AFTER_H (0: never).
	RetryFailedAfter time.Duration
	// PageReuse is ENRICHMENT_PAGE_REUSE_H (0: never).
	PageReuse time.Duration
	// FactsRetention is how long D1 keeps raw facts (FACTS_RETENTION_DAYS).
	FactsRetention time.Duration
	// StaleAfter is CATALOGUE_STALE_AFTER_DAYS.
	StaleAfter time.Duration
	// RefreshShare is REFRESH_SHARE_PCT as a fraction: the share of an
	// enrichment tick's slots due refreshes get while never-enriched apps
	// wait too (refresh.Split).
	RefreshShare float64
	// BudgetOverageUSD is BUDGET_OVERAGE_USD: the month's overage past the
	// plan's inclusions the cost guard lets the projection reach before it
	// slows discretionary work (guard.Decide; 0: none).
	BudgetOverageUSD float64
	// AdminToken guards the mutating routes; empty refuses them all.
	AdminToken string
	// ClientToken (LIMITER_CLIENT_TOKEN) guards POST /v1/limiter/acquire and
	// the status of client keys; empty refuses them all. It must differ from
	// AdminToken (a client holding it must not be an operator): when equal
	// it is reported and refuses everything, as if unset.
	ClientToken string
	// ReadToken (READ_TOKEN), when set, guards the explorer's pages (/app/)
	// and the read routes they call: Bearer READ_TOKEN, or the cookie the
	// pages set after asking once (docs/explorer.md#access). Empty: open.
	ReadToken string
	// TestRoutes mounts the test-only routes (never set in wrangler.jsonc).
	TestRoutes bool
	// AllowLoopbackWebhooks (ALLOW_LOOPBACK_WEBHOOKS=1) accepts alert
	// webhooks on loopback, over http too: `make dev` and the integration
	// tests, whose receivers listen there. Off by default.
	AllowLoopbackWebhooks bool
	// LedgerFaultFailAfterWrite makes the facts consumer fail its first N
	// batches after writing them (the exactly-once integration test).
	LedgerFaultFailAfterWrite int64
}

// ObjectVars are the Durable Objects' vars as set ("" when unset). The
// objects' own constructors parse and bound them (enrichment.NewConfig and
// its setters, scheduler.NewConfig, ledger.RetentionFromDays), and a value
// they refuse is a Problem like any other.
type ObjectVars struct {
	EnrichmentCooldownS       string // ENRICHMENT_COOLDOWN_S: the seed rules' cooldown (no other algorithm reads it)
	EnrichmentPacing          string // ENRICHMENT_PACING
	EnrichmentParserProbeS    string // ENRICHMENT_PARSER_PROBE_S
	EnrichmentIdleS           string // ENRICHMENT_IDLE_S
	LimiterTallyS             string // LIMITER_TALLY_S
	LedgerConfirmAfterS       string // LEDGER_CONFIRM_AFTER_S
	SubrequestBudget          string // SUBREQUEST_BUDGET
	LookupBatch               string // LOOKUP_BATCH
	LookupFreshH              string // LOOKUP_FRESH_H
	SchedulerBreakerThreshold string // SCHEDULER_BREAKER_THRESHOLD
	LedgerRetentionDays       string // LEDGER_RETENTION_DAYS
}

// Problem is a var that did not parse; its default is used.
type Problem struct {
	Var   string `json:"var"`
	Value string `json:"value"`
	Error string `json:"error"`
}

// Load reads every setting with getenv. The groups load in this order, so
// the problems come in it too.
func Load(getenv func(string) string) (Config, []Problem) {
	l := &loader{getenv: getenv}
	var c Config
	l.access(&c)
	l.upstream(&c)
	l.enrichment(&c)
	l.retention(&c)
	l.refreshes(&c)
	l.cost(&c)
	l.ledger(&c)
	c.Objects = objectVars(getenv)
	return c, l.probs
}

// loader reads vars and collects the problems of those that do not parse.
type loader struct {
	getenv func(string) string
	probs  []Problem
}

// bad reports name's value: it did not parse, and its default is used.
func (l *loader) bad(name, value string, err error) {
	l.probs = append(l.probs, Problem{Var: name, Value: value, Error: err.Error()})
}

// access reads the tokens and the switches that open routes. A client
// token equal to the admin token is reported and refuses everything.
func (l *loader) access(c *Config) {
	c.AdminToken = l.getenv("ADMIN_TOKEN")
	c.ClientToken = l.getenv("LIMITER_CLIENT_TOKEN")
	c.ReadToken = l.getenv("READ_TOKEN")
	c.TestRoutes = l.getenv("TEST_ROUTES") == "1"
	c.AllowLoopbackWebhooks = l.getenv("ALLOW_LOOPBACK_WEBHOOKS") == "1"
	if c.ClientToken != "" && c.ClientToken == c.AdminToken {
		// The value is a secret: the event names the var, never the value.
		l.bad("LIMITER_CLIENT_TOKEN", "(redacted)", fmt.Errorf("must differ from ADMIN_TOKEN; client calls are refused until it does"))
		c.ClientToken = ""
	}
}

// upstream reads the upstream's hosts, its country and how long one of
// its answers may hold the crawler.
func (l *loader) upstream(c *Config) {
	c.APIBase = strings.TrimRight(l.getenv("UPSTREAM_API_BASE"), "/")
	c.StoreBase = strings.TrimRight(l.getenv("UPSTREAM_STORE_BASE"), "/")
	c.HintsBase = strings.TrimRight(l.getenv("UPSTREAM_HINTS_BASE"), "/")
	c.Country = cmp.Or(l.getenv("UPSTREAM_COUNTRY"), DefaultCountry)
	if raw := l.getenv("UPSTREAM_MAX_HOLD_S"); raw != "" {
		secs, err := intVar(raw)
		if err == nil && (secs < minMaxHoldS || secs > maxMaxHoldS) {
			err = fmt.Errorf("must be in [%d, %d]", minMaxHoldS, maxMaxHoldS)
		}
		if err != nil {
			l.bad("UPSTREAM_MAX_HOLD_S", raw, err)
		} else {
			c.MaxHold = time.Duration(secs) * time.Second
		}
	}
}

// enrichment reads the Worker's enrichment settings: where its controller
// lives, when a given-up item is retried, and when a stored page is parsed
// again instead of fetched.
func (l *loader) enrichment(c *Config) {
	c.LocationHint = l.getenv("ENRICHMENT_LOCATION_HINT")
	c.RetryFailedAfter = DefaultRetryFailedAfter
	if raw := l.getenv("ENRICHMENT_RETRY_FAILED_AFTER_H"); raw != "" {
		h, err := intVar(raw)
		if err == nil && (h < 0 || h > maxRetryFailedAfterH) {
			err = fmt.Errorf("must be in [0, %d] hours", maxRetryFailedAfterH)
		}
		if err != nil {
			l.bad("ENRICHMENT_RETRY_FAILED_AFTER_H", raw, err)
		} else {
			c.RetryFailedAfter = time.Duration(h) * time.Hour
		}
	}
	c.PageReuse = DefaultPageReuse
	if raw := l.getenv("ENRICHMENT_PAGE_REUSE_H"); raw != "" {
		h, err := strconv.Atoi(raw)
		if err == nil && (h < 0 || h > maxPageReuseH) {
			err = fmt.Errorf("must be whole hours in [0, %d]", maxPageReuseH)
		}
		if err != nil {
			l.bad("ENRICHMENT_PAGE_REUSE_H", raw, err)
		} else {
			c.PageReuse = time.Duration(h) * time.Hour
		}
	}
}

// retention reads how long D1 keeps raw ledger facts, and how long an app
// may go unseen before it is marked stale.
func (l *loader) retention(c *Config) {
	c.FactsRetention = DefaultFactsRetentionDays * 24 * time.Hour
	if raw := l.getenv("FACTS_RETENTION_DAYS"); raw != "" {
		days, err := strconv.Atoi(raw)
		if err == nil && (days < minFactsRetentionDays || days > maxFactsRetentionDays) {
			err = fmt.Errorf("must be whole days in [%d, %d]", minFactsRetentionDays, maxFactsRetentionDays)
		}
		if err != nil {
			l.bad("FACTS_RETENTION_DAYS", raw, err)
		} else {
			c.FactsRetention = time.Duration(days) * 24 * time.Hour
		}
	}
	c.StaleAfter = DefaultStaleAfterDays * 24 * time.Hour
	if raw := l.getenv("CATALOGUE_STALE_AFTER_DAYS"); raw != "" {
		days, err := strconv.Atoi(raw)
		if err == nil && (days < minStaleAfterDays || days > maxStaleAfterDays) {
			err = fmt.Errorf("must be whole days in [%d, %d]", minStaleAfterDays, maxStaleAfterDays)
		}
		if err != nil {
			l.bad("CATALOGUE_STALE_AFTER_DAYS", raw, err)
		} else {
			c.StaleAfter = time.Duration(days) * 24 * time.Hour
		}
	}
}

// refreshes reads the due refreshes' share of an enrichment tick.
func (l *loader) refreshes(c *Config) {
	c.RefreshShare = refresh.DefaultRefreshShare
	if raw := l.getenv("REFRESH_SHARE_PCT"); raw != "" {
		pct, err := strconv.Atoi(raw)
		if err == nil && (pct < 0 || pct > 100) {
			err = fmt.Errorf("must be a whole percentage in [0, 100]")
		}
		if err != nil {
			l.bad("REFRESH_SHARE_PCT", raw, err)
		} else {
			c.RefreshShare = float64(pct) / 100
		}
	}
}

// cost reads the overage the cost guard lets the month's projection reach.
func (l *loader) cost(c *Config) {
	if raw := l.getenv("BUDGET_OVERAGE_USD"); raw != "" {
		usd, err := strconv.ParseFloat(raw, 64)
		if err == nil && (math.IsNaN(usd) || usd < 0 || usd > MaxBudgetOverageUSD) {
			err = fmt.Errorf("must be USD in [0, %d]", MaxBudgetOverageUSD)
		}
		if err != nil {
			l.bad("BUDGET_OVERAGE_USD", raw, err)
		} else {
			c.BudgetOverageUSD = usd
		}
	}
}

// ledger reads the facts consumer's fault injection (the exactly-once
// integration test).
func (l *loader) ledger(c *Config) {
	if raw := l.getenv("LEDGER_FAULT_FAIL_AFTER_WRITE"); raw != "" {
		n, err := strconv.ParseInt(raw, 10, 64)
		if err != nil || n < 0 {
			l.bad("LEDGER_FAULT_FAIL_AFTER_WRITE", raw, fmt.Errorf("want a count ≥ 0"))
		} else {
			c.LedgerFaultFailAfterWrite = n
		}
	}
}

// objectVars reads the Durable Objects' vars as set: their constructors
// parse and bound them.
func objectVars(getenv func(string) string) ObjectVars {
	return ObjectVars{
		EnrichmentCooldownS:       getenv("ENRICHMENT_COOLDOWN_S"),
		EnrichmentPacing:          getenv("ENRICHMENT_PACING"),
		EnrichmentParserProbeS:    getenv("ENRICHMENT_PARSER_PROBE_S"),
		EnrichmentIdleS:           getenv("ENRICHMENT_IDLE_S"),
		LimiterTallyS:             getenv("LIMITER_TALLY_S"),
		LedgerConfirmAfterS:       getenv("LEDGER_CONFIRM_AFTER_S"),
		SubrequestBudget:          getenv("SUBREQUEST_BUDGET"),
		LookupBatch:               getenv("LOOKUP_BATCH"),
		LookupFreshH:              getenv("LOOKUP_FRESH_H"),
		SchedulerBreakerThreshold: getenv("SCHEDULER_BREAKER_THRESHOLD"),
		LedgerRetentionDays:       getenv("LEDGER_RETENTION_DAYS"),
	}
}

// intVar parses an optional integer var ("" is 0: the default).
func intVar(raw string) (int, error) {
	if raw == "" {
		return 0, nil
	}
	return strconv.Atoi(raw)
}
