package segments

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"storecrawl/worker/crawl"
	"storecrawl/worker/d1"
	"storecrawl/worker/refresh"
	"storecrawl/worker/registry"
)

// Crawl priorities follow the segments (the focus pass, docs/markets.md):
// the apps and keywords of the TopSegments segments by opportunity are the
// focus. A focus app still queued is enriched first (FocusAppPriority);
// an enriched one is tiered hot (refresh.TopSegmentTier, at once by
// refresh.Raise, then kept by the catalogue sweep's Facts.TopSegment); a
// focus keyword is picked before the other due keywords and rests a day
// (crawl.TopSegmentValue, TopSegmentInterval). Nothing is searched or
// looked at beyond the crawl's and the enrichment's own bounds: the focus
// changes their order. The pass writes only what changed: the focus rows
// that enter or leave the sets and the rows their entry or exit moves,
// at most MaxFocusChanges of each set a pass.

// Focus bounds and priority.
const (
	// TopSegments is how many segments, by opportunity, are the focus.
	TopSegments = 10
	// FocusAppsPerSegment: a top segment's apps in the focus, its leaders
	// first (Built.Apps' order); all it keeps (MaxSegmentApps).
	FocusAppsPerSegment = MaxSegmentApps
	// FocusKeywordsPerSegment: a top segment's keywords in the focus, the
	// first by keyword from idx_segment_keywords_segment (a stable choice:
	// a pass over unchanged segments writes nothing).
	FocusKeywordsPerSegment = 50
	// MaxFocusApps and MaxFocusKeywords bound the sets, so their reads
	// (the pass's, the sweep's and the steering's seeks) never grow with
	// the catalogue; MaxFocusKeywords is also the most the focus adds to a
	// day's searches' order (each rests a day): 500 of 28,800.
	MaxFocusApps     = TopSegments * FocusAppsPerSegment
	MaxFocusKeywords = TopSegments * FocusKeywordsPerSegment
	// MaxFocusChanges bounds what one pass changes of each set (entries
	// and exits together); a larger turnover finishes over the next
	// passes. Each change writes its focus row and at most one app or
	// keyword row, so a pass writes at most FocusRowsPerPass rows.
	MaxFocusChanges  = 250
	FocusRowsPerPass = 4 * MaxFocusChanges
	// FocusAppPriority is a queued focus app's enrich_priority: above the
	// default 0, below an operator's seed (crawl.SeedAppPriority), so the
	// EnrichmentController's pick (by priority, then ratings) takes the
	// seeds first, then the focus, then the rest.
	FocusAppPriority = 10
	// FocusEvery is the focus pass's cadence: the top segments move with
	// the incremental runs (30 min) and the daily full pass.
	FocusEvery = time.Hour
)

// TopSegment is a top segment as the pass reads it: its apps (leaders
// first) and its first keywords.
type TopSegment struct {
	ID       int64
	Apps     []int64
	Keywords []string
}

// Member is an app (or a keyword) of the focus and the segment that
// brought it in.
type Member[K cmp.Ordered] struct {
	Key     K
	Segment int64
}

// Target is the focus the top segments (in opportunity order) make: their
// apps and keywords, each once (for the best segment it is in), in that
// order, at most FocusAppsPerSegment and FocusKeywordsPerSegment a
// segment and MaxFocusApps, MaxFocusKeywords in all.
func Target(tops []TopSegment) (apps []Member[int64], keywords []Member[string]) {
	seenA, seenK := map[int64]bool{}, map[string]bool{}
	for _, t := range tops[:min(len(tops), TopSegments)] {
		for _, a := range t.Apps[:min(len(t.Apps), FocusAppsPerSegment)] {
			if !seenA[a] && len(apps) < MaxFocusApps {
				seenA[a] = true
				apps = append(apps, Member[int64]{a, t.ID})
			}
		}
		for _, k := range t.Keywords[:min(len(t.Keywords), FocusKeywordsPerSegment)] {
			if !seenK[k] && len(keywords) < MaxFocusKeywords {
				seenK[k] = true
				keywords = append(keywords, Member[string]{k, t.ID})
			}
		}
	}
	return apps, keywords
}

// PlanChanges is one pass's change of a set (current) toward target (in
// priority order): the entries (in target order) and the exits (sorted),
// at most changes of both together, the set never over limit. Free room
// is filled first, then exits make room for entries one for one, then
// the exits left are made with what remains.
func PlanChanges[K cmp.Ordered](current map[K]bool, target []Member[K], limit, changes int) (enter []Member[K], exit []K) {
	want := make(map[K]bool, len(target))
	var adds []Member[K]
	for _, m := range target {
		want[m.Key] = true
		if !current[m.Key] {
			adds = append(adds, m)
		}
	}
	var removes []K
	for k := range current {
		if !want[k] {
			removes = append(removes, k)
		}
	}
	slices.Sort(removes)
	changes = max(changes, 0)
	free := max(limit-len(current), 0)
	a := min(len(adds), free, changes)
	pairs := min((changes-a)/2, len(adds)-a, len(removes))
	r := pairs + min(len(removes)-pairs, changes-a-2*pairs)
	return adds[:a+pairs], removes[:r]
}

// FocusPriority is the decision for a focus app's queue priority: a
// queued app below FocusAppPriority is raised to it (entering), one at
// exactly FocusAppPriority returns to 0 (leaving); an enriched app, or one
// an operator raised higher, keeps its own.
func FocusPriority(queued bool, priority int, entering bool) (next int, change bool) {
	switch {
	case !queued:
		return priority, false
	case entering && priority < FocusAppPriority:
		return FocusAppPriority, true
	case !entering && priority == FocusAppPriority:
		return 0, true
	}
	return priority, false
}

// FocusResult is what a focus pass did.
type FocusResult struct {
	// Segments: the top segments read.
	Segments int `json:"segments"`
	// AppsIn/Out, KeywordsIn/Out: the focus rows written.
	AppsIn, AppsOut, KeywordsIn, KeywordsOut int
	// Raised: queued apps raised to FocusAppPriority; Lowered: returned to
	// 0; Hot: enriched apps raised to refresh.TopSegmentTier.
	Raised, Lowered, Hot int
	// NextLook is the latest next look (refresh.Raise) of the apps made hot.
	NextLook time.Time
}

// The focus pass's reads and writes.
const (
	// topSegmentsSQL: the ?1 live segments of best opportunity
	// (idx_segments_opportunity), each with its apps and its first ?2
	// keywords (idx_segment_keywords_segment, in key order).
	topSegmentsSQL = `SELECT s.id AS id, s.apps AS apps,
  (SELECT json_group_array(keyword) FROM (SELECT keyword FROM segment_keywords k WHERE k.segment_id = s.id ORDER BY keyword LIMIT ?2)) AS keywords
FROM segments s WHERE s.retired_at IS NULL AND s.opportunity > 0 ORDER BY s.opportunity DESC, s.id LIMIT ?1`
	// The current sets, bounded by the sets' own bounds (?1), read as a
	// range of their primary keys (every key is past the bound given).
	focusAppsSQL     = `SELECT track_id FROM segment_focus_apps WHERE track_id > 0 ORDER BY track_id LIMIT ?1`
	focusKeywordsSQL = `SELECT keyword FROM segment_focus_keywords WHERE keyword > '' ORDER BY keyword LIMIT ?1`
	// focusAppStateSQL: the entering and leaving apps' queue and tier, by key.
	focusAppStateSQL = `SELECT track_id, enriched_at IS NULL AS queued, enrich_priority AS priority,
  COALESCE(refresh_tier, '') AS tier FROM app_registry WHERE track_id IN (SELECT value FROM json_each(?1))`
	focusAppsInSQL = `INSERT INTO segment_focus_apps (track_id, segment_id, since)
SELECT value->>0, value->>1, ?2 FROM json_each(?1) WHERE true ON CONFLICT DO NOTHING`
	focusAppsOutSQL    = `DELETE FROM segment_focus_apps WHERE track_id IN (SELECT value FROM json_each(?1))`
	focusKeywordsInSQL = `INSERT INTO segment_focus_keywords (keyword, segment_id, since)
SELECT value->>0, value->>1, ?2 FROM json_each(?1) WHERE true ON CONFLICT DO NOTHING`
	focusKeywordsOutSQL = `DELETE FROM segment_focus_keywords WHERE keyword IN (SELECT value FROM json_each(?1))`
)

// Focus is one focus pass at now: the top segments read, each set moved
// toward them (PlanChanges), and what an entry or exit changes of its app
// or keyword written in the same atomic batch.
func (s Store) Focus(ctx context.Context, now time.Time) (FocusResult, error) {
	var res FocusResult
	var rows []struct {
		ID       int64  `json:"id"`
		Apps     string `json:"apps"`
		Keywords string `json:"keywords"`
	}
	if err := s.DB.Query(ctx, &rows, topSegmentsSQL, TopSegments, FocusKeywordsPerSegment); err != nil {
		return res, err
	}
	tops := make([]TopSegment, len(rows))
	for i, r := range rows {
		var apps []SegmentApp
		if err := json.Unmarshal([]byte(r.Apps), &apps); err != nil {
			return res, fmt.Errorf("segments: segment %d's apps: %w", r.ID, err)
		}
		tops[i].ID = r.ID
		for _, a := range apps {
			tops[i].Apps = append(tops[i].Apps, a.TrackID)
		}
		if err := json.Unmarshal([]byte(r.Keywords), &tops[i].Keywords); err != nil {
			return res, fmt.Errorf("segments: segment %d's keywords: %w", r.ID, err)
		}
	}
	res.Segments = len(tops)
	targetApps, targetKeywords := Target(tops)

	var curApps []struct {
		TrackID int64 `json:"track_id"`
	}
	if err := s.DB.Query(ctx, &curApps, focusAppsSQL, MaxFocusApps+MaxFocusChanges); err != nil {
		return res, err
	}
	var curKeywords []struct {
		Keyword string `json:"keyword"`
	}
	if err := s.DB.Query(ctx, &curKeywords, focusKeywordsSQL, MaxFocusKeywords+MaxFocusChanges); err != nil {
		return res, err
	}
	appSet := make(map[int64]bool, len(curApps))
	for _, r := range curApps {
		appSet[r.TrackID] = true
	}
	kwSet := make(map[string]bool, len(curKeywords))
	for _, r := range curKeywords {
		kwSet[r.Keyword] = true
	}
	appsIn, appsOut := PlanChanges(appSet, targetApps, MaxFocusApps, MaxFocusChanges)
	kwIn, kwOut := PlanChanges(kwSet, targetKeywords, MaxFocusKeywords, MaxFocusChanges)

	at := d1.Time(now)
	var stmts []d1.Stmt
	if len(appsIn)+len(appsOut) > 0 {
		more, err := s.focusApps(ctx, appsIn, appsOut, at, now, &res)
		if err != nil {
			return res, err
		}
		stmts = append(stmts, more...)
	}
	if len(kwIn)+len(kwOut) > 0 {
		var moved []string
		if len(kwIn) > 0 {
			pairs := make([][]any, len(kwIn))
			for i, m := range kwIn {
				pairs[i] = []any{m.Key, m.Segment}
				moved = append(moved, m.Key)
			}
			stmts = append(stmts, d1.Stmt{SQL: focusKeywordsInSQL, Args: []any{jsonArg(pairs), at}})
		}
		if len(kwOut) > 0 {
			stmts = append(stmts, d1.Stmt{SQL: focusKeywordsOutSQL, Args: []any{jsonArg(kwOut)}})
			moved = append(moved, kwOut...)
		}
		// After the focus rows: the keywords' schedules read them.
		stmts = append(stmts, crawl.Revalue(jsonArg(moved), now))
		res.KeywordsIn, res.KeywordsOut = len(kwIn), len(kwOut)
	}
	if len(stmts) == 0 {
		return res, nil
	}
	_, err := s.DB.ExecAtomic(ctx, stmts...)
	return res, err
}

// focusApps reads the entering and leaving apps' queue and tier, decides
// each (FocusPriority, refresh.Raise) and makes the writes: the focus
// rows and the apps whose priority or tier changes.
func (s Store) focusApps(ctx context.Context, in []Member[int64], out []int64, at string, now time.Time, res *FocusResult) ([]d1.Stmt, error) {
	ids := make([]int64, 0, len(in)+len(out))
	entering := make(map[int64]bool, len(in))
	for _, m := range in {
		ids = append(ids, m.Key)
		entering[m.Key] = true
	}
	ids = append(ids, out...)
	var state []struct {
		TrackID  int64  `json:"track_id"`
		Queued   int    `json:"queued"`
		Priority int    `json:"priority"`
		Tier     string `json:"tier"`
	}
	if err := s.DB.Query(ctx, &state, focusAppStateSQL, jsonArg(ids)); err != nil {
		return nil, err
	}
	var raise, lower, hot []int64
	for _, a := range state {
		if _, change := FocusPriority(a.Queued != 0, a.Priority, entering[a.TrackID]); change {
			if entering[a.TrackID] {
				raise = append(raise, a.TrackID)
			} else {
				lower = append(lower, a.TrackID)
			}
		}
		if !entering[a.TrackID] || a.Queued != 0 {
			continue
		}
		if _, next, raised := refresh.Raise(a.Tier, refresh.Slot(a.TrackID), now); raised {
			hot = append(hot, a.TrackID)
			if next.After(res.NextLook) {
				res.NextLook = next
			}
		}
	}
	var stmts []d1.Stmt
	if len(in) > 0 {
		pairs := make([][]any, len(in))
		for i, m := range in {
			pairs[i] = []any{m.Key, m.Segment}
		}
		stmts = append(stmts, d1.Stmt{SQL: focusAppsInSQL, Args: []any{jsonArg(pairs), at}})
	}
	if len(out) > 0 {
		stmts = append(stmts, d1.Stmt{SQL: focusAppsOutSQL, Args: []any{jsonArg(out)}})
	}
	if len(raise) > 0 {
		stmts = append(stmts, registry.RaisePriority(jsonArg(raise), FocusAppPriority))
	}
	if len(lower) > 0 {
		stmts = append(stmts, registry.LowerPriority(jsonArg(lower), FocusAppPriority))
	}
	if len(hot) > 0 {
		stmts = append(stmts, registry.RaiseTier(jsonArg(hot), refresh.TopSegmentTier, jsonArg(refresh.Below(refresh.TopSegmentTier))))
	}
	res.AppsIn, res.AppsOut, res.Raised, res.Lowered, res.Hot = len(in), len(out), len(raise), len(lower), len(hot)
	return stmts, nil
}

// FocusHotQueries are the focus pass's reads (explained by the plan
// tests). The focus sets are read whole: each holds at most its bound
// (MaxFocusApps, MaxFocusKeywords; PlanChanges).
func FocusHotQueries() []d1.NamedQuery {
	return []d1.NamedQuery{
		{Name: "top segments with their keywords", SQL: topSegmentsSQL, Args: []any{TopSegments, FocusKeywordsPerSegment}},
		{Name: "focus apps", SQL: focusAppsSQL, Args: []any{MaxFocusApps + MaxFocusChanges}},
		{Name: "focus keywords", SQL: focusKeywordsSQL, Args: []any{MaxFocusKeywords + MaxFocusChanges}},
		{Name: "focus app state", SQL: focusAppStateSQL, Args: []any{`[1,2]`}},
	}
}
