// Command llm-sim is a local, OpenAI-compatible chat-completions endpoint for
// the analyst: it answers deterministically from the prompt (a valid brief
// for a brief prompt, a valid step answer for a segment evaluation's step),
// with realistic latency, usage token counts and configurable 429s. It
// serves internal/llmsim on loopback only and never calls out.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"storecrawl/internal/llmsim"
	"storecrawl/internal/simserve"
)

const (
	defaultAddr       = "127.0.0.1:8791"
	readHeaderTimeout = 10 * time.Second
	shutdownTimeout   = 5 * time.Second
)

const usageText = `Usage: llm-sim [flags]

A local OpenAI-compatible chat-completions endpoint (loopback only). On start
it prints {"event":"listening","addr":"HOST:PORT"} on stdout, then logs JSON
events on stderr.

Routes:
  POST /v1/chat/completions   OpenAI chat completions (Bearer -api-key when set);
                              a brief prompt (worker/analyst.BuildBriefPrompt) gets a valid
                              brief JSON built from its input, a segment evaluation step
                              (worker/analyst.BuildStepPrompt) its step's JSON; any other prompt a
                              deterministic short answer; usage counts in every answer
  GET  /v1/models             the one model served
  GET  /__stats   POST /__stats/reset   POST /__config   GET /health

POST /__config takes any of: latency_ms, ms_per_token, requests_per_min,
tokens_per_min, retry_after_s, fail_next (the next N calls answer 429),
invalid ("" | "first": the first answer of a conversation breaks the schema,
the retry is valid | "always").

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
		fmt.Fprintln(os.Stderr, "llm-sim:", err)
		os.Exit(2)
	}
}

// loopback reports whether addr's host is a loopback address: the simulator
// must not be reachable from the network.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("llm-sim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usageText)
		fs.PrintDefaults()
	}
	def := llmsim.DefaultConfig()
	var (
		addr   = fs.String("addr", defaultAddr, "listen address, loopback only (127.0.0.1:0 picks a free port)")
		apiKey = fs.String("api-key", "", "if set, require Authorization: Bearer <key>")
		model  = fs.String("model", llmsim.DefaultModel, "model name answered")
		cfg    = def
	)
	fs.IntVar(&cfg.LatencyMS, "latency-ms", def.LatencyMS, "fixed latency per completion")
	fs.IntVar(&cfg.MSPerToken, "ms-per-token", def.MSPerToken, "added latency per completion token")
	fs.IntVar(&cfg.RequestsPerMin, "requests-per-min", def.RequestsPerMin, "429 above this many calls a minute (0 = no limit)")
	fs.IntVar(&cfg.TokensPerMin, "tokens-per-min", def.TokensPerMin, "429 above this many tokens a minute (0 = no limit)")
	fs.IntVar(&cfg.RetryAfterS, "retry-after-s", def.RetryAfterS, "Retry-After seconds on 429s")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if !loopback(*addr) {
		return fmt.Errorf("flag -addr: %q is not a loopback address", *addr)
	}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("flag: %v", err)
	}
	logger := simserve.NewLogger(stderr)
	srv := &http.Server{
		Handler:           llmsim.NewServer(llmsim.Options{Config: cfg, APIKey: *apiKey, Model: *model, Logger: logger}),
		ReadHeaderTimeout: readHeaderTimeout,
	}
	err := simserve.Run(ctx, srv, *addr, stdout, shutdownTimeout, func() { logger.Info("started", "model", *model, "config", cfg) })
	if err != nil {
		return err
	}
	logger.Info("stopped")
	return nil
}
