package worker

import (
	"fmt"
	"strconv"
	"strings"

	"storecrawl/durable/controller"
)

// subrequestBudgetVar names the Worker var of the invocation's budget of
// subrequests (durable/controller.Config.Subrequests).
const subrequestBudgetVar = "SUBREQUEST_BUDGET"

// setSubrequestBudget sets cfg's budget from the var's text; a bad value
// leaves the default (Workers Paid's 10,000).
func setSubrequestBudget(cfg *controller.Config, raw string) error {
	n, err := strconv.Atoi(strings.TrimSpace(raw))
	if err != nil {
		return fmt.Errorf("not an integer: %w", err)
	}
	return cfg.SetSubrequestBudget(n)
}
