//go:build js && wasm

package worker

import (
	"context"
	"sync"
	"syscall/js"
	"time"

	"storecrawl/durable/scheduler"
	living "storecrawl/worker/catalogue"
	"storecrawl/worker/crawl"
	"storecrawl/worker/datasets"
	"storecrawl/worker/enrichment"
	"storecrawl/worker/guard"
	"storecrawl/worker/keywords"
	"storecrawl/worker/ledgerdb"
	"storecrawl/worker/module"
	"storecrawl/worker/reviews"
	"storecrawl/worker/segments"
	"storecrawl/worker/tasks"
)

// periodic is every feature's periodic work over this instance's clients,
// made on first use (after loadConfig).
var periodic = sync.OnceValue(func() []module.Task {
	up, feeds, hints, pages := catalogue(), reviewsFeed(), hintsHost(), storePages()
	return PeriodicTasks(TaskDeps{
		Catalogue:  tasks.Platform{D1Store: tasks.D1Store{DB: db}, Get: up.Get, Reserve: up.Reserve, Values: kvCache},
		APIBase:    cfg.APIBase,
		Maintainer: tasks.Catalogue{Store: living.D1Store{DB: db}, StaleAfter: cfg.StaleAfter, Now: time.Now},
		Reconciler: historyService, FactsPruner: ledgerdb.Pruner{Store: historyStore, Retention: cfg.FactsRetention, Now: time.Now},
		Reparser: pageReparser, Failed: enrichment.D1Store{DB: db}, RetryFailedAfter: cfg.RetryFailedAfter,
		Reviews: reviews.D1Store{DB: db}, ReviewsGet: feeds.Get, ReviewsReserve: feeds.Reserve, Country: cfg.Country,
		Analyst: analystService(),
		Crawl:   crawl.D1Store{DB: db}, HintsGet: hints.Get, HintsReserve: hints.Reserve, HintsBase: cfg.HintsBase,
		PagesGet: pages.Get, PagesReserve: pages.Reserve, StoreBase: cfg.StoreBase,
		Popularity: keywords.D1Store{DB: db}, Hints: keywords.HTTPHints{Get: hints.Get, Base: cfg.HintsBase},
		Alerts:   alertsService(),
		Segments: &segments.Store{DB: db},
		Datasets: &datasets.Snapshotter{DB: db, Bucket: datasetBucket},
	})
})

// schedulerConfig is the SchedulerDO's settings with its registry.
var schedulerConfig = sync.OnceValue(func() scheduler.Config {
	c := cfg.Scheduler
	c.Tasks = SchedulerRegistry(periodic())
	return c
})

// schedulerDecide(op, state, argJSON, nowMs) → scheduler.Decision.
func schedulerDecide(args []js.Value) (any, error) {
	now := time.UnixMilli(int64(args[3].Float()))
	d := scheduler.Handle(schedulerConfig(), args[0].String(), args[1].String(), []byte(args[2].String()), now)
	emit(d.Events)
	d.Events = nil
	return d, nil
}

// schedulerRunTask(name) → Promise of scheduler.ResultMsg. Task-level
// failures are in the result; the promise rejects only for a bug, so the
// runtime's alarm retry stays for transport-level failures.
func schedulerRunTask(args []js.Value) (any, error) {
	ctx := context.Background()
	th := costGuard().Status(ctx, time.Now()).Throttle
	res := RunPeriodicGuarded(ctx, periodic(), args[0].String(), th, time.Now)
	recordUsage(ctx, guard.SourceScheduler, SchedulerRunUsage(res))
	return res, nil
}
