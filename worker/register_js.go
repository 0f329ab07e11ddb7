//go:build js && wasm

package worker

import (
	"context"
	"encoding/json"
	"fmt"
	living "storecrawl/worker/catalogue"
	"storecrawl/worker/reviews"
	"syscall/js"
	"time"

	"github.com/syumai/workers"
	"github.com/syumai/workers/cloudflare/cron"
	"github.com/syumai/workers/cloudflare/queues"

	"storecrawl/durable/controller"
	"storecrawl/worker/alerts"
	"storecrawl/worker/api"
	"storecrawl/worker/cf"
	"storecrawl/worker/config"
	"storecrawl/worker/crawl"
	"storecrawl/worker/d1"
	"storecrawl/worker/datasets"
	"storecrawl/worker/enrichment"
	"storecrawl/worker/guard"
	"storecrawl/worker/keywords"
	"storecrawl/worker/ledgerdb"
	"storecrawl/worker/logx"
	"storecrawl/worker/markets"
	"storecrawl/worker/mcp"
	"storecrawl/worker/ratelimit"
	"storecrawl/worker/search"
	"storecrawl/worker/segments"
	"storecrawl/worker/tasks"
	"storecrawl/worker/upstream"
)

// binding is the object the shim reads Go's entry points from.
var binding = js.Global().Get("context").Get("binding")

// Register installs every entry point on the shim's binding object and
// signals that the instance is ready: HTTP (syumai/workers), cron, queue,
// and the Durable Objects' decide/run functions. Wiring only: every route,
// task and decision lives in a feature package or in durable/.
func Register() {
	loadConfig()
	limiterObjects.TallyPeriod = cfg.LimiterTally
	srv := api.NewServer(apiServer())
	workers.ServeNonBlock(cf.BufferedResponses(metered(srv)))
	cron.ScheduleTaskNonBlock(handleCron)
	queues.ConsumeNonBlock(consumeBatch)
	exportEntryPoints()
	workers.Ready()
}

// apiServer is the HTTP API over the bindings: every feature's store and
// service, the MCP for agents over the same, and the test-only routes when
// TEST_ROUTES is set.
func apiServer() *api.Server {
	s := &api.Server{
		Controller:       controllerCaller{},
		CostGuard:        costGuard(),
		Limiter:          limiterCaller{},
		Scheduler:        schedulerCaller{},
		SchedulerTasks:   schedulerConfig().Tasks,
		Charts:           kvCache,
		Markets:          marketsStage,
		Segments:         segments.Store{DB: db},
		Datasets:         datasets.Snapshotter{DB: db, Bucket: datasetBucket},
		Apps:             enrichment.D1Store{DB: db},
		Reviews:          reviews.D1Store{DB: db},
		AppHistory:       living.D1Store{DB: db},
		Cron:             CronLog{KV: kvCache},
		Ledger:           historyService,
		Quality:          tasks.QualityLog{KV: kvCache},
		Dead:             historyService,
		Reparse:          pageReparser,
		Failed:           enrichment.D1Store{DB: db},
		RetryFailedBatch: enrichment.RetryFailedBatch,
		Seeds:            crawl.D1Store{DB: db},
		Replay:           historyService,
		Requeue:          eventQueue,
		Analyst:          analystService(),
		Keywords:         keywords.D1Store{DB: db},
		Country:          cfg.Country,
		Alerts:           alertsService(),
		AdminToken:       func() string { return cfg.AdminToken },
		ClientToken:      func() string { return cfg.ClientToken },
		ReadToken:        func() string { return cfg.ReadToken },
		Settings:         cfg.Values.Shown,
		MarketDetail:     marketsStage,
		Search:           search.Store{DB: db},
	}
	agents := mcp.FromAPI(s)
	agents.Search = mcp.D1Search{DB: db}
	s.MCP = mcp.New(agents)
	if cfg.TestRoutes {
		s.TestEvents = eventQueue
		s.TestFaults = factFaults
	}
	return s
}

// handleCron runs a cron trigger's tasks and records the run and its
// usage; it always returns nil.
func handleCron(ctx context.Context) error {
	// A panic here would kill the shared Go instance: it is logged instead.
	defer func() { _ = logx.Recovered(recover(), "cron handler") }()
	ev, err := cron.NewEvent(ctx)
	if err != nil {
		logx.Err("cron.bad_event", err, nil)
		return nil
	}
	run := RunCron(ctx, ev.Cron, ev.ScheduledTime, cronTasks{}, time.Now)
	if err := (CronLog{KV: kvCache}).Record(ctx, run); err != nil {
		logx.Err("cron.record_failed", err, map[string]any{"cron": ev.Cron})
	}
	recordUsage(ctx, guard.SourceCron, CronUsage(run))
	return nil // an error here would panic the shared Go instance
}

// consumeBatch handles a queue batch: the dead-letter queue's messages,
// else each message by its kind (routeMessage: a ledger's facts, an
// alert's delivery, a pipeline event; a kind no module consumes is a
// failure, so it is dead-lettered past its retries). A failed message is retried; past max_retries the
// runtime moves it to the dead-letter queue.
func consumeBatch(batch *queues.MessageBatch) (err error) {
	// A panic would kill the shared Go instance; the batch is retried
	// instead (unacked messages are redelivered).
	defer func() {
		if p := logx.Recovered(recover(), "queue consumer"); p != nil {
			batch.RetryAll()
			err = nil
		}
	}()
	// The batch's D1 cost, from D1's result metadata: one line a batch
	// (cmd/bench -only-scale reads it to bill the consumer's day), and
	// the cost guard's record of the batch.
	ctx, cost := d1.WithCost(context.Background())
	defer func() {
		v := cost.View()
		recordUsage(context.Background(), guard.SourceQueue, QueueBatchUsage(len(batch.Messages), v.RowsRead, v.RowsWritten))
	}()
	if batch.Queue == config.DeadLetterQueue {
		consumeDeadLetters(batch)
		return nil
	}
	facts := 0
	defer func() {
		logx.Event("queue.batch", map[string]any{"queue": batch.Queue, "messages": len(batch.Messages), "facts_messages": facts, "d1": cost.View()})
	}()
	for _, m := range batch.Messages {
		body, err := m.StringBody()
		var r route
		var kind string
		if err == nil {
			r, kind, _ = routeMessage(body)
		}
		switch {
		case err != nil:
		case r == routeFacts:
			facts++
			err = ledgerdb.HandleFacts(ctx, body, factWriter(), &factsConsumer, time.Now())
		case r == routeDelivery:
			// An alert's delivery: retried after a growing delay; past
			// max_retries the runtime moves it to the dead-letter queue.
			if err = alertsService().Deliver(ctx, body, m.Attempts, time.Now()); err != nil {
				logx.Event("alerts.delivery_failed", map[string]any{"level": logx.Warn, "id": m.ID, "attempts": m.Attempts, "error": err.Error()})
				m.Retry(queues.WithRetryDelay(alerts.RetryDelay(m.Attempts)))
				continue
			}
		case r == routeEvent:
			err = markets.HandleEvent(ctx, body, marketsStage, time.Now())
			if err == nil {
				// A search's keywords whose top apps changed: the
				// segments' next incremental run re-partitions around them.
				err = segments.Store{DB: db}.MarkEvent(ctx, body, time.Now())
			}
		default:
			// A kind no module consumes: an error, retried like a failure
			// so it reaches the dead-letter queue, never dropped.
			err = fmt.Errorf("queue.unknown_kind: no consumer for kind %q", kind)
		}
		if err != nil {
			logx.Err("queue.message_failed", err, map[string]any{"id": m.ID, "attempts": m.Attempts, "queue": batch.Queue})
			m.Retry() // after max_retries the runtime moves it to the dead-letter queue
			continue
		}
		m.Ack()
	}
	return nil
}

// exportEntryPoints sets the Durable Objects' decide/run functions and the
// limiter's fast path on the shim's binding object.
func exportEntryPoints() {
	// Every export answers JSON: {"ok": ...} or {"error": ...} (cf.Export).
	binding.Set("enrichmentDecide", cf.Export(enrichmentDecide))
	binding.Set("enrichmentRun", cf.ExportAsync(enrichmentRun))
	binding.Set("schedulerDecide", cf.Export(schedulerDecide))
	binding.Set("schedulerRunTask", cf.ExportAsync(schedulerRunTask))
	binding.Set("limiterCall", cf.Export(limiterCall))
	binding.Set("limiterRoll", cf.Export(limiterRoll))
	binding.Set("limiterRestore", cf.Export(limiterRestore))
	binding.Set("limiterRetire", cf.Export(limiterRetire))
	binding.Set("ledgerPlan", cf.Export(ledgerPlan))
	binding.Set("ledgerWakeAt", cf.Export(ledgerWakeAt))
	binding.Set("ledgerConfirm", cf.ExportAsync(ledgerConfirm))
	binding.Set("acquireFront", cf.Export(acquireFront))
	binding.Set("acquireHeaders", cf.Export(acquireHeaders))
	// Body bounds for the shim: past max (the largest body any route
	// takes) Go judges a request by its Content-Length alone while the
	// shim drains the body, up to drain, and cancels the rest.
	binding.Set("bodyBounds", map[string]any{"max": api.MaxBody, "drain": api.MaxDrainBody})
}

// enrichmentDecide(op, state, argJSON, nowMs) → durable/controller.Decision.
func enrichmentDecide(args []js.Value) (any, error) {
	if len(args) != 4 {
		return nil, fmt.Errorf("enrichmentDecide: want 4 args, got %d", len(args))
	}
	now := time.UnixMilli(int64(args[3].Float()))
	d := controller.Handle(cfg.Enrichment, args[0].String(), args[1].String(), []byte(args[2].String()), now)
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

// The controller's leases of its two limits: its runs follow each other in
// this instance, and take their slots from these (ratelimit.Lease).
var (
	pageLease   = &ratelimit.Lease{Key: upstream.StorePagesLimit}
	lookupLease = &ratelimit.Lease{Key: upstream.CatalogueLimit}
)

// leaseOf is l acquiring through c (the run's client).
func leaseOf(l *ratelimit.Lease, c *ratelimit.Client) *ratelimit.Lease {
	l.Client = c
	return l
}

// enrichmentRun(planJSON) → Promise of the run's outcome: the I/O of one
// EnrichmentController tick (worker/enrichment performs what
// durable/controller decided).
func enrichmentRun(args []js.Value) (any, error) {
	var plan controller.RunPlan
	if err := json.Unmarshal([]byte(args[0].String()), &plan); err != nil {
		return nil, fmt.Errorf("enrichmentRun: bad plan: %w", err)
	}
	up := catalogue()
	r := &enrichment.Runner{
		Store:     enrichment.D1Store{DB: db},
		HTML:      enrichment.R2HTML{Bucket: htmlBucket},
		Events:    enrichment.QueueEvents{Queue: eventQueue, Now: time.Now},
		Upstream:  up.Client,
		APIBase:   cfg.APIBase,
		StoreBase: cfg.StoreBase,
		Country:   cfg.Country,
		Now:       time.Now,
		Sleep:     cf.Sleep,
		Limit:     enrichment.GlobalLimit(up.Limits, upstream.CatalogueLimit),
		PageLimit: enrichment.GlobalLimit(up.Limits, upstream.StorePagesLimit),
		// Pages and lookups from leases: one acquire (a Durable Object
		// request) for several ticks' worth.
		ReservePages:   enrichment.GlobalLease(leaseOf(pageLease, up.Limits), time.Now),
		ReserveLookups: enrichment.GlobalLease(leaseOf(lookupLease, up.Limits), time.Now),
		LimiterCalls:   func() int64 { return pageLease.Calls() + lookupLease.Calls() },
		// Due refreshes share the tick with the queue.
		Refreshes: enrichment.D1Store{DB: db},
		// The cost guard halves it once everything before it is slowed.
		RefreshShare: cfg.RefreshShare * costGuard().Status(context.Background(), time.Now()).RefreshFactor(),
		// A retry whose page is in R2 and young enough reads it back.
		Stored:    enrichment.R2HTML{Bucket: htmlBucket},
		PageReuse: cfg.PageReuse,
	}
	// The run's D1 cost, from D1's result metadata, goes to the controller's totals.
	ctx, cost := d1.WithCost(context.Background())
	out := r.Run(ctx, plan)
	spent := cost.View()
	out.D1RowsRead, out.D1RowsWritten = spent.RowsRead, spent.RowsWritten
	return out, nil
}

// acquireFront(authorization, body, size) → api.Front: the shim's fast
// path of POST /v1/limiter/acquire asks Go to check the client token,
// validate the body (what the shim read of it, at most
// bodyBounds.max+1 bytes, and its size as declared or read) and
// name the object and the body to send it.
func acquireFront(args []js.Value) (any, error) {
	if len(args) != 3 {
		return nil, fmt.Errorf("acquireFront: want 3 args, got %d", len(args))
	}
	return api.AcquireFront(args[0].String(), []byte(args[1].String()), int64(args[2].Float()), cfg.ClientToken), nil
}

// acquireHeaders(key, limit, window, answerJSON) → the answer's headers.
func acquireHeaders(args []js.Value) (any, error) {
	f := api.Front{Key: args[0].String(), Limit: args[1].Int(), Window: args[2].Float()}
	return api.AcquireHeaders(f, []byte(args[3].String())), nil
}
