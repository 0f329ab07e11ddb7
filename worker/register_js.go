//go:build js && wasm

package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"syscall/js"
	"time"

	"github.com/syumai/workers"
	"github.com/syumai/workers/cloudflare"
	"github.com/syumai/workers/cloudflare/cron"
	"github.com/syumai/workers/cloudflare/fetch"
	"github.com/syumai/workers/cloudflare/queues"

	"storecrawl/durable/enrichment"
	"storecrawl/worker/cf"
	"storecrawl/worker/config"
	"storecrawl/worker/enrich"
	"storecrawl/worker/history"
	"storecrawl/worker/logx"
	"storecrawl/worker/ratelimit"
	"storecrawl/worker/upstream"
)

// binding is the object the shim reads Go's entry points from.
var binding = js.Global().Get("context").Get("binding")

// Register installs every entry point on the shim's binding object and
// signals that the instance is ready: HTTP (syumai/workers), cron, queue,
// and the EnrichmentController's decide/run functions.
func Register() {
	loadConfig()
	p := Platform{}
	srv := NewServer(&Server{
		Controller: p,
		Limiter:    p,
		Scheduler:  p,
		Charts:     p,
		Markets:    p,
		Apps:       p,
		Cron:       p,
		Ledger:     historyService,
		Dead:       historyService,
		Events:     p,
		TestRoutes: func() bool { return cloudflare.Getenv("TEST_ROUTES") == "1" },
		AdminToken: func() string { return cloudflare.Getenv("ADMIN_TOKEN") },
	})
	workers.ServeNonBlock(cf.BufferedResponses(srv))
	cron.ScheduleTaskNonBlock(func(ctx context.Context) error {
		ev, err := cron.NewEvent(ctx)
		if err != nil {
			logx.Err("cron.bad_event", err, nil)
			return nil
		}
		run := RunCron(ctx, ev.Cron, ev.ScheduledTime, p, time.Now)
		if err := p.recordCronRun(ctx, run); err != nil {
			logx.Err("cron.record_failed", err, map[string]any{"cron": ev.Cron})
		}
		return nil // an error here would panic the shared Go instance
	})
	queues.ConsumeNonBlock(func(batch *queues.MessageBatch) error {
		if batch.Queue == config.DeadLetterQueue {
			consumeDeadLetters(batch)
			return nil
		}
		for _, m := range batch.Messages {
			body, err := m.StringBody()
			if err == nil && history.IsFactsMessage(body) {
				err = history.HandleFacts(context.Background(), body, factWriter(), &factsConsumer, time.Now())
			} else if err == nil {
				err = HandleEvent(context.Background(), body, p, time.Now())
			}
			if err != nil {
				logx.Err("queue.message_failed", err, map[string]any{"id": m.ID, "attempts": m.Attempts, "queue": batch.Queue})
				m.Retry() // after max_retries the runtime moves it to the dead-letter queue
				continue
			}
			m.Ack()
		}
		return nil
	})
	// Every export answers JSON: {"ok": ...} or {"error": ...} (cf.Export).
	binding.Set("enrichmentDecide", cf.Export(enrichmentDecide))
	binding.Set("enrichmentRun", cf.ExportAsync(enrichmentRun))
	binding.Set("schedulerDecide", cf.Export(schedulerDecide))
	binding.Set("schedulerRunTask", cf.ExportAsync(schedulerRunTask))
	binding.Set("limiterCall", cf.Export(limiterCall))
	binding.Set("limiterRoll", cf.Export(limiterRoll))
	binding.Set("limiterRestore", cf.Export(limiterRestore))
	binding.Set("ledgerPlan", cf.Export(ledgerPlan))
	workers.Ready()
}

// enrichmentDecide(op, state, argJSON, nowMs) → enrichment.Decision.
func enrichmentDecide(args []js.Value) (any, error) {
	if len(args) != 4 {
		return nil, fmt.Errorf("enrichmentDecide: want 4 args, got %d", len(args))
	}
	now := time.UnixMilli(int64(args[3].Float()))
	d := enrichment.Handle(controllerConfig(), args[0].String(), args[1].String(), []byte(args[2].String()), now)
	emit(d.Events)
	d.Events = nil
	return d, nil
}

// emit logs the events a decision carries, one JSON line each.
func emit[E ~map[string]any](events []E) {
	for _, ev := range events {
		name, _ := ev["event"].(string)
		delete(ev, "event")
		logx.Event(name, ev)
	}
}

// upstreamLimit names the global limit every catalogue call goes through
// (ratelimit.Limits), and enrichLimitWait bounds how long an alarm's item
// waits for it: the pacing algorithm, not a long wait, should slow the loop.
const (
	upstreamLimit   = "upstream-catalogue"
	enrichLimitWait = 5 * time.Second
)

// enrichmentRun(planJSON) → Promise of enrichment.RunOutcome.
func enrichmentRun(args []js.Value) (any, error) {
	var plan enrichment.RunPlan
	if err := json.Unmarshal([]byte(args[0].String()), &plan); err != nil {
		return nil, fmt.Errorf("enrichmentRun: bad plan: %w", err)
	}
	p := Platform{}
	country := cloudflare.Getenv("UPSTREAM_COUNTRY")
	if country == "" {
		country = "us"
	}
	r := &enrich.Runner{
		Store: p, HTML: p, Events: p,
		Upstream:  &upstream.Client{HTTP: fetchDoer{fetch.NewClient()}},
		APIBase:   strings.TrimRight(cloudflare.Getenv("UPSTREAM_API_BASE"), "/"),
		StoreBase: strings.TrimRight(cloudflare.Getenv("UPSTREAM_STORE_BASE"), "/"),
		Country:   country,
		Now:       time.Now,
		Sleep:     Sleep,
	}
	limits := &ratelimit.Client{Caller: p, MaxWait: enrichLimitWait, Sleep: Sleep}
	r.Limit = func(ctx context.Context, cost int, fn func(context.Context) error) error {
		err := limits.Schedule(ctx, upstreamLimit, cost, fn)
		if errors.Is(err, ratelimit.ErrRateLimited) {
			return enrich.ErrLimited
		}
		return err
	}
	// The run's D1 cost, from D1's result metadata, goes to the controller's totals.
	ctx, cost := WithD1Cost(context.Background())
	out := r.Run(ctx, plan)
	d1 := cost.View()
	out.D1RowsRead, out.D1RowsWritten = d1.RowsRead, d1.RowsWritten
	return out, nil
}

// fetchDoer adapts the Workers fetch API to upstream.Doer.
type fetchDoer struct{ c *fetch.Client }

func (d fetchDoer) Do(req *http.Request) (*http.Response, error) {
	return d.c.Do(&fetch.Request{Request: req}, nil)
}

// controllerConfig reads the controller's deploy-time settings from vars;
// an invalid value is logged and the default used, so a typo cannot stop the loop.
func controllerConfig() enrichment.Config {
	raw := cloudflare.Getenv("ENRICHMENT_COOLDOWN_S")
	pacingName := cloudflare.Getenv("ENRICHMENT_PACING")
	secs, err := strconv.Atoi(raw)
	if raw == "" {
		secs, err = 0, nil
	}
	cfg, cerr := enrichment.NewConfig(pacingName, secs)
	if err != nil || cerr != nil {
		logx.Event("enrichment.bad_config", map[string]any{"level": logx.Error, "ENRICHMENT_COOLDOWN_S": raw, "ENRICHMENT_PACING": pacingName})
		return enrichment.DefaultConfig()
	}
	return cfg
}
