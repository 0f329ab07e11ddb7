package worker

import (
	"fmt"
	"strconv"
	"time"

	"storecrawl/durable/controller"
	"storecrawl/durable/ledger"
	"storecrawl/durable/limiter"
	"storecrawl/durable/scheduler"
	"storecrawl/worker/config"
)

// settings is the Worker's configuration: config's settings, and the
// Durable Objects' configs built from their vars (config.ObjectVars) by the
// objects' own constructors, so worker/config imports no controller.
type settings struct {
	config.Config
	Enrichment controller.Config
	Scheduler  scheduler.Config
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
}

// loadSettings reads every setting with getenv. A var that does not parse
// or that its object refuses is a config.Problem; its default is used.
func loadSettings(getenv func(string) string) (settings, []config.Problem) {
	cc, probs := config.Load(getenv)
	c := settings{Config: cc}
	v := cc.Objects
	bad := func(name, value string, err error) {
		probs = append(probs, config.Problem{Var: name, Value: value, Error: err.Error()})
	}

	c.Enrichment = controller.DefaultConfig()
	cooldown, pacingName := v.EnrichmentCooldownS, v.EnrichmentPacing
	secs, err := intVar(cooldown)
	if err == nil {
		var cfg controller.Config
		if cfg, err = controller.NewConfig(pacingName, secs); err == nil {
			c.Enrichment = cfg
		}
	}
	if err != nil {
		bad("ENRICHMENT_COOLDOWN_S/ENRICHMENT_PACING", cooldown+"/"+pacingName, err)
	}
	if raw := v.EnrichmentParserProbeS; raw != "" {
		secs, err := intVar(raw)
		if err == nil {
			err = c.Enrichment.SetParserProbe(secs)
		}
		if err != nil {
			bad("ENRICHMENT_PARSER_PROBE_S", raw, err)
		}
	}

	if raw := v.EnrichmentIdleS; raw != "" {
		secs, err := intVar(raw)
		if err == nil {
			err = c.Enrichment.SetIdleSeconds(secs)
		}
		if err != nil {
			bad("ENRICHMENT_IDLE_S", raw, err)
		}
	}

	// SUBREQUEST_BUDGET: the invocation's subrequests (Workers Paid's
	// 10,000 when unset).
	if raw := v.SubrequestBudget; raw != "" {
		if err := setSubrequestBudget(&c.Enrichment, raw); err != nil {
			bad(subrequestBudgetVar, raw, err)
		}
	}

	if raw := v.LookupBatch; raw != "" {
		n, err := strconv.Atoi(raw)
		if err == nil {
			err = c.Enrichment.SetLookupBatch(n)
		}
		if err != nil {
			bad("LOOKUP_BATCH", raw, err)
		}
	}

	if raw := v.LookupFreshH; raw != "" {
		n, err := strconv.Atoi(raw)
		if err == nil {
			err = c.Enrichment.SetLookupFreshHours(n)
		}
		if err != nil {
			bad("LOOKUP_FRESH_H", raw, err)
		}
	}

	if raw := v.SchedulerBreakerThreshold; raw != "" {
		n, err := strconv.Atoi(raw)
		if err == nil {
			c.Scheduler, err = scheduler.NewConfig(n)
		}
		if err != nil {
			c.Scheduler = scheduler.Config{}
			bad("SCHEDULER_BREAKER_THRESHOLD", raw, err)
		}
	}

	c.LedgerRetention = ledger.DefaultRetention
	if raw := v.LedgerRetentionDays; raw != "" {
		days, err := strconv.ParseFloat(raw, 64)
		if err == nil {
			c.LedgerRetention, err = ledger.RetentionFromDays(days)
		}
		if err != nil {
			c.LedgerRetention = ledger.DefaultRetention
			bad("LEDGER_RETENTION_DAYS", raw, err)
		}
	}

	c.LedgerConfirmAfter = ledger.ConfirmAfter
	if raw := v.LedgerConfirmAfterS; raw != "" {
		secs, err := strconv.Atoi(raw)
		if err == nil {
			c.LedgerConfirmAfter, err = ledger.ConfirmAfterFromSeconds(secs)
		}
		if err != nil {
			c.LedgerConfirmAfter = ledger.ConfirmAfter
			bad("LEDGER_CONFIRM_AFTER_S", raw, err)
		}
	}

	c.LimiterTally = limiter.TallyPeriod
	if raw := v.LimiterTallyS; raw != "" {
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
	return c, probs
}

// intVar parses an optional integer var ("" is 0: the default).
func intVar(raw string) (int, error) {
	if raw == "" {
		return 0, nil
	}
	return strconv.Atoi(raw)
}
