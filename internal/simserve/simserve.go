// Package simserve is what the local simulators (cmd/upstream-sim,
// cmd/llm-sim) share to run: a JSON logger whose message key is "event",
// and a server that announces its address on stdout as one JSON line
// ({"event":"listening","addr":...}, what the e2e harness and make dev
// wait for) and shuts down gracefully when its context ends.
package simserve

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// NewLogger logs JSON lines to w with the message named "event", matching
// the stdout announcement.
func NewLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.MessageKey {
				a.Key = "event"
			}
			return a
		},
	}))
}

// Run listens on addr, announces the bound address on stdout, calls
// started, and serves until ctx ends (then shuts down within shutdown) or
// the server fails.
func Run(ctx context.Context, srv *http.Server, addr string, stdout io.Writer, shutdown time.Duration, started func()) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	announce, _ := json.Marshal(struct {
		Event string `json:"event"`
		Addr  string `json:"addr"`
	}{"listening", ln.Addr().String()})
	fmt.Fprintf(stdout, "%s\n", announce)
	if started != nil {
		started()
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdown)
	defer cancel()
	return srv.Shutdown(sctx)
}
