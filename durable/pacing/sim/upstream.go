package sim

import (
	"time"

	"storecrawl/durable/pacing"
	"storecrawl/internal/upstreammodel"
)

// requestTimeout is how long a request that times out holds its
// connection before the client gives up.
const requestTimeout = upstreammodel.RequestTimeout

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

// upstream is the hidden, rate-limited server: the shared upstream model
// (internal/upstreammodel) driven through the scenario's phases. Requests
// must arrive in time order (serve is called with nondecreasing times).
type upstream struct {
	sc     *Scenario
	draws  *upstreammodel.Draws
	phase  int
	bucket upstreammodel.Bucket
	items  []itemState
}

func newUpstream(sc *Scenario) *upstream {
	return &upstream{
		sc:     sc,
		draws:  upstreammodel.NewDraws(sc.Seed),
		bucket: upstreammodel.NewBucket(sc.Phases[0].Burst, epoch),
		items:  make([]itemState, sc.Items),
	}
}

// perSec turns a per-minute rate into a per-second one.
func perSec(perMin float64) float64 { return perMin / time.Minute.Seconds() }

func (u *upstream) cur() *Phase { return &u.sc.Phases[u.phase] }

// lockouts is how many blocks the upstream has started.
func (u *upstream) lockouts() int { return u.bucket.Blocks }

// limit is phase p's refusal rules in the model's terms.
func limit(p *Phase) upstreammodel.Limit {
	return upstreammodel.Limit{
		Burst:                      p.Burst,
		RetryAfter:                 time.Duration(p.RetryAfterS) * time.Second,
		Block:                      time.Duration(p.BlockS) * time.Second,
		LockoutAfterRefusalsPerMin: p.LockoutAfterRefusalsPerMin,
		RefusalsConsume:            p.RefusalsConsume,
	}
}

// advance refills the bucket up to at, phase by phase; a phase change
// keeps the tokens, up to the new burst.
func (u *upstream) advance(at time.Duration) {
	for u.phase+1 < len(u.sc.Phases) && u.sc.Phases[u.phase+1].at() <= at {
		u.refill(u.sc.Phases[u.phase+1].at())
		u.phase++
		u.bucket.Cap(u.cur().Burst)
	}
	u.refill(at)
}

// refill adds the tokens up to to within the current phase, at the mean
// of the rates at both ends (exact for a step and for a ramp).
func (u *upstream) refill(to time.Duration) {
	from := u.bucket.RefilledAt.Sub(epoch)
	if to <= from {
		return
	}
	mean := (u.sc.rateAt(u.phase, from) + u.sc.rateAt(u.phase, to)) / 2
	u.bucket.Refill(epoch.Add(to), mean, u.cur().Burst)
}

// kinds maps the model's answers to the pacing outcomes.
var pacingKinds = [...]pacing.Kind{
	upstreammodel.OK:          pacing.KindOK,
	upstreammodel.NotFound:    pacing.KindNotFound,
	upstreammodel.ServerError: pacing.KindServerError,
	upstreammodel.Timeout:     pacing.KindTimeout,
	upstreammodel.Refused:     pacing.KindThrottled,
}

// serve answers a request for item (a queue index) arriving at at.
func (u *upstream) serve(at time.Duration, item int) answer {
	k, a := u.serveModel(at, item)
	a.kind = pacingKinds[k]
	return a
}

// serveModel is serve in the model's kinds: the latency is drawn first,
// then the bucket decides, then an admitted request's fate is drawn
// (unless its item is missing).
func (u *upstream) serveModel(at time.Duration, item int) (upstreammodel.Kind, answer) {
	u.advance(at)
	p := u.cur()
	a := answer{latency: u.draws.Latency(p.LatencyMS, p.LatencyJitterMS), remaining: -1}
	now := epoch.Add(at)
	v := u.bucket.Take(now, limit(p))
	k := upstreammodel.Refused
	if v.Admitted {
		k = upstreammodel.NotFound
		if !u.missing(p, item) {
			k = u.draws.Fate(p.TimeoutRate, p.ErrorRate)
		}
		if k == upstreammodel.Timeout {
			a.latency = requestTimeout
		}
	}
	a.retryAfter = v.RetryAfter
	if p.RatelimitHeaders {
		a.remaining, a.reset = u.bucket.Headers(now, u.sc.rateAt(u.phase, at))
	}
	return k, a
}

// missing decides once per item, with the not-found rate of the phase of
// its first admitted request.
func (u *upstream) missing(p *Phase, item int) bool {
	if u.items[item] == itemUnknown {
		u.items[item] = itemExists
		if upstreammodel.ItemMissing(u.sc.Seed, item, p.NotFoundRate) {
			u.items[item] = itemMissing
		}
	}
	return u.items[item] == itemMissing
}
