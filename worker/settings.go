package worker

import (
	"slices"

	"storecrawl/durable/controller"
	"storecrawl/durable/scheduler"
	"storecrawl/worker/analyst"
	"storecrawl/worker/config"
	"storecrawl/worker/enrichment"
	"storecrawl/worker/module"
)

// schedulerSettings are the SchedulerDO's vars, bounded as its NewConfig
// bounds them.
var schedulerSettings = []module.Setting{
	{Name: "SCHEDULER_BREAKER_THRESHOLD", Module: "scheduler", Kind: module.Int, Default: module.FormatNumber(scheduler.DefaultBreakerThreshold),
		Bounds: module.In(1, scheduler.MaxBreakerThreshold), Doc: "consecutive real failures (rate-limit refusals not counted) that open a task's breaker"},
}

// Settings is every setting of the Worker, each declared once: the
// platform's (worker/config), the scheduler's, and each module's.
// docs/operations.md's settings table lists the same names, modules,
// defaults and bounds (TestDocsListEverySetting).
var Settings = func() []module.Setting {
	all := slices.Concat(config.Settings, schedulerSettings)
	for _, m := range Modules {
		all = append(all, m.Settings...)
	}
	return all
}()

// settings is the Worker's configuration: config's, and the Durable
// Objects' and features' configs built from the same loaded values.
type settings struct {
	config.Config
	Enrichment controller.Config
	Scheduler  scheduler.Config
	Analyst    analyst.Config
}

// loadSettings reads every setting once with getenv (config.LoadWith, the
// one loader) and builds the objects' and features' configs from its
// values. A var a setting refuses is a Problem and its default is used.
func loadSettings(getenv func(string) string) (settings, []module.Problem) {
	cc, probs := config.LoadWith(Settings, getenv)
	c := settings{Config: cc, Analyst: analyst.ConfigFrom(cc.Values)}
	var p []module.Problem
	c.Enrichment, p = enrichment.ControllerConfig(cc.Values)
	probs = append(probs, p...)
	if v := cc.Values; v.IsSet("SCHEDULER_BREAKER_THRESHOLD") {
		var err error
		if c.Scheduler, err = scheduler.NewConfig(int(v.Int("SCHEDULER_BREAKER_THRESHOLD"))); err != nil {
			probs = append(probs, module.Problem{Var: "SCHEDULER_BREAKER_THRESHOLD", Value: v.String("SCHEDULER_BREAKER_THRESHOLD"), Error: err.Error()})
		}
	}
	return c, probs
}
