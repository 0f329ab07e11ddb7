package d1

import (
	"context"
	"sync/atomic"
)

// Cost counts what one unit of work (a cron run, a queue batch, an
// enrichment run) cost in D1, from D1's own result metadata.
type Cost struct {
	RowsRead    atomic.Int64
	RowsWritten atomic.Int64
	Queries     atomic.Int64
}

// CostView is Cost as JSON.
type CostView struct {
	RowsRead    int64 `json:"rows_read"`
	RowsWritten int64 `json:"rows_written"`
	Queries     int64 `json:"queries"`
}

// View snapshots the counters.
func (c *Cost) View() CostView {
	return CostView{RowsRead: c.RowsRead.Load(), RowsWritten: c.RowsWritten.Load(), Queries: c.Queries.Load()}
}

type costKey struct{}

// WithCost returns a context whose statements are counted in the returned Cost.
func WithCost(ctx context.Context) (context.Context, *Cost) {
	c := &Cost{}
	return context.WithValue(ctx, costKey{}, c), c
}

func addCost(ctx context.Context, m Meta) {
	if c, ok := ctx.Value(costKey{}).(*Cost); ok {
		c.RowsRead.Add(m.RowsRead)
		c.RowsWritten.Add(m.RowsWritten)
		c.Queries.Add(1)
	}
}
