package pacing

import (
	"math"
	"time"
)

// Shared machinery of the rate-based controllers: they choose a request
// rate, and ratePlan turns it into ticks and chunks that spread the
// requests evenly instead of sending a tick's work as one burst.
const (
	// TickInterval is how often a rate controller wakes when it has work:
	// the product's shortest alarm interval.
	TickInterval = 10 * time.Second
	// MinRatePerMin is the floor of every rate controller: one request a minute.
	MinRatePerMin = 1.0
	// MaxRatePerMin is the ceiling: a tick's whole subrequest budget every tick.
	MaxRatePerMin = float64(MaxSubrequestsPerTick) * float64(time.Minute/TickInterval)
	// defaultLatency is assumed until a request has been measured.
	defaultLatency = 150 * time.Millisecond
	// latencySmoothing weighs the newest latency sample in the moving average.
	latencySmoothing = 0.2
)

// chunkItems is the smallest number of items whose requests fill the
// connections evenly (3 items of 4 requests = two full rounds of 6), so a
// chunk never ends with idle connections.
func chunkItems(subrequests int) int { return roundItems(MaxConnections, subrequests) }

// roundItems is chunkItems for conns connections in flight at once.
func roundItems(conns, subrequests int) int {
	sub := max(1, subrequests)
	return conns / gcd(conns, sub)
}

// chunkSpan is how much sending one chunk should cover: every chunk waits
// for its slowest request, so chunks of about a second's worth of requests
// keep that wait a small share at high rates. A chunk always fills the
// connections (a tick at a slow rate has fewer items than that anyway).
const chunkSpan = time.Second

// chunkForRate sizes a chunk to chunkSpan of requests at ratePerMin, in
// whole multiples of chunkItems.
func chunkForRate(ratePerMin float64, subrequests, conns int) int {
	sub := max(1, subrequests)
	items := int(math.Round(ratePerMin / 60 * chunkSpan.Seconds() / float64(sub)))
	base := roundItems(conns, sub)
	return max(base, items/base*base)
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// pacer is the state every rate controller shares: timing, latency and
// server hints (Retry-After, RateLimit headers).
type pacer struct {
	Sub        int     `json:"sub"`
	LatencyMs  float64 `json:"latency_ms"`
	NotBefore  int64   `json:"not_before"` // unix ms: no request before this
	LastWake   int64   `json:"last_wake"`  // unix ms of the last Plan
	LastPlanRq int     `json:"last_plan_requests"`
	// SlowMs is the moving average of each tick's slowest answer (what a
	// chunk waits for); selfPaced (set by the controller per plan) means
	// chunks are a single round, so the mean latency sizes them instead.
	SlowMs    float64 `json:"slow_ms,omitempty"`
	selfPaced bool
	// RoundMs is the moving average of how long a one-round chunk lasted
	// (its slowest answer, not the tick's), which sizes a self-paced
	// plan's pauses; PlanChunk is the last plan's items per chunk, so a
	// tick's outcomes can be split into its chunks.
	RoundMs   float64 `json:"round_ms,omitempty"`
	PlanChunk int     `json:"plan_chunk,omitempty"`
	// InFlight is the most requests to have in flight at once (Plan's
	// MaxInFlight; 0 = MaxConnections), set where the upstream refuses
	// concurrency, not rate.
	InFlight int `json:"in_flight,omitempty"`
}

// conns is how many requests may be in flight at once.
func (p *pacer) conns() int {
	if p.InFlight > 0 && p.InFlight < MaxConnections {
		return p.InFlight
	}
	return MaxConnections
}

// Release lifts the hold a server hint set (Releaser).
func (p *pacer) Release() { p.NotBefore = 0 }

func newPacer(cfg Config) pacer {
	return pacer{Sub: max(1, cfg.SubrequestsPerItem), LatencyMs: float64(defaultLatency.Milliseconds())}
}

// plan spreads ratePerMin over one tick of at least TickInterval: the
// items that rate carries in a tick, rounded up, with the interval
// stretched to match (next), so the rate is kept exactly rather than
// rounded down. chunk overrides the items per chunk (0 = fill the
// connections evenly).
func (p *pacer) plan(now time.Time, ratePerMin float64, chunk int) Plan {
	p.LastWake = now.UnixMilli()
	if now.UnixMilli() < p.NotBefore {
		p.LastPlanRq = 0
		return Plan{}
	}
	perSec := ratePerMin / 60
	ci := chunk
	if ci <= 0 {
		ci = chunkForRate(ratePerMin, p.Sub, p.conns())
	}
	items := int(math.Ceil(perSec * TickInterval.Seconds() / float64(p.Sub)))
	items = min(max(items, 1), MaxSubrequestsPerTick/p.Sub)
	ci = min(ci, items)
	chunkReqs := float64(ci * p.Sub)
	rounds := math.Ceil(chunkReqs / float64(p.conns()))
	// A chunk lasts until its slowest answer, not its mean one: sizing the
	// pause by the mean sends under the rate, the more so the higher it is.
	lat := p.LatencyMs
	switch {
	case p.selfPaced && rounds == 1 && p.RoundMs > 0:
		// One round a chunk: it lasts until its own slowest answer,
		// which the mean latency underrates by about the jitter.
		lat = p.RoundMs
	case !p.selfPaced && p.SlowMs > lat:
		lat = p.SlowMs
	}
	chunkDur := time.Duration(rounds * lat * float64(time.Millisecond))
	spacing := time.Duration(chunkReqs / perSec * float64(time.Second))
	pause := max(0, spacing-chunkDur)
	p.LastPlanRq, p.PlanChunk = items*p.Sub, ci
	plan := Plan{Items: items, ChunkItems: ci, ChunkPause: pause, StopOnThrottle: true, NotBefore: time.UnixMilli(p.NotBefore)}
	if p.conns() < MaxConnections {
		plan.MaxInFlight = p.conns()
	}
	return plan
}

// next is when to wake after a tick that ended at now: when the requests
// the tick actually sent are paid for at this rate (a tick cut short by a
// refusal does not wait out its whole plan), and never before the server
// said so.
func (p *pacer) next(now time.Time, ratePerMin float64, sent int) time.Time {
	t := time.UnixMilli(p.LastWake).Add(tickGap(ratePerMin, sent))
	if t.Before(now) {
		t = now
	}
	if nb := time.UnixMilli(p.NotBefore); t.Before(nb) {
		t = nb
	}
	return t
}

// tickGap is how long after a tick's start the next one starts when the
// tick sent sent requests at ratePerMin and its work fit in that time:
// until they are paid for at the rate (TickInterval when none was sent).
func tickGap(ratePerMin float64, sent int) time.Duration {
	if sent <= 0 {
		return TickInterval
	}
	return time.Duration(float64(sent) / (ratePerMin / 60) * float64(time.Second))
}

// tally is what one tick's requests said.
type tally struct {
	sent, ok, throttled, serverErr, timeouts int
	first, last                              time.Time
	lastSent                                 time.Time // the last request's send time
}

func (t tally) span() time.Duration { return t.last.Sub(t.first) }

// observe folds a tick's outcomes into the pacer (latency, server hints)
// and counts them.
func (p *pacer) observe(outcomes []Outcome) tally {
	var t tally
	slow := 0.0 // this tick's slowest served answer
	p.observeRounds(outcomes)
	defer func() {
		switch {
		case slow == 0:
		case p.SlowMs == 0:
			p.SlowMs = slow
		default:
			p.SlowMs = (1-latencySmoothing)*p.SlowMs + latencySmoothing*slow
		}
	}()
	for i, o := range outcomes {
		if i == 0 || o.SentAt.Before(t.first) {
			t.first = o.SentAt
		}
		if o.SentAt.After(t.lastSent) {
			t.lastSent = o.SentAt
		}
		if o.DoneAt.After(t.last) {
			t.last = o.DoneAt
		}
		t.sent++
		switch o.Kind {
		case KindOK, KindNotFound:
			t.ok++
			lat := float64(o.DoneAt.Sub(o.SentAt).Milliseconds())
			slow = math.Max(slow, lat)
			p.LatencyMs = (1-latencySmoothing)*p.LatencyMs + latencySmoothing*lat
		case KindThrottled:
			t.throttled++
		case KindServerError:
			t.serverErr++
		case KindTimeout:
			t.timeouts++
		}
		// Honour the server's own pacing: Retry-After, and an exhausted
		// RateLimit-Remaining with its reset time.
		if o.RetryAfter > 0 {
			p.NotBefore = max(p.NotBefore, ceilMs(o.DoneAt.Add(o.RetryAfter)))
		}
		if o.Remaining == 0 && o.Reset > 0 {
			p.NotBefore = max(p.NotBefore, ceilMs(o.DoneAt.Add(o.Reset)))
		}
	}
	return t
}

// observeRounds folds the mean span of the tick's one-round chunks (first
// request sent to last answer) into RoundMs. A chunk cut short by a
// refusal, or spanning rounds, is left out.
func (p *pacer) observeRounds(outcomes []Outcome) {
	ci := p.PlanChunk
	if ci <= 0 || ci*p.Sub > p.conns() || len(outcomes) == 0 {
		return
	}
	type span struct {
		from, to time.Time
		n        int
		ok       bool
	}
	chunks := map[int]*span{}
	for _, o := range outcomes {
		k := o.Item / ci
		c := chunks[k]
		if c == nil {
			c = &span{from: o.SentAt, to: o.DoneAt, ok: true}
			chunks[k] = c
		}
		if o.SentAt.Before(c.from) {
			c.from = o.SentAt
		}
		if o.DoneAt.After(c.to) {
			c.to = o.DoneAt
		}
		c.n++
		c.ok = c.ok && (o.Kind == KindOK || o.Kind == KindNotFound)
	}
	sum, n := 0.0, 0
	for _, c := range chunks {
		if c.ok && c.n == ci*p.Sub {
			sum += float64(c.to.Sub(c.from).Milliseconds())
			n++
		}
	}
	if n == 0 {
		return
	}
	mean := sum / float64(n)
	if p.RoundMs == 0 {
		p.RoundMs = mean
	} else {
		p.RoundMs = (1-latencySmoothing)*p.RoundMs + latencySmoothing*mean
	}
}

// usedPlan reports whether the tick really sent what was planned: only then
// is a clean tick evidence that the rate is safe (an empty queue, or a
// rate the connections cannot carry, proves nothing).
func (p *pacer) usedPlan(t tally, ratePerMin float64) bool {
	if p.LastPlanRq == 0 || t.sent < p.LastPlanRq {
		return false
	}
	planned := time.Duration(float64(p.LastPlanRq) / (ratePerMin / 60) * float64(time.Second))
	// A tick much slower than planned was carried by the connections, not
	// the rate: the rate was not really in use.
	return t.span() <= max(planned, TickInterval)*5/4
}

func clampRate(r float64) float64 { return math.Min(MaxRatePerMin, math.Max(MinRatePerMin, r)) }

// ceilMs is t in unix milliseconds, rounded up: a "not before" stored in
// whole milliseconds must never fall before the instant the server gave.
func ceilMs(t time.Time) int64 {
	ms := t.UnixMilli()
	if t.After(time.UnixMilli(ms)) {
		ms++
	}
	return ms
}
