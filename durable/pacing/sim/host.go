package sim

import (
	"net/http"
	"time"

	"storecrawl/durable/pacing"
	"storecrawl/internal/upstreammodel"
)

// Host is the simulated upstream on its own: the scenario's phases over
// the shared upstream model (internal/upstreammodel: the token bucket with
// its blocks, Retry-After, rate-limit headers and latency, which
// cmd/upstream-sim serves over HTTP too). The
// simulator's loop drives it through sim; a driver that runs the real
// platform code on a virtual clock (worker/enrichment's native
// convergence test) drives one Host per upstream host, so both meet the
// same upstream model. Not safe for concurrent use.
type Host struct {
	u    *upstream
	last time.Duration
}

// NewHost validates sc and returns its upstream at the epoch, the bucket full.
func NewHost(sc Scenario) (*Host, error) {
	if err := sc.validate(); err != nil {
		return nil, err
	}
	return &Host{u: newUpstream(&sc)}, nil
}

// Answer is what the host does with one request.
type Answer struct {
	Kind pacing.Kind
	// Status is the HTTP status of the answer: 200, 404, 503, or the
	// phase's on_exceed for a refusal; 0 for a timeout (no answer).
	Status int
	// Latency is how long the answer takes to reach the client (the
	// client's timeout for a timeout).
	Latency    time.Duration
	RetryAfter time.Duration
	// Remaining is RateLimit-Remaining (-1 without rate-limit headers) and
	// Reset RateLimit-Reset.
	Remaining int
	Reset     time.Duration
}

// Serve answers a request for item (a queue index below the scenario's
// items) arriving at at, from the epoch. A request arriving before the
// previous one is served as arriving with it: the bucket runs forward only.
func (h *Host) Serve(at time.Duration, item int) Answer {
	at = max(at, h.last)
	h.last = at
	k, a := h.u.serveModel(at, item)
	onExceed := http.StatusTooManyRequests
	if h.u.cur().OnExceed == exceed403 {
		onExceed = http.StatusForbidden
	}
	return Answer{Kind: pacingKinds[k], Status: upstreammodel.Status(k, onExceed), Latency: a.latency,
		RetryAfter: a.retryAfter, Remaining: a.remaining, Reset: a.reset}
}

// Lockouts is how many blocks the host has started.
func (h *Host) Lockouts() int { return h.u.lockouts() }
