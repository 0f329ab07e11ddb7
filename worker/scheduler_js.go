//go:build js && wasm

package worker

import (
	"context"
	"math"
	"storecrawl/worker/d1"
	"storecrawl/worker/reviews"
	"storecrawl/worker/subreq"
	"syscall/js"
	"time"

	"storecrawl/durable/scheduler"
	living "storecrawl/worker/catalogue"
	"storecrawl/worker/enrichment"
	"storecrawl/worker/history"
	"storecrawl/worker/tasks"
)

// schedulerDecide(op, state, argJSON, nowMs) → scheduler.Decision.
func schedulerDecide(args []js.Value) (any, error) {
	now := time.UnixMilli(int64(args[3].Float()))
	d := scheduler.Handle(cfg.Scheduler, args[0].String(), args[1].String(), []byte(args[2].String()), now)
	emit(d.Events)
	d.Events = nil
	return d, nil
}

// schedulerRunTask(name) → Promise of scheduler.ResultMsg. Task-level
// failures are in the result; the promise rejects only for a bug, so the
// runtime's alarm retry stays for transport-level failures.
func schedulerRunTask(args []js.Value) (any, error) {
	up, feeds := catalogue(), reviewsFeed()
	deps := tasks.Bindings{D1Store: tasks.D1Store{DB: db}, Get: up.Get, Reserve: up.Reserve, Values: kvCache, Reconciler: historyService, Reparser: pageReparser,
		Failed: enrichment.D1Store{DB: db}, RetryFailedAfter: cfg.RetryFailedAfter, RetryFailedBatch: enrichment.RetryFailedBatch,
		Pruner:    history.Pruner{Store: historyStore, Retention: cfg.FactsRetention, Now: time.Now},
		Catalogue: tasks.Catalogue{Store: living.D1Store{DB: db}, StaleAfter: cfg.StaleAfter, Now: time.Now},
		Reviews:   reviews.D1Store{DB: db}, ReviewsGet: feeds.Get, ReviewsReserve: feeds.Reserve, APIBase: cfg.APIBase, Country: cfg.Country,
		Analyst: analystService()}
	// The run's D1 cost and subrequests (counted, not capped), as a cron run records them.
	ctx, cost := d1.WithCost(context.Background())
	ctx, calls := subreq.With(ctx, math.MaxInt32)
	res := tasks.RunTask(ctx, args[0].String(), deps, cfg.APIBase, time.Now)
	spent := cost.View()
	res.D1RowsRead, res.D1RowsWritten, res.D1Queries, res.Subrequests = spent.RowsRead, spent.RowsWritten, spent.Queries, calls.Used()
	return res, nil
}
