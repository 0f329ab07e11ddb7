// Package upstreammodel is the simulated App Store upstream of one host,
// the one model both simulators serve: cmd/upstream-sim (over HTTP, on the
// wall clock) and durable/pacing/sim (in process, on a virtual clock).
//
// A host is a token bucket refilled at a rate per minute and holding at
// most a burst of tokens. A request takes a token when it arrives; with
// none left it is refused (429 or 403 on the wire, Retry-After when set).
// A refusal can block the client for a while (a 403 storm), at once or
// after too many refusals in a minute (a lockout); during a block every
// request is refused without touching the bucket or extending the block,
// so a calm period always follows. Answers that pass the bucket are drawn
// from a seeded stream: timeout, 5xx or OK, each after a latency drawn
// from the same stream. Every function takes the clock; nothing here
// reads it.
package upstreammodel

import (
	"math"
	"time"
)

const (
	// LockoutWindow is the sliding window of Limit.LockoutAfterRefusalsPerMin.
	LockoutWindow = time.Minute
	// tokenEpsilon absorbs float rounding in the refill, so a request that
	// arrives exactly when its token is due is served.
	tokenEpsilon = 1e-9
)

// Limit is how a host refuses, while it holds. The rate is not here: a
// refill is given the mean rate over its interval, so a caller can ramp it.
type Limit struct {
	Burst int
	// RetryAfter is sent on every refusal when > 0 (blocked ones too).
	RetryAfter time.Duration
	// Block > 0 blocks the client for that long: after any refusal
	// (a 403 storm) or, with LockoutAfterRefusalsPerMin N > 0, after more
	// than N bucket refusals within LockoutWindow (a lockout).
	Block                      time.Duration
	LockoutAfterRefusalsPerMin int
	// RefusalsConsume makes a refusal take a token too, down to -Burst: a
	// client that keeps knocking pushes its next token further away.
	RefusalsConsume bool
}

// Bucket is one host's limiter state.
type Bucket struct {
	Tokens       float64
	RefilledAt   time.Time // Tokens are current as of this time
	BlockedUntil time.Time
	// Refusals are the bucket refusals within LockoutWindow of the last
	// one, for the lockout rule.
	Refusals []time.Time
	// Blocks is how many blocks (storms and lockouts) have begun.
	Blocks int
}

// NewBucket is a full bucket at now, no block.
func NewBucket(burst int, now time.Time) Bucket {
	return Bucket{Tokens: float64(burst), RefilledAt: now}
}

// perSec turns a per-minute rate into a per-second one.
func perSec(perMin float64) float64 { return perMin / time.Minute.Seconds() }

// Refill adds the tokens of (RefilledAt, to] at perMin, the mean rate over
// that interval, up to burst. A time not after RefilledAt adds nothing:
// the bucket runs forward only.
func (b *Bucket) Refill(to time.Time, perMin float64, burst int) {
	if !to.After(b.RefilledAt) {
		return
	}
	b.Tokens = min(float64(burst), b.Tokens+to.Sub(b.RefilledAt).Seconds()*perSec(perMin))
	b.RefilledAt = to
}

// Cap is a change of limit: the tokens are kept, up to the new burst, and
// so is any block.
func (b *Bucket) Cap(burst int) { b.Tokens = min(b.Tokens, float64(burst)) }

// Verdict is the bucket's decision on one request.
type Verdict struct {
	Admitted bool
	// Blocked: refused by a block in force (the bucket was not consulted).
	Blocked bool
	// BlockStarted: this refusal began a block.
	BlockStarted bool
	// RetryAfter is the refusal's Retry-After (0: none, or admitted).
	RetryAfter time.Duration
}

// Blocked reports whether a block is in force at at.
func (b *Bucket) Blocked(at time.Time) bool { return at.Before(b.BlockedUntil) }

// Take decides a request arriving at at, the bucket refilled to at.
func (b *Bucket) Take(at time.Time, l Limit) Verdict {
	var v Verdict
	switch {
	case b.Blocked(at):
		v.Blocked = true
	case b.Tokens >= 1-tokenEpsilon:
		b.Tokens--
		return Verdict{Admitted: true}
	default:
		if l.RefusalsConsume {
			b.Tokens = max(b.Tokens-1, -float64(l.Burst))
		}
		v.BlockStarted = b.refused(at, l)
	}
	v.RetryAfter = max(l.RetryAfter, 0)
	return v
}

// refused applies the block rules to a bucket refusal at at and reports
// whether it began a block. Refusals during a block never reach here, so
// they never count towards a lockout (they would re-arm it the moment it
// ended).
func (b *Bucket) refused(at time.Time, l Limit) bool {
	if l.Block <= 0 {
		return false
	}
	n := l.LockoutAfterRefusalsPerMin
	if n <= 0 {
		b.block(at, l) // a 403 storm: any refusal blocks
		return true
	}
	b.Refusals = append(b.Refusals, at)
	since := at.Add(-LockoutWindow)
	i := 0
	for i < len(b.Refusals) && !b.Refusals[i].After(since) {
		i++
	}
	b.Refusals = b.Refusals[i:]
	if len(b.Refusals) <= n {
		return false
	}
	b.block(at, l)
	b.Refusals = b.Refusals[:0]
	return true
}

func (b *Bucket) block(at time.Time, l Limit) {
	b.BlockedUntil = at.Add(l.Block)
	b.Blocks++
}

// Headers are RateLimit-Remaining and RateLimit-Reset as of at, perMin
// being the rate at at: the whole tokens left, and how long until a token
// is usable (0 if one is; during a block, at least until it ends), rounded
// up to whole ms so that a client that waits exactly Reset finds the token.
func (b *Bucket) Headers(at time.Time, perMin float64) (remaining int, reset time.Duration) {
	remaining = max(0, int(math.Floor(b.Tokens+tokenEpsilon)))
	if b.Tokens < 1-tokenEpsilon {
		reset = time.Duration((1 - b.Tokens) / perSec(perMin) * float64(time.Second))
	}
	if b.Blocked(at) {
		remaining = 0
		reset = max(reset, b.BlockedUntil.Sub(at))
	}
	return remaining, (reset + time.Millisecond - 1).Truncate(time.Millisecond)
}
