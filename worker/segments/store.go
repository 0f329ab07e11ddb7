package segments

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"sort"
	"time"

	"storecrawl/worker/d1"
	"storecrawl/worker/events"
	"storecrawl/worker/logx"
)

// Store bounds.
const (
	// ReadChunk is the keywords (or apps) one read names: ~10 rankings a
	// keyword, well under D1's 2 MB result and argument sizes.
	ReadChunk = 2_000
	// WriteChunk is the rows one write statement carries (a JSON array
	// under D1's 2 MB argument bound).
	WriteChunk = 1_000
	// MaxDirtyPerRun is how many marked keywords one incremental run
	// takes; the rest wait for the next run.
	MaxDirtyPerRun = 500
	// MaxRegionKeywords bounds the keywords an incremental run
	// re-partitions (the marked ones, the keywords sharing their top apps
	// and the segments of both): a larger region is left, marked, to the
	// full pass.
	MaxRegionKeywords = 20_000
	// MaxFullPassKeywords bounds a full pass (memory and time at 100,000
	// keywords, and the command that prints them: docs/markets.md); past
	// it the pass refuses.
	MaxFullPassKeywords = 150_000
	// SnapshotKeep is how many days of snapshots GET /v1/segments/{id} shows.
	SnapshotKeep = 30
	// MaxDetailKeywords, MaxDetailLineage bound what one segment's page lists.
	MaxDetailKeywords = 500
	MaxDetailLineage  = 50
)

// Store runs the segments on D1.
type Store struct{ DB *d1.DB }

// The reads. Rankings by crawl_rankings' primary key (keyword, then the
// rank filter on the keyword's ~44 rows).
const (
	topsSQL = `SELECT keyword, track_id FROM crawl_rankings
WHERE keyword IN (SELECT value FROM json_each(?1)) AND rank <= ?2 ORDER BY keyword, rank, track_id`
	// allTopsSQL is a full pass's chunk: the next ?2 searched keywords past
	// ?1 (crawl_keywords' unique key), each one's top apps.
	allTopsSQL = `WITH batch AS (SELECT keyword FROM crawl_keywords WHERE keyword > ?1 AND searched_at IS NOT NULL ORDER BY keyword LIMIT ?2)
SELECT batch.keyword AS keyword, r.track_id AS track_id FROM batch LEFT JOIN crawl_rankings r ON r.keyword = batch.keyword AND r.rank <= ?3
ORDER BY batch.keyword, r.rank, r.track_id`
	appStatsSQL = `SELECT track_id, COALESCE(rating_count, 0) AS ratings, COALESCE(average_rating, 0) AS rating,
  competitiveness_score AS comp, rating_velocity_7d AS v7, rating_velocity_30d AS v30
FROM app_registry WHERE track_id IN (SELECT value FROM json_each(?1))`
	// neighbourKeywordsSQL: the keywords where apps (?1) rank in the top
	// ?2 (idx_crawl_rankings_track), at most ?3.
	neighbourKeywordsSQL = `SELECT DISTINCT keyword FROM crawl_rankings
WHERE track_id IN (SELECT value FROM json_each(?1)) AND rank <= ?2 LIMIT ?3`
	keywordSegmentsSQL = `SELECT keyword, segment_id FROM segment_keywords WHERE keyword IN (SELECT value FROM json_each(?1)) AND segment_id IS NOT NULL`
	segmentKeywordsSQL = `SELECT keyword, segment_id FROM segment_keywords WHERE segment_id IN (SELECT value FROM json_each(?1))`
	allSegmentKwSQL    = `SELECT keyword, segment_id FROM segment_keywords WHERE keyword > ?1 AND segment_id IS NOT NULL ORDER BY keyword LIMIT ?2`
	nextIDSQL          = `SELECT COALESCE(MAX(id), 0) + 1 AS next FROM segments`
	dirtySQL           = `SELECT keyword FROM segment_dirty ORDER BY keyword LIMIT ?1`
	snapshotPointsSQL  = `SELECT segment_id, day, total_ratings, apps FROM segment_snapshots WHERE segment_id IN (SELECT value FROM json_each(?1)) AND day IN (?2, ?3)`
)

// The writes: one statement a chunk of rows (a JSON array at ?1), each row
// written only when a value differs from the stored one.
const (
	// markSQL marks keywords (?1) whose top ?3 apps' track-id sum differs
	// from the one they were partitioned with (or that never were).
	markSQL = `INSERT INTO segment_dirty (keyword, marked_at)
SELECT k.value, ?2 FROM json_each(?1) k
WHERE (SELECT COALESCE(SUM(r.track_id), 0) FROM crawl_rankings r WHERE r.keyword = k.value AND r.rank <= ?3)
  IS NOT (SELECT s.top_sum FROM segment_keywords s WHERE s.keyword = k.value)
ON CONFLICT (keyword) DO NOTHING`
	// segmentRowsSQL writes segments ([id, name, keywords, apps, ratings,
	// avg, demand, hhi, fragmentation, quality gap, competitiveness,
	// opportunity, v7, v30, apps json]) at ?2; a retired id that a
	// community continues again is live again.
	segmentRowsSQL = `INSERT INTO segments (id, name, keyword_count, app_count, total_ratings, avg_rating, demand, hhi, fragmentation, quality_gap,
  competitiveness, opportunity, leaders_velocity_7d, leaders_velocity_30d, apps, created_at, updated_at)
SELECT value->>0, value->>1, value->>2, value->>3, value->>4, value->>5, value->>6, value->>7, value->>8, value->>9,
  value->>10, value->>11, value->>12, value->>13, value->>14, ?2, ?2 FROM json_each(?1) WHERE true
ON CONFLICT (id) DO UPDATE SET name = excluded.name, keyword_count = excluded.keyword_count, app_count = excluded.app_count,
  total_ratings = excluded.total_ratings, avg_rating = excluded.avg_rating, demand = excluded.demand, hhi = excluded.hhi,
  fragmentation = excluded.fragmentation, quality_gap = excluded.quality_gap, competitiveness = excluded.competitiveness,
  opportunity = excluded.opportunity, leaders_velocity_7d = excluded.leaders_velocity_7d,
  leaders_velocity_30d = excluded.leaders_velocity_30d, apps = excluded.apps, updated_at = excluded.updated_at, retired_at = NULL
WHERE segments.name IS NOT excluded.name OR segments.keyword_count IS NOT excluded.keyword_count
  OR segments.app_count IS NOT excluded.app_count OR segments.total_ratings IS NOT excluded.total_ratings
  OR segments.avg_rating IS NOT excluded.avg_rating OR segments.demand IS NOT excluded.demand OR segments.hhi IS NOT excluded.hhi
  OR segments.fragmentation IS NOT excluded.fragmentation OR segments.quality_gap IS NOT excluded.quality_gap
  OR segments.competitiveness IS NOT excluded.competitiveness OR segments.opportunity IS NOT excluded.opportunity
  OR segments.leaders_velocity_7d IS NOT excluded.leaders_velocity_7d OR segments.leaders_velocity_30d IS NOT excluded.leaders_velocity_30d
  OR segments.apps IS NOT excluded.apps OR segments.retired_at IS NOT NULL`
	// keywordRowsSQL writes keywords' segments ([keyword, segment id or
	// null, top sum]).
	keywordRowsSQL = `INSERT INTO segment_keywords (keyword, segment_id, top_sum)
SELECT value->>0, value->>1, value->>2 FROM json_each(?1) WHERE true
ON CONFLICT (keyword) DO UPDATE SET segment_id = excluded.segment_id, top_sum = excluded.top_sum
WHERE segment_keywords.segment_id IS NOT excluded.segment_id OR segment_keywords.top_sum IS NOT excluded.top_sum`
	retireSQL  = `UPDATE segments SET retired_at = ?2 WHERE id IN (SELECT value FROM json_each(?1)) AND retired_at IS NULL`
	lineageSQL = `INSERT INTO segment_lineage (child_id, parent_id, kind, keywords, at)
SELECT value->>0, value->>1, value->>2, value->>3, ?2 FROM json_each(?1) WHERE true ON CONFLICT DO NOTHING`
	clearDirtySQL = `DELETE FROM segment_dirty WHERE keyword IN (SELECT value FROM json_each(?1))`
	// snapshotSQL: a live segment's day ([id, keywords, ratings, demand,
	// opportunity, v7, apps json]) at ?2, once.
	snapshotSQL = `INSERT INTO segment_snapshots (segment_id, day, keyword_count, total_ratings, demand, opportunity, leaders_velocity_7d, apps)
SELECT value->>0, ?2, value->>1, value->>2, value->>3, value->>4, value->>5, value->>6 FROM json_each(?1) WHERE true
ON CONFLICT DO NOTHING`
	// trendRelationsSQL: [id, trend, score, figures json, relations json].
	trendRelationsSQL = `UPDATE segments SET trend = j.value->>1, trend_score = j.value->>2, trend_figures = j.value->>3, relations = j.value->>4
FROM json_each(?1) j WHERE segments.id = j.value->>0
  AND (segments.trend IS NOT j.value->>1 OR segments.trend_score IS NOT j.value->>2
    OR segments.trend_figures IS NOT j.value->>3 OR segments.relations IS NOT j.value->>4)`
)

func jsonArg(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// chunked makes one statement a WriteChunk of rows.
func chunked[T any](sql string, rows []T, extra ...any) []d1.Stmt {
	var out []d1.Stmt
	for i := 0; i < len(rows); i += WriteChunk {
		out = append(out, d1.Stmt{SQL: sql, Args: append([]any{jsonArg(rows[i:min(i+WriteChunk, len(rows))])}, extra...)})
	}
	return out
}

// Mark marks the keywords of a search (a rankings-updated event's) whose
// top apps changed since they were partitioned: one statement, a row only
// for a keyword that changed.
func (s Store) Mark(ctx context.Context, keywords []string, now time.Time) error {
	if len(keywords) == 0 {
		return nil
	}
	_, err := s.DB.Exec(ctx, d1.Stmt{SQL: markSQL, Args: []any{jsonArg(keywords), d1.Time(now), TopN}})
	return err
}

// MarkEvent marks the keywords of a rankings-updated message (any other
// message: nothing). A body that is no event is the markets' to refuse.
func (s Store) MarkEvent(ctx context.Context, body string, now time.Time) error {
	var ev events.Event
	if json.Unmarshal([]byte(body), &ev) != nil || ev.Type != events.RankingsUpdated || len(ev.Keywords) > events.MaxKeys {
		return nil
	}
	return s.Mark(ctx, ev.Keywords, now)
}

// tops reads keywords' top apps, ReadChunk keywords a read; every keyword
// named is in the result (none ranked: an empty top).
func (s Store) tops(ctx context.Context, keywords []string) (map[string][]int64, error) {
	out := make(map[string][]int64, len(keywords))
	for _, k := range keywords {
		out[k] = nil
	}
	for i := 0; i < len(keywords); i += ReadChunk {
		var rows []struct {
			Keyword string `json:"keyword"`
			TrackID int64  `json:"track_id"`
		}
		if err := s.DB.Query(ctx, &rows, topsSQL, jsonArg(keywords[i:min(i+ReadChunk, len(keywords))]), TopN); err != nil {
			return nil, err
		}
		for _, r := range rows {
			out[r.Keyword] = append(out[r.Keyword], r.TrackID)
		}
	}
	return out, nil
}

func (s Store) appStats(ctx context.Context, ids []int64) (map[int64]AppStat, error) {
	out := make(map[int64]AppStat, len(ids))
	for i := 0; i < len(ids); i += ReadChunk {
		var rows []struct {
			TrackID int64    `json:"track_id"`
			Ratings int64    `json:"ratings"`
			Rating  float64  `json:"rating"`
			Comp    *float64 `json:"comp"`
			V7      *float64 `json:"v7"`
			V30     *float64 `json:"v30"`
		}
		if err := s.DB.Query(ctx, &rows, appStatsSQL, jsonArg(ids[i:min(i+ReadChunk, len(ids))])); err != nil {
			return nil, err
		}
		for _, r := range rows {
			out[r.TrackID] = AppStat{Ratings: r.Ratings, Rating: r.Rating, Competitiveness: r.Comp, Velocity7d: r.V7, Velocity30d: r.V30}
		}
	}
	return out, nil
}

// keywordSegments reads keyword → segment rows by a read of sql with one JSON argument.
func (s Store) keywordSegments(ctx context.Context, sql string, arg []any) (map[string]int64, error) {
	out := map[string]int64{}
	for i := 0; i < len(arg); i += ReadChunk {
		var rows []struct {
			Keyword   string `json:"keyword"`
			SegmentID int64  `json:"segment_id"`
		}
		if err := s.DB.Query(ctx, &rows, sql, jsonArg(arg[i:min(i+ReadChunk, len(arg))])); err != nil {
			return nil, err
		}
		for _, r := range rows {
			out[r.Keyword] = r.SegmentID
		}
	}
	return out, nil
}

// RunResult is what a run did, for the scheduler.
type RunResult struct {
	// Statements are the writes sent (each writes only rows that changed).
	Keywords, Segments, Statements, New, Retired, Lineage int
}

// repartition partitions the region (its keywords' tops), matches the
// communities to the region's old segments (old: keyword → segment, every
// keyword of each listed segment), and writes what changed. It returns
// the live segments built (id → content) and the statements.
func (s Store) repartition(ctx context.Context, tops map[string][]int64, old map[string]int64, now time.Time) (map[int64]Built, []d1.Stmt, RunResult, error) {
	var res RunResult
	keywords := make([]string, 0, len(tops))
	for k := range tops {
		keywords = append(keywords, k)
	}
	sort.Strings(keywords)
	appIdx := map[int64]int32{}
	var appIDs []int64
	idx := make([][]int32, len(keywords))
	for i, k := range keywords {
		for _, a := range tops[k] {
			x, ok := appIdx[a]
			if !ok {
				x = int32(len(appIDs))
				appIdx[a] = x
				appIDs = append(appIDs, a)
			}
			idx[i] = append(idx[i], x)
		}
	}
	part := func() []int32 {
		defer debug.SetMemoryLimit(debug.SetMemoryLimit(PassMemoryLimit))
		return Partition(idx, len(appIDs))
	}()
	idx = nil
	var comms [][]string
	for i, p := range part {
		for int(p) >= len(comms) {
			comms = append(comms, nil)
		}
		if p >= 0 {
			comms[p] = append(comms[p], keywords[i])
		}
	}
	oldSize := map[int64]int{}
	for _, id := range old {
		oldSize[id]++
	}
	var next struct {
		Next int64 `json:"next"`
	}
	var nx []struct {
		Next int64 `json:"next"`
	}
	if err := s.DB.Query(ctx, &nx, nextIDSQL); err != nil {
		return nil, nil, res, err
	}
	if len(nx) > 0 {
		next = nx[0]
	}
	m := Match(comms, old, oldSize, max(next.Next, 1))
	stats, err := s.appStats(ctx, appIDs)
	if err != nil {
		return nil, nil, res, err
	}
	built := make(map[int64]Built, len(comms))
	var segRows [][]any
	kwSeg := map[string]any{}
	for c, kws := range comms {
		b := Build(kws, tops, stats)
		id := m.IDs[c]
		built[id] = b
		sc := b.Scores
		segRows = append(segRows, []any{id, b.Name, len(b.Keywords), sc.Apps, sc.TotalRatings, sc.AvgRating, sc.Demand, sc.HHI,
			sc.Fragmentation, sc.QualityGap, sc.Competitiveness, sc.Opportunity, sc.Velocity7d, sc.Velocity30d, jsonArg(b.Apps)})
		for _, k := range kws {
			kwSeg[k] = id
		}
		if id >= next.Next {
			res.New++
		}
	}
	var kwRows [][]any
	for _, k := range keywords {
		var sum int64
		for _, a := range tops[k] {
			sum += a
		}
		kwRows = append(kwRows, []any{k, kwSeg[k], sum})
	}
	var lin [][]any
	for _, l := range m.Lineage {
		lin = append(lin, []any{l.Child, l.Parent, l.Kind, l.Keywords})
	}
	at := d1.Time(now)
	stmts := chunked(segmentRowsSQL, segRows, at)
	stmts = append(stmts, chunked(keywordRowsSQL, kwRows)...)
	if len(m.Retired) > 0 {
		stmts = append(stmts, chunked(retireSQL, m.Retired, at)...)
	}
	stmts = append(stmts, chunked(lineageSQL, lin, at)...)
	res.Keywords, res.Segments, res.Retired, res.Lineage = len(keywords), len(comms), len(m.Retired), len(m.Lineage)
	return built, stmts, res, nil
}

func (s Store) exec(ctx context.Context, stmts []d1.Stmt) (int64, error) {
	if len(stmts) == 0 {
		return 0, nil
	}
	return s.DB.Exec(ctx, stmts...)
}

// Update is one incremental run: it takes the marked keywords (at most
// MaxDirtyPerRun), widens them to their region (the keywords sharing
// their top apps, and every keyword of the segments of both),
// re-partitions that region alone, writes what changed and clears the
// marks. Segments outside the region are not read or written; relations
// and trends are the daily full pass's.
func (s Store) Update(ctx context.Context, now time.Time) (RunResult, error) {
	var res RunResult
	var dirtyRows []struct {
		Keyword string `json:"keyword"`
	}
	if err := s.DB.Query(ctx, &dirtyRows, dirtySQL, MaxDirtyPerRun); err != nil || len(dirtyRows) == 0 {
		return res, err
	}
	dirty := make([]string, len(dirtyRows))
	for i, r := range dirtyRows {
		dirty[i] = r.Keyword
	}
	dt, err := s.tops(ctx, dirty)
	if err != nil {
		return res, err
	}
	appSet := map[int64]bool{}
	for _, as := range dt {
		for _, a := range as {
			appSet[a] = true
		}
	}
	region := map[string]bool{}
	for _, k := range dirty {
		region[k] = true
	}
	apps := make([]int64, 0, len(appSet))
	for a := range appSet {
		apps = append(apps, a)
	}
	sort.Slice(apps, func(i, j int) bool { return apps[i] < apps[j] })
	for i := 0; i < len(apps); i += ReadChunk {
		var rows []struct {
			Keyword string `json:"keyword"`
		}
		if err := s.DB.Query(ctx, &rows, neighbourKeywordsSQL, jsonArg(apps[i:min(i+ReadChunk, len(apps))]), TopN, MaxRegionKeywords+1); err != nil {
			return res, err
		}
		for _, r := range rows {
			region[r.Keyword] = true
		}
	}
	seeds := make([]any, 0, len(region))
	for k := range region {
		seeds = append(seeds, k)
	}
	bySeed, err := s.keywordSegments(ctx, keywordSegmentsSQL, seeds)
	if err != nil {
		return res, err
	}
	segSet := map[int64]bool{}
	for _, id := range bySeed {
		segSet[id] = true
	}
	segIDs := make([]any, 0, len(segSet))
	for id := range segSet {
		segIDs = append(segIDs, id)
	}
	old, err := s.keywordSegments(ctx, segmentKeywordsSQL, segIDs)
	if err != nil {
		return res, err
	}
	for k := range old {
		region[k] = true
	}
	if len(region) > MaxRegionKeywords {
		logx.Event("segments.region_too_large", map[string]any{"level": logx.Warn, "marked": len(dirty), "region": len(region)})
		return res, fmt.Errorf("segments: the %d marked keywords' region holds %d keywords, over %d: left to the full pass", len(dirty), len(region), MaxRegionKeywords)
	}
	rest := make([]string, 0, len(region))
	for k := range region {
		if _, ok := dt[k]; !ok {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	tops, err := s.tops(ctx, rest)
	if err != nil {
		return res, err
	}
	for k, as := range dt {
		tops[k] = as
	}
	_, stmts, res, err := s.repartition(ctx, tops, old, now)
	if err != nil {
		return res, err
	}
	stmts = append(stmts, chunked(clearDirtySQL, dirty)...)
	res.Statements = len(stmts)
	_, err = s.exec(ctx, stmts)
	return res, err
}

// Full is the daily full pass: every searched keyword re-partitioned,
// matched to every live segment, what changed written; then each live
// segment's snapshot of the day, its trend over 7 and 30 days and its
// relations. It clears the marks it covered.
func (s Store) Full(ctx context.Context, now time.Time) (RunResult, error) {
	var res RunResult
	tops := map[string][]int64{}
	for after := ""; ; {
		var rows []struct {
			Keyword string `json:"keyword"`
			TrackID *int64 `json:"track_id"`
		}
		if err := s.DB.Query(ctx, &rows, allTopsSQL, after, ReadChunk, TopN); err != nil {
			return res, err
		}
		n := 0
		for _, r := range rows {
			if _, ok := tops[r.Keyword]; !ok {
				tops[r.Keyword] = nil
				n++
			}
			if r.TrackID != nil {
				tops[r.Keyword] = append(tops[r.Keyword], *r.TrackID)
			}
			after = r.Keyword
		}
		if len(tops) > MaxFullPassKeywords {
			return res, fmt.Errorf("segments: more than %d searched keywords: over the full pass's measured bound", MaxFullPassKeywords)
		}
		if n < ReadChunk {
			break
		}
	}
	old := map[string]int64{}
	for after := ""; ; {
		var rows []struct {
			Keyword   string `json:"keyword"`
			SegmentID int64  `json:"segment_id"`
		}
		if err := s.DB.Query(ctx, &rows, allSegmentKwSQL, after, ReadChunk*5); err != nil {
			return res, err
		}
		for _, r := range rows {
			old[r.Keyword] = r.SegmentID
			after = r.Keyword
		}
		if len(rows) < ReadChunk*5 {
			break
		}
	}
	// A keyword no longer searched leaves its segment.
	for k := range old {
		if _, ok := tops[k]; !ok {
			tops[k] = nil
		}
	}
	built, stmts, res, err := s.repartition(ctx, tops, old, now)
	if err != nil {
		return res, err
	}
	keywords := make([]string, 0, len(tops))
	for k := range tops {
		keywords = append(keywords, k)
	}
	sort.Strings(keywords)
	stmts = append(stmts, chunked(clearDirtySQL, keywords)...)
	more, err := s.daily(ctx, built, now)
	if err != nil {
		return res, err
	}
	stmts = append(stmts, more...)
	res.Statements = len(stmts)
	_, err = s.exec(ctx, stmts)
	return res, err
}

// Day is a snapshot's day, UTC.
func Day(t time.Time) string { return t.UTC().Format("2006-01-02") }

// daily makes the snapshot of the day of each live segment (once a day),
// and its trend and relations (written where they changed).
func (s Store) daily(ctx context.Context, built map[int64]Built, now time.Time) ([]d1.Stmt, error) {
	ids := make([]int64, 0, len(built))
	for id := range built {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	d7, d30 := Day(now.AddDate(0, 0, -7)), Day(now.AddDate(0, 0, -30))
	points := map[int64]map[string]*Point{}
	for i := 0; i < len(ids); i += ReadChunk {
		var rows []struct {
			ID      int64  `json:"segment_id"`
			Day     string `json:"day"`
			Ratings int64  `json:"total_ratings"`
			Apps    string `json:"apps"`
		}
		if err := s.DB.Query(ctx, &rows, snapshotPointsSQL, jsonArg(ids[i:min(i+ReadChunk, len(ids))]), d7, d30); err != nil {
			return nil, err
		}
		for _, r := range rows {
			p := &Point{TotalRatings: r.Ratings}
			json.Unmarshal([]byte(r.Apps), &p.Apps)
			if points[r.ID] == nil {
				points[r.ID] = map[string]*Point{}
			}
			points[r.ID][r.Day] = p
		}
	}
	appsOf := map[int64][]int64{}
	for id, b := range built {
		for _, a := range b.Apps {
			appsOf[id] = append(appsOf[id], a.TrackID)
		}
	}
	rel := Relate(appsOf)
	var snaps, trends [][]any
	for _, id := range ids {
		b := built[id]
		sc := b.Scores
		snaps = append(snaps, []any{id, len(b.Keywords), sc.TotalRatings, sc.Demand, sc.Opportunity, sc.Velocity7d, jsonArg(appsOf[id])})
		tr := Trend(Point{TotalRatings: sc.TotalRatings, Apps: appsOf[id]}, points[id][d7], points[id][d30], sc.Velocity7d, sc.Velocity30d)
		rs := rel[id]
		if rs == nil {
			rs = []Relation{}
		}
		trends = append(trends, []any{id, tr.Trend, tr.Score, jsonArg(tr), jsonArg(rs)})
	}
	return append(chunked(snapshotSQL, snaps, Day(now)), chunked(trendRelationsSQL, trends)...), nil
}

// HotQueries are the segments' reads and writes with sample arguments
// (explained by worker/queryplan_test.go's plan test).
func HotQueries() []d1.NamedQuery {
	kws := `["budget","chat"]`
	return append([]d1.NamedQuery{
		{Name: "segment tops", SQL: topsSQL, Args: []any{kws, TopN}},
		{Name: "segment full-pass tops", SQL: allTopsSQL, Args: []any{"", ReadChunk, TopN}},
		{Name: "segment app stats", SQL: appStatsSQL, Args: []any{`[1,2]`}},
		{Name: "segment neighbour keywords", SQL: neighbourKeywordsSQL, Args: []any{`[1,2]`, TopN, MaxRegionKeywords + 1}},
		{Name: "segment of keywords", SQL: keywordSegmentsSQL, Args: []any{kws}},
		{Name: "segment keywords", SQL: segmentKeywordsSQL, Args: []any{`[1,2]`}},
		{Name: "segment snapshots points", SQL: snapshotPointsSQL, Args: []any{`[1,2]`, "2026-01-01", "2025-12-08"}},
		{Name: "segments list", SQL: listSQL("opportunity"), Args: []any{1e9, 0, 20}, Page: true},
		{Name: "segments list by trend", SQL: listSQL("trend_score"), Args: []any{1e9, 0, 20}, Page: true},
		{Name: "segments list by demand", SQL: listSQL("demand"), Args: []any{1e9, 0, 20}, Page: true},
		{Name: "segment detail", SQL: detailSQL, Args: []any{1}},
	}, FocusHotQueries()...)
}
