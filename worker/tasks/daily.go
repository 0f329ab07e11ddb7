package tasks

import (
	"context"
	"fmt"
	"time"

	"storecrawl/worker/logx"
)

// The daily cron (CronDaily, off-peak): the data-quality check, one
// pipeline.data_quality event with the field coverage of a batch of
// enriched apps from its own cursor. It no longer copies every enriched
// app's ratings into app_snapshots: the history triggers record each
// change as an observation, and the rating sweep's pass (every enriched
// app within a day) snapshots any app whose stored ratings no snapshot
// holds, so a copy of unchanged values answered nothing the observations
// do not (the ratings at any time are the latest snapshot at or before
// it; velocity reads observations only).

// Daily run bounds.
const (
	// DailyQualityCursor names the daily check's cursor in sweep_cursors
	// (its name from when the run took snapshots: the position carries on).
	DailyQualityCursor = "daily-snapshot"
	// DailyQualityApps bounds one run: one read of this many enriched apps'
	// sums (about 4,000 rows read) and the cursor's one row written.
	DailyQualityApps = 2000
)

// DailyBounds is the daily check's pass: coverage only.
var DailyBounds = PassBounds{Cursor: DailyQualityCursor, BatchApps: DailyQualityApps, MaxBatches: 1}

// DailyResult is what one daily run did.
type DailyResult struct {
	Apps       int      `json:"apps"`
	Batches    int      `json:"batches"`
	FromCursor int64    `json:"from_cursor"`
	NextCursor int64    `json:"next_cursor"`
	Wrapped    bool     `json:"wrapped"` // reached the end of the catalogue: the next run starts over
	Coverage   Coverage `json:"coverage"`
	Gaps       []string `json:"gaps,omitempty"`
	Error      string   `json:"error,omitempty"`
}

// RunDaily measures the field coverage of the next DailyQualityApps
// enriched apps past its cursor and logs one pipeline.data_quality event.
func RunDaily(ctx context.Context, st PassStore, now func() time.Time) DailyResult {
	r := RunPass(ctx, st, DailyBounds, now())
	res := DailyResult{Apps: r.Apps, Batches: r.Batches, FromCursor: r.From, NextCursor: r.Next, Wrapped: r.Wrapped,
		Coverage: r.Coverage, Gaps: r.Coverage.Gaps(), Error: r.Error}
	fields := map[string]any{"coverage": res.Coverage, "gaps": res.Gaps, "from_cursor": res.FromCursor, "next_cursor": res.NextCursor}
	if len(res.Gaps) > 0 {
		fields["level"] = logx.Warn
	}
	logx.Event("pipeline.data_quality", fields)
	return res
}

// Summary is the one-line result of the run for /v1/system/cron.
func (r DailyResult) Summary() string {
	return fmt.Sprintf("%d apps checked in %d batches from cursor %d, next %d, gaps %v", r.Apps, r.Batches, r.FromCursor, r.NextCursor, r.Gaps)
}
