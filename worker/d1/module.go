package d1

import "storecrawl/worker/module"

// Module declares the table the platform owns: the cursors every bounded
// sweep keeps (Cursor).
var Module = module.Module{
	Name: "d1",
	Doc:  "bounded sweeps' cursors",
	Tables: []module.Table{
		{Name: "sweep_cursors", Writer: "worker/d1", Doc: "one sweep's position, so each run reads a bounded range"},
	},
}
