//go:build js && wasm

package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"syscall/js"
	"time"

	"storecrawl/durable/ledger"
	"storecrawl/worker/config"
	"storecrawl/worker/ledgerdb"
)

// ledgerPlan({writer, step}, nowMs) → ledger.Plan JSON: the shim's Ledger
// asks what to do after each append, send and failure.
func ledgerPlan(args []js.Value) (any, error) {
	var in struct {
		Writer ledger.Writer `json:"writer"`
		Step   ledger.Step   `json:"step"`
	}
	if err := json.Unmarshal([]byte(args[0].String()), &in); err != nil {
		return nil, fmt.Errorf("ledgerPlan: %w", err)
	}
	return ledger.NextWith(in.Writer, in.Step, ledgerRetention(), cfg.LedgerConfirmAfter, time.UnixMilli(int64(args[1].Float()))), nil
}

// ledgerWakeAt(workMs, writerJSON) → unix ms (0: none): when an object
// whose own next alarm is at workMs wakes for it and its ledger
// (durable/ledger.WakeAt: sends and checks ride on the object's alarm).
func ledgerWakeAt(args []js.Value) (any, error) {
	var w ledger.Writer
	if err := json.Unmarshal([]byte(args[1].String()), &w); err != nil {
		return nil, fmt.Errorf("ledgerWakeAt: %w", err)
	}
	return ledger.WakeAt(int64(args[0].Float()), w), nil
}

// ledgerConfirm(idsJSON) → Promise of {"present": [...]}: which of a
// writer's sent facts D1 has (durable/ledger.Confirm); the shim resends
// the others.
func ledgerConfirm(args []js.Value) (any, error) {
	var ids []string
	if err := json.Unmarshal([]byte(args[0].String()), &ids); err != nil {
		return nil, fmt.Errorf("ledgerConfirm: %w", err)
	}
	present, err := historyStore.FactsPresent(context.Background(), ids)
	if err != nil {
		return nil, fmt.Errorf("ledgerConfirm: %w", err)
	}
	out := make([]string, 0, len(present))
	for _, id := range ids {
		if present[id] {
			out = append(out, id)
		}
	}
	return map[string]any{"present": out}, nil
}

// ledgerRetention is LEDGER_RETENTION_DAYS as loaded (a bad value is
// reported by loadConfig and the default kept, so a typo cannot prune the
// ledger early).
func ledgerRetention() time.Duration { return cfg.LedgerRetention }

// The ledger's D1 side (worker/ledgerdb), per Go instance.
var (
	historyStore   = ledgerdb.D1Store{DB: db}
	factsConsumer  ledgerdb.ConsumerStats
	historyService = &ledgerdb.Service{Store: historyStore, Reports: ledgerReports, Consumer: &factsConsumer, Now: time.Now,
		Bodies: htmlBucket}
	// factFaults is the test-only switch of POST /__test/faults (mounted
	// and wired only under TEST_ROUTES).
	factFaults = &ledgerdb.FailBeforeWrite{}
)

// factWriter is the facts consumer's writer: D1, failing its first
// LEDGER_FAULT_FAIL_AFTER_WRITE batches after writing them (the
// exactly-once test; made once, after loadConfig).
var factWriter = sync.OnceValue(func() ledgerdb.FactWriter {
	var w ledgerdb.FactWriter = historyStore
	if cfg.LedgerFaultFailAfterWrite > 0 {
		w = &ledgerdb.FailAfterWrite{Writer: w, N: cfg.LedgerFaultFailAfterWrite}
	}
	if cfg.TestRoutes {
		factFaults.Writer = w
		w = factFaults
	}
	return w
})

// ledgerReports asks the writer objects for their side (GET /ledger).
var ledgerReports = ledgerdb.ObjectReports{
	Scheduler: schedulerDO.Fetch, SchedulerName: config.SchedulerName,
	Controller: func(ctx context.Context, name, method, path string, body []byte) (int, []byte, error) {
		return controllerNS.Fetch(ctx, name, method, path, body) // controllerNS is set by loadConfig
	},
	Limiter: limiterDO.Call, LimiterPrefix: config.LimiterPrefix,
}
