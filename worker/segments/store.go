package segments

import (
	"context"
	"encoding/json"
	"time"

	"storecrawl/worker/d1"
	"storecrawl/worker/events"
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
	// MaxFullPassKeywords bounds a full pass (memory and time at 100,000
	// keywords, and the command that prints them: docs/markets.md); past
	// it the pass refuses.
	MaxFullPassKeywords = 150_000
	// SnapshotKeep is how many days of snapshots GET /v1/segments/{id} shows.
	SnapshotKeep = 30
	// TrendWeekDays and TrendMonthDays are how far back a segment's trend
	// compares its day (Trend: the snapshots that many days before).
	TrendWeekDays  = 7
	TrendMonthDays = 30
	// SnapshotRetention is how long a live segment's snapshots stay: the
	// full pass deletes its snapshots older than this as it writes the
	// day's. It is the longest look back of their readers: the trend's
	// month (TrendMonthDays), the detail page's SnapshotKeep and the
	// list's SparklineDays. Each row holds its segment's app list, so a
	// longer history would be most of D1's storage at the design's scale
	// (docs/scale.md, "Storage after a year").
	SnapshotRetention = max(TrendMonthDays, SnapshotKeep, SparklineDays) * 24 * time.Hour
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
	// appKeywordsSQL: each app's (?1) keywords where it ranks in the top
	// ?2 (idx_crawl_rankings_track), its first ?3 only: one row a pair.
	appKeywordsSQL = `SELECT j.value AS track_id, k.value AS keyword FROM json_each(?1) j,
  json_each((SELECT json_group_array(keyword) FROM (SELECT keyword FROM crawl_rankings WHERE track_id = j.value AND rank <= ?2 LIMIT ?3))) k`
	// placedSQL: marked keywords' segment and the top they were placed with.
	placedSQL = `SELECT keyword, segment_id, top FROM segment_keywords WHERE keyword IN (SELECT value FROM json_each(?1))`
	// liveSegmentsSQL: segments' (?1) name, keyword count and apps, the live ones.
	liveSegmentsSQL    = `SELECT id, name, keyword_count, apps FROM segments WHERE id IN (SELECT value FROM json_each(?1)) AND retired_at IS NULL`
	keywordSegmentsSQL = `SELECT keyword, segment_id FROM segment_keywords WHERE keyword IN (SELECT value FROM json_each(?1)) AND segment_id IS NOT NULL`
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
	// null, top sum, top track ids as a JSON array]).
	keywordRowsSQL = `INSERT INTO segment_keywords (keyword, segment_id, top_sum, top)
SELECT value->>0, value->>1, value->>2, value->>3 FROM json_each(?1) WHERE true
ON CONFLICT (keyword) DO UPDATE SET segment_id = excluded.segment_id, top_sum = excluded.top_sum, top = excluded.top
WHERE segment_keywords.segment_id IS NOT excluded.segment_id OR segment_keywords.top_sum IS NOT excluded.top_sum
  OR segment_keywords.top IS NOT excluded.top`
	retireSQL  = `UPDATE segments SET retired_at = ?2 WHERE id IN (SELECT value FROM json_each(?1)) AND retired_at IS NULL`
	lineageSQL = `INSERT INTO segment_lineage (child_id, parent_id, kind, keywords, at)
SELECT value->>0, value->>1, value->>2, value->>3, ?2 FROM json_each(?1) WHERE true ON CONFLICT DO NOTHING`
	clearDirtySQL = `DELETE FROM segment_dirty WHERE keyword IN (SELECT value FROM json_each(?1))`
	// snapshotSQL: a live segment's day ([id, keywords, ratings, demand,
	// opportunity, v7, apps json]) at ?2, once.
	snapshotSQL = `INSERT INTO segment_snapshots (segment_id, day, keyword_count, total_ratings, demand, opportunity, leaders_velocity_7d, apps)
SELECT value->>0, ?2, value->>1, value->>2, value->>3, value->>4, value->>5, value->>6 FROM json_each(?1) WHERE true
ON CONFLICT DO NOTHING`
	// expireSnapshotsSQL deletes the snapshots of segments [id] before
	// day ?2, each segment's by its primary key's prefix.
	expireSnapshotsSQL = `DELETE FROM segment_snapshots WHERE segment_id IN (SELECT value->>0 FROM json_each(?1)) AND day < ?2`
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

// appStatRow is an app's figures as appStatsSQL reads them.
type appStatRow struct {
	TrackID int64    `json:"track_id"`
	Ratings int64    `json:"ratings"`
	Rating  float64  `json:"rating"`
	Comp    *float64 `json:"comp"`
	V7      *float64 `json:"v7"`
	V30     *float64 `json:"v30"`
}

func (s Store) appStats(ctx context.Context, ids []int64) (map[int64]AppStat, error) {
	out := make(map[int64]AppStat, len(ids))
	for i := 0; i < len(ids); i += ReadChunk {
		var rows []appStatRow
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

func (s Store) exec(ctx context.Context, stmts []d1.Stmt) (int64, error) {
	if len(stmts) == 0 {
		return 0, nil
	}
	return s.DB.Exec(ctx, stmts...)
}

// HotQueries are the segments' reads and writes with sample arguments
// (explained by worker/queryplan_test.go's plan test).
func HotQueries() []d1.NamedQuery {
	kws := `["budget","chat"]`
	return append([]d1.NamedQuery{
		{Name: "segment tops", SQL: topsSQL, Args: []any{kws, TopN}},
		{Name: "segment full-pass tops", SQL: allTopsSQL, Args: []any{"", ReadChunk, TopN}},
		{Name: "segment app stats", SQL: appStatsSQL, Args: []any{`[1,2]`}},
		{Name: "segment app keywords", SQL: appKeywordsSQL, Args: []any{`[1,2]`, TopN, MaxAppKeywords + 1}},
		{Name: "segment placed keywords", SQL: placedSQL, Args: []any{kws}},
		{Name: "segment live rows", SQL: liveSegmentsSQL, Args: []any{`[1,2]`}},
		{Name: "segment of keywords", SQL: keywordSegmentsSQL, Args: []any{kws}},
		{Name: "segment snapshots points", SQL: snapshotPointsSQL, Args: []any{`[1,2]`, "2026-01-01", "2025-12-08"}},
		{Name: "segments list", SQL: listSQL("opportunity"), Args: []any{1e9, 0, 20}, Page: true},
		{Name: "segments list by trend", SQL: listSQL("trend_score"), Args: []any{1e9, 0, 20}, Page: true},
		{Name: "segments list by demand", SQL: listSQL("demand"), Args: []any{1e9, 0, 20}, Page: true},
		{Name: "segment detail", SQL: detailSQL, Args: []any{1}},
	}, FocusHotQueries()...)
}
