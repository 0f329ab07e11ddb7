package worker

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"storecrawl/durable/controller"
	"storecrawl/durable/ledger"
	"storecrawl/durable/limiter"
	"storecrawl/worker/pagebatch"
)

func TestLoadSettingsBuildsTheObjectsConfigs(t *testing.T) {
	c, probs := loadSettings(env(map[string]string{
		"UPSTREAM_API_BASE":     "http://127.0.0.1:1/",
		"ENRICHMENT_COOLDOWN_S": "60", "ENRICHMENT_PACING": " seed ", "SCHEDULER_BREAKER_THRESHOLD": "4",
		"LEDGER_RETENTION_DAYS": "2", "ENRICHMENT_PARSER_PROBE_S": "5", "UPSTREAM_MAX_HOLD_S": "120",
		"LOOKUP_BATCH": "150", "LIMITER_TALLY_S": "5", "ENRICHMENT_IDLE_S": "5", "LEDGER_CONFIRM_AFTER_S": "10", "SUBREQUEST_BUDGET": " 50 ",
	}))
	if len(probs) != 0 {
		t.Fatalf("problems: %+v", probs)
	}
	if c.Enrichment.Pacing != "seed" || c.Enrichment.Cooldown != time.Minute || c.Scheduler.BreakerThreshold != 4 ||
		c.LedgerRetention != 48*time.Hour || c.Enrichment.ProbeInterval() != 5*time.Second || c.Enrichment.LookupBatchSize() != 150 ||
		c.APIBase != "http://127.0.0.1:1" || c.MaxHold != 2*time.Minute ||
		c.LimiterTally != 5*time.Second || c.Enrichment.IdleWait() != 5*time.Second || c.LedgerConfirmAfter != 10*time.Second ||
		c.Enrichment.SubrequestBudget() != controller.FreeSubrequests {
		t.Fatalf("parsed: %+v", c)
	}
}

func TestBadObjectVarsAreReportedAndDefaulted(t *testing.T) {
	c, probs := loadSettings(env(map[string]string{
		"ENRICHMENT_COOLDOWN_S": "soon", "SCHEDULER_BREAKER_THRESHOLD": "-3", "LEDGER_RETENTION_DAYS": "x",
		"LEDGER_FAULT_FAIL_AFTER_WRITE": "-1", "ENRICHMENT_PARSER_PROBE_S": "0", "UPSTREAM_MAX_HOLD_S": "86400",
		"ENRICHMENT_RETRY_FAILED_AFTER_H": "-1",
		"FACTS_RETENTION_DAYS":            "30d",
		"LOOKUP_BATCH":                    "500",
		"LIMITER_TALLY_S":                 "7",
		"ENRICHMENT_IDLE_S":               "0",
		"LEDGER_CONFIRM_AFTER_S":          "1",
		"SUBREQUEST_BUDGET":               "49",
	}))
	// 9 of the objects' vars, and 4 of config's own.
	if len(probs) != 13 {
		t.Fatalf("want 13 problems, got %+v", probs)
	}
	if c.Enrichment != controller.DefaultConfig() || c.Scheduler.BreakerThreshold != 0 || c.LedgerRetention != ledger.DefaultRetention ||
		c.LimiterTally != limiter.TallyPeriod || c.LedgerConfirmAfter != ledger.ConfirmAfter {
		t.Fatalf("defaults: %+v", c)
	}
	if c, probs := loadSettings(env(nil)); len(probs) != 0 || c.Enrichment != controller.DefaultConfig() || c.LedgerRetention != ledger.DefaultRetention {
		t.Fatalf("empty env: %+v %+v", c, probs)
	}
	// LOOKUP_BATCH: 1 to 200 ids a lookup (the real endpoint's reported cap).
	for _, raw := range []string{"0", "-5", "201", "100x", "1.5"} {
		c, probs := loadSettings(env(map[string]string{"LOOKUP_BATCH": raw}))
		if len(probs) != 1 || probs[0].Var != "LOOKUP_BATCH" || c.Enrichment.LookupBatchSize() != controller.DefaultLookupBatch {
			t.Errorf("LOOKUP_BATCH=%s: %d, %+v", raw, c.Enrichment.LookupBatchSize(), probs)
		}
	}
	for raw, want := range map[string]int{"1": 1, "200": 200} {
		if c, probs := loadSettings(env(map[string]string{"LOOKUP_BATCH": raw})); len(probs) != 0 || c.Enrichment.LookupBatchSize() != want {
			t.Errorf("LOOKUP_BATCH=%s: %d, %+v", raw, c.Enrichment.LookupBatchSize(), probs)
		}
	}
	// LOOKUP_FRESH_H: 0 looks every item up; beyond 30 days is refused.
	for raw, want := range map[string]time.Duration{"0": 0, "6": 6 * time.Hour, "720": 720 * time.Hour} {
		if c, probs := loadSettings(env(map[string]string{"LOOKUP_FRESH_H": raw})); len(probs) != 0 || c.Enrichment.LookupFreshness() != want {
			t.Errorf("LOOKUP_FRESH_H=%s: %s, %+v", raw, c.Enrichment.LookupFreshness(), probs)
		}
	}
	for _, raw := range []string{"-1", "721", "1.5"} {
		if c, probs := loadSettings(env(map[string]string{"LOOKUP_FRESH_H": raw})); len(probs) != 1 || c.Enrichment.LookupFreshness() != controller.DefaultLookupFresh {
			t.Errorf("LOOKUP_FRESH_H=%s: %s, %+v", raw, c.Enrichment.LookupFreshness(), probs)
		}
	}
}

// TestPacingNamesTheProductsControllers: ENRICHMENT_PACING takes probe or
// seed; a simulator-only controller is a problem naming the var, and the
// default is used.
func TestPacingNamesTheProductsControllers(t *testing.T) {
	for _, raw := range []string{"aimd", "aws-adaptive", "oracle", "warp"} {
		c, probs := loadSettings(env(map[string]string{"ENRICHMENT_PACING": raw}))
		if len(probs) != 1 || !strings.Contains(probs[0].Var, "ENRICHMENT_PACING") || c.Enrichment != controller.DefaultConfig() {
			t.Errorf("ENRICHMENT_PACING=%s: %+v, %+v", raw, c.Enrichment, probs)
		}
	}
	for _, raw := range []string{"probe", "seed"} {
		if c, probs := loadSettings(env(map[string]string{"ENRICHMENT_PACING": raw})); len(probs) != 0 || c.Enrichment.Pacing != raw {
			t.Errorf("ENRICHMENT_PACING=%s: %+v, %+v", raw, c.Enrichment, probs)
		}
	}
}

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// TestDeployedVarsLoad: the vars as wrangler.jsonc deploys them load
// without a problem, the objects' included.
func TestDeployedVarsLoad(t *testing.T) {
	vars := wranglerVars(t)
	if c, probs := loadSettings(env(vars)); len(probs) != 0 || c.Enrichment.LookupBatchSize() != controller.DefaultLookupBatch || vars["LOOKUP_BATCH"] == "" {
		t.Fatalf("wrangler.jsonc vars: %+v %+v", probs, vars)
	}
}

// ENRICHMENT_PAGE_REUSE_H reaches at most the pages the bucket keeps
// (pagebatch.KeptDays, its lifecycle rule): one hour more is refused.
func TestPageReuseBoundIsTheBucketsRetention(t *testing.T) {
	kept := pagebatch.KeptDays * 24
	if c, probs := loadSettings(env(map[string]string{"ENRICHMENT_PAGE_REUSE_H": strconv.Itoa(kept)})); len(probs) != 0 || c.PageReuse != time.Duration(kept)*time.Hour {
		t.Fatalf("%d h (the bucket's %d days): %s, %+v", kept, pagebatch.KeptDays, c.PageReuse, probs)
	}
	if _, probs := loadSettings(env(map[string]string{"ENRICHMENT_PAGE_REUSE_H": strconv.Itoa(kept + 1)})); len(probs) != 1 {
		t.Fatalf("%d h, past the bucket's pages: accepted", kept+1)
	}
}
