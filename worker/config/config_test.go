package config

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"testing"
	"time"

	"storecrawl/worker/upstream"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestLoadParsesVarsAndDefaults(t *testing.T) {
	c, probs := Load(env(map[string]string{
		"UPSTREAM_API_BASE": "http://127.0.0.1:1/", "UPSTREAM_STORE_BASE": "http://s//",
		"ADMIN_TOKEN": "t", "LIMITER_CLIENT_TOKEN": "c", "TEST_ROUTES": "1",
		"UPSTREAM_MAX_HOLD_S": "120", "ENRICHMENT_RETRY_FAILED_AFTER_H": "0", "FACTS_RETENTION_DAYS": "90",
		"ENRICHMENT_PACING": "seed", "LOOKUP_BATCH": "150",
	}))
	if len(probs) != 0 {
		t.Fatalf("problems: %+v", probs)
	}
	if c.APIBase != "http://127.0.0.1:1" || c.StoreBase != "http://s" || c.Country != DefaultCountry {
		t.Fatalf("bases: %+v", c)
	}
	if c.AdminToken != "t" || c.ClientToken != "c" || !c.TestRoutes || c.MaxHold != 2*time.Minute ||
		c.FactsRetention != 90*24*time.Hour || c.RetryFailedAfter != 0 {
		t.Fatalf("parsed: %+v", c)
	}
}

func TestBadVarsAreReportedAndDefaulted(t *testing.T) {
	c, probs := Load(env(map[string]string{
		"LEDGER_FAULT_FAIL_AFTER_WRITE": "-1", "UPSTREAM_MAX_HOLD_S": "86400",
		"ENRICHMENT_RETRY_FAILED_AFTER_H": "-1",
		"FACTS_RETENTION_DAYS":            "30d",
	}))
	if len(probs) != 4 {
		t.Fatalf("want 4 problems, got %+v", probs)
	}
	const defaultFacts = DefaultFactsRetentionDays * 24 * time.Hour
	if c.MaxHold != upstream.DefaultMaxHold || c.LedgerFaultFailAfterWrite != 0 ||
		c.FactsRetention != defaultFacts || c.RetryFailedAfter != DefaultRetryFailedAfter {
		t.Fatalf("defaults: %+v", c)
	}
	if c, probs := Load(env(nil)); len(probs) != 0 || c.FactsRetention != defaultFacts {
		t.Fatalf("empty env: %+v %+v", c, probs)
	}
	// FACTS_RETENTION_DAYS is bounded: shorter than a queue message can be
	// redelivered, or beyond ten years, is refused and the default kept.
	for _, raw := range []string{"13", "0", "-30", "3651", "1.5"} {
		c, probs := Load(env(map[string]string{"FACTS_RETENTION_DAYS": raw}))
		if len(probs) != 1 || probs[0].Var != "FACTS_RETENTION_DAYS" || c.FactsRetention != defaultFacts {
			t.Errorf("FACTS_RETENTION_DAYS=%s: %v, %+v", raw, c.FactsRetention, probs)
		}
	}
	for raw, want := range map[string]time.Duration{"14": 14 * 24 * time.Hour, "3650": 3650 * 24 * time.Hour} {
		if c, probs := Load(env(map[string]string{"FACTS_RETENTION_DAYS": raw})); len(probs) != 0 || c.FactsRetention != want {
			t.Errorf("FACTS_RETENTION_DAYS=%s: %v, %+v", raw, c.FactsRetention, probs)
		}
	}
}

// TestBindingsAndCronsMatchWrangler keeps the names in Go and in
// wrangler.jsonc from drifting apart.
func TestBindingsAndCronsMatchWrangler(t *testing.T) {
	raw, err := os.ReadFile("../../wrangler.jsonc")
	if err != nil {
		t.Fatal(err)
	}
	// JSONC: drop // comments (none of our strings hold "//" after a space) and trailing commas.
	text := regexp.MustCompile(`(?m)^\s*//.*$|\s//\s.*$`).ReplaceAllString(string(raw), "")
	text = regexp.MustCompile(`,(\s*[}\]])`).ReplaceAllString(text, "$1")
	var w struct {
		D1  []struct{ Binding string } `json:"d1_databases"`
		R2  []struct{ Binding string } `json:"r2_buckets"`
		KV  []struct{ Binding string } `json:"kv_namespaces"`
		Que struct {
			Producers []struct{ Binding, Queue string }
			Consumers []struct {
				Queue           string
				DeadLetterQueue string `json:"dead_letter_queue"`
			}
		} `json:"queues"`
		DO struct {
			Bindings []struct{ Name string } `json:"bindings"`
		} `json:"durable_objects"`
		Triggers struct{ Crons []string }
		Vars     map[string]string
	}
	if err := json.Unmarshal([]byte(text), &w); err != nil {
		t.Fatalf("wrangler.jsonc: %v", err)
	}
	if len(w.D1) != 1 || w.D1[0].Binding != BindingDB || len(w.R2) != 2 || w.R2[0].Binding != BindingHTML || w.R2[1].Binding != BindingDatasets || len(w.KV) != 1 || w.KV[0].Binding != BindingKV {
		t.Fatalf("D1/R2/KV bindings: %+v %+v %+v", w.D1, w.R2, w.KV)
	}
	if len(w.Que.Producers) != 1 || w.Que.Producers[0].Binding != BindingEvents || w.Que.Producers[0].Queue != QueueEvents {
		t.Fatalf("queue producer: %+v", w.Que.Producers)
	}
	var consumed []string
	for _, c := range w.Que.Consumers {
		consumed = append(consumed, c.Queue)
		if c.Queue == QueueEvents && c.DeadLetterQueue != DeadLetterQueue {
			t.Fatalf("dead-letter queue: %+v", c)
		}
	}
	if !slices.Contains(consumed, QueueEvents) || !slices.Contains(consumed, DeadLetterQueue) {
		t.Fatalf("consumers: %v", consumed)
	}
	var dos []string
	for _, b := range w.DO.Bindings {
		dos = append(dos, b.Name)
	}
	slices.Sort(dos)
	want := []string{BindingController, BindingLimiter, BindingScheduler}
	slices.Sort(want)
	if !slices.Equal(dos, want) {
		t.Fatalf("durable object bindings: %v, want %v", dos, want)
	}
	if !slices.Equal(w.Triggers.Crons, Crons) {
		t.Fatalf("crons: %v, want %v", w.Triggers.Crons, Crons)
	}
	// The vars as deployed load without a problem.
	if c, probs := Load(env(w.Vars)); len(probs) != 0 || c.APIBase == "" || c.Country != w.Vars["UPSTREAM_COUNTRY"] {
		t.Fatalf("wrangler.jsonc vars: %+v %+v", probs, w.Vars)
	}
}

// TestClientTokenMustDifferFromAdminToken: a client token equal to the
// admin token would make every client an operator; it is reported (without
// its value) and refuses client calls, as an unset one does.
func TestClientTokenMustDifferFromAdminToken(t *testing.T) {
	c, probs := Load(env(map[string]string{"ADMIN_TOKEN": "same-secret", "LIMITER_CLIENT_TOKEN": "same-secret"}))
	if len(probs) != 1 || probs[0].Var != "LIMITER_CLIENT_TOKEN" || c.ClientToken != "" || c.AdminToken != "same-secret" {
		t.Fatalf("config %+v, problems %+v", c, probs)
	}
	if b, _ := json.Marshal(probs); regexp.MustCompile(`same-secret`).Match(b) {
		t.Fatalf("the problem shows the secret: %s", b)
	}
	if c, probs := Load(env(map[string]string{"ADMIN_TOKEN": "a"})); len(probs) != 0 || c.ClientToken != "" {
		t.Fatalf("unset client token: %+v %+v", c, probs)
	}
}

// TestStaleAfter: CATALOGUE_STALE_AFTER_DAYS in whole days within its
// bounds; anything else is reported and the default used.
func TestStaleAfter(t *testing.T) {
	if c, probs := Load(env(nil)); len(probs) != 0 || c.StaleAfter != DefaultStaleAfterDays*24*time.Hour {
		t.Fatalf("default: %v %+v", c.StaleAfter, probs)
	}
	if c, probs := Load(env(map[string]string{"CATALOGUE_STALE_AFTER_DAYS": "30"})); len(probs) != 0 || c.StaleAfter != 30*24*time.Hour {
		t.Fatalf("30 days: %v %+v", c.StaleAfter, probs)
	}
	for _, raw := range []string{"6", "3651", "90d", "-1"} {
		c, probs := Load(env(map[string]string{"CATALOGUE_STALE_AFTER_DAYS": raw}))
		if len(probs) != 1 || probs[0].Var != "CATALOGUE_STALE_AFTER_DAYS" || c.StaleAfter != DefaultStaleAfterDays*24*time.Hour {
			t.Errorf("%s: %v %+v", raw, c.StaleAfter, probs)
		}
	}
}

// ENRICHMENT_PAGE_REUSE_H: whole hours in [0, 168] (0 turns reuse off);
// anything else is reported and the default kept.
func TestPageReuseHours(t *testing.T) {
	if c, probs := Load(env(nil)); len(probs) != 0 || c.PageReuse != DefaultPageReuse || DefaultPageReuse != 24*time.Hour {
		t.Fatalf("default: %v %+v", c.PageReuse, probs)
	}
	for raw, want := range map[string]time.Duration{"0": 0, "6": 6 * time.Hour, "168": 168 * time.Hour} {
		if c, probs := Load(env(map[string]string{"ENRICHMENT_PAGE_REUSE_H": raw})); len(probs) != 0 || c.PageReuse != want {
			t.Errorf("ENRICHMENT_PAGE_REUSE_H=%s: %v, %+v", raw, c.PageReuse, probs)
		}
	}
	for _, raw := range []string{"-1", "169", "720", "1.5", "day"} {
		c, probs := Load(env(map[string]string{"ENRICHMENT_PAGE_REUSE_H": raw}))
		if len(probs) != 1 || probs[0].Var != "ENRICHMENT_PAGE_REUSE_H" || c.PageReuse != DefaultPageReuse {
			t.Errorf("ENRICHMENT_PAGE_REUSE_H=%s: %v, %+v", raw, c.PageReuse, probs)
		}
	}
}

// TestBudgetOverageUSD: BUDGET_OVERAGE_USD is USD within its bounds, 0 by
// default; a bad value is reported and the default kept.
func TestBudgetOverageUSD(t *testing.T) {
	if c, probs := Load(env(nil)); len(probs) != 0 || c.BudgetOverageUSD != 0 {
		t.Fatalf("default: %v %+v", c.BudgetOverageUSD, probs)
	}
	if c, probs := Load(env(map[string]string{"BUDGET_OVERAGE_USD": "12.5"})); len(probs) != 0 || c.BudgetOverageUSD != 12.5 {
		t.Fatalf("12.5: %v %+v", c.BudgetOverageUSD, probs)
	}
	for _, raw := range []string{"-1", "NaN", "ten", "1e9"} {
		c, probs := Load(env(map[string]string{"BUDGET_OVERAGE_USD": raw}))
		if len(probs) != 1 || probs[0].Var != "BUDGET_OVERAGE_USD" || c.BudgetOverageUSD != 0 {
			t.Errorf("%s: %v %+v", raw, c.BudgetOverageUSD, probs)
		}
	}
}
