//go:build js && wasm

package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"time"

	"storecrawl/worker/cf"
	"storecrawl/worker/config"
	"storecrawl/worker/crawl"
	"storecrawl/worker/tasks"
)

// cronTasks is CronTasks on the Worker's clients.
type cronTasks struct{}

// WakeController touches the EnrichmentController (its status call ensures
// the alarm loop is armed) and reports whether it is running.
func (cronTasks) WakeController(ctx context.Context) (bool, error) {
	status, body, err := controllerNS.Fetch(ctx, config.ControllerName, "GET", "/status", nil)
	if err != nil {
		return false, err
	}
	if status != 200 {
		return false, fmt.Errorf("controller status HTTP %d", status)
	}
	var st struct {
		Running bool `json:"running"`
	}
	json.Unmarshal(body, &st)
	return st.Running, nil
}

func (cronTasks) Crawl(ctx context.Context) crawl.Result {
	c := &crawl.Crawler{Store: crawl.D1Store{DB: db}, Fetch: catalogue().Get, Events: eventQueue,
		APIBase: cfg.APIBase, Country: cfg.Country, Sleep: cf.Sleep}
	return c.Run(ctx, rand.Float64(), time.Now())
}

func (cronTasks) Cluster(ctx context.Context) (string, error) {
	return marketsStage.Cluster(ctx, time.Now())
}

func (cronTasks) Daily(ctx context.Context) tasks.DailyResult {
	return tasks.RunDaily(ctx, tasks.D1Store{DB: db}, time.Now)
}
