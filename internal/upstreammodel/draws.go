package upstreammodel

import (
	"math/rand/v2"
	"net/http"
	"time"
)

// Kind is what the upstream does with a request.
type Kind int8

const (
	OK Kind = iota
	NotFound
	ServerError
	Timeout
	Refused
)

// Status is the HTTP status of an answer of kind k; onExceed is the host's
// refusal status (429 or 403). A timeout has none (0).
func Status(k Kind, onExceed int) int {
	switch k {
	case OK:
		return http.StatusOK
	case NotFound:
		return http.StatusNotFound
	case ServerError:
		return http.StatusServiceUnavailable
	case Refused:
		return onExceed
	}
	return 0
}

// RequestTimeout is how long a request that times out holds its
// connection before the client gives up.
const RequestTimeout = 15 * time.Second

// RNG streams (PCG's second word): request draws and per-item existence
// are independent, so which items are missing does not depend on the
// order or number of requests.
const (
	requestStream = 0x5eed_0001
	itemStream    = 0x5eed_0002
)

// Draws is a host's seeded stream of request draws: latencies and the
// fate of admitted requests. The same seed and the same calls give the
// same answers. Not safe for concurrent use.
type Draws struct{ rng *rand.Rand }

// NewDraws is the request stream of seed.
func NewDraws(seed uint64) *Draws {
	return &Draws{rng: rand.New(rand.NewPCG(seed, requestStream))}
}

// Latency draws latencyMS ± uniform jitterMS, never negative. One draw.
func (d *Draws) Latency(latencyMS, jitterMS int) time.Duration {
	ms := float64(latencyMS) + (2*d.rng.Float64()-1)*float64(jitterMS)
	return time.Duration(max(ms, 0) * float64(time.Millisecond))
}

// Fate is an admitted request's answer: Timeout with timeoutRate, else
// ServerError with errorRate, else OK. One draw.
func (d *Draws) Fate(timeoutRate, errorRate float64) Kind {
	switch x := d.rng.Float64(); {
	case x < timeoutRate:
		return Timeout
	case x < timeoutRate+errorRate:
		return ServerError
	}
	return OK
}

// Chance reports an event of probability p (a dropped connection, say).
// One draw.
func (d *Draws) Chance(p float64) bool { return d.rng.Float64() < p }

// ItemMissing reports whether item is missing at notFoundRate: drawn from
// the item's own stream of seed, so it is the same whenever it is asked.
func ItemMissing(seed uint64, item int, notFoundRate float64) bool {
	return rand.New(rand.NewPCG(seed^itemStream, uint64(item))).Float64() < notFoundRate
}
