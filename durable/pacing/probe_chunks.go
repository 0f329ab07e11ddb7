package pacing

import (
	"math"
	"time"
)

// Chunk shaping: how a tick's requests go out (smooth, careful or
// latency-bound chunks), apart from how many the rate asks for.

func (p *Probe) Plan(now time.Time) Plan {
	chunk := 0
	near := p.streak > 0 || p.phase == PhaseProbe || p.phase == PhaseBracket
	if near {
		// Near the limit, a refusal should cost few items: the fewest in
		// flight at once that still carry the rate.
		chunk = p.nearChunk()
	}
	if !near && p.ceiling > 0 && p.rate >= p.params.SmoothShare*p.ceiling {
		// Near the ceiling, the smallest chunks that fill the connections:
		// a token bucket with a small burst refuses a second's worth of
		// requests sent at once even when the rate is under its capacity.
		chunk = roundItems(p.conns(), p.Sub)
		if chunk*p.Sub <= p.conns() {
			// That chunk is one round, all sent at once (six requests at
			// one per item): the fewest that carry the rate instead, since a
			// bucket with a burst under a round refuses it at any rate, and
			// with most of the round served that refusal does not read as a
			// small burst. Two-round chunks (4 per item) keep them: smaller
			// ones there cost more in chunk waits than they save in
			// refusals.
			if c := p.smoothChunk(); c > 0 {
				chunk = c
			}
		}
	}
	if p.smooth && !near {
		if c := p.smoothChunk(); c > 0 {
			chunk = c
		}
	}
	if p.careful {
		chunk = max(1, p.conns()/p.Sub)
	}
	// An upstream that paces clients itself gets chunks in flight at once:
	// a chunk is one round, and the tick's slowest answer overrates it.
	p.selfPaced = p.careful
	plan := p.plan(now, p.rate, chunk)
	p.lastChunk = plan.ChunkItems
	switch {
	case plan.Items == 0:
	case p.phase == PhaseBlocked:
		plan.Items, plan.ChunkItems = 1, 1 // one probe item while blocked
		p.LastPlanRq = p.Sub
	case p.busyPlan():
		// The connections are the limit: keep all six busy for a while in
		// one chunk, rather than waiting out every small chunk's slowest answer.
		items := int(math.Ceil(p.connPerMin() * p.params.BusySpan.Minutes() / float64(p.Sub)))
		plan.Items = min(max(plan.Items, items), MaxSubrequestsPerTick/p.Sub)
		plan.ChunkItems, plan.ChunkPause = plan.Items, 0
		p.LastPlanRq = plan.Items * p.Sub
	}
	return plan
}

// smoothChunk is the smallest chunk that still carries the rate: its
// requests at once are few, and the pause after it (its spacing at the
// rate less its slowest answer) stays at least SmoothSlack of it.
// 0 (the usual chunks) where no chunk up to a connection-filling one does.
func (p *Probe) smoothChunk() int {
	perSec := p.rate / 60
	lat := math.Max(p.LatencyMs, p.SlowMs) / 1000
	for ci := 1; ci <= roundItems(p.conns(), p.Sub); ci++ {
		reqs := float64(ci * p.Sub)
		rounds := math.Ceil(reqs / float64(p.conns()))
		if reqs/perSec*(1-p.params.SmoothSlack) >= rounds*lat {
			return ci
		}
	}
	return 0
}

// nearChunk is the chunk near the limit: the fewest items whose
// requests, sent at once, carry the rate at the slowest answer with
// SmoothSlack to spare, at most one round of the connections. One item at
// a time would cap the rate at one connection's (60,000 ÷ latency a
// minute: ~500 at 120 ms with one request per item) and, never refused
// there, never leave it; the pace must bound the rate, not the chunk.
func (p *Probe) nearChunk() int {
	perSec := p.rate / 60
	lat := math.Max(p.LatencyMs, p.SlowMs) / 1000
	most := max(1, p.conns()/p.Sub)
	for ci := 1; ci < most; ci++ {
		if float64(ci*p.Sub)/perSec*(1-p.params.SmoothSlack) >= lat {
			return ci
		}
	}
	return most
}

// connPerMin is what the connections carry per minute at the measured latency.
func (p *Probe) connPerMin() float64 {
	return float64(p.conns()) * float64(time.Minute.Milliseconds()) / math.Max(p.LatencyMs, 1)
}

// busyPlan reports whether the tick is sent as one latency-bound chunk.
// A busy chunk goes at the connections' pace, above the rate: where a
// refusal costs a hold or a block (penalized), or the upstream paces
// clients itself (careful), only where the connections bind
// (connectionsBind); else one-round chunks, each waiting out its slowest
// answer. Where it paces clients, only at one request an item: the runner
// starts no item once a refusal has come back, but at more an item
// started before it sends the rest after it.
func (p *Probe) busyPlan() bool {
	if p.phase == PhaseBlocked || !p.latencyBound() || p.streak > 0 || p.careful && p.Sub > 1 {
		return false
	}
	return !(p.careful || p.penalized) || p.connectionsBind()
}

// connectionsBind reports whether the connections bind and not the
// upstream's rate: they carry at most BusyPacedShare of the rate cruised
// at under the ceiling, so a busy chunk, at their pace, keeps under it.
// Where they bind, one-round chunks each wait out their slowest answer and
// send well under what the connections carry; where they do not, a busy
// chunk goes above the capacity and, at an upstream that penalises
// refusals, buys a hold or a block.
func (p *Probe) connectionsBind() bool {
	return p.ceiling > 0 && p.params.BusyPacedShare*p.policy().cruise(p, p.ceiling) >= p.connPerMin()
}

// latencyBound reports whether the rate asks about as much as the
// connections can carry, so latency, not the rate, sets the pace.
func (p *Probe) latencyBound() bool { return p.rate >= p.params.BusyShare*p.connPerMin() }

// wakeRate is the rate a tick's requests are paid for at: the rate, or
// the connections' when they bind.
func (p *Probe) wakeRate() float64 {
	if p.latencyBound() {
		return math.Max(p.rate, p.connPerMin()) // the connections pace this tick, not the rate
	}
	return p.rate
}

// TickGap: the requests paid for at wakeRate (Spacer; smooth sending's
// spacing after the tick's last chunk aside).
func (p *Probe) TickGap(requests int) time.Duration { return tickGap(p.wakeRate(), requests) }

// wake is when to start the next tick after one that sent t's requests:
// when they are paid for at the rate (the connections' rate when they
// bind), and for smooth sending no sooner than a chunk's spacing after
// this tick's last one.
func (p *Probe) wake(now time.Time, t tally) time.Time {
	rate := p.wakeRate()
	next := p.next(now, rate, t.sent)
	if p.smooth && p.lastChunk > 0 && !t.lastSent.IsZero() {
		// The next tick's first chunk keeps the spacing after this tick's
		// last one: woken at the paid-for time, it would go out right after
		// the last chunk's answers, two chunks at once.
		gap := time.Duration(float64(p.lastChunk*p.Sub) / (rate / 60) * float64(time.Second))
		if at := t.lastSent.Add(gap); next.Before(at) {
			next = at
		}
	}
	return next
}
