package guard

import "storecrawl/worker/module"

// Module is the cost guard's declaration: the month-to-date usage it
// projects the month's bill from.
var Module = module.Module{
	Name: "guard",
	Doc:  "the cost guard: month-to-date usage of the plan's metered products, its projection and what it slows",
	Tables: []module.Table{
		{Name: "usage_months", Writer: "worker/guard", Doc: "a month's usage of the metered products by one invocation kind, or the controller's last sample"},
	},
}
