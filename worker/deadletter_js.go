//go:build js && wasm

package worker

import (
	"context"
	"encoding/json"
	"time"

	"github.com/syumai/workers/cloudflare/queues"

	"storecrawl/worker/logx"
)

// consumeDeadLetters records a batch of the dead-letter queue in D1 and
// logs each one. If D1 fails, the batch is retried (the DLQ consumer's own
// max_retries) rather than acknowledged unrecorded.
func (p Platform) consumeDeadLetters(batch *queues.MessageBatch) {
	now := time.Now()
	ds := make([]DeadLetter, 0, len(batch.Messages))
	for _, m := range batch.Messages {
		body, err := m.StringBody()
		if err != nil {
			b, _ := json.Marshal(m.Body.String())
			body = string(b)
		}
		ds = append(ds, NewDeadLetter(m.ID, batch.Queue, body, now))
	}
	if err := p.execCtx(context.Background(), DeadLetterStatements(ds)); err != nil {
		logx.Err("queue.dead_letter_record_failed", err, map[string]any{"queue": batch.Queue, "messages": len(ds)})
		batch.RetryAll()
		return
	}
	for i, d := range ds {
		logx.Event("queue.dead_letter", map[string]any{"level": logx.Error, "queue": d.Queue, "id": d.MessageID,
			"event_type": d.EventType, "attempts": batch.Messages[i].Attempts, "body": d.Body})
	}
	batch.AckAll()
}

// DeadLetters lists recorded dead letters, newest first.
func (p Platform) DeadLetters(ctx context.Context, limit, offset int) ([]json.RawMessage, error) {
	rows, err := queryAll(ctx, deadLettersSQL, limit, offset)
	if err != nil {
		return nil, err
	}
	out := make([]json.RawMessage, 0, len(rows))
	for _, r := range rows {
		out = append(out, json.RawMessage(r.Get("record").String()))
	}
	return out, nil
}

// SendRawEvent puts body on the EVENTS queue as it is.
func (Platform) SendRawEvent(_ context.Context, body string) error {
	q, err := queues.NewProducer(bindingEvents)
	if err != nil {
		return err
	}
	return q.SendText(body)
}
