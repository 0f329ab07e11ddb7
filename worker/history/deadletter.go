package history

import (
	"context"
	"encoding/json"
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
	Body      string // truncated to appstore.MaxTextLen
	At        time.Time
}

// NewDeadLetter reads what it can from a dead message's body.
func NewDeadLetter(id, queue, body string, at time.Time) DeadLetter {
	var ev struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal([]byte(body), &ev) // undecodable bodies are recorded as they are
	return DeadLetter{MessageID: id, Queue: queue, EventType: appstore.Truncate(ev.Type, maxEventTypeLen), Body: appstore.Truncate(body, appstore.MaxTextLen), At: at}
}

// deadLetterInsertSQL records a dead letter once (keyed by message id).
const deadLetterInsertSQL = `INSERT OR IGNORE INTO dead_letters (message_id, queue, event_type, body, received_at) VALUES (?,?,?,?,?)`

// DeadLetterStatements record dead letters once each (keyed by message id,
// so a redelivered dead letter changes nothing).
func DeadLetterStatements(ds []DeadLetter) []d1.Stmt {
	stmts := make([]d1.Stmt, 0, len(ds))
	for _, d := range ds {
		var typ any
		if d.EventType != "" {
			typ = d.EventType
		}
		stmts = append(stmts, d1.Stmt{
			SQL:  deadLetterInsertSQL,
			Args: []any{d.MessageID, d.Queue, typ, d.Body, d1.Time(d.At)},
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

// RecordDeadLetters records a batch of the dead-letter queue in D1 (once
// each) and logs each one as queue.dead_letter. It reports whether the
// batch may be acknowledged: if D1 fails, the batch is retried (the DLQ
// consumer's own max_retries) rather than acknowledged unrecorded.
func RecordDeadLetters(ctx context.Context, store Store, queue string, msgs []DeadMessage, now time.Time) (ack bool) {
	ds := make([]DeadLetter, 0, len(msgs))
	for _, m := range msgs {
		ds = append(ds, NewDeadLetter(m.ID, queue, m.Body, now))
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
