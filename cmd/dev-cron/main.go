// Command dev-cron fires the Worker's cron triggers against a local
// `wrangler dev --test-scheduled`, which never fires them by itself: it
// reads triggers.crons from wrangler.jsonc, waits for /health, fires every
// cron once (so a fresh stack shows discovery, clusters, the scheduler's
// tasks and opportunities at once), then each on its schedule, with
// GET http://127.0.0.1:PORT/__scheduled?cron=<expr>. One JSON line per fire.
//
//	dev-cron -port 8787 [-config wrangler.jsonc] [-check]
//
// DEV_CRON_SPEEDUP (default 1, at most 100) divides every cron's period:
// at 10 a */5 cron fires every 30 s. It calls nothing but loopback.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"storecrawl/internal/devcron"
)

func main() {
	port := flag.Int("port", 8787, "wrangler dev's port on 127.0.0.1")
	config := flag.String("config", "wrangler.jsonc", "the wrangler.jsonc whose triggers.crons are fired")
	check := flag.Bool("check", false, "check the config and DEV_CRON_SPEEDUP, print each cron's next fire, and exit")
	flag.Parse()

	d, err := load(*port, *config)
	if err != nil {
		fail(err)
	}
	if *check {
		now := time.Now()
		clock := devcron.Clock{Start: now, Speedup: d.Speedup}
		for _, c := range d.Crons {
			fmt.Printf("dev-cron: %-14q fired once when /health answers, then on its schedule (next slot from now: %s, speed-up %g)\n",
				c.Expr, clock.Next(c, now).UTC().Format(time.RFC3339), d.Speedup)
		}
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := d.Run(ctx); err != nil {
		os.Exit(1) // Run logged it
	}
}

func load(port int, config string) (*devcron.Driver, error) {
	if !devcron.ValidPort(port) {
		return nil, fmt.Errorf("-port %d: want 1-65535", port)
	}
	speedup, err := devcron.ParseSpeedup(os.Getenv(devcron.SpeedupVar))
	if err != nil {
		return nil, err
	}
	raw, err := os.ReadFile(config)
	if err != nil {
		return nil, err
	}
	crons, err := devcron.Crons(raw)
	if err != nil {
		return nil, err
	}
	return &devcron.Driver{Port: port, Crons: crons, Speedup: speedup, Out: os.Stdout}, nil
}

func fail(err error) {
	b, _ := json.Marshal(map[string]any{"event": "dev_cron.bad_config", "level": "error", "error": err.Error(),
		"ts": time.Now().UTC().Format(time.RFC3339Nano)})
	fmt.Fprintln(os.Stderr, string(b))
	os.Exit(2)
}
