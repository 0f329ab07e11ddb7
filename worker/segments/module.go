// Package segments is the markets as keyword communities: keywords whose
// top-ranked apps overlap form one market segment (Louvain on the keyword
// graph), scored by the markets' formulas over its apps, kept under a
// stable id from run to run, snapshotted daily for its trends, and related
// to the segments it shares apps with (docs/markets.md).
package segments

import (
	"context"
	"fmt"
	"time"

	"storecrawl/worker/module"
)

// Module is the segments' declaration.
var Module = module.Module{
	Name: "segments",
	Doc:  "market segments: communities of keywords whose top apps overlap, with stable ids, daily trends and relations",
	Tables: []module.Table{
		{Name: "segments", Writer: "worker/segments", Doc: "one segment: name, counts, scores, leading apps with their shares, trend, relations"},
		{Name: "segment_keywords", Writer: "worker/segments", Doc: "a partitioned keyword: its segment (or none) and the top apps it was placed with (their track ids and sum)"},
		{Name: "segment_dirty", Writer: "worker/segments", Doc: "a keyword whose top apps changed since it was partitioned"},
		{Name: "segment_lineage", Writer: "worker/segments", Doc: "a split or merge: keywords of one segment that went to another"},
		{Name: "segment_snapshots", Writer: "worker/segments", Doc: "a live segment's day: ratings, demand, opportunity, leaders' velocity and apps"},
		{Name: "segment_focus_apps", Writer: "worker/segments", Doc: "an app of a top segment by opportunity: enriched first, refreshed as hot"},
		{Name: "segment_focus_keywords", Writer: "worker/segments", Doc: "a keyword of a top segment by opportunity: searched first, again daily"},
	},
}

// Task cadences.
const (
	// UpdateEvery: the incremental run re-places the keywords the crawl's
	// searches changed (marked by the rankings-updated consumer).
	UpdateEvery = 30 * time.Minute
	// FullEvery: the full pass, with the day's snapshots, trends and relations.
	FullEvery = 24 * time.Hour
)

// Tasks are the segments' periodic work.
func Tasks(s *Store) []module.Task {
	run := func(f func(Store, context.Context, time.Time) (RunResult, error)) func(ctx context.Context, now func() time.Time) module.Result {
		return func(ctx context.Context, now func() time.Time) module.Result {
			if s == nil || s.DB == nil {
				return module.Result{Error: "no segments store configured"}
			}
			r, err := f(*s, ctx, now())
			if err != nil {
				return module.Failed(err)
			}
			return module.Result{OK: true,
				Summary:  fmt.Sprintf("%d keywords into %d segments (%d new, %d retired, %d lineage), %d write statements", r.Keywords, r.Segments, r.New, r.Retired, r.Lineage, r.Statements),
				Counters: map[string]int64{"keywords": int64(r.Keywords), "segments": int64(r.Segments), "write_statements": int64(r.Statements)}}
		}
	}
	return []module.Task{
		{Name: "segments-update", Every: UpdateEvery, Jitter: time.Minute,
			Doc: "re-places the keywords whose top apps changed into the existing segments, a few hundred a run",
			Run: run(Store.Update)},
		{Name: "segments-full", Every: FullEvery, Jitter: 10 * time.Minute,
			Doc: "every searched keyword re-partitioned into segments (stable ids, lineage), the day's snapshots, trends and relations",
			Run: run(Store.Full)},
		{Name: "segments-focus", Every: FocusEvery, Jitter: time.Minute,
			Doc: "the top segments' apps enriched first and refreshed as hot, their keywords searched first, within the crawl's bounds",
			Run: func(ctx context.Context, now func() time.Time) module.Result {
				if s == nil || s.DB == nil {
					return module.Result{Error: "no segments store configured"}
				}
				r, err := s.Focus(ctx, now())
				if err != nil {
					return module.Failed(err)
				}
				return module.Result{OK: true,
					Summary: fmt.Sprintf("%d top segments: apps %d in, %d out (%d queued raised, %d lowered, %d made hot); keywords %d in, %d out",
						r.Segments, r.AppsIn, r.AppsOut, r.Raised, r.Lowered, r.Hot, r.KeywordsIn, r.KeywordsOut),
					Counters: map[string]int64{"apps_in": int64(r.AppsIn), "apps_out": int64(r.AppsOut), "keywords_in": int64(r.KeywordsIn),
						"keywords_out": int64(r.KeywordsOut), "raised": int64(r.Raised), "hot": int64(r.Hot)}}
			}},
	}
}
