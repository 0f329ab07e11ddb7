package tasks

import (
	"context"
	"time"

	"storecrawl/durable/scheduler"
	"storecrawl/worker/catalogue"
)

// The living catalogue's tasks, each in its own error boundary:
// catalogue-sweep (velocities and refresh schedules), catalogue-stale
// (mark apps not seen for the stale age) and history-prune (history past
// its retention), each a bounded walk over the catalogue from a cursor.

// CatalogueMaintainer runs the catalogue's tasks.
type CatalogueMaintainer interface {
	CatalogueSweep(ctx context.Context) catalogue.SweepResult
	MarkStale(ctx context.Context) catalogue.RangeResult
	PruneHistory(ctx context.Context) catalogue.RangeResult
}

// Catalogue is CatalogueMaintainer over D1, with the configured stale age.
type Catalogue struct {
	Store      catalogue.D1Store
	StaleAfter time.Duration
	Now        func() time.Time
}

// CatalogueSweep implements CatalogueMaintainer.
func (c Catalogue) CatalogueSweep(ctx context.Context) catalogue.SweepResult {
	return catalogue.Sweep(ctx, c.Store, c.Now())
}

// MarkStale implements CatalogueMaintainer.
func (c Catalogue) MarkStale(ctx context.Context) catalogue.RangeResult {
	return catalogue.MarkStale(ctx, c.Store, c.StaleAfter, c.Now())
}

// PruneHistory implements CatalogueMaintainer.
func (c Catalogue) PruneHistory(ctx context.Context) catalogue.RangeResult {
	return catalogue.PruneHistory(ctx, c.Store, c.Now())
}

// CatalogueSweep implements CatalogueMaintainer.
func (p Bindings) CatalogueSweep(ctx context.Context) catalogue.SweepResult {
	if p.Catalogue == nil {
		return catalogue.SweepResult{Error: errNoCatalogue}
	}
	return p.Catalogue.CatalogueSweep(ctx)
}

// MarkStale implements CatalogueMaintainer.
func (p Bindings) MarkStale(ctx context.Context) catalogue.RangeResult {
	if p.Catalogue == nil {
		return catalogue.RangeResult{Error: errNoCatalogue}
	}
	return p.Catalogue.MarkStale(ctx)
}

// PruneHistory implements CatalogueMaintainer.
func (p Bindings) PruneHistory(ctx context.Context) catalogue.RangeResult {
	if p.Catalogue == nil {
		return catalogue.RangeResult{Error: errNoCatalogue}
	}
	return p.Catalogue.PruneHistory(ctx)
}

const errNoCatalogue = "no catalogue maintainer bound"

// runCatalogueTask runs one of the catalogue's tasks; its error is the
// task's result.
func runCatalogueTask(ctx context.Context, name string, deps Deps) scheduler.ResultMsg {
	c, ok := deps.(CatalogueMaintainer)
	if !ok {
		return scheduler.ResultMsg{Task: name, Error: "platform cannot maintain the catalogue"}
	}
	switch name {
	case "catalogue-sweep":
		r := c.CatalogueSweep(ctx)
		return scheduler.ResultMsg{Task: name, OK: r.Error == "", Summary: r.Summary(), Error: r.Error}
	case "catalogue-stale":
		r := c.MarkStale(ctx)
		return scheduler.ResultMsg{Task: name, OK: r.Error == "", Summary: r.Summary("marked stale"), Error: r.Error}
	}
	r := c.PruneHistory(ctx)
	return scheduler.ResultMsg{Task: name, OK: r.Error == "", Summary: r.Summary("pruned"), Error: r.Error}
}
