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
	// The wake's status carries the controller's lifetime totals: the cost
	// guard samples them, with no call of its own.
	var body []byte
	fetch := func(ctx context.Context, name, method, path string, b []byte) (int, []byte, error) {
		status, out, err := controllerNS.Fetch(ctx, name, method, path, b)
		if err == nil && status == 200 {
			body = out
		}
		return status, out, err
	}
	running, err := WakeController(ctx, fetch)
	if body != nil {
		sampleController(ctx, body)
	}
	return running, err
}

func (cronTasks) WakeScheduler(ctx context.Context) (int, error) {
	return WakeScheduler(ctx, schedulerCaller{}.CallScheduler)
}

func (cronTasks) Crawl(ctx context.Context) crawl.Result {
	up := catalogue()
	c := &crawl.Crawler{Store: crawl.D1Store{DB: db}, Fetch: up.Get, Reserve: up.Reserve, Events: eventQueue,
		APIBase: cfg.APIBase, Country: cfg.Country, Sleep: cf.Sleep,
		Slow: CrawlSlow(costGuard().Status(ctx, time.Now()).Throttle)}
	return c.Run(ctx, rand.Float64(), time.Now())
}

func (cronTasks) Cluster(ctx context.Context) (string, error) {
	return marketsStage.Cluster(ctx, time.Now())
}

func (cronTasks) Daily(ctx context.Context) tasks.DailyResult {
	return tasks.RunDaily(ctx, tasks.D1Store{DB: db}, kvCache, rand.Float64(), time.Now)
}
