package sim

import (
	"math"
	"math/rand/v2"
	"time"

	"storecrawl/durable/pacing"
)

const (
	// requestTimeout is how long a request that times out holds its
	// connection before the client gives up.
	requestTimeout = 15 * time.Second
	// lockoutWindow is the sliding window of lockout_after_refusals_per_min.
	lockoutWindow = time.Minute
	// tokenEpsilon absorbs float rounding in the refill, so a request that
	// arrives exactly when its token is due is served.
	tokenEpsilon = 1e-9
	// RNG streams (PCG's second word): request draws and per-item existence
	// are independent, so not-found items do not depend on the controller.
	requestStream = 0x5eed_0001
	itemStream    = 0x5eed_0002
)

// itemState caches whether an item exists, decided at its first request.
type itemState int8

const (
	itemUnknown itemState = iota
	itemExists
	itemMissing
)

// answer is what the upstream does with one request.
type answer struct {
	kind       pacing.Kind
	latency    time.Duration // until the answer reaches the client
	retryAfter time.Duration
	remaining  int // -1 without rate-limit headers
	reset      time.Duration
}

// upstream is the hidden, rate-limited server. Requests must arrive in
// time order (serve is called with nondecreasing times).
type upstream struct {
	sc           *Scenario
	rng          *rand.Rand
	phase        int
	tokens       float64
	refilled     time.Duration // tokens are current as of this time
	blockedUntil time.Duration
	refusals     []time.Duration // bucket refusals within lockoutWindow
	items        []itemState
	lockouts     int
}

func newUpstream(sc *Scenario) *upstream {
	return &upstream{
		sc:     sc,
		rng:    rand.New(rand.NewPCG(sc.Seed, requestStream)),
		tokens: float64(sc.Phases[0].Burst),
		items:  make([]itemState, sc.Items),
	}
}

// perSec turns a per-minute rate into a per-second one.
func perSec(perMin float64) float64 { return perMin / time.Minute.Seconds() }

func (u *upstream) cur() *Phase { return &u.sc.Phases[u.phase] }

// advance refills the bucket up to at, phase by phase.
func (u *upstream) advance(at time.Duration) {
	for u.phase+1 < len(u.sc.Phases) && u.sc.Phases[u.phase+1].at() <= at {
		u.refill(u.sc.Phases[u.phase+1].at())
		u.phase++
		u.tokens = min(u.tokens, float64(u.cur().Burst))
	}
	u.refill(at)
}

// refill adds the tokens of (refilled, to] within the current phase: the
// mean of the rates at both ends (exact for a step and for a ramp).
func (u *upstream) refill(to time.Duration) {
	if to <= u.refilled {
		return
	}
	p := u.cur()
	mean := (u.sc.rateAt(u.phase, u.refilled) + u.sc.rateAt(u.phase, to)) / 2
	u.tokens = min(float64(p.Burst), u.tokens+(to-u.refilled).Seconds()*perSec(mean))
	u.refilled = to
}

// serve answers a request for item (a queue index) arriving at at.
func (u *upstream) serve(at time.Duration, item int) answer {
	u.advance(at)
	p := u.cur()
	a := answer{latency: u.latency(p), remaining: -1}
	switch {
	case at < u.blockedUntil:
		a.kind = pacing.KindThrottled // blocked: the bucket is not consulted
	case u.tokens >= 1-tokenEpsilon:
		u.tokens--
		a.kind = u.served(p, item)
		if a.kind == pacing.KindTimeout {
			a.latency = requestTimeout
		}
	default:
		a.kind = pacing.KindThrottled
		if p.RefusalsConsume {
			u.tokens = max(u.tokens-1, -float64(p.Burst))
		}
		u.refused(at, p)
	}
	if a.kind == pacing.KindThrottled && p.RetryAfterS > 0 {
		a.retryAfter = time.Duration(p.RetryAfterS) * time.Second
	}
	if p.RatelimitHeaders {
		a.remaining, a.reset = u.headers(at, p)
	}
	return a
}

// latency draws latency_ms ± uniform jitter.
func (u *upstream) latency(p *Phase) time.Duration {
	ms := float64(p.LatencyMS) + (2*u.rng.Float64()-1)*float64(p.LatencyJitterMS)
	return time.Duration(ms * float64(time.Millisecond))
}

// served is the answer to an accepted request.
func (u *upstream) served(p *Phase, item int) pacing.Kind {
	if u.missing(p, item) {
		return pacing.KindNotFound
	}
	switch x := u.rng.Float64(); {
	case x < p.TimeoutRate:
		return pacing.KindTimeout
	case x < p.TimeoutRate+p.ErrorRate:
		return pacing.KindServerError
	}
	return pacing.KindOK
}

// missing decides once per item, from the item's own stream of the seed.
func (u *upstream) missing(p *Phase, item int) bool {
	if u.items[item] == itemUnknown {
		x := rand.New(rand.NewPCG(u.sc.Seed^itemStream, uint64(item))).Float64()
		u.items[item] = itemExists
		if x < p.NotFoundRate {
			u.items[item] = itemMissing
		}
	}
	return u.items[item] == itemMissing
}

// refused applies the block rules to a bucket refusal at at.
func (u *upstream) refused(at time.Duration, p *Phase) {
	n := p.LockoutAfterRefusalsPerMin
	if n == 0 {
		if p.BlockS > 0 {
			u.block(at, p) // a 403 storm: any refusal blocks
		}
		return
	}
	u.refusals = append(u.refusals, at)
	i := 0
	for i < len(u.refusals) && u.refusals[i] <= at-lockoutWindow {
		i++
	}
	u.refusals = u.refusals[i:]
	if len(u.refusals) > n {
		u.block(at, p)
		u.refusals = u.refusals[:0]
	}
}

func (u *upstream) block(at time.Duration, p *Phase) {
	u.blockedUntil = at + time.Duration(p.BlockS)*time.Second
	u.lockouts++
}

// headers are RateLimit-Remaining and -Reset as of at.
func (u *upstream) headers(at time.Duration, p *Phase) (remaining int, reset time.Duration) {
	remaining = max(0, int(math.Floor(u.tokens+tokenEpsilon)))
	if u.tokens < 1-tokenEpsilon {
		reset = time.Duration((1 - u.tokens) / perSec(u.sc.rateAt(u.phase, at)) * float64(time.Second))
	}
	if at < u.blockedUntil {
		remaining = 0
		reset = max(reset, u.blockedUntil-at)
	}
	// Round up to whole ms: a client that waits exactly Reset must find
	// the token.
	return remaining, (reset + time.Millisecond - 1).Truncate(time.Millisecond)
}
