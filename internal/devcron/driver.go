package devcron

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Driver bounds.
const (
	// HealthWait bounds the wait for the Worker's /health before the first
	// fire: make dev builds, migrates and seeds before wrangler dev answers.
	HealthWait = 10 * time.Minute
	// HealthPoll is the pause between /health probes.
	HealthPoll = 500 * time.Millisecond
	// healthProbeTimeout bounds one /health probe.
	healthProbeTimeout = 10 * time.Second
	// FireTimeout bounds one fire: a cron run on Cloudflare may last up to
	// 15 minutes of wall time. A cron is never fired again while its last
	// fire runs; the slots it missed collapse into its next fire.
	FireTimeout = 15 * time.Minute
	// maxErrorBody is how much of a failed fire's answer its event keeps.
	maxErrorBody = 200
)

// Driver fires Crons against wrangler dev on loopback Port: each once as
// soon as /health answers (so a fresh stack shows the whole pipeline at
// once, not at the next 5-minute mark), in their order, then each on its
// own schedule on a clock sped up Speedup times.
type Driver struct {
	Port    int
	Crons   []Cron
	Speedup float64
	// Out receives one JSON line per event (every fire among them).
	Out io.Writer
	// HealthPoll, when set, replaces the HealthPoll pause (tests).
	HealthPoll time.Duration

	mu     sync.Mutex
	client *http.Client
}

func (d *Driver) base() string { return fmt.Sprintf("http://%s:%d", Loopback, d.Port) }

// Run waits for /health, fires every cron once, then fires each on its
// schedule until ctx ends. It returns an error only when the Worker never
// became healthy.
func (d *Driver) Run(ctx context.Context) error {
	if !ValidPort(d.Port) {
		return fmt.Errorf("port %d: want 1-65535", d.Port)
	}
	d.client = &http.Client{
		// Loopback only: no proxy, no redirect followed elsewhere.
		Transport:     &http.Transport{Proxy: nil},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	exprs := make([]string, len(d.Crons))
	for i, c := range d.Crons {
		exprs[i] = c.Expr
	}
	d.event(map[string]any{"event": "dev_cron.start", "target": d.base(), "crons": exprs, "speedup": d.Speedup,
		"plan": "each cron once when /health answers, then on its schedule"})
	if err := d.waitHealthy(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		d.event(map[string]any{"event": "dev_cron.no_health", "level": "error", "error": err.Error()})
		return err
	}
	clock := Clock{Start: time.Now(), Speedup: d.Speedup}
	nexts := make([]time.Time, len(d.Crons))
	for i, c := range d.Crons {
		if ctx.Err() != nil {
			return nil
		}
		nexts[i] = d.fire(ctx, clock, c, true)
	}
	var wg sync.WaitGroup
	for i, c := range d.Crons {
		wg.Add(1)
		go func() {
			defer wg.Done()
			next := nexts[i]
			for {
				t := time.NewTimer(time.Until(next))
				select {
				case <-ctx.Done():
					t.Stop()
					return
				case <-t.C:
				}
				next = d.fire(ctx, clock, c, false)
			}
		}()
	}
	wg.Wait()
	return nil
}

func (d *Driver) waitHealthy(ctx context.Context) error {
	poll := d.HealthPoll
	if poll <= 0 {
		poll = HealthPoll
	}
	ctx, cancel := context.WithTimeout(ctx, HealthWait)
	defer cancel()
	for {
		probe, stop := context.WithTimeout(ctx, healthProbeTimeout)
		req, _ := http.NewRequestWithContext(probe, http.MethodGet, d.base()+"/health", nil)
		resp, err := d.client.Do(req)
		if err == nil {
			io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
			resp.Body.Close()
		}
		stop()
		if err == nil && resp.StatusCode == http.StatusOK {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s/health did not answer 200 within %s", d.base(), HealthWait)
		case <-time.After(poll):
		}
	}
}

// fire runs c once, logs it with its next fire time, and returns that time.
func (d *Driver) fire(ctx context.Context, clock Clock, c Cron, first bool) time.Time {
	fctx, cancel := context.WithTimeout(ctx, FireTimeout)
	defer cancel()
	start := time.Now()
	ev := map[string]any{"event": "dev_cron.fire", "cron": c.Expr}
	if first {
		ev["first"] = true
	}
	req, _ := http.NewRequestWithContext(fctx, http.MethodGet, FireURL(d.Port, c.Expr), nil)
	resp, err := d.client.Do(req)
	status := 0
	if err == nil {
		status = resp.StatusCode
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
		resp.Body.Close()
		if status != http.StatusOK {
			err = fmt.Errorf("HTTP %d: %.*s", status, maxErrorBody, strings.TrimSpace(string(body)))
		}
	}
	ev["status"] = status
	ev["duration_ms"] = time.Since(start).Milliseconds()
	if err != nil {
		ev["level"] = "warn"
		ev["error"] = err.Error()
	}
	next := clock.Next(c, time.Now())
	ev["next_at"] = next.UTC().Format(time.RFC3339)
	if ctx.Err() == nil { // a fire cut short by the driver's stop is not one
		d.event(ev)
	}
	return next
}

// event writes one JSON line with its time.
func (d *Driver) event(ev map[string]any) {
	if d.Out == nil {
		return
	}
	if _, ok := ev["level"]; !ok {
		ev["level"] = "info"
	}
	ev["ts"] = time.Now().UTC().Format(time.RFC3339Nano)
	b, _ := json.Marshal(ev)
	d.mu.Lock()
	defer d.mu.Unlock()
	d.Out.Write(append(b, '\n'))
}
