package worker

import (
	"testing"

	"storecrawl/durable/controller"
)

func TestSubrequestBudgetVar(t *testing.T) {
	var cfg controller.Config
	if cfg.SubrequestBudget() != controller.DefaultSubrequests {
		t.Fatalf("unset: %d", cfg.SubrequestBudget())
	}
	if err := setSubrequestBudget(&cfg, " 50 "); err != nil || cfg.SubrequestBudget() != controller.FreeSubrequests {
		t.Fatalf("free plan: %v %d", err, cfg.SubrequestBudget())
	}
	for _, bad := range []string{"49", "10001", "lots"} {
		c := controller.Config{}
		if err := setSubrequestBudget(&c, bad); err == nil || c.SubrequestBudget() != controller.DefaultSubrequests {
			t.Errorf("%q: %v, budget %d", bad, err, c.SubrequestBudget())
		}
	}
}
