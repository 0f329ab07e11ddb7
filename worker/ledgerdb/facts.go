package ledgerdb

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"time"

	"storecrawl/durable/ledger"
	"storecrawl/worker/d1"
	"storecrawl/worker/logx"
)

// factInsertSQL stores one fact once: a redelivered fact conflicts and
// inserts nothing (the facts_add_totals trigger fires only for rows actually
// inserted). RETURNING names the row inserted, so the batch counts them.
const factInsertSQL = `INSERT INTO facts (id, source, kind, at, counters, data, received_at) VALUES (?,?,?,?,?,?,?)
ON CONFLICT (id) DO NOTHING RETURNING id`

// FactStatements stores a batch: one idempotent insert per fact (a
// redelivered batch inserts nothing; the facts_add_totals trigger fires only
// for rows actually inserted). RETURNING names the rows inserted.
func FactStatements(b ledger.Batch, now time.Time) []d1.Stmt {
	stmts := make([]d1.Stmt, 0, len(b.Facts))
	for _, f := range b.Facts {
		counters, _ := json.Marshal(f.Counters)
		if f.Counters == nil {
			counters = []byte("{}")
		}
		data, _ := json.Marshal(f.Data)
		if f.Data == nil {
			data = []byte("{}")
		}
		stmts = append(stmts, d1.Stmt{
			SQL:  factInsertSQL,
			Args: []any{f.ID, f.Source, f.Kind, f.At, string(counters), string(data), now.UnixMilli()},
		})
	}
	return stmts
}

// FactWriter runs a batch of statements and reports the rows they inserted.
type FactWriter interface {
	WriteFacts(ctx context.Context, stmts []d1.Stmt) (inserted int64, err error)
}

// ConsumerStats count what this instance's consumer did with facts batches
// (the "consumer" of /v1/ledger).
type ConsumerStats struct {
	Batches        atomic.Int64
	Facts          atomic.Int64
	Inserted       atomic.Int64
	Duplicates     atomic.Int64 // facts already in D1: a redelivery absorbed
	FaultsInjected atomic.Int64 // batches FailAfterWrite failed after writing
}

// View snapshots the stats.
func (c *ConsumerStats) View() map[string]int64 {
	return map[string]int64{
		"batches": c.Batches.Load(), "facts": c.Facts.Load(), "inserted": c.Inserted.Load(),
		"duplicates": c.Duplicates.Load(), "faults_injected": c.FaultsInjected.Load(),
	}
}

// HandleFacts stores one replication message. A bad message returns an
// error wrapping ledger.ErrBadBatch (retried into the dead-letter queue);
// a D1 failure returns an error (retried); redelivery inserts nothing new.
// A writer's ErrInjected (FailAfterWrite: the batch was written) is counted
// as a stored batch and a fault, and returned, so the message is retried.
func HandleFacts(ctx context.Context, body string, w FactWriter, stats *ConsumerStats, now time.Time) error {
	b, err := ledger.ParseBatch([]byte(body))
	if err != nil {
		return err
	}
	changed, err := w.WriteFacts(ctx, FactStatements(b, now))
	injected := errors.Is(err, ErrInjected)
	if err != nil && !injected {
		return err
	}
	stats.Batches.Add(1)
	stats.Facts.Add(int64(len(b.Facts)))
	stats.Inserted.Add(changed)
	stats.Duplicates.Add(int64(len(b.Facts)) - changed)
	logx.Event("ledger.facts_stored", map[string]any{"source": b.Source, "facts": len(b.Facts), "inserted": changed})
	if injected {
		stats.FaultsInjected.Add(1)
		return err
	}
	return nil
}

// IsFactsMessage tells a replication batch from a pipeline event by its
// body: the EVENTS consumer's legacy routing of a message without a kind.
func IsFactsMessage(body string) bool {
	var probe struct {
		Type string `json:"type"`
	}
	return json.Unmarshal([]byte(body), &probe) == nil && probe.Type == ledger.BatchType
}

// ErrInjected is FailAfterWrite's failure: the batch is in D1, yet the
// message is retried.
var ErrInjected = errors.New("injected failure after write (LEDGER_FAULT_FAIL_AFTER_WRITE)")

// FailAfterWrite is a FactWriter for the exactly-once test
// (LEDGER_FAULT_FAIL_AFTER_WRITE): it fails its first N batches after
// Writer stored them, as a consumer that dies between D1's commit and the
// ack would, so the queue redelivers a batch D1 already has. Use one per
// instance, by pointer.
type FailAfterWrite struct {
	Writer FactWriter
	N      int64
	failed atomic.Int64
}

// WriteFacts writes through Writer, then fails while fewer than N batches
// have failed.
func (f *FailAfterWrite) WriteFacts(ctx context.Context, stmts []d1.Stmt) (int64, error) {
	n, err := f.Writer.WriteFacts(ctx, stmts)
	if err != nil {
		return n, err
	}
	if f.failed.Load() < f.N && f.failed.Add(1) <= f.N {
		return n, ErrInjected
	}
	return n, nil
}

// ErrFailedBeforeWrite is FailBeforeWrite's failure: nothing was written.
var ErrFailedBeforeWrite = errors.New("injected D1 failure before the write")

// FailBeforeWrite is a FactWriter for the dead-letter replay test: while
// on, every batch fails before anything is written, as in a D1 outage, so
// its message is retried into the dead-letter queue. Switched at runtime
// by the test-only POST /__test/faults.
type FailBeforeWrite struct {
	Writer FactWriter
	on     atomic.Bool
}

// SetFailBeforeWrite turns the fault on or off.
func (f *FailBeforeWrite) SetFailBeforeWrite(on bool) { f.on.Store(on) }

// WriteFacts fails while the fault is on, else writes through Writer.
func (f *FailBeforeWrite) WriteFacts(ctx context.Context, stmts []d1.Stmt) (int64, error) {
	if f.on.Load() {
		return 0, ErrFailedBeforeWrite
	}
	return f.Writer.WriteFacts(ctx, stmts)
}
