// Package ledger is each Durable Object's run history: an append-only list
// of immutable facts the object writes to its own storage (so it stays the
// single writer of its history) and replicates to D1 through a queue.
//
// A fact carries the changes it made to its writer's lifetime counters
// (Counters, as deltas), so the counters can always be rebuilt from the
// facts; Reconcile checks exactly that against what arrived in D1.
//
// Replication is at-least-once on the wire and exactly-once in D1: the
// writer marks a fact sent only after the queue accepted it (a failed
// send loses nothing and is retried with backoff), and confirmed only once
// a check finds it in D1 (a fact the queue lost is sent again: Confirm);
// D1 inserts with ON CONFLICT (id) DO NOTHING (a redelivered batch changes
// nothing). Facts leave the writer's storage only once confirmed and older
// than the retention period.
//
// Plain Go, clock passed in; the shim (shim/ledger.mjs) does the storage and
// the sending and asks Plan what to do next.
package ledger

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Fact is one immutable record of something an object did.
type Fact struct {
	ID     string `json:"id"`     // random UUID: unique without coordination
	Source string `json:"source"` // the writer, e.g. "controller:main"
	Kind   string `json:"kind"`   // e.g. "controller.tick"
	At     int64  `json:"at"`     // unix ms, from the runtime clock
	// Counters are the deltas this fact applied to its writer's lifetime
	// counters (absent counters did not change).
	Counters map[string]int64 `json:"counters,omitempty"`
	// Data describes the event (sizes, rates, errors); not summed.
	Data map[string]any `json:"data,omitempty"`
}

// New makes a fact with a fresh id. Zero counters are dropped.
func New(source, kind string, at time.Time, counters map[string]int64, data map[string]any) Fact {
	f := Fact{ID: uuid.NewString(), Source: source, Kind: kind, At: at.UnixMilli(), Data: data}
	for k, v := range counters {
		if v != 0 {
			if f.Counters == nil {
				f.Counters = map[string]int64{}
			}
			f.Counters[k] = v
		}
	}
	return f
}

// Diff is after − before per counter, keeping only the counters that
// changed: the deltas a fact carries.
func Diff(after, before map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for k, v := range after {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	for k, v := range before {
		if _, ok := after[k]; !ok && v != 0 {
			out[k] = -v
		}
	}
	return out
}

// Truncate bounds a text kept in a fact's data to n bytes.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// KindRetired is the last fact of a writer whose storage is about to be
// deleted (an idle limiter client key, durable/limiter.Objects.Retire). It
// changes no counter; its data.totals are the writer's lifetime counters
// and its fact count (FactsCounter: every fact it appended, this one
// included), which D1 subtracts from the writer's totals (the
// facts_retire_totals trigger, migrations/0015). So the retired writer's
// totals net to zero in D1, as its deleted storage does, and a later writer
// of the same source starts from zero on both sides. Its facts stay for
// history until pruned.
const KindRetired = "ledger.retired"

// Retired makes a writer's KindRetired fact: counters are its lifetime
// counters, appended the facts it appended before this one.
func Retired(source string, at time.Time, counters map[string]int64, appended int64) Fact {
	totals := map[string]int64{FactsCounter: appended + 1}
	for k, v := range counters {
		totals[k] = v
	}
	return New(source, KindRetired, at, nil, map[string]any{"totals": totals})
}

// Limits of a fact and a batch.
const (
	// MaxBatchFacts bounds one queue message: it is also D1's limit of
	// statements per batch, so the consumer writes a message in one batch.
	MaxBatchFacts = 100
	// MaxFactBytes bounds one encoded fact, so a full batch stays well
	// under the queue's 128 KB message limit.
	MaxFactBytes = 1024
	// maxNameLen bounds a fact's source and kind. It must hold the longest
	// source a writer makes: "limiter:" + a limiter key of up to 135 bytes
	// (limiter.MaxStoredKeyLen: a client's key of up to 128 bytes in the
	// "client:" namespace; a test there keeps the two in step).
	maxNameLen = 160
)

// MaxNameLen is maxNameLen, for the writers' tests.
const MaxNameLen = maxNameLen

// BatchType is the queue message type of a replication batch, and its
// kind (the field the EVENTS consumer routes on).
const BatchType = "facts"

// Batch is one replication message: facts of one writer. The shim sends
// it (shim/ledger.mjs) with kind and type both BatchType.
type Batch struct {
	Kind   string `json:"kind,omitempty"`
	Type   string `json:"type"`
	Source string `json:"source"`
	Facts  []Fact `json:"facts"`
}

// ErrBadBatch marks a message that can never be stored (it goes to the
// dead-letter queue for inspection, never dropped).
var ErrBadBatch = errors.New("bad facts batch")

// ParseBatch decodes and validates a replication message.
func ParseBatch(body []byte) (Batch, error) {
	var b Batch
	if err := json.Unmarshal(body, &b); err != nil {
		return b, fmt.Errorf("%w: %v", ErrBadBatch, err)
	}
	if b.Type != BatchType {
		return b, fmt.Errorf("%w: type %q", ErrBadBatch, b.Type)
	}
	if len(b.Facts) == 0 || len(b.Facts) > MaxBatchFacts {
		return b, fmt.Errorf("%w: %d facts, want 1..%d", ErrBadBatch, len(b.Facts), MaxBatchFacts)
	}
	for i, f := range b.Facts {
		if err := f.Validate(); err != nil {
			return b, fmt.Errorf("%w: fact %d: %v", ErrBadBatch, i, err)
		}
		if f.Source != b.Source {
			return b, fmt.Errorf("%w: fact %d from %q in a batch of %q", ErrBadBatch, i, f.Source, b.Source)
		}
	}
	return b, nil
}

// Validate checks the fields D1 relies on.
func (f Fact) Validate() error {
	if _, err := uuid.Parse(f.ID); err != nil {
		return fmt.Errorf("id %q is not a UUID", f.ID)
	}
	if f.Source == "" || len(f.Source) > maxNameLen || f.Kind == "" || len(f.Kind) > maxNameLen {
		return errors.New("source and kind must be 1..100 characters")
	}
	if f.At <= 0 {
		return errors.New("at must be a unix ms time")
	}
	for k := range f.Counters {
		if k == "" || len(k) > maxNameLen || strings.HasPrefix(k, "_") {
			return fmt.Errorf("counter name %q", k)
		}
	}
	return nil
}

// Replication policy of a writer.
const (
	// DebounceDelay coalesces the facts of a burst into one send: the first
	// unsent fact arms the flush, later ones ride along.
	DebounceDelay = 5 * time.Second
	// NextBatchDelay: more pending than one batch holds goes out this soon.
	NextBatchDelay = time.Second
	// SendEvery: a writer whose own alarms come more often than this (the
	// EnrichmentController's ticks, seconds apart) sends its facts at most
	// once in it, riding on its own wakes: one queue message a minute of
	// ticks, not one a tick. Its facts reach D1 at most this much later;
	// reconciliation counts the unsent ones (Report.Pending).
	SendEvery = time.Minute
	// FrequentWake is how soon the object's own next alarm must come for
	// a flush to be held (SendEvery): a limiter key's minute or a
	// scheduler task further off sends at once, as no wake of its own
	// would carry the facts sooner.
	FrequentWake = SendEvery / 2
	// RetryMin and RetryMax bound the backoff after a failed send
	// (doubling per consecutive failure).
	RetryMin = 5 * time.Second
	RetryMax = 5 * time.Minute
	// DefaultRetention keeps replicated facts in the writer's storage this
	// long (LEDGER_RETENTION_DAYS overrides it).
	DefaultRetention = 7 * 24 * time.Hour
	MinRetention     = time.Hour
	MaxRetention     = 90 * 24 * time.Hour
)

// Confirmation: the queue accepting a batch is not D1 having it. If the
// facts consumer cannot write (D1 down) through all its retries, the batch
// goes to the dead-letter queue, whose consumer keeps its body in R2 and a
// row in D1; with both down through all of its retries the message is
// gone. So a sent fact stays in the writer's storage, unconfirmed, until
// a check finds it in D1 (Confirm); one D1 does not have by then goes back
// to unsent and is sent again (D1 ignores a fact it already has).
const (
	// ConfirmAfter is how long after a send its facts are checked: the
	// EVENTS consumer's 4 deliveries (max_retries 3, wrangler.jsonc), each
	// within its 5 s batch timeout, take well under a minute; 10 minutes
	// leaves room for a backlog, and a fact still in flight that is sent
	// again costs one queue message, nothing in D1.
	ConfirmAfter = 10 * time.Minute
	// MinConfirmAfter bounds LEDGER_CONFIRM_AFTER_S from below: the
	// queue's deliveries take seconds. Only tests go that low (a retiring
	// limiter key waits for its facts' confirmation).
	MinConfirmAfter = 5 * time.Second
	// ConfirmBatch is how many facts one check asks D1 about: D1's 100
	// bound parameters per query.
	ConfirmBatch = 100
)

// Writer is the replication state of one object, kept by the shim.
type Writer struct {
	DueAt    int64 `json:"due_at"`   // unix ms of the next flush; 0 = nothing to send
	Failures int   `json:"failures"` // consecutive failed sends
	// ConfirmAt is when sent facts are next checked against D1 (unix ms);
	// 0 = none waits for a check.
	ConfirmAt int64 `json:"confirm_at,omitempty"`
	// SentAt is when the last batch left (unix ms; 0: none yet).
	SentAt int64 `json:"sent_at,omitempty"`
}

// Step is what happened since the last plan.
type Step struct {
	// Op: "append", "flush" (send now), "sent", "failed"; "confirmed" after a check against
	// D1, "confirm_failed" when the check could not be made.
	Op string `json:"op"`
	// Remaining is how many facts are still unsent (after "sent"/"failed").
	Remaining int `json:"remaining"`
	// OldestSentAt is when the oldest fact still unconfirmed was sent
	// (unix ms; 0 = none), after "confirmed".
	OldestSentAt int64 `json:"oldest_sent_at,omitempty"`
	// Resent is how many facts a check put back to unsent ("confirmed").
	Resent int `json:"resent,omitempty"`
	// Work is the object's own next alarm (unix ms; 0: none or unknown),
	// after "flush".
	Work int64 `json:"work,omitempty"`
}

// Plan is what the writer does next.
type Plan struct {
	Writer
	// BatchLimit is how many facts the next send takes.
	BatchLimit int `json:"batch_limit"`
	// PruneBefore: confirmed facts older than this (unix ms) may go.
	PruneBefore int64 `json:"prune_before"`
	// ConfirmBatch is how many sent facts one check takes, and
	// ConfirmSentBefore the newest send (unix ms) it may check.
	ConfirmBatch      int   `json:"confirm_batch"`
	ConfirmSentBefore int64 `json:"confirm_sent_before"`
}

// Confirm splits the sent facts a check asked D1 about: those D1 has are
// confirmed (they may leave the writer's storage after retention); the
// others go back to unsent, to be sent again.
func Confirm(asked []string, inD1 map[string]bool) (confirmed, resend []string) {
	for _, id := range asked {
		if inD1[id] {
			confirmed = append(confirmed, id)
		} else {
			resend = append(resend, id)
		}
	}
	return confirmed, resend
}

// Next advances the writer's replication state, checking sent facts
// ConfirmAfter after their send.
func Next(w Writer, st Step, retention time.Duration, now time.Time) Plan {
	return NextWith(w, st, retention, ConfirmAfter, now)
}

// ConfirmAfterFromSeconds validates the LEDGER_CONFIRM_AFTER_S setting
// (0 = ConfirmAfter).
func ConfirmAfterFromSeconds(s int) (time.Duration, error) {
	if s == 0 {
		return ConfirmAfter, nil
	}
	d := time.Duration(s) * time.Second
	if d < MinConfirmAfter || d > ConfirmAfter {
		return ConfirmAfter, fmt.Errorf("confirm after %s outside [%s, %s]", d, MinConfirmAfter, ConfirmAfter)
	}
	return d, nil
}

// NextWith is Next with sent facts checked confirmAfter after their send
// (0 = ConfirmAfter).
func NextWith(w Writer, st Step, retention, confirmAfter time.Duration, now time.Time) Plan {
	if confirmAfter <= 0 {
		confirmAfter = ConfirmAfter
	}
	ms := now.UnixMilli()
	switch st.Op {
	case "append":
		if w.DueAt == 0 {
			w.DueAt = now.Add(DebounceDelay).UnixMilli()
		}
	case "flush":
		// The writer is awake in an alarm with facts that need no
		// coalescing (a limiter key's closed minute, a summary already):
		// they go now, not in a wake of their own DebounceDelay later.
		// Unless the object wakes again within FrequentWake of its own and
		// sent a batch less than SendEvery ago: then they wait for
		// SendEvery after that send, riding on its wakes (WakeAt).
		w.DueAt = ms
		if every := SendEvery.Milliseconds(); st.Work > ms && st.Work-ms <= FrequentWake.Milliseconds() && w.SentAt > 0 && ms-w.SentAt < every {
			w.DueAt = w.SentAt + every
		}
	case "sent":
		w.Failures = 0
		w.DueAt = 0
		w.SentAt = ms
		if st.Remaining > 0 {
			w.DueAt = now.Add(NextBatchDelay).UnixMilli()
		}
		if w.ConfirmAt == 0 {
			w.ConfirmAt = now.Add(confirmAfter).UnixMilli()
		}
	case "failed":
		w.Failures++
		w.DueAt = now.Add(Backoff(w.Failures)).UnixMilli()
	case "confirmed":
		w.ConfirmAt = 0
		if st.OldestSentAt > 0 {
			// More wait: the oldest is checked when its time comes.
			w.ConfirmAt = max(now.Add(NextBatchDelay).UnixMilli(), st.OldestSentAt+confirmAfter.Milliseconds())
		}
		if st.Resent > 0 && (w.DueAt == 0 || w.DueAt > now.Add(NextBatchDelay).UnixMilli()) {
			w.DueAt = now.Add(NextBatchDelay).UnixMilli()
		}
	case "confirm_failed":
		w.ConfirmAt = now.Add(RetryMax).UnixMilli()
	}
	return Plan{Writer: w, BatchLimit: MaxBatchFacts, PruneBefore: ms - retention.Milliseconds(),
		ConfirmBatch: ConfirmBatch, ConfirmSentBefore: ms - confirmAfter.Milliseconds()}
}

// Waking a Durable Object is a billed request: the ledger's sends and
// checks ride on the object's own alarms where they can (an alarm sends
// the facts its work appended before it ends, and flushes the ledger
// before its work).
const (
	// SendRideAlong: a send due less than this before the object's next
	// alarm of its own (the controller's tick, the scheduler's next task,
	// a limiter key's minute close) waits for that alarm: one wake instead
	// of two, the facts in D1 at most this much later.
	SendRideAlong = time.Minute
	// CheckRideAlong is SendRideAlong for a check against D1, which no
	// reader waits for (a sent fact is in D1 already, or is sent again).
	CheckRideAlong = ConfirmAfter / 2
)

// WakeAt is when an object whose own next alarm is at work (unix ms; 0:
// none) wakes for itself and its ledger w: the earliest of them, except
// that the ledger's send due less than SendRideAlong before work, and its
// check due less than CheckRideAlong before it, ride on it. 0: no wake is
// needed.
func WakeAt(work int64, w Writer) int64 {
	at := work
	for _, c := range []struct {
		t    int64
		ride time.Duration
	}{{w.DueAt, SendRideAlong}, {w.ConfirmAt, CheckRideAlong}} {
		t := c.t
		if t <= 0 || (work > 0 && t >= work-c.ride.Milliseconds()) {
			continue // none, or riding on work
		}
		if at == 0 || t < at {
			at = t
		}
	}
	return at
}

// Backoff is the wait after the n-th consecutive failed send.
func Backoff(n int) time.Duration {
	if n < 1 {
		return 0
	}
	d := RetryMin << min(n-1, 16)
	return min(d, RetryMax)
}

// RetentionFromDays validates the LEDGER_RETENTION_DAYS setting ("" = default).
func RetentionFromDays(days float64) (time.Duration, error) {
	if days == 0 {
		return DefaultRetention, nil
	}
	d := time.Duration(days * float64(24*time.Hour))
	if d < MinRetention || d > MaxRetention {
		return DefaultRetention, fmt.Errorf("retention %s outside [%s, %s]", d, MinRetention, MaxRetention)
	}
	return d, nil
}
