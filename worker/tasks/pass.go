package tasks

import (
	"context"
	"time"

	"storecrawl/worker/d1"
)

// A pass walks enriched apps in track order from a cursor in batches: the
// rating sweep's (a snapshot of the apps whose stored ratings no snapshot
// holds yet). Every sum is taken in SQL, so a batch is one read whatever
// its size, and the cursor is written once a run, only when it
// moved: the pass's work is idempotent (a copy is written only where none
// matches), so a run that fails part way resumes from the last position
// it saved and repeats nothing but reads.

// PassBatch is one batch's sums.
type PassBatch struct {
	Apps int   `json:"apps"`
	Last int64 `json:"last"` // the batch's last track id (0: none)
	// Unsnapshotted counts the apps whose stored rating count and average
	// are not their latest snapshot's (or that have none).
	Unsnapshotted int `json:"unsnapshotted"`
}

// PassStore is what a pass needs of D1.
type PassStore interface {
	ReadCursor(ctx context.Context, name string) (d1.Cursor, error)
	// PassBatch sums the next n enriched apps past after.
	PassBatch(ctx context.Context, after int64, n int) (PassBatch, error)
	// SnapshotUnsnapshotted writes a snapshot at at of each enriched app
	// in (after, last] whose stored ratings its latest snapshot does not
	// hold, and returns how many it wrote.
	SnapshotUnsnapshotted(ctx context.Context, after, last int64, at time.Time) (int64, error)
	SaveCursor(ctx context.Context, c d1.Cursor, to int64, at time.Time) (d1.Cursor, error)
}

// PassBounds is one pass's shape.
type PassBounds struct {
	Cursor     string // its name in sweep_cursors
	BatchApps  int    // apps a batch (one read)
	MaxBatches int    // batches a run
	Snapshot   bool   // write the missing snapshots
}

// PassResult is what one run of a pass did.
type PassResult struct {
	Apps      int    `json:"apps"`
	Batches   int    `json:"batches"`
	From      int64  `json:"from_cursor"`
	Next      int64  `json:"next_cursor"`
	Wrapped   bool   `json:"wrapped"` // reached the end of the catalogue: the next run starts over
	Snapshots int64  `json:"snapshots"`
	Error     string `json:"error,omitempty"`
}

// RunPass walks up to b.MaxBatches batches of b.BatchApps enriched apps
// from the cursor, stopping at the end of the catalogue (the cursor wraps
// to 0). A failed batch ends the run; the cursor is saved where the last
// whole batch ended.
func RunPass(ctx context.Context, st PassStore, b PassBounds, now time.Time) PassResult {
	var r PassResult
	cur, err := st.ReadCursor(ctx, b.Cursor)
	if err != nil {
		r.Error = "cursor: " + err.Error()
		return r
	}
	cursor := cur.Int()
	r.From, r.Next = cursor, cursor
	for i := 0; i < b.MaxBatches; i++ {
		batch, err := st.PassBatch(ctx, cursor, b.BatchApps)
		if err != nil {
			r.Error = "read: " + err.Error()
			break
		}
		if b.Snapshot && batch.Unsnapshotted > 0 {
			n, err := st.SnapshotUnsnapshotted(ctx, cursor, batch.Last, now)
			if err != nil {
				r.Error = "write: " + err.Error()
				break
			}
			r.Snapshots += n
		}
		r.Apps += batch.Apps
		r.Batches++
		next := batch.Last
		if batch.Apps < b.BatchApps {
			next = 0 // a short batch is the end: wrap
		}
		cursor, r.Next = next, next
		if next == 0 {
			r.Wrapped = true
			break
		}
	}
	if _, err := st.SaveCursor(ctx, cur, r.Next, now); err != nil && r.Error == "" {
		r.Error = "cursor: " + err.Error()
	}
	return r
}
