package ledgerdb

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"storecrawl/worker/appstore"
	"storecrawl/worker/d1"
	"storecrawl/worker/logx"
)

// Dead letters: a message of the EVENTS queue lands on its dead-letter queue
// (config.DeadLetterQueue) after max_retries failed deliveries; the same
// Worker consumes it, records it in D1 and logs queue.dead_letter, so a dead
// letter is kept for inspection (GET /v1/system/dead-letters), never dropped.

// maxEventTypeLen bounds the event type read from a dead body.
const maxEventTypeLen = 100

// DeadLetter is one recorded dead letter.
type DeadLetter struct {
	MessageID string
	Queue     string
	EventType string // "" when the body is not a decodable event
	Body      string // truncated to appstore.MaxTextLen, for reading
	// BodyKey is where the whole body is kept (R2), "" when it is not;
	// BodyBytes is its length.
	BodyKey   string
	BodyBytes int
	At        time.Time
}

// BodyBucket keeps dead messages' whole bodies (R2; the same method set as
// the raw pages' bucket).
type BodyBucket interface {
	Put(ctx context.Context, key string, body []byte, contentType string, meta map[string]string) error
	Get(ctx context.Context, key string) (body []byte, found bool, err error)
}

// DeadBodyKey is where a dead message's whole body is kept.
func DeadBodyKey(queue, messageID string) string {
	return "dead-letters/" + queue + "/" + messageID + ".json"
}

// NewDeadLetter reads what it can from a dead message's body.
func NewDeadLetter(id, queue, body string, at time.Time) DeadLetter {
	var ev struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal([]byte(body), &ev) // undecodable bodies are recorded as they are
	return DeadLetter{MessageID: id, Queue: queue, EventType: appstore.Truncate(ev.Type, maxEventTypeLen),
		Body: appstore.Truncate(body, appstore.MaxTextLen), BodyBytes: len(body), At: at}
}

// deadLetterInsertSQL records a dead letter once (keyed by message id).
const deadLetterInsertSQL = `INSERT OR IGNORE INTO dead_letters (message_id, queue, event_type, body, body_r2_key, body_bytes, received_at)
VALUES (?,?,?,?,?,?,?)`

// DeadLetterStatements record dead letters once each (keyed by message id,
// so a redelivered dead letter changes nothing).
func DeadLetterStatements(ds []DeadLetter) []d1.Stmt {
	stmts := make([]d1.Stmt, 0, len(ds))
	for _, d := range ds {
		var typ, key any
		if d.EventType != "" {
			typ = d.EventType
		}
		if d.BodyKey != "" {
			key = d.BodyKey
		}
		stmts = append(stmts, d1.Stmt{
			SQL:  deadLetterInsertSQL,
			Args: []any{d.MessageID, d.Queue, typ, d.Body, key, d.BodyBytes, d1.Time(d.At)},
		})
	}
	return stmts
}

// DeadMessage is one message of the dead-letter queue as delivered: its
// body as text (the runtime's undecodable bodies already JSON-quoted).
type DeadMessage struct {
	ID       string
	Body     string
	Attempts int
}

// RecordDeadLetters keeps each dead message's whole body in bodies (R2),
// then records the batch in D1 (once each) and logs each one as
// queue.dead_letter. The body goes first because R2 does not share D1's
// outages, which are what dead-letters ledger facts: whatever happens to
// the row, the body can be replayed. It reports whether the batch may be
// acknowledged: if R2 or D1 fails, the batch is retried (the DLQ consumer's
// own max_retries) rather than acknowledged unrecorded. bodies nil keeps
// only the preview.
func RecordDeadLetters(ctx context.Context, store Store, bodies BodyBucket, queue string, msgs []DeadMessage, now time.Time) (ack bool) {
	ds := make([]DeadLetter, 0, len(msgs))
	for _, m := range msgs {
		d := NewDeadLetter(m.ID, queue, m.Body, now)
		if bodies != nil {
			key := DeadBodyKey(queue, m.ID)
			meta := map[string]string{"queue": queue, "received_at": d1.Time(now)}
			if err := bodies.Put(ctx, key, []byte(m.Body), "application/json", meta); err != nil {
				logx.Err("queue.dead_letter_body_failed", err, map[string]any{"queue": queue, "id": m.ID})
				return false
			}
			d.BodyKey = key
		}
		ds = append(ds, d)
	}
	if err := store.SaveDeadLetters(ctx, ds); err != nil {
		logx.Err("queue.dead_letter_record_failed", err, map[string]any{"queue": queue, "messages": len(ds)})
		return false
	}
	for i, d := range ds {
		logx.Event("queue.dead_letter", map[string]any{"level": logx.Error, "queue": d.Queue, "id": d.MessageID,
			"event_type": d.EventType, "attempts": msgs[i].Attempts, "body": d.Body})
	}
	return true
}

// ReplayBatch bounds one replay call: each dead letter is an R2 read, a
// queue send and a D1 write, well inside one invocation.
const ReplayBatch = 25

// ReplaySkip is a dead letter a replay could not send, and why.
type ReplaySkip struct {
	MessageID string `json:"message_id"`
	Reason    string `json:"reason"`
}

// ReplayResult is what one replay call did.
type ReplayResult struct {
	Replayed []string     `json:"replayed"`
	Skipped  []ReplaySkip `json:"skipped"`
	// More: a full batch was taken, more may wait (call again).
	More bool `json:"more"`
}

// DeadLetterRef is a dead letter as a replay reads it.
type DeadLetterRef struct {
	MessageID string `json:"message_id"`
	Queue     string `json:"queue"`
	BodyKey   string `json:"body_r2_key"`
}

// ErrNoSuchDeadLetter: the message id a replay named is not recorded.
var ErrNoSuchDeadLetter = errors.New("no such dead letter")

// ReplayDeadLetters sends dead letters' whole bodies back to the queue they
// died from (send): the one named by messageID (again, even if replayed
// before), or else the oldest not yet replayed, up to ReplayBatch. A sent
// one is stamped replayed; one whose body is not kept in full, or whose
// send fails, is skipped and stays as it was. A replayed facts batch is
// stored once: the consumer ignores facts D1 already has.
func (s *Service) ReplayDeadLetters(ctx context.Context, messageID string, send func(ctx context.Context, body string) error) (ReplayResult, error) {
	refs, err := s.Store.DeadLettersToReplay(ctx, messageID, ReplayBatch)
	if err != nil {
		return ReplayResult{}, err
	}
	if messageID != "" && len(refs) == 0 {
		return ReplayResult{}, ErrNoSuchDeadLetter
	}
	res := ReplayResult{Replayed: []string{}, Skipped: []ReplaySkip{}, More: messageID == "" && len(refs) == ReplayBatch}
	skip := func(id, why string) { res.Skipped = append(res.Skipped, ReplaySkip{MessageID: id, Reason: why}) }
	for _, ref := range refs {
		if ref.BodyKey == "" || s.Bodies == nil {
			skip(ref.MessageID, "the whole body was not kept (recorded before bodies went to R2): only the preview is left")
			continue
		}
		body, found, err := s.Bodies.Get(ctx, ref.BodyKey)
		switch {
		case err != nil:
			skip(ref.MessageID, "reading the body: "+err.Error())
			continue
		case !found:
			skip(ref.MessageID, "the body is gone from R2")
			continue
		}
		if err := send(ctx, string(body)); err != nil {
			skip(ref.MessageID, "queue send: "+err.Error())
			continue
		}
		if err := s.Store.MarkReplayed(ctx, ref.MessageID, s.Now()); err != nil {
			// Sent but not stamped: a later replay may send it again, which
			// the consumers absorb (facts are stored once).
			logx.Err("queue.dead_letter_mark_failed", err, map[string]any{"id": ref.MessageID})
		}
		res.Replayed = append(res.Replayed, ref.MessageID)
		logx.Event("queue.dead_letter_replayed", map[string]any{"id": ref.MessageID, "queue": ref.Queue})
	}
	return res, nil
}
