package limiter

import (
	"encoding/json"
	"strconv"
	"sync"
	"time"

	"storecrawl/durable/ledger"
	"storecrawl/durable/object"
	"storecrawl/internal/objects"
)

// Objects is the in-memory state of the OmniLimiter objects one Go instance
// serves, keyed by object id. One Go instance serves every object of its
// isolate, and deciding in memory saves a storage read per acquire. An
// object unknown here (a fresh instance, an evicted entry) answers Restore,
// and the shim hands over what its storage holds (Objects.Restore) before
// calling again.
//
// Memory is bounded twice: an idle client key is retired (Roll, Retire:
// entry and storage go), and past MaxObjects entries the least recently
// used one is evicted.
type Objects struct {
	// TallyPeriod is the span of each key's ledger facts (0: TallyPeriod,
	// a minute); set before the first call.
	TallyPeriod time.Duration

	mu sync.Mutex
	m  map[string]*keyObject
}

// Bounds of the objects.
const (
	// MaxObjects bounds the entries one Go instance keeps. The runtime may
	// move an object to another isolate without telling this one, so an
	// entry can outlive its object; past the bound the least recently used
	// entry goes. Its object restores from storage on its next call; only
	// the tally of its open minute, not yet a fact, is lost (to its facts
	// and its counters alike, so the two still agree). 1,000 client sliding
	// windows of MaxClientRing entries are ~24 MB.
	MaxObjects = 1000
	// RetireRetry is when a retirement that could not finish (its fact not
	// sent: the storage stays) is tried again.
	RetireRetry = time.Minute
)

type keyObject struct {
	state  *State // nil until restored under a policy
	key    string // from the calls or storage (the object id does not say it)
	ledger Ledger
	used   time.Time // the last call or restore (LRU eviction)
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
	// Requests is the object's billed requests so far, shown by /status
	// (the scale bench counts the limiter's Durable Object requests).
	Requests Requests `json:"requests"`
}

// Requests counts an object's billed Durable Object requests since it
// started: calls (an acquire, a status or ledger read) and alarms.
type Requests struct {
	Calls  int64 `json:"calls"`
	Alarms int64 `json:"alarms"`
}

// StorageOps counts an object's storage operations since it started.
type StorageOps struct {
	Writes int64 `json:"writes"`
	Reads  int64 `json:"reads"`
}

// StatusBody is GET /status's answer.
type StatusBody struct {
	Usage
	Storage  StorageOps `json:"storage"`
	Requests Requests   `json:"requests"`
}

// Answer is what the shim does after a call, in this order: restore and call
// again; persist Write; append Fact and store Closed (one transaction); keep
// the alarm due by OpenUntil; hold the caller WaitMs and call again; else
// answer Response (or, for Report, the ledger's side of reconciliation).
type Answer struct {
	// Restore asks for the object's storage under this policy (after
	// RestoreStored, when both are set and storage keeps a policy: then
	// the call comes again instead).
	Restore *Policy `json:"restore,omitempty"`
	// Key is the object's key, for the shim to keep with the policy (a
	// restore of a fresh instance gets it back).
	Key string `json:"key,omitempty"`
	// RestoreStored asks for a restore under the policy storage keeps, if any
	// (a status call or an alarm of an object this instance has not seen),
	// and to call again; without one, Response (404) stands. Storage is
	// only read: an unknown key gets no storage.
	RestoreStored bool             `json:"restore_stored,omitempty"`
	Write         *Write           `json:"write,omitempty"`
	Fact          *ledger.Fact     `json:"fact,omitempty"`
	Closed        *Counters        `json:"closed,omitempty"`
	OpenUntil     int64            `json:"open_until,omitempty"`
	WaitMs        int64            `json:"wait_ms,omitempty"`
	Report        string           `json:"report,omitempty"` // the ledger source whose report answers
	Response      *object.Response `json:"response,omitempty"`
	// Retire (an alarm's answer) says the client key is idle: the shim
	// sends its ledger's last facts, asks Retire for the retirement fact,
	// sends it and deletes the object's storage.
	Retire bool `json:"retire,omitempty"`
	// RetireAt is when to roll again for the retirement (unix ms; 0: the
	// key is never retired, an internal one).
	RetireAt int64 `json:"retire_at,omitempty"`
}

// AcquireAnswer is the body of an acquire's 200 answer.
type AcquireAnswer struct {
	Allowed      bool  `json:"allowed"`
	RetryAfterMs int64 `json:"retryAfterMs"`
	Remaining    int   `json:"remaining"`
	ResetMs      int64 `json:"resetMs"`
}

// object is id's entry, made if needed (evicting the least recently used
// one past MaxObjects).
func (o *Objects) object(id string, now time.Time) *keyObject {
	if o.m == nil {
		o.m = map[string]*keyObject{}
	}
	k, ok := o.m[id]
	if !ok {
		if len(o.m) >= MaxObjects {
			o.evictLRU()
		}
		k = &keyObject{ledger: Ledger{Period: o.TallyPeriod}}
		o.m[id] = k
	}
	k.used = now
	return k
}

// evictLRU drops the least recently used entry: a scan, only when a new
// object arrives at the bound.
func (o *Objects) evictLRU() {
	var oldest string
	var at time.Time
	for id, k := range o.m {
		if oldest == "" || k.used.Before(at) {
			oldest, at = id, k.used
		}
	}
	delete(o.m, oldest)
}

// Handle routes one call to object id at now: POST /acquire, GET /status,
// GET /ledger. The acquire body was validated by the Worker; it is parsed
// again here, so the object never trusts its caller. Only an acquire makes
// an entry: a status or ledger call of an unknown key leaves no trace.
func (o *Objects) Handle(id string, c Call, now time.Time) Answer {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch {
	case c.Method == "POST" && c.Path == "/acquire":
		a, fe := ParseAcquire([]byte(c.Body))
		if fe != nil {
			return Answer{Response: &object.Response{Status: 400, Body: fe}}
		}
		return o.object(id, now).acquire(a, c, now)
	case c.Method == "GET" && c.Path == "/status":
		obj, ok := o.m[id]
		if !ok || obj.state == nil {
			return Answer{RestoreStored: true, Response: object.ErrorResponse(404, "key", "no acquire has been made for this key")}
		}
		obj.used = now
		return Answer{Response: &object.Response{Status: 200, Body: StatusBody{obj.state.Usage(now), c.Storage, c.Requests}}}
	case c.Method == "GET" && c.Path == "/ledger":
		var q struct {
			Key string `json:"key"`
		}
		if json.Unmarshal([]byte(c.Body), &q) != nil || !validStoredKey(q.Key) {
			return Answer{Response: object.ErrorResponse(400, "key", "ledger report needs the key")}
		}
		return Answer{Report: objects.SourceLimiterPrefix + q.Key}
	case c.Method == "POST" && c.Path == "/ledger/repair":
		return o.repair(id, []byte(c.Body), now)
	}
	return Answer{Response: object.ErrorResponse(404, "path", "no such limiter route: "+c.Method+" "+c.Path)}
}

func (obj *keyObject) acquire(a Acquire, c Call, now time.Time) Answer {
	switch {
	case obj.state == nil && IsClientKey(a.Key):
		// Unknown here: restore under the policy storage keeps, then this
		// call comes again and is compared with it; with none stored (a
		// new or retired key), restore under the caller's.
		return Answer{RestoreStored: true, Restore: &a.Policy, Key: a.Key}
	case obj.state == nil:
		// The crawler's keys take the code's policy as it is.
		return Answer{Restore: &a.Policy, Key: a.Key}
	case obj.state.Policy != a.Policy:
		if c := Conflict(a, obj.state.Policy); c != nil {
			return Answer{Response: &object.Response{Status: 409, Body: c}}
		}
		// The caller changes the policy: rebuild from storage under the new
		// one (storage keeps admissions; the shim stores the policy).
		return Answer{Restore: &a.Policy, Key: a.Key}
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

// repair brings a key's lifetime counters back to its facts
// (durable/ledger.Repair): the closed counters the ledger's facts sum to,
// and the status counters with them. The fact and the closed counters go
// to storage together, as a closed minute's do.
func (o *Objects) repair(id string, body []byte, now time.Time) Answer {
	var q struct {
		Key string `json:"key"`
	}
	if json.Unmarshal(body, &q) != nil || !validStoredKey(q.Key) {
		return Answer{Response: object.ErrorResponse(400, "key", "ledger repair needs the key")}
	}
	rep, field, msg := ledger.ParseRepair(body)
	if field != "" {
		return Answer{Response: object.ErrorResponse(400, field, msg)}
	}
	obj, ok := o.m[id]
	if !ok || obj.state == nil {
		return Answer{RestoreStored: true, Response: object.ErrorResponse(404, "key", "no acquire has been made for this key")}
	}
	obj.used = now
	c := &obj.ledger.Closed
	refs := map[string]*int64{"allowed": &c.Allowed, "refused": &c.Refused, "waited": &c.Waited}
	counters := map[string]int64{}
	for k, p := range refs {
		counters[k] = *p
	}
	repaired, unknown := rep.Apply(counters)
	if unknown != "" {
		return Answer{Response: object.ErrorResponse(409, "delta", "a limiter key keeps no counter "+strconv.Quote(unknown))}
	}
	status := map[string]*int64{"allowed": &obj.state.Counters.Allowed, "refused": &obj.state.Counters.Refused, "waited": &obj.state.Counters.Waited}
	for k, v := range repaired {
		*status[k] += v - *refs[k]
		*refs[k] = v
	}
	f := rep.Fact(objects.SourceLimiterPrefix+q.Key, now)
	closed := *c
	return Answer{Fact: &f, Closed: &closed, Response: &object.Response{Status: 200, Body: f}}
}

// closeFact turns a closed minute into its ledger fact.
func (obj *keyObject) closeFact(t *Tally, now time.Time) (*ledger.Fact, *Counters) {
	if t == nil || obj.key == "" {
		return nil, nil
	}
	f := ledger.New(objects.SourceLimiterPrefix+obj.key, "limiter.minute", now, t.Counters(), map[string]any{"minute": t.Start})
	closed := obj.ledger.Closed
	return &f, &closed
}

// Roll is the object's alarm: it closes the minute of a key that went
// quiet, and says when an idle client key is due for retirement. An object
// this instance does not hold answers RestoreStored, so a fresh instance
// still closes and retires what storage holds.
func (o *Objects) Roll(id string, now time.Time) Answer {
	o.mu.Lock()
	defer o.mu.Unlock()
	obj, ok := o.m[id]
	if !ok || obj.state == nil {
		return Answer{RestoreStored: true}
	}
	var ans Answer
	ans.Fact, ans.Closed = obj.closeFact(obj.ledger.Roll(now), now)
	ans.OpenUntil = obj.ledger.OpenUntil()
	if at := obj.retireAt(); at > now.UnixMilli() {
		ans.RetireAt = at
	} else if at > 0 {
		ans.Retire, ans.RetireAt = true, now.Add(RetireRetry).UnixMilli()
	}
	return ans
}

// retireAt is when the object may be retired (unix ms), 0 for never. Only
// client keys are: the internal ones are few and named in code, and their
// counters are the dashboard's. A client key may be once its state is a
// fresh one's (State.IdleAt) and no minute is open (its tally is a fact).
func (obj *keyObject) retireAt() int64 {
	if obj.state == nil || !IsClientKey(obj.key) {
		return 0
	}
	return max(obj.state.IdleAt(), obj.ledger.OpenUntil(), 1)
}

// Retire ends an idle client key's object at now: it answers the key's last
// ledger fact (ledger.KindRetired, which takes the key's totals back out of
// D1) and forgets the object, whose storage the shim deletes once the fact
// is sent. appended is how many facts the object's ledger holds ever
// appended; every one must be sent before. nil when the object is not
// retirable (any more): used since, or not held here.
func (o *Objects) Retire(id string, appended int64, now time.Time) *ledger.Fact {
	o.mu.Lock()
	defer o.mu.Unlock()
	obj, ok := o.m[id]
	if !ok {
		return nil
	}
	if at := obj.retireAt(); at == 0 || at > now.UnixMilli() {
		return nil
	}
	c := obj.ledger.Closed
	lifetime := Tally{Allowed: c.Allowed, Refused: c.Refused, Waited: c.Waited}.Counters()
	f := ledger.Retired(objects.SourceLimiterPrefix+obj.key, now, lifetime, appended)
	delete(o.m, id)
	return &f
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
	// Key is the key the object stored with its policy ("" before).
	Key string `json:"key"`
}

// Restore rebuilds object id's state from its storage.
func (o *Objects) Restore(id string, in Stored, now time.Time) {
	s := Restore(in.Policy, in.Entries, in.TAT, in.Tokens, in.LastMs, now)
	o.mu.Lock()
	defer o.mu.Unlock()
	obj := o.object(id, now)
	if in.Key != "" {
		obj.key = in.Key
	}
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
