//go:build js && wasm

package worker

import (
	"context"
	"math/rand/v2"
	"time"

	"storecrawl/worker/cf"
	"storecrawl/worker/crawl"
	"storecrawl/worker/tasks"
)

// cronTasks is CronTasks on the Worker's clients.
type cronTasks struct{}

func (cronTasks) WakeController(ctx context.Context) (bool, error) {
	return WakeController(ctx, controllerNS.Fetch)
}

func (cronTasks) WakeScheduler(ctx context.Context) (int, error) {
	return WakeScheduler(ctx, schedulerCaller{}.CallScheduler)
}

func (cronTasks) Crawl(ctx context.Context) crawl.Result {
	up := catalogue()
	c := &crawl.Crawler{Store: crawl.D1Store{DB: db}, Fetch: up.Get, Reserve: up.Reserve, Events: eventQueue,
		APIBase: cfg.APIBase, Country: cfg.Country, Sleep: cf.Sleep}
	return c.Run(ctx, rand.Float64(), time.Now())
}

func (cronTasks) Cluster(ctx context.Context) (string, error) {
	return marketsStage.Cluster(ctx, time.Now())
}

func (cronTasks) Daily(ctx context.Context) tasks.DailyResult {
	return tasks.RunDaily(ctx, tasks.D1Store{DB: db}, kvCache, rand.Float64(), time.Now)
}
