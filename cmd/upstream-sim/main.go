// Command upstream-sim is a local, App Store-shaped upstream with a hidden
// rate limit. The Worker (under wrangler dev) and the test harness point at
// it instead of Apple; it never talks to the network beyond its listener.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"storecrawl/internal/simserve"
	"storecrawl/internal/upstreammodel"
)

const (
	defaultAddr = "127.0.0.1:8790"
	defaultApps = 5000
	// maxApps bounds the lazy catalogue's index (lazy.go).
	maxApps = maxLazyApps
	// Server timeouts: generous for latency simulation, but bounded so a
	// stuck client cannot hold a connection forever.
	readHeaderTimeout = 10 * time.Second
	shutdownTimeout   = 5 * time.Second
	// maxRatesScale bounds -rates-scale.
	maxRatesScale = 100
)

const usageText = `Usage: upstream-sim [flags]

A local App Store-shaped upstream with a hidden token-bucket rate limit.
On start it prints {"event":"listening","addr":"HOST:PORT"} on stdout, then
logs JSON events on stderr.

Routes (limited ones cost one token each):
  GET  /lookup?id=<id>[,<id>...][&country=us]       iTunes lookup JSON, up to 200 ids (limited: one token a call)
  GET  /lookup?id=<developer id>&entity=software[&limit=50]  the developer's wrapper, then its apps (limit<=200)
  GET  /search?term=<t>[&limit=50][&country=us]     name substring search (-living: relevance over title,
                                                    subtitle and description), limit<=200 (limited)
  GET  /{country}/rss/<c>/limit=<n>[/genre=<id>]/json  iTunes RSS top chart, n<=200 (limited)
       c = topfreeapplications | toppaidapplications | topgrossingapplications
  GET  /{country}/app/{slug}/id{id}                 store page HTML, legacy or current markup by -current-markup-pct (limited)
  GET  /sitemaps_apps_index_app_1.xml, /sitemaps_apps_index_new-app_1.xml   the store's sitemap indexes, and their
       gzip files /sitemaps_apps_app_1_<n>.xml.gz, /sitemaps_apps_new-app_1_<n>.xml.gz (limited as store pages;
       -living: the full index made again each virtual day, the new-app one the last 7 days' apps)
  GET  /__stats   POST /__stats/reset   POST /__config   GET /health   (never limited)
  GET  /__sim/clock   POST /__sim/clock {"advance_s":N} | {"now":"RFC3339"}   the virtual clock (never limited)
  GET  /__catalogue[?id=<id>,...]   the catalogue's drift and apps' current values (never limited);
       POST /__config {"catalogue_changes_per_hour":N,"catalogue_hour_s":S,"catalogue_seed":K}
       changes N apps' ratings (and a third of the time their version) every S seconds

Catalogue and special ids (-living: see docs/scale.md, "The living simulator"):
  track ids are 100000001 .. 100000000+apps (deterministic from -seed).
  ids outside that range: left out of the lookup's results (alone:
  200 {"resultCount":0,"results":[]}), page 404. A lookup answers the ids it
  knows in the order asked; more than 200 ids is a 400.
  ids whose offset (id-100000000) is divisible by 97 (100000097, 100000194, ...):
  lookup is fine but the page is truncated before header.product-header
  (a permanent parse error).

Flags:
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		os.Exit(0)
	case err != nil:
		fmt.Fprintln(os.Stderr, "upstream-sim:", err)
		os.Exit(2)
	}
}

// run parses args, listens, announces the address on stdout and serves
// until ctx is done.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("upstream-sim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usageText)
		fs.PrintDefaults()
	}
	def := DefaultConfig()
	var (
		addr = fs.String("addr", defaultAddr, "listen address (127.0.0.1:0 picks a free port)")
		apps = fs.Int("apps", defaultApps, "catalogue size")
		seed = fs.Uint64("seed", 1, "catalogue and latency seed")
		cfg  Config
	)
	fs.IntVar(&cfg.RatePerMin, "rate-per-min", def.RatePerMin, "hidden limit: token refill per minute")
	fs.IntVar(&cfg.Burst, "burst", def.Burst, "hidden limit: bucket size")
	fs.IntVar(&cfg.StoreRatePerMin, "store-rate-per-min", def.StoreRatePerMin, "the store host's (pages) own hidden limit per minute; 0 = pages share -rate-per-min")
	fs.IntVar(&cfg.StoreBurst, "store-burst", def.StoreBurst, "the store host's own bucket size; 0 = -burst")
	fs.IntVar(&cfg.ChartRatePerMin, "chart-rate-per-min", def.ChartRatePerMin, "the chart feeds' own hidden limit per minute; 0 = charts share -rate-per-min")
	fs.IntVar(&cfg.ChartBurst, "chart-burst", def.ChartBurst, "the chart feeds' own bucket size; 0 = -burst")
	realLimits := fs.Bool("real-limits", false, "the real store's limits: search+lookup 20/min, pages 127/min (7,600 an hour), charts 20/min apart, bursts of 20; explicit limit flags still win")
	liv := fs.Bool("living", false, "a living catalogue: apps gain ratings, ship versions, change price, appear and disappear over virtual time; search by relevance (docs/scale.md)")
	epochS := fs.String("epoch", defaultEpoch.Format(time.RFC3339), "-living: the world's time zero (RFC 3339)")
	clockS := fs.String("clock", "", "the virtual time at start (RFC 3339); default the -epoch with -living, else the wall clock. POST /__sim/clock moves it")
	rates := upstreammodel.DefaultRates()
	ratesScale := fs.Float64("rates-scale", 1, "-living: multiply every rate of change (0.5, 2: the bench's ½× and 2×)")
	fs.Float64Var(&rates.NewPerDayPerMillion, "new-apps-per-day-per-million", rates.NewPerDayPerMillion, "-living: new apps a day per million apps")
	fs.Float64Var(&rates.RemovalsPerDayPerMillion, "removals-per-day-per-million", rates.RemovalsPerDayPerMillion, "-living: removals a day per million live apps (assumed: no real data)")
	fs.Float64Var(&rates.PriceChangesPerYear, "price-changes-per-year", rates.PriceChangesPerYear, "-living: a paid app's price changes a year (assumed: no real data)")
	fs.IntVar(&cfg.OnExceed, "on-exceed", def.OnExceed, "status when refused: 429 or 403")
	fs.IntVar(&cfg.RetryAfterS, "retry-after-s", def.RetryAfterS, "Retry-After seconds on refusals (0 = no header)")
	fs.IntVar(&cfg.BlockS, "block-s", def.BlockS, "if > 0, a refusal blocks ALL limited routes for this many seconds")
	fs.IntVar(&cfg.LockoutAfterRefusalsPerMin, "lockout-after-refusals-per-min", def.LockoutAfterRefusalsPerMin, "if > 0 (with -block-s), only more than this many refusals within a minute start a block")
	fs.IntVar(&cfg.RefusalsConsume, "refusals-consume", def.RefusalsConsume, "1: a refusal takes a token too (down to -burst)")
	fs.IntVar(&cfg.RatelimitHeaders, "ratelimit-headers", def.RatelimitHeaders, "1: limited answers carry RateLimit-Remaining and RateLimit-Reset")
	fs.IntVar(&cfg.LatencyMS, "latency-ms", def.LatencyMS, "simulated latency per limited request")
	fs.IntVar(&cfg.LatencyJitterMS, "latency-jitter-ms", def.LatencyJitterMS, "uniform ± jitter on the latency")
	fs.IntVar(&cfg.TimeoutPct, "timeout-pct", def.TimeoutPct, "share (%) of admitted requests held for the client's timeout, then dropped")
	fs.IntVar(&cfg.ErrorPct, "error-pct", def.ErrorPct, "share (%) of admitted requests answered 503")
	fs.IntVar(&cfg.CurrentMarkupPct, "current-markup-pct", def.CurrentMarkupPct, "share of apps (%) whose store page is in the current (2025) markup; the rest legacy")
	fs.IntVar(&cfg.UnknownMarkupPct, "unknown-markup-pct", def.UnknownMarkupPct, "share of apps (%) whose store page is in a markup no parser knows (parser drift)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if *realLimits {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		explicit := cfg
		cfg = RealLimits(cfg)
		for name, field := range map[string]func(*Config) *int{
			"rate-per-min": func(c *Config) *int { return &c.RatePerMin }, "burst": func(c *Config) *int { return &c.Burst },
			"store-rate-per-min": func(c *Config) *int { return &c.StoreRatePerMin }, "store-burst": func(c *Config) *int { return &c.StoreBurst },
			"chart-rate-per-min": func(c *Config) *int { return &c.ChartRatePerMin }, "chart-burst": func(c *Config) *int { return &c.ChartBurst },
		} {
			if set[name] {
				*field(&cfg) = *field(&explicit)
			}
		}
	}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("flag -%s: %s", strings.ReplaceAll(err.Field, "_", "-"), err.Msg)
	}
	if *apps < 1 || *apps > maxApps {
		return fmt.Errorf("flag -apps: must be between 1 and %d", maxApps)
	}

	epoch, err := time.Parse(time.RFC3339, *epochS)
	if err != nil {
		return fmt.Errorf("flag -epoch: must be an RFC 3339 time")
	}
	var start time.Time
	if *clockS != "" {
		if start, err = time.Parse(time.RFC3339, *clockS); err != nil {
			return fmt.Errorf("flag -clock: must be an RFC 3339 time")
		}
	}
	if *ratesScale <= 0 || *ratesScale > maxRatesScale {
		return fmt.Errorf("flag -rates-scale: must be above 0 and at most %d", maxRatesScale)
	}
	if rates.NewPerDayPerMillion < 0 || rates.RemovalsPerDayPerMillion < 0 || rates.PriceChangesPerYear < 0 {
		return fmt.Errorf("flag -new-apps-per-day-per-million, -removals-per-day-per-million, -price-changes-per-year: must not be negative")
	}

	logger := simserve.NewLogger(stderr)
	var cat *Catalogue
	if *liv {
		cat = NewLivingCatalogue(*apps, *seed, epoch, rates.Scaled(*ratesScale))
		if start.IsZero() {
			start = epoch
		}
	} else {
		cat = NewCatalogue(*apps, *seed)
	}
	var offset time.Duration
	if !start.IsZero() {
		offset = time.Until(start)
	}
	srv := &http.Server{
		Handler:           NewServer(cat, Options{Config: cfg, Seed: *seed, Logger: logger, ClockOffset: offset}),
		ReadHeaderTimeout: readHeaderTimeout,
	}
	err = simserve.Run(ctx, srv, *addr, stdout, shutdownTimeout, func() {
		logger.Info("started", "apps", *apps, "seed", *seed, "config", cfg, "living", *liv, "clock", time.Now().Add(offset).UTC().Format(time.RFC3339))
	})
	if err != nil {
		return err
	}
	logger.Info("stopped")
	return nil
}
