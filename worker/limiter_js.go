//go:build js && wasm

package worker

import (
	"encoding/json"
	"fmt"
	"sync"
	"syscall/js"
	"time"

	"storecrawl/durable/ledger"
	"storecrawl/durable/limiter"
)

// limiters holds each OmniLimiter object's in-memory state, keyed by the
// object's id: the Go instance is shared by every object in the isolate, and
// deciding in memory avoids a storage read per call. An object whose state
// is not here (fresh isolate, restarted Go instance) is restored from its
// storage first (limiterRestore).
var (
	limitersMu sync.Mutex
	limiters   = map[string]*limiter.State{}
	// limiterLedgers tallies each object's traffic into minute facts; the
	// key is remembered from its acquires (the object id does not say it).
	limiterLedgers = map[string]*limiterLedger{}
)

type limiterLedger struct {
	key string
	limiter.Ledger
}

// limiterAnswer is what the shim gets back from limiterAcquire.
type limiterAnswer struct {
	NeedRestore  bool            `json:"need_restore,omitempty"`
	Allowed      bool            `json:"allowed"`
	RetryAfterMs int64           `json:"retryAfterMs"`
	Remaining    int             `json:"remaining"`
	ResetMs      int64           `json:"resetMs"`
	Write        *limiter.Write  `json:"write,omitempty"`
	Policy       *limiter.Policy `json:"policy,omitempty"`
	// Fact closes a minute of traffic: the shim appends it to the ledger and
	// stores Closed (the lifetime sums) in the same transaction.
	Fact   *ledger.Fact      `json:"fact,omitempty"`
	Closed *limiter.Counters `json:"closed,omitempty"`
	// OpenUntil is when the open minute closes: the shim's alarm is due by then.
	OpenUntil int64 `json:"open_until,omitempty"`
}

// limiterAcquire(objectID, acquireJSON, nowMs, waited) → answer JSON.
// The acquire body was validated by the Worker; it is parsed again here so
// the object never trusts its caller.
func limiterAcquire(args []js.Value) any {
	id, now := args[0].String(), time.UnixMilli(int64(args[2].Float()))
	a, fe := limiter.ParseAcquire([]byte(args[1].String()))
	if fe != nil {
		b, _ := json.Marshal(fe)
		return string(b)
	}
	limitersMu.Lock()
	defer limitersMu.Unlock()
	s, ok := limiters[id]
	if !ok || s.Policy != a.Policy {
		// Unknown here, or the caller's policy changed: rebuild from storage
		// under the policy given (storage keeps only admissions, not policy).
		b, _ := json.Marshal(limiterAnswer{NeedRestore: true, Policy: &a.Policy})
		return string(b)
	}
	d := s.Acquire(now, a.Cost)
	waited := args[3].Truthy()
	if waited && d.Allowed {
		s.Counters.Waited++
	}
	ans := limiterAnswer{
		Allowed: d.Allowed, RetryAfterMs: d.RetryAfter.Milliseconds(), Remaining: d.Remaining,
		ResetMs: d.Reset.Milliseconds(), Write: d.Write,
	}
	l := ledgerOf(id)
	l.key = a.Key
	// Counted as the status counters are: every refused attempt (a held
	// caller's included), every admission, and admissions after a wait.
	ans.Fact, ans.Closed = l.closeFact(l.Count(now, d.Allowed, waited), now)
	ans.OpenUntil = l.OpenUntil()
	b, _ := json.Marshal(ans)
	return string(b)
}

func ledgerOf(id string) *limiterLedger {
	l, ok := limiterLedgers[id]
	if !ok {
		l = &limiterLedger{}
		limiterLedgers[id] = l
	}
	return l
}

// closeFact turns a closed minute into its ledger fact.
func (l *limiterLedger) closeFact(t *limiter.Tally, now time.Time) (*ledger.Fact, *limiter.Counters) {
	if t == nil || l.key == "" {
		return nil, nil
	}
	f := ledger.New(ledger.SourceLimiterPrefix+l.key, "limiter.minute", now, t.Counters(), map[string]any{"minute": t.Start})
	closed := l.Closed
	return &f, &closed
}

// limiterRoll(objectID, nowMs) → {fact?, closed?, open_until}: the alarm
// closes the minute of a key that went quiet.
func limiterRoll(args []js.Value) any {
	id, now := args[0].String(), time.UnixMilli(int64(args[1].Float()))
	limitersMu.Lock()
	defer limitersMu.Unlock()
	var ans limiterAnswer
	if l, ok := limiterLedgers[id]; ok {
		ans.Fact, ans.Closed = l.closeFact(l.Roll(now), now)
		ans.OpenUntil = l.OpenUntil()
	}
	b, _ := json.Marshal(ans)
	return string(b)
}

// restoreInput is what the shim read from the object's storage.
type restoreInput struct {
	Policy  limiter.Policy  `json:"policy"`
	Entries []limiter.Entry `json:"entries"`
	TAT     int64           `json:"tat"`
	Tokens  float64         `json:"tokens"`
	LastMs  int64           `json:"last_ms"`
	// Closed is the lifetime counters the object stored with its last fact.
	Closed *limiter.Counters `json:"closed"`
}

// limiterRestore(objectID, restoreJSON, nowMs) rebuilds an object's state.
func limiterRestore(args []js.Value) any {
	var in restoreInput
	if err := json.Unmarshal([]byte(args[1].String()), &in); err != nil {
		return fmt.Sprintf(`{"error":%q}`, err.Error())
	}
	now := time.UnixMilli(int64(args[2].Float()))
	s := limiter.Restore(in.Policy, in.Entries, in.TAT, in.Tokens, in.LastMs, now)
	limitersMu.Lock()
	if old, ok := limiters[args[0].String()]; ok {
		s.Counters = old.Counters // a policy change keeps the key's counters
	} else if in.Closed != nil {
		// A fresh instance: the counters resume from what the ledger holds
		// (an open minute the old instance had not closed is lost to both).
		s.Counters = *in.Closed
		ledgerOf(args[0].String()).Closed = *in.Closed
	}
	limiters[args[0].String()] = s
	limitersMu.Unlock()
	return `{"ok":true}`
}

// limiterStatus(objectID, nowMs) → usage JSON, or {"known":false}.
func limiterStatus(args []js.Value) any {
	limitersMu.Lock()
	defer limitersMu.Unlock()
	s, ok := limiters[args[0].String()]
	if !ok {
		return `{"known":false}`
	}
	b, _ := json.Marshal(s.Usage(time.UnixMilli(int64(args[1].Float()))))
	return string(b)
}
