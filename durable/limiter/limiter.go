// Package limiter is the decision logic of the OmniLimiter Durable Object: a
// global rate limiter with one object per key, exact under any concurrency
// (the object is single-threaded and decides in memory) and across restarts
// (every admission is persisted before it is answered).
//
// Three algorithms, all admitting `cost` units against `limit` per `window`:
//   - sliding_window (default, the seed's contract): no interval of length
//     window ever holds more than limit admitted units. Admissions are kept
//     in a ring of storage rows, slots 0..limit-1, so memory is bounded by
//     limit and each admission is one row, written over the row free
//     longest (never a live one, never a rewritten array). A restart or a
//     new limit keeps every live admission (see Restore).
//   - gcra: the generic cell rate algorithm, one timestamp of state. Any
//     interval t admits at most limit + t·limit/window units (burst = limit).
//   - token_bucket: limit tokens refilled at limit/window, one (tokens,
//     time) pair of state. Same bound as gcra.
//
// State in, decision out; the clock is passed in.
package limiter

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"

	"storecrawl/durable/object"
)

// Algorithm names.
type Algorithm string

const (
	SlidingWindow Algorithm = "sliding_window"
	GCRA          Algorithm = "gcra"
	TokenBucket   Algorithm = "token_bucket"
	// DefaultAlgorithm is exact over any window, the seed's contract.
	DefaultAlgorithm = SlidingWindow
)

// ClientPrefix is the namespace of the keys HTTP callers name (POST
// /v1/limiter/acquire): a client's "claude" is "client:claude" in its
// object's name, its ledger source and its facts. Internal callers (the
// crawler, worker/ratelimit) name their keys as they are, so no HTTP caller
// can reach, spend or read one of them ("upstream-catalogue") whatever it
// sends: its key always lands in this namespace.
const ClientPrefix = "client:"

// Request bounds.
const (
	MaxKeyLen = 128 // a key as its caller names it
	// MaxStoredKeyLen is the longest key an object holds: a client key
	// with its namespace.
	MaxStoredKeyLen = len(ClientPrefix) + MaxKeyLen
	MinLimit        = 1
	MaxLimit        = 1_000_000
	MinWindow       = time.Millisecond
	MaxWindow       = 24 * time.Hour
	MaxWait         = 60 * time.Second // longest a caller may ask to be held
)

// Bounds of a client key's policy, so what one client key makes an object
// keep is bounded. A sliding window keeps a storage row and an in-memory
// entry per admission, up to limit: MaxClientRing bounds both (gcra and
// token_bucket keep two values whatever their limit). An idle client key is
// retired, memory and storage, once its window has passed after its last
// admission (Objects.Roll): MaxClientWindow bounds how long an unused key's
// storage outlives its last call (plus the minute its ledger tally needs).
const (
	MaxClientRing   = 1_000     // rows of ~40 bytes: ≤ 40 KB of storage, ~24 KB of memory per key
	MaxClientWindow = time.Hour // internal keys may use up to MaxWindow
)

// IsClientKey says whether a stored key is in the clients' namespace.
func IsClientKey(key string) bool { return strings.HasPrefix(key, ClientPrefix) }

// Policy is what a key is limited to.
type Policy struct {
	Limit     int       `json:"limit"`
	Window    float64   `json:"windowInSeconds"`
	Algorithm Algorithm `json:"algorithm"`
}

func (p Policy) window() time.Duration { return time.Duration(p.Window * float64(time.Second)) }

// Acquire is a validated acquire request.
type Acquire struct {
	Key    string
	Policy Policy
	Cost   int
	Wait   time.Duration
	// Replace says the caller means to change the key's policy: without
	// it, a client key whose stored policy differs is a 409 (Conflict).
	Replace bool
}

// FieldError is a 400 body naming the offending field (durable/object).
type FieldError = object.FieldError

// ParseAcquire validates an acquire body as an object (or an internal
// caller) reads it: a key in the clients' namespace (ClientPrefix) is held
// to the client bounds, any other key to the request bounds. Bad input
// changes nothing: the caller must not touch any limiter state when this
// returns an error.
func ParseAcquire(body []byte) (Acquire, *FieldError) { return parseAcquire(body, false) }

// ParseClientAcquire validates the body an HTTP caller sent: its key, as the
// caller names it, is put in the clients' namespace (the returned Key has
// ClientPrefix), and the client bounds apply.
func ParseClientAcquire(body []byte) (Acquire, *FieldError) { return parseAcquire(body, true) }

// Body is the acquire's body as the key's object reads it (ParseAcquire
// answers the same Acquire): the Worker sends this, not the caller's bytes,
// so the namespaced key is what the object sees.
func (a Acquire) Body() []byte {
	b, _ := json.Marshal(map[string]any{
		"key": a.Key, "limit": a.Policy.Limit, "windowInSeconds": a.Policy.Window, "algorithm": a.Policy.Algorithm,
		"cost": a.Cost, "waitMs": a.Wait.Milliseconds(), "replace": a.Replace,
	})
	return b
}

func parseAcquire(body []byte, fromClient bool) (Acquire, *FieldError) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil || fields == nil {
		return Acquire{}, &FieldError{Error: "body must be a JSON object", Field: "body"}
	}
	a := Acquire{Cost: 1, Policy: Policy{Algorithm: DefaultAlgorithm}}
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		raw := fields[k]
		switch k {
		case "key":
			err := json.Unmarshal(raw, &a.Key)
			if err != nil || fromClient && !validKey(a.Key) || !fromClient && !validStoredKey(a.Key) {
				return Acquire{}, &FieldError{Field: k, Error: fmt.Sprintf("key must be 1–%d printable characters", MaxKeyLen)}
			}
			if fromClient {
				a.Key = ClientPrefix + a.Key
			}
		case "limit":
			v, ok := intField(raw)
			if !ok || v < MinLimit || v > MaxLimit {
				return Acquire{}, &FieldError{Field: k, Error: fmt.Sprintf("limit must be an integer from %d to %d", MinLimit, MaxLimit)}
			}
			a.Policy.Limit = int(v)
		case "windowInSeconds":
			// Its range depends on the key's namespace: checked below, once
			// the key is known.
			if err := json.Unmarshal(raw, &a.Policy.Window); err != nil || math.IsNaN(a.Policy.Window) {
				a.Policy.Window = -1
			}
		case "cost":
			v, ok := intField(raw)
			if !ok || v < 1 || v > MaxLimit {
				return Acquire{}, &FieldError{Field: k, Error: fmt.Sprintf("cost must be an integer from 1 to %d", MaxLimit)}
			}
			a.Cost = int(v)
		case "algorithm":
			var s string
			if err := json.Unmarshal(raw, &s); err != nil || (s != string(SlidingWindow) && s != string(GCRA) && s != string(TokenBucket)) {
				return Acquire{}, &FieldError{Field: k, Error: "algorithm must be sliding_window, gcra or token_bucket"}
			}
			a.Policy.Algorithm = Algorithm(s)
		case "waitMs":
			v, ok := intField(raw)
			if !ok || v < 0 || v > MaxWait.Milliseconds() {
				return Acquire{}, &FieldError{Field: k, Error: fmt.Sprintf("waitMs must be an integer from 0 to %d", MaxWait.Milliseconds())}
			}
			a.Wait = time.Duration(v) * time.Millisecond
		case "replace":
			if err := json.Unmarshal(raw, &a.Replace); err != nil {
				return Acquire{}, &FieldError{Field: k, Error: "replace must be a boolean"}
			}
		default:
			return Acquire{}, &FieldError{Field: k, Error: "unknown field " + strconv.Quote(k)}
		}
	}
	switch {
	case a.Key == "":
		return Acquire{}, &FieldError{Field: "key", Error: "key is required"}
	case a.Policy.Limit == 0:
		return Acquire{}, &FieldError{Field: "limit", Error: "limit is required"}
	case a.Policy.Window < MinWindow.Seconds() || a.Policy.Window > maxWindow(a.Key).Seconds():
		return Acquire{}, windowError(a.Key)
	case a.Cost > a.Policy.Limit:
		return Acquire{}, &FieldError{Field: "cost", Error: "cost exceeds limit: it could never be admitted"}
	}
	if IsClientKey(a.Key) {
		if fe := clientBounds(a.Policy); fe != nil {
			return Acquire{}, fe
		}
	}
	return a, nil
}

// clientBounds checks a client key's policy against the client bounds.
func clientBounds(p Policy) *FieldError {
	if p.Algorithm == SlidingWindow && p.Limit > MaxClientRing {
		return &FieldError{Field: "limit", Error: fmt.Sprintf("limit of a sliding_window must be from %d to %d (gcra and token_bucket: up to %d)", MinLimit, MaxClientRing, MaxLimit)}
	}
	return nil
}

// maxWindow is the longest window a key may have: MaxClientWindow in the
// clients' namespace, MaxWindow for the crawler's keys.
func maxWindow(key string) time.Duration {
	if IsClientKey(key) {
		return MaxClientWindow
	}
	return MaxWindow
}

// windowError is the one answer to a windowInSeconds that is missing, not
// a number or out of its key's range: the field and the range that applies.
func windowError(key string) *FieldError {
	return &FieldError{Field: "windowInSeconds", Error: fmt.Sprintf("windowInSeconds must be a number of seconds from %g to %g", MinWindow.Seconds(), maxWindow(key).Seconds())}
}

// validStoredKey checks a key as an object holds it: a valid key, with the
// clients' namespace or without.
func validStoredKey(k string) bool {
	return validKey(strings.TrimPrefix(k, ClientPrefix))
}

// ValidKey says whether k is a valid key as a caller names it.
func ValidKey(k string) bool { return validKey(k) }

func validKey(k string) bool {
	if len(k) == 0 || len(k) > MaxKeyLen {
		return false
	}
	for _, r := range k {
		if !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

func intField(raw json.RawMessage) (int64, bool) {
	var f float64
	if err := json.Unmarshal(raw, &f); err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, false
	}
	return int64(f), true
}

// PolicyConflict is the 409 body of an acquire whose policy differs from
// the one its client key has, without "replace": true.
type PolicyConflict struct {
	Error string `json:"error"`
	// Field is the first field that differs, Fields all of them.
	Field  string   `json:"field"`
	Fields []string `json:"fields"`
	// Policy is the key's policy, which stands.
	Policy Policy `json:"policy"`
}

// Conflict compares an acquire's policy with the key's: nil when they
// agree, or when the acquire says replace, or for the crawler's keys, whose
// policy is the code's (ratelimit.Limits) and changes with it. A client
// key's policy changes only when its client says so.
func Conflict(a Acquire, have Policy) *PolicyConflict {
	if a.Policy == have || a.Replace || !IsClientKey(a.Key) {
		return nil
	}
	var fields []string
	if a.Policy.Limit != have.Limit {
		fields = append(fields, "limit")
	}
	if a.Policy.Window != have.Window {
		fields = append(fields, "windowInSeconds")
	}
	if a.Policy.Algorithm != have.Algorithm {
		fields = append(fields, "algorithm")
	}
	return &PolicyConflict{
		Error: fmt.Sprintf("the key has another policy (limit %d, windowInSeconds %g, algorithm %s); differing: %s; send \"replace\": true to change it",
			have.Limit, have.Window, have.Algorithm, strings.Join(fields, ", ")),
		Field: fields[0], Fields: fields, Policy: have,
	}
}
