package enrichment

import (
	"time"

	"storecrawl/durable/controller"
	"storecrawl/worker/module"
)

// PacingChoices are ENRICHMENT_PACING's values: the product's pacing
// registry (a test checks they agree with pacing.Names).
var PacingChoices = []string{"probe", "seed"}

// Settings are the EnrichmentController's vars, bounded as its setters
// bound them (ControllerConfig builds its Config from them).
var Settings = []module.Setting{
	{Name: "LOOKUP_BATCH", Module: "enrichment", Kind: module.Int, Default: num(controller.DefaultLookupBatch),
		Bounds: module.In(controller.MinLookupBatch, controller.MaxLookupBatch), Doc: "app ids a lookup asks for"},
	{Name: "LOOKUP_FRESH_H", Module: "enrichment", Kind: module.Int, Default: num(module.Hours(controller.DefaultLookupFresh)),
		Bounds: module.In(0, module.Hours(controller.MaxLookupFresh)), Doc: "hours a stored lookup spares an app its lookup"},
	{Name: "ENRICHMENT_PACING", Module: "enrichment", Kind: module.Choice, Default: controller.DefaultPacing, Choices: PacingChoices,
		Doc: "the pacing algorithm"},
	{Name: "ENRICHMENT_COOLDOWN_S", Module: "enrichment", Kind: module.Int, Default: num(module.Seconds(controller.CooldownDuration)),
		Bounds: module.In(module.Seconds(controller.MinCooldown), module.Seconds(controller.MaxCooldown)),
		Doc:    "`seed` only: its pause after the critical zone (rolling success rate under 20 %)"},
	{Name: "ENRICHMENT_PARSER_PROBE_S", Module: "enrichment", Kind: module.Int, Default: num(module.Seconds(controller.ParserProbeInterval)),
		Bounds: module.In(module.Seconds(controller.MinCooldown), module.Seconds(controller.MaxCooldown)),
		Doc:    "seconds between probe pages while pages are paused for parser drift"},
	{Name: "SUBREQUEST_BUDGET", Module: "enrichment", Kind: module.Int, Default: num(controller.DefaultSubrequests),
		Bounds: module.In(controller.FreeSubrequests, controller.DefaultSubrequests), Doc: "the subrequests one invocation may make"},
	{Name: "ENRICHMENT_IDLE_S", Module: "enrichment", Kind: module.Int, Default: num(module.Seconds(controller.IdleInterval)),
		Bounds: module.In(module.Seconds(controller.MinIdle), module.Seconds(controller.IdleInterval)), Doc: "an idle controller's poll for new work; only tests shorten it"},
}

func num(v float64) string { return module.FormatNumber(v) }

// ControllerConfig is the EnrichmentController's Config from the loaded
// settings, built with its own setters from each setting that was set (an
// unset one keeps the Config's zero value, its default). The settings'
// bounds are the setters', so a setter refusing a value is a declaration
// out of step with its object: reported like a refused value.
func ControllerConfig(v module.Values) (controller.Config, []module.Problem) {
	var probs []module.Problem
	c := controller.DefaultConfig()
	c.Pacing = v.String("ENRICHMENT_PACING")
	c.Cooldown = time.Duration(v.Int("ENRICHMENT_COOLDOWN_S")) * time.Second
	for _, s := range []struct {
		name   string
		setter func(int) error
	}{
		{"ENRICHMENT_PARSER_PROBE_S", c.SetParserProbe},
		{"ENRICHMENT_IDLE_S", c.SetIdleSeconds},
		{"SUBREQUEST_BUDGET", c.SetSubrequestBudget},
		{"LOOKUP_BATCH", c.SetLookupBatch},
		{"LOOKUP_FRESH_H", c.SetLookupFreshHours},
	} {
		if !v.IsSet(s.name) {
			continue
		}
		if err := s.setter(int(v.Int(s.name))); err != nil {
			probs = append(probs, module.Problem{Var: s.name, Value: v.String(s.name), Error: err.Error()})
		}
	}
	return c, probs
}
