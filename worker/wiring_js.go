//go:build js && wasm

package worker

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/syumai/workers/cloudflare"

	"storecrawl/worker/alerts"
	"storecrawl/worker/appstore"
	"storecrawl/worker/cf"
	"storecrawl/worker/config"
	"storecrawl/worker/d1"
	"storecrawl/worker/enrichment"
	"storecrawl/worker/logx"
	"storecrawl/worker/markets"
	"storecrawl/worker/module"
	"storecrawl/worker/ratelimit"
	"storecrawl/worker/upstream"
)

// The Worker's clients over its bindings, made once per Go instance
// (bindings are looked up per call, so they serve every isolate's call).
var (
	db            = &d1.DB{Driver: cf.D1(config.BindingDB)}
	kvCache       = cf.KV(config.BindingKV)
	htmlBucket    = cf.R2(config.BindingHTML)
	datasetBucket = cf.R2(config.BindingDatasets)
	eventQueue    = cf.Queue(config.BindingEvents)
	schedulerDO   = cf.Namespace{Binding: config.BindingScheduler}
	limiterDO     = cf.Namespace{Binding: config.BindingLimiter}
	controllerNS  cf.Namespace // needs cfg.LocationHint: set by loadConfig
	cfg           settings
)

// loadConfig reads the env once; a bad var is logged and its default used.
func loadConfig() {
	var probs []module.Problem
	cfg, probs = loadSettings(cloudflare.Getenv)
	for _, p := range probs {
		logx.Event("config.bad_config", map[string]any{"level": logx.Error, "var": p.Var, "value": p.Value, "error": p.Error})
	}
	controllerNS = cf.Namespace{Binding: config.BindingController, LocationHint: cfg.LocationHint}
}

// marketsStage runs the markets stage (queue events, the 6-hourly
// clustering, the market listings).
var marketsStage = &markets.Markets{DB: db, Events: eventQueue}

// alertsService keeps watches and rules, evaluates them (alerts-evaluate)
// and delivers alerts (the EVENTS consumer); made after loadConfig.
var alertsService = sync.OnceValue(func() *alerts.Service {
	return &alerts.Service{DB: db, Events: eventQueue, HTTP: cf.Fetcher{}, AllowLoopback: cfg.AllowLoopbackWebhooks}
})

// pageReparser re-reads stored pages (POST /v1/enrichment/reparse, the
// page-reparse task).
var pageReparser = enrichment.Reparser{DB: db, Pages: enrichment.R2HTML{Bucket: htmlBucket},
	Events: enrichment.QueueEvents{Queue: eventQueue, Now: time.Now}, Now: time.Now}

// controllerCaller reaches the EnrichmentController of the default crawl
// target, created near the upstream (location hint) on first use.
type controllerCaller struct{}

func (controllerCaller) CallController(ctx context.Context, method, path string, body []byte) (int, []byte, error) {
	return controllerNS.Fetch(ctx, config.ControllerName, method, path, body)
}

// schedulerCaller reaches the versioned scheduler singleton.
type schedulerCaller struct{}

func (schedulerCaller) CallScheduler(ctx context.Context, method, path string, body []byte) (int, []byte, error) {
	return schedulerDO.Fetch(ctx, config.SchedulerName, method, path, body)
}

// limiterCaller reaches the key's own OmniLimiter object (ratelimit.Caller),
// so keys scale with objects and one hot key cannot slow another.
type limiterCaller struct{}

func (limiterCaller) CallLimiter(ctx context.Context, key, method, path string, body []byte) (int, []byte, error) {
	return limiterDO.Call(ctx, config.LimiterPrefix+key, method, path, body)
}

// reviewsFeed fetches the customer-reviews feed through its own global limit.
func reviewsFeed() upstream.Limited {
	l := catalogue()
	l.Key = ratelimit.Reviews
	return l
}

// hintsHost fetches the search hints through their own global limit, with
// the storefront of cfg.Country in X-Apple-Store-Front (without it the
// hints answer nothing; a country with no known storefront sends none,
// and its answers are empty).
func hintsHost() upstream.Limited {
	l := catalogue()
	l.Key = ratelimit.Hints
	if sf, ok := appstore.StoreFront(cfg.Country); ok {
		c := *l.Client
		c.Header = http.Header{appstore.StoreFrontHeader: {sf}}
		l.Client = &c
	} else {
		logx.Event("config.no_storefront", map[string]any{"level": logx.Error, "country": cfg.Country,
			"action": "the search hints answer nothing without a storefront: add the country to appstore's storefront table"})
	}
	return l
}

// storePages fetches from the store host (pages, sitemaps) through the
// store pages' global limit.
func storePages() upstream.Limited {
	l := catalogue()
	l.Key = upstream.StorePagesLimit
	return l
}

// catalogue fetches from the upstream through the global catalogue limit.
func catalogue() upstream.Limited {
	return upstream.Limited{
		Client: &upstream.Client{HTTP: cf.Fetcher{}, MaxHold: cfg.MaxHold, After: cf.After},
		Limits: &ratelimit.Client{Caller: limiterCaller{}, MaxWait: upstream.LimitWait, Sleep: cf.Sleep},
		Key:    upstream.CatalogueLimit,
	}
}
