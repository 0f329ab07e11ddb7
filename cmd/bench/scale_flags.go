//go:build unix

package main

import (
	"flag"
	"strconv"
)

// The scale bench's flags (docs/scale.md). -apps is shared with the
// freshness bench: when given it sizes the scale catalogue too, else the
// design's 1.1M apps.
var (
	onlyScale   = flag.Bool("only-scale", false, "run only the scale bench: a month's Cloudflare usage and bill at -apps apps (default 1,100,000; ~30 min)")
	scaleRun    = flag.Bool("scale", false, "also run the scale bench in the default run (off: it takes ~30 minutes at 1.1M apps)")
	scaleWindow = flag.Int("scale-window", 3, "scale: minutes the EnrichmentController runs at the design's pace")
	scaleJSON   = flag.Bool("json", false, "scale: print the report as JSON on stdout (tables on stderr)")
)

// runScale runs the scale bench with the flags.
func runScale(root string) {
	n := scaleDefaultApps
	flag.Visit(func(f *flag.Flag) {
		if f.Name == "apps" {
			n, _ = strconv.Atoi(f.Value.String())
		}
	})
	benchScale(root, n, *scaleWindow, *scaleJSON)
}
