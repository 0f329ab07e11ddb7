package limiter

import (
	"encoding/json"
	"sync"
	"time"

	"storecrawl/durable/ledger"
	"storecrawl/durable/object"
)

// Objects is the in-memory state of every OmniLimiter object in one Go
// instance, keyed by object id. One Go instance serves every object of its
// isolate, and deciding in memory saves a storage read per acquire. An
// object unknown here (a fresh instance) answers Restore, and the shim
// hands over what its storage holds (Objects.Restore) before calling again.
type Objects struct {
	mu sync.Mutex
	m  map[string]*keyObject
}

type keyObject struct {
	state  *State // nil until restored under a policy
	key    string // remembered from the calls (the object id does not say it)
	ledger Ledger
}

// Call is one call into an OmniLimiter object: an HTTP-shaped request, when
// the caller's call began (its wait budget runs from there), and whether it
// has been held already.
type Call struct {
	Method    string `json:"method"`
	Path      string `json:"path"`
	Body      string `json:"body"`
	StartedMs int64  `json:"started_ms"`
	Waited    bool   `json:"waited"`
	// Storage is the object's storage operations so far, shown by /status
	// (the benchmark checks the writes per acquire).
	Storage StorageOps `json:"storage"`
}

// StorageOps counts an object's storage operations since it started.
type StorageOps struct {
	Writes int64 `json:"writes"`
	Reads  int64 `json:"reads"`
}

// StatusBody is GET /status's answer.
type StatusBody struct {
	Usage
	Storage StorageOps `json:"storage"`
}

// Answer is what the shim does after a call, in this order: restore and call
// again; persist Write; append Fact and store Closed (one transaction); keep
// the alarm due by OpenUntil; hold the caller WaitMs and call again; else
// answer Response (or, for Report, the ledger's side of reconciliation).
type Answer struct {
	// Restore asks for the object's storage under this policy.
	Restore *Policy `json:"restore,omitempty"`
	// RestoreStored asks for a restore under the policy storage keeps, if any
	// (a status call to an object this instance has not seen); without one,
	// Response (404) stands.
	RestoreStored bool             `json:"restore_stored,omitempty"`
	Write         *Write           `json:"write,omitempty"`
	Fact          *ledger.Fact     `json:"fact,omitempty"`
	Closed        *Counters        `json:"closed,omitempty"`
	OpenUntil     int64            `json:"open_until,omitempty"`
	WaitMs        int64            `json:"wait_ms,omitempty"`
	Report        string           `json:"report,omitempty"` // the ledger source whose report answers
	Response      *object.Response `json:"response,omitempty"`
}

// AcquireAnswer is the body of an acquire's 200 answer.
type AcquireAnswer struct {
	Allowed      bool  `json:"allowed"`
	RetryAfterMs int64 `json:"retryAfterMs"`
	Remaining    int   `json:"remaining"`
	ResetMs      int64 `json:"resetMs"`
}

func (o *Objects) object(id string) *keyObject {
	if o.m == nil {
		o.m = map[string]*keyObject{}
	}
	k, ok := o.m[id]
	if !ok {
		k = &keyObject{}
		o.m[id] = k
	}
	return k
}

// Handle routes one call to object id at now: POST /acquire, GET /status,
// GET /ledger. The acquire body was validated by the Worker; it is parsed
// again here, so the object never trusts its caller.
func (o *Objects) Handle(id string, c Call, now time.Time) Answer {
	o.mu.Lock()
	defer o.mu.Unlock()
	obj := o.object(id)
	switch {
	case c.Method == "POST" && c.Path == "/acquire":
		return obj.acquire(c, now)
	case c.Method == "GET" && c.Path == "/status":
		if obj.state == nil {
			return Answer{RestoreStored: true, Response: object.ErrorResponse(404, "key", "no acquire has been made for this key")}
		}
		return Answer{Response: &object.Response{Status: 200, Body: StatusBody{obj.state.Usage(now), c.Storage}}}
	case c.Method == "GET" && c.Path == "/ledger":
		var q struct {
			Key string `json:"key"`
		}
		if json.Unmarshal([]byte(c.Body), &q) != nil || !validKey(q.Key) {
			return Answer{Response: object.ErrorResponse(400, "key", "ledger report needs the key")}
		}
		return Answer{Report: ledger.SourceLimiterPrefix + q.Key}
	}
	return Answer{Response: object.ErrorResponse(404, "path", "no such limiter route: "+c.Method+" "+c.Path)}
}

func (obj *keyObject) acquire(c Call, now time.Time) Answer {
	a, fe := ParseAcquire([]byte(c.Body))
	if fe != nil {
		return Answer{Response: &object.Response{Status: 400, Body: fe}}
	}
	if obj.state == nil || obj.state.Policy != a.Policy {
		// Unknown here, or the caller's policy changed: rebuild from storage
		// under the policy given (storage keeps admissions, not the policy).
		return Answer{Restore: &a.Policy}
	}
	d := obj.state.Acquire(now, a.Cost)
	if c.Waited && d.Allowed {
		obj.state.Counters.Waited++
	}
	obj.key = a.Key
	var ans Answer
	if d.Allowed {
		ans.Write = d.Write
	}
	// Counted as the status counters are: every refused attempt (a held
	// caller's included), every admission, and admissions after a wait.
	ans.Fact, ans.Closed = obj.closeFact(obj.ledger.Count(now, d.Allowed, c.Waited), now)
	ans.OpenUntil = obj.ledger.OpenUntil()
	// Hold the caller instead of refusing while its wait budget lasts: one
	// subrequest instead of a retry loop of them.
	if !d.Allowed && now.Add(d.RetryAfter).UnixMilli() <= c.StartedMs+a.Wait.Milliseconds() {
		ans.WaitMs = max(1, d.RetryAfter.Milliseconds())
		return ans
	}
	ans.Response = &object.Response{Status: 200, Body: AcquireAnswer{
		Allowed: d.Allowed, RetryAfterMs: d.RetryAfter.Milliseconds(), Remaining: d.Remaining, ResetMs: d.Reset.Milliseconds(),
	}}
	return ans
}

// closeFact turns a closed minute into its ledger fact.
func (obj *keyObject) closeFact(t *Tally, now time.Time) (*ledger.Fact, *Counters) {
	if t == nil || obj.key == "" {
		return nil, nil
	}
	f := ledger.New(ledger.SourceLimiterPrefix+obj.key, "limiter.minute", now, t.Counters(), map[string]any{"minute": t.Start})
	closed := obj.ledger.Closed
	return &f, &closed
}

// Roll is the object's alarm: it closes the minute of a key that went quiet.
func (o *Objects) Roll(id string, now time.Time) Answer {
	o.mu.Lock()
	defer o.mu.Unlock()
	obj, ok := o.m[id]
	if !ok {
		return Answer{}
	}
	var ans Answer
	ans.Fact, ans.Closed = obj.closeFact(obj.ledger.Roll(now), now)
	ans.OpenUntil = obj.ledger.OpenUntil()
	return ans
}

// Stored is what the shim read from an object's storage for a restore.
type Stored struct {
	Policy  Policy  `json:"policy"`
	Entries []Entry `json:"entries"`
	TAT     int64   `json:"tat"`
	Tokens  float64 `json:"tokens"`
	LastMs  int64   `json:"last_ms"`
	// Closed is the lifetime counters the object stored with its last fact.
	Closed *Counters `json:"closed"`
}

// Restore rebuilds object id's state from its storage.
func (o *Objects) Restore(id string, in Stored, now time.Time) {
	s := Restore(in.Policy, in.Entries, in.TAT, in.Tokens, in.LastMs, now)
	o.mu.Lock()
	defer o.mu.Unlock()
	obj := o.object(id)
	if obj.state != nil {
		s.Counters = obj.state.Counters // a policy change keeps the key's counters
	} else if in.Closed != nil {
		// A fresh instance: the counters resume from what the ledger holds
		// (an open minute the old instance had not closed is lost to both).
		s.Counters = *in.Closed
		obj.ledger.Closed = *in.Closed
	}
	obj.state = s
}
