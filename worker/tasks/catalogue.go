package tasks

import (
	"context"
	"time"

	"storecrawl/worker/catalogue"
)

// The living catalogue's tasks (Tasks): catalogue-sweep (velocities and
// refresh tiers), catalogue-stale (mark apps not seen for the stale age)
// and history-prune (history past its retention).

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

const errNoCatalogue = "no catalogue maintainer bound"
