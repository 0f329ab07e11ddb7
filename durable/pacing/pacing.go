// Package pacing holds the EnrichmentController's pacing algorithms behind
// one small interface, separate from the loop that uses them (the Durable
// Object in production, cmd/simulate on a virtual clock).
//
// An Algorithm is woken (an alarm), says how much work to start and how to
// spread it (Plan), is told what every upstream request of that tick did
// (Done), and answers when it wants to be woken next. It never sleeps and
// never reads a clock: time is passed in, so a run is exactly repeatable.
//
// The product's algorithms (New; ENRICHMENT_PACING names one):
//   - probe: the default; see Probe for the design. In short: it works in
//     requests per minute, not items per tick; it spreads each tick's
//     requests evenly; it learns the upstream's capacity from the accepted
//     rate whenever a refusal shows it is at the limit; it stays just under
//     that ceiling and probes above it rarely (rarer for slower upstreams), so
//     refusals stay a small share; it treats only 429/403 as rate signals;
//     it tells a block (everything refused) from a rate limit and backs off
//     in time instead of cutting the rate; and it obeys Retry-After and
//     RateLimit-Remaining exactly.
//   - seed: the design document's tiered rules (batch 2–50 items, interval
//     10–120 s, five success-rate zones over a 5-minute window, a 5-minute
//     cooldown); selectable, and the baseline probe is measured against.
//
// The simulator (durable/pacing/sim) adds peers built on RatePacer: aimd
// (Netflix concurrency-limits' AIMD on a request rate), aws-adaptive (the
// AWS SDKs' adaptive retry mode) and the oracle that paces at the hidden
// capacity. The product neither registers nor links them.
//
// Why the seed rules lose: their 5-minute window keeps old successes after
// a drop, so the rate stays high for several ticks; the 50–80% dead zone
// tolerates a steady 20–50% refusal rate; and a cooldown resets to 2 items
// per 120 s, so recovery after an outage is slow (cmd/simulate shows each).
// Latency-only controllers (Gradient2, Envoy's adaptive concurrency) miss
// this upstream's signal entirely: a 429 comes back fast, so latency never
// rises while the client is being refused.
package pacing

import "time"

// Kind is what one upstream request told the client.
type Kind string

const (
	KindOK          Kind = "ok"
	KindNotFound    Kind = "not_found"    // served: the item does not exist
	KindThrottled   Kind = "throttled"    // 429 or 403: over the limit, or blocked
	KindServerError Kind = "server_error" // 5xx
	KindTimeout     Kind = "timeout"      // no answer in time
)

// Outcome is one upstream request as the client saw it.
type Outcome struct {
	// Item is the index, within the tick, of the work item the request belongs to.
	Item   int
	SentAt time.Time
	DoneAt time.Time
	Kind   Kind
	// RetryAfter is the Retry-After the answer carried (0 = none).
	RetryAfter time.Duration
	// Remaining is RateLimit-Remaining / x-ratelimit-remaining (-1 = absent).
	Remaining int
	// Reset is when that remaining budget refills, from now (0 = unknown).
	Reset time.Duration
}

// Plan is the work of one tick. Items are started in chunks of ChunkItems;
// a chunk starts when the previous one has finished and ChunkPause has
// passed (the runtime allows MaxConnections requests at once; the rest of a
// chunk queues). With StopOnThrottle, a chunk that saw a throttled request
// ends the tick: the items not started stay queued.
type Plan struct {
	Items          int
	ChunkItems     int
	ChunkPause     time.Duration
	StopOnThrottle bool
	// MaxInFlight bounds the requests in flight at once below the
	// runtime's MaxConnections (0 = MaxConnections): an upstream whose
	// burst is smaller than the connections refuses what is sent at once
	// beyond it, whatever the rate.
	MaxInFlight int
	// NotBefore: no request may be sent before this time (Retry-After).
	NotBefore time.Time
}

// Algorithm decides the pace.
type Algorithm interface {
	// Name identifies the algorithm (the -controller flag, the status page).
	Name() string
	// Plan is called when the controller is woken at now.
	Plan(now time.Time) Plan
	// Done reports the tick's requests (in send order) at now, when the
	// tick's work has finished, and returns when to wake next.
	Done(now time.Time, outcomes []Outcome) (next time.Time)
	// CapacityPerMin is the controller's current estimate of the upstream's
	// capacity in requests per minute (0 = no estimate yet).
	CapacityPerMin() float64
}

// Platform limits every controller lives within.
const (
	// MaxConnections: a Worker invocation has at most 6 simultaneous
	// outgoing connections; more requests queue inside the runtime.
	MaxConnections = 6
	// MaxSubrequestsPerTick bounds one alarm invocation's upstream requests
	// as the pacing plans them; the enrichment controller then fits a tick
	// to the invocation's real budget (SUBREQUEST_BUDGET: Workers Paid's
	// 10,000, Free's 50) and D1's 1,000 queries (durable/controller.ItemsPerTick).
	MaxSubrequestsPerTick = 800
)

// Config is what every controller is built with.
type Config struct {
	// SubrequestsPerItem is how many upstream requests one work item makes.
	SubrequestsPerItem int
	// Cooldown overrides the seed rules' 5-minute cooldown (0 = default).
	Cooldown time.Duration
}

// ItemsPerTickLimit is how many items fit one tick's subrequest budget.
func (c Config) ItemsPerTickLimit() int {
	per := max(1, c.SubrequestsPerItem)
	return max(1, MaxSubrequestsPerTick/per)
}

// ItemKind folds an item's requests into one verdict, the worst signal
// first: a throttled request makes the whole item throttled.
func ItemKind(outcomes []Outcome) Kind {
	rank := map[Kind]int{KindOK: 0, KindNotFound: 1, KindServerError: 2, KindTimeout: 3, KindThrottled: 4}
	worst := KindOK
	for _, o := range outcomes {
		if rank[o.Kind] > rank[worst] {
			worst = o.Kind
		}
	}
	return worst
}

// ByItem groups a tick's outcomes by item, in item order.
func ByItem(outcomes []Outcome) [][]Outcome {
	n := 0
	for _, o := range outcomes {
		n = max(n, o.Item+1)
	}
	items := make([][]Outcome, n)
	for _, o := range outcomes {
		items[o.Item] = append(items[o.Item], o)
	}
	return items
}

// Holder is a controller that can hold all traffic (a cooldown, a block
// backoff, a Retry-After): no request before HoldUntil.
type Holder interface {
	HoldUntil() time.Time
}

// Releaser is a controller whose hold an operator can lift: POST /start
// means "try now", whatever Retry-After, backoff or cooldown said.
type Releaser interface {
	Release()
}

// TuneRequest is an operator's override; nil fields are left alone.
type TuneRequest struct {
	BatchSize  *int
	IntervalMs *int64
	RatePerMin *float64
}

// Tuner is a controller an operator can steer.
type Tuner interface {
	Tune(TuneRequest)
}

// Spacer is a controller that says what its pace puts between ticks:
// TickGap is how long after a tick that sent requests upstream requests
// (its work done within that time) it starts the next one. Holds, server
// hints and idle polls come on top. Every registered controller is one.
type Spacer interface {
	TickGap(requests int) time.Duration
}

// Describer reports a controller's own view for the status page.
type Describer interface {
	Describe(now time.Time) map[string]any
}
