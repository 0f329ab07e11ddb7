package worker

import (
	"context"
	"sync/atomic"
)

// D1Cost counts what one unit of work (a cron cycle, a queue batch) cost in
// D1, from D1's own result metadata (meta.rows_read / rows_written).
type D1Cost struct {
	RowsRead    atomic.Int64
	RowsWritten atomic.Int64
	Queries     atomic.Int64
}

// D1CostView is D1Cost as JSON.
type D1CostView struct {
	RowsRead    int64 `json:"rows_read"`
	RowsWritten int64 `json:"rows_written"`
	Queries     int64 `json:"queries"`
}

// View snapshots the counters.
func (c *D1Cost) View() D1CostView {
	return D1CostView{RowsRead: c.RowsRead.Load(), RowsWritten: c.RowsWritten.Load(), Queries: c.Queries.Load()}
}

type costKey struct{}

// WithD1Cost returns a context whose D1 calls are counted in the returned cost.
func WithD1Cost(ctx context.Context) (context.Context, *D1Cost) {
	c := &D1Cost{}
	return context.WithValue(ctx, costKey{}, c), c
}

// addD1Cost records one statement's metadata against ctx's cost, if any.
func addD1Cost(ctx context.Context, read, written int64) {
	if c, ok := ctx.Value(costKey{}).(*D1Cost); ok {
		c.RowsRead.Add(read)
		c.RowsWritten.Add(written)
		c.Queries.Add(1)
	}
}
