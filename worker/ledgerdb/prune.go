package ledgerdb

import (
	"context"
	"fmt"
	"sort"
	"time"

	"storecrawl/worker/d1"
)

// Bounds of the facts-prune task: D1 keeps raw facts FACTS_RETENTION_DAYS
// (config) and the per-minute rollups as far back as /v1/history reads.
const (
	// RollupMargin keeps fact_minutes a day past MaxHistoryAge, so the
	// oldest window /v1/history accepts never meets a pruned minute.
	RollupMargin    = 24 * time.Hour
	RollupRetention = MaxHistoryAge + RollupMargin
	// PruneBatchRows bounds one DELETE: a short write, and at most this
	// many rows written (plus their index entries).
	PruneBatchRows = 1000
	// PruneRunRows bounds one hourly run's deletes: over a hundred times the
	// facts a day brings (a tick per 10 s, a minute per limiter key, a few
	// hundred task runs), so a backlog drains within days and a run stays
	// small.
	PruneRunRows = 20_000
	// PruneRunStatements bounds one run's DELETEs (each is a D1 call, and
	// every writer ever seen, ad-hoc limiter keys too, takes two even with
	// nothing to delete): well under a Worker invocation's subrequest limit.
	PruneRunStatements = 100
	// pruneCursorName names the run's cursor in sweep_cursors: the writer
	// the last run stopped at, "" when it finished them all.
	pruneCursorName = "facts-prune"
)

// PruneStore is what pruning needs of D1.
type PruneStore interface {
	// SourcesInD1 lists every writer D1 has facts from.
	SourcesInD1(ctx context.Context) ([]string, error)
	// PruneCursor reads the writer the last run stopped at ("" for none).
	PruneCursor(ctx context.Context) (d1.Cursor, error)
	// SavePruneCursor moves it to source (a write only when it moved).
	SavePruneCursor(ctx context.Context, c d1.Cursor, source string, at time.Time) error
	// PruneFacts deletes up to n of a writer's oldest facts older than
	// before (unix ms) and returns how many it deleted.
	PruneFacts(ctx context.Context, source string, before int64, n int) (int64, error)
	// PruneMinutes does the same for the writer's fact_minutes rows.
	PruneMinutes(ctx context.Context, source string, before int64, n int) (int64, error)
}

// PruneResult is what one run did.
type PruneResult struct {
	Facts      int64  `json:"facts"`   // raw facts deleted
	Minutes    int64  `json:"minutes"` // rollup minutes deleted
	Statements int    `json:"statements"`
	Writers    int    `json:"writers"` // writers finished (nothing older than the cutoffs left)
	From       string `json:"from"`    // the cursor the run started at
	Next       string `json:"next"`    // where the next run starts; "" = from the first writer
	Error      string `json:"error,omitempty"`
}

// Summary is the task's one line.
func (r PruneResult) Summary() string {
	s := fmt.Sprintf("pruned %d facts and %d rollup minutes in %d statements; %d writers done", r.Facts, r.Minutes, r.Statements, r.Writers)
	if r.Next != "" {
		s += "; next run continues at " + r.Next
	}
	return s
}

// Prune deletes raw facts older than retention and rollup minutes older
// than RollupRetention, writer by writer from the cursor (wrapping round),
// each writer's oldest first in batches of PruneBatchRows, until every
// writer is done or the run's bounds are spent; the cursor keeps the
// writer it stopped at. fact_totals is untouched, so reconciliation reads
// the same totals after pruning. A failed statement ends the run; deletes
// are idempotent, so the next run just goes on.
func Prune(ctx context.Context, st PruneStore, retention time.Duration, now time.Time) PruneResult {
	var r PruneResult
	factsBefore := now.Add(-retention).UnixMilli()
	minutesBefore := minuteOf(now.Add(-RollupRetention).UnixMilli())
	cur, err := st.PruneCursor(ctx)
	if err != nil {
		r.Error = "cursor: " + err.Error()
		return r
	}
	cursor := cur.Text()
	r.From, r.Next = cursor, cursor
	sources, err := st.SourcesInD1(ctx)
	if err != nil {
		r.Error = "writers: " + err.Error()
		return r
	}
	sort.Strings(sources)
	start := sort.SearchStrings(sources, cursor) // a vanished cursor writer: the next one
	rows := 0
	// drain deletes one writer's rows of one kind in batches; false when the
	// run's bounds stopped it before the writer was done.
	drain := func(del func(n int) (int64, error), count *int64) (bool, error) {
		for {
			n := min(PruneBatchRows, PruneRunRows-rows)
			if n <= 0 || r.Statements >= PruneRunStatements {
				return false, nil
			}
			deleted, err := del(n)
			r.Statements++
			if err != nil {
				return false, err
			}
			rows += int(deleted)
			*count += deleted
			if deleted < int64(n) {
				return true, nil
			}
		}
	}
	r.Next = ""
	for i := range sources {
		src := sources[(start+i)%len(sources)]
		done, err := drain(func(n int) (int64, error) { return st.PruneFacts(ctx, src, factsBefore, n) }, &r.Facts)
		if err == nil && done {
			done, err = drain(func(n int) (int64, error) { return st.PruneMinutes(ctx, src, minutesBefore, n) }, &r.Minutes)
		}
		if err != nil {
			r.Error, r.Next = fmt.Sprintf("%s: %v", src, err), cursor // the stored cursor stays
			break
		}
		if !done {
			r.Next = src
			break
		}
		r.Writers++
	}
	if r.Error == "" {
		if err := st.SavePruneCursor(ctx, cur, r.Next, now); err != nil {
			r.Error = "cursor: " + err.Error()
		}
	}
	return r
}

// Pruner is the facts-prune task's side of D1, with the configured
// retention (FACTS_RETENTION_DAYS).
type Pruner struct {
	Store     PruneStore
	Retention time.Duration
	Now       func() time.Time
}

// PruneFacts runs one prune (the facts-prune task).
func (p Pruner) PruneFacts(ctx context.Context) PruneResult {
	return Prune(ctx, p.Store, p.Retention, p.Now())
}
