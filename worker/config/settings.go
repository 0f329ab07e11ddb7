package config

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"storecrawl/durable/ledger"
	"storecrawl/durable/limiter"
	"storecrawl/worker/module"
	"storecrawl/worker/refresh"
	"storecrawl/worker/upstream"
)

// The modules that read platform settings (the features' are their
// module names).
const (
	moduleAPI      = "api"
	moduleUpstream = "upstream"
	moduleLimiter  = "limiter"
	moduleLedger   = "ledger"
)

// seconds, hours and days are a duration in a setting's unit.
func seconds(d time.Duration) float64 { return module.Seconds(d) }
func hours(d time.Duration) float64   { return module.Hours(d) }
func days(d time.Duration) float64    { return d.Hours() / 24 }

// inf is an open upper bound.
var inf = math.Inf(1)

// num is a default's text.
func num(v float64) string { return module.FormatNumber(v) }

// Settings are the settings of the Worker's platform and of the features
// whose settings need no Durable Object's bounds; the features declare the
// rest in their Module (worker.Settings is them all, and docs/operations.md's
// settings table lists the same names, defaults and bounds: a test).
var Settings = slices.Concat(platformSettings, featureSettings)

var platformSettings = []module.Setting{
	{Name: "UPSTREAM_API_BASE", Module: moduleUpstream, Kind: module.Text, Default: "https://itunes.apple.com",
		Doc: "the lookup and search host (local runs point it at the simulator)"},
	{Name: "UPSTREAM_STORE_BASE", Module: moduleUpstream, Kind: module.Text, Default: "https://apps.apple.com",
		Doc: "the store pages' host (local runs point it at the simulator)"},
	{Name: "UPSTREAM_HINTS_BASE", Module: moduleUpstream, Kind: module.Text, Default: "https://search.itunes.apple.com",
		Doc: "the search-hints host: keyword sourcing's completions"},
	{Name: "UPSTREAM_COUNTRY", Module: moduleUpstream, Kind: module.Text, Default: DefaultCountry,
		Doc: "storefront (and, for the hints, its `X-Apple-Store-Front` id)"},
	{Name: "UPSTREAM_MAX_HOLD_S", Module: moduleUpstream, Kind: module.Int, Default: num(seconds(upstream.DefaultMaxHold)), Bounds: module.In(minMaxHoldS, maxMaxHoldS),
		Doc: "the longest any Retry-After / RateLimit-Reset may hold the crawler"},
	{Name: "ADMIN_TOKEN", Module: moduleAPI, Kind: module.Secret, Doc: "operators' token; unset, every mutating call is a 401"},
	{Name: "LIMITER_CLIENT_TOKEN", Module: moduleAPI, Kind: module.Secret, Doc: "the limiter's clients' token, different from `ADMIN_TOKEN`"},
	{Name: "READ_TOKEN", Module: moduleAPI, Kind: module.Secret, Doc: "when set, guards the explorer's pages and the read routes they call"},
	{Name: "TEST_ROUTES", Module: moduleAPI, Kind: module.Switch, Default: "0", Doc: "`1`: test-only routes; never set in `wrangler.jsonc`"},
	{Name: "LIMITER_TALLY_S", Module: moduleLimiter, Kind: module.Int, Default: num(seconds(limiter.TallyPeriod)),
		Bounds: module.In(seconds(limiter.MinTallyPeriod), seconds(limiter.MaxTallyPeriod)), Check: dividesTally,
		Doc: "the span of an OmniLimiter key's ledger facts (dividing a minute), and so of an idle client key's retirement; only tests shorten it"},
	{Name: "LEDGER_RETENTION_DAYS", Module: moduleLedger, Kind: module.Number, Default: num(days(ledger.DefaultRetention)),
		Bounds: module.In(days(ledger.MinRetention), days(ledger.MaxRetention)), Doc: "days an object keeps its sent facts (an hour at least)"},
	{Name: "LEDGER_CONFIRM_AFTER_S", Module: moduleLedger, Kind: module.Int, Default: num(seconds(ledger.ConfirmAfter)),
		Bounds: module.In(seconds(ledger.MinConfirmAfter), seconds(ledger.ConfirmAfter)),
		Doc:    "when an object's sent facts are checked against D1; only tests shorten it"},
	{Name: "FACTS_RETENTION_DAYS", Module: moduleLedger, Kind: module.Int, Default: num(DefaultFactsRetentionDays),
		Bounds: module.In(minFactsRetentionDays, maxFactsRetentionDays), Doc: "days D1 keeps raw facts"},
	{Name: "LEDGER_FAULT_FAIL_AFTER_WRITE", Module: moduleLedger, Kind: module.Int, Default: "0", Bounds: module.In(0, inf),
		Doc: "fault injection: the facts consumer fails its first N batches after writing them; never set in `wrangler.jsonc`"},
}

var featureSettings = []module.Setting{
	{Name: "ENRICHMENT_LOCATION_HINT", Module: "enrichment", Kind: module.Text, Default: "enam", Doc: "where the controller is created: near the upstream"},
	{Name: "ENRICHMENT_RETRY_FAILED_AFTER_H", Module: "enrichment", Kind: module.Int, Default: num(hours(DefaultRetryFailedAfter)),
		Bounds: module.In(0, maxRetryFailedAfterH), Doc: "when the hourly task requeues given-up items (0: off)"},
	{Name: "ENRICHMENT_PAGE_REUSE_H", Module: "enrichment", Kind: module.Int, Default: num(hours(DefaultPageReuse)),
		Bounds: module.In(0, maxPageReuseH), Doc: "hours a retried item's stored page is parsed from R2 instead of fetched (0: off)"},
	{Name: "REFRESH_SHARE_PCT", Module: "catalogue", Kind: module.Int, Default: num(refresh.DefaultRefreshShare * 100), Bounds: module.In(0, 100),
		Doc: "share of the page slots for changed due refreshes while new apps wait (spread over ticks); the rest record their lookup and keep their page due"},
	{Name: "CATALOGUE_STALE_AFTER_DAYS", Module: "catalogue", Kind: module.Int, Default: num(DefaultStaleAfterDays),
		Bounds: module.In(minStaleAfterDays, maxStaleAfterDays), Doc: "unseen days before an app is marked stale"},
	{Name: "BUDGET_OVERAGE_USD", Module: "guard", Kind: module.Number, Default: "0", Bounds: module.In(0, MaxBudgetOverageUSD),
		Doc: "the month's projected overage past the plan's inclusions before the cost guard slows discretionary work"},
	{Name: "ALLOW_LOOPBACK_WEBHOOKS", Module: "alerts", Kind: module.Switch, Default: "0",
		Doc: "`1`: alert webhooks on loopback are accepted, over http too"},
}

// dividesTally refuses a tally span that does not divide a minute.
func dividesTally(s float64) error {
	if d := time.Duration(s) * time.Second; d <= 0 || limiter.TallyPeriod%d != 0 {
		return fmt.Errorf("want whole seconds dividing a minute")
	}
	return nil
}

// Load reads Settings alone with getenv (tests; the Worker loads every
// setting at once with LoadWith).
func Load(getenv func(string) string) (Config, []module.Problem) {
	return LoadWith(Settings, getenv)
}

// LoadWith reads every setting of decls (which hold Settings) with
// getenv, in order: the Worker's one settings loader. It builds the
// Config from them; the features build theirs from its Values. A value
// its setting refuses is a Problem and the default is used; so is a
// client token equal to the admin token (then client calls are refused).
func LoadWith(decls []module.Setting, getenv func(string) string) (Config, []module.Problem) {
	v, probs := module.Load(decls, getenv)
	c := Config{
		Values:                    v,
		APIBase:                   strings.TrimRight(v.String("UPSTREAM_API_BASE"), "/"),
		StoreBase:                 strings.TrimRight(v.String("UPSTREAM_STORE_BASE"), "/"),
		HintsBase:                 strings.TrimRight(v.String("UPSTREAM_HINTS_BASE"), "/"),
		Country:                   v.String("UPSTREAM_COUNTRY"),
		MaxHold:                   time.Duration(v.Int("UPSTREAM_MAX_HOLD_S")) * time.Second,
		LocationHint:              v.String("ENRICHMENT_LOCATION_HINT"),
		RetryFailedAfter:          time.Duration(v.Int("ENRICHMENT_RETRY_FAILED_AFTER_H")) * time.Hour,
		PageReuse:                 time.Duration(v.Int("ENRICHMENT_PAGE_REUSE_H")) * time.Hour,
		FactsRetention:            time.Duration(v.Int("FACTS_RETENTION_DAYS")) * 24 * time.Hour,
		StaleAfter:                time.Duration(v.Int("CATALOGUE_STALE_AFTER_DAYS")) * 24 * time.Hour,
		RefreshShare:              float64(v.Int("REFRESH_SHARE_PCT")) / 100,
		BudgetOverageUSD:          v.Float("BUDGET_OVERAGE_USD"),
		AdminToken:                v.String("ADMIN_TOKEN"),
		ClientToken:               v.String("LIMITER_CLIENT_TOKEN"),
		ReadToken:                 v.String("READ_TOKEN"),
		TestRoutes:                v.On("TEST_ROUTES"),
		AllowLoopbackWebhooks:     v.On("ALLOW_LOOPBACK_WEBHOOKS"),
		LedgerFaultFailAfterWrite: v.Int("LEDGER_FAULT_FAIL_AFTER_WRITE"),
		LimiterTally:              time.Duration(v.Int("LIMITER_TALLY_S")) * time.Second,
		LedgerConfirmAfter:        time.Duration(v.Int("LEDGER_CONFIRM_AFTER_S")) * time.Second,
		LedgerRetention:           time.Duration(v.Float("LEDGER_RETENTION_DAYS") * float64(24*time.Hour)),
	}
	if c.ClientToken != "" && c.ClientToken == c.AdminToken {
		// The value is a secret: the event names the var, never the value.
		probs = append(probs, module.Problem{Var: "LIMITER_CLIENT_TOKEN", Value: "(redacted)", Error: "must differ from ADMIN_TOKEN; client calls are refused until it does"})
		c.ClientToken = ""
	}
	return c, probs
}
