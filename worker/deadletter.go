package worker

import (
	"encoding/json"
	"time"

	"storecrawl/worker/appstore"
	"storecrawl/worker/d1"
)

// DeadLetterQueue is the EVENTS queue's dead-letter queue (wrangler.jsonc).
// A message lands there after max_retries failed deliveries; the same
// Worker consumes it, records it in D1 and logs queue.dead_letter, so a
// dead letter is kept for inspection (GET /v1/system/dead-letters), never
// dropped.
const DeadLetterQueue = "storecrawl-events-dlq"

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
	return DeadLetter{MessageID: id, Queue: queue, EventType: appstore.Truncate(ev.Type, 100), Body: appstore.Truncate(body, appstore.MaxTextLen), At: at}
}

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
			SQL:  `INSERT OR IGNORE INTO dead_letters (message_id, queue, event_type, body, received_at) VALUES (?,?,?,?,?)`,
			Args: []any{d.MessageID, d.Queue, typ, d.Body, d.At.UTC().Format("2006-01-02T15:04:05.000Z")},
		})
	}
	return stmts
}

// deadLettersSQL lists dead letters, newest first (idx_dead_letters_received).
const deadLettersSQL = `SELECT json_object('message_id', message_id, 'queue', queue, 'event_type', event_type,
  'body', body, 'received_at', received_at) AS record
FROM dead_letters ORDER BY received_at DESC LIMIT ? OFFSET ?`
