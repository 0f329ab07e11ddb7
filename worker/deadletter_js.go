//go:build js && wasm

package worker

import (
	"context"
	"encoding/json"
	"time"

	"github.com/syumai/workers/cloudflare/queues"

	"storecrawl/worker/ledgerdb"
)

// consumeDeadLetters records a batch of the dead-letter queue
// (history.RecordDeadLetters): acknowledged once recorded, retried if D1
// failed (the DLQ consumer's own max_retries).
func consumeDeadLetters(batch *queues.MessageBatch) {
	msgs := make([]ledgerdb.DeadMessage, 0, len(batch.Messages))
	for _, m := range batch.Messages {
		body, err := m.StringBody()
		if err != nil {
			b, _ := json.Marshal(m.Body.String())
			body = string(b)
		}
		msgs = append(msgs, ledgerdb.DeadMessage{ID: m.ID, Body: body, Attempts: m.Attempts})
	}
	if !ledgerdb.RecordDeadLetters(context.Background(), historyStore, htmlBucket, batch.Queue, msgs, time.Now()) {
		batch.RetryAll()
		return
	}
	batch.AckAll()
}
