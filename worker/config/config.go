// Package config is the Worker's configuration, loaded once from its env
// (wrangler.jsonc vars and secrets): binding names, cron expressions, and
// every setting, declared once in Settings and read by one loader (Load).
// A var a setting refuses is reported as a config.bad_config event and
// its default used, so a typo cannot stop the system. Pure Go: Load takes
// the getenv function.
package config

import (
	"time"

	"storecrawl/internal/objects"
	"storecrawl/worker/module"
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
// day-old lookup likewise); the bucket's lifecycle rule expires pages
// pagebatch.KeptDays (7) after their tick, so none older is there to
// reuse (TestPageReuseBoundIsTheBucketsRetention).
const (
	DefaultPageReuse = 24 * time.Hour
	maxPageReuseH    = 7 * 24
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

// Config is the platform's settings, parsed (the objects' and features'
// configs are built from Values by their owners).
type Config struct {
	// APIBase and StoreBase are the upstream's base URLs, without a trailing slash.
	APIBase   string
	StoreBase string
	// HintsBase is the search-hints host's base URL (UPSTREAM_HINTS_BASE),
	// without a trailing slash.
	HintsBase string
	Country   string
	// MaxHold caps how long one upstream answer (Retry-After,
	// RateLimit-Reset) can hold the crawler (UPSTREAM_MAX_HOLD_S; its
	// default is the client's, upstream.DefaultMaxHold).
	MaxHold time.Duration
	// LocationHint is where the EnrichmentController is created.
	LocationHint string
	// RetryFailedAfter is ENRICHMENT_RETRY_FAILED_AFTER_H (0: never).
	RetryFailedAfter time.Duration
	// PageReuse is ENRICHMENT_PAGE_REUSE_H (0: never).
	PageReuse time.Duration
	// FactsRetention is how long D1 keeps raw facts (FACTS_RETENTION_DAYS).
	FactsRetention time.Duration
	// StaleAfter is CATALOGUE_STALE_AFTER_DAYS.
	StaleAfter time.Duration
	// RefreshShare is REFRESH_SHARE_PCT as a fraction: the share of an
	// enrichment tick's page slots due refreshes get while never-enriched
	// apps wait too (refresh.Split).
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

	// LedgerRetention is how long an object keeps its replicated facts.
	LedgerRetention time.Duration
	// LimiterTally is the span of an OmniLimiter key's ledger facts
	// (LIMITER_TALLY_S, default a minute): the integration tests shorten it
	// so a key's facts and an idle key's retirement come in seconds.
	LimiterTally time.Duration
	// LedgerConfirmAfter is when a writer's sent facts are checked against
	// D1 (LEDGER_CONFIRM_AFTER_S, default ledger.ConfirmAfter); a retiring
	// limiter key waits for it, so the integration tests shorten it.
	LedgerConfirmAfter time.Duration

	// Values are every setting as loaded, for the operator's view
	// (Values.Shown).
	Values module.Values
}
