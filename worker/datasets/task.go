package datasets

import (
	"context"
	"fmt"
	"time"

	"storecrawl/worker/module"
)

// SnapshotEvery is the task's cadence: a run writes at most
// MaxQueriesPerRun pages (60,000 rows), so a day's runs cover ~8.6M rows;
// a run after the day's snapshot is done reads nothing.
const SnapshotEvery = 10 * time.Minute

// Tasks are the datasets' periodic work.
func Tasks(s *Snapshotter) []module.Task {
	return []module.Task{{
		Name: "dataset-snapshot", Every: SnapshotEvery, Jitter: time.Minute,
		Doc: "the daily dataset snapshot: the next parts of the public tables as NDJSON.gz in R2, then the manifest",
		Run: func(ctx context.Context, now func() time.Time) module.Result {
			if s == nil || s.DB == nil || s.Bucket == nil {
				return module.Result{Error: "no dataset store configured"}
			}
			r, err := s.Run(ctx, now())
			if err != nil {
				return module.Failed(err)
			}
			summary := fmt.Sprintf("snapshot %s: %d rows in %d parts, %d page reads", r.Date, r.Rows, r.Parts, r.Queries)
			switch {
			case r.Idle:
				summary = "snapshot " + r.Date + " is complete; the next starts tomorrow"
			case r.Finished:
				summary += "; manifest written"
			}
			return module.Result{OK: true, Summary: summary,
				Counters: map[string]int64{"rows": r.Rows, "parts": int64(r.Parts), "page_reads": int64(r.Queries)}}
		},
	}}
}
