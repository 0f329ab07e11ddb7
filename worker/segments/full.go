package segments

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"runtime/debug"
	"slices"
	"sort"
	"strconv"
	"time"

	"storecrawl/worker/d1"
)

// The full pass holds every searched keyword at once, so its memory is laid
// out densely (docs/markets.md, "Segments on the living simulator"):
//
//   - the keywords in one sorted slice, each one's top apps a range of one
//     int32 array of app indexes (no map keyed by keyword, no slice a
//     keyword), its old segment an int64 beside it;
//   - the apps' figures in one array by app index, read after the
//     partition has returned its graph to the collector;
//   - each segment built from a map of its own keywords and apps only, its
//     row written as soon as it is built (the writes go out MaxBatch
//     statements at a time), only what the daily figures need kept;
//   - the whole pass under PassMemoryLimit, so the collector runs before
//     the garbage of the reads doubles the heap.

// fullInput is a full pass's keywords: keyword i ranks the apps
// app[off[i]:off[i+1]] (indexes into appIDs) and was in segment oldSeg[i]
// (0: none). Keywords are in key order, then those no longer searched
// (empty tops) that were in a segment.
type fullInput struct {
	keywords []string
	off      []int32
	app      []int32
	appIDs   []int64
	oldSeg   []int64
}

func (in *fullInput) top(i int) []int32 { return in.app[in.off[i]:in.off[i+1]:in.off[i+1]] }

// appFigures are an app's figures as scoring reads them; NaN: not measured.
type appFigures struct {
	ratings               int64
	rating, comp, v7, v30 float64
}

func optional(f float64) *float64 {
	if math.IsNaN(f) {
		return nil
	}
	return &f
}

func orNaN(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}

func (f appFigures) stat() AppStat {
	return AppStat{Ratings: f.ratings, Rating: f.rating, Competitiveness: optional(f.comp), Velocity7d: optional(f.v7), Velocity30d: optional(f.v30)}
}

// readFull reads every searched keyword's top apps (ReadChunk keywords a
// read, by crawl_keywords' key) and every segmented keyword's segment.
func (s Store) readFull(ctx context.Context) (*fullInput, error) {
	in := &fullInput{off: []int32{0}}
	appIdx := map[int64]int32{}
	for after := ""; ; {
		var rows []struct {
			Keyword string `json:"keyword"`
			TrackID int64  `json:"track_id"` // 0: a keyword that ranks none
		}
		if err := s.DB.Query(ctx, &rows, allTopsSQL, after, ReadChunk, TopN); err != nil {
			return nil, err
		}
		n := 0
		for _, r := range rows {
			if r.Keyword != after {
				// A read's keywords are past the last read's: a new keyword.
				in.keywords = append(in.keywords, r.Keyword)
				in.off = append(in.off, in.off[len(in.off)-1])
				after = r.Keyword
				n++
			}
			if r.TrackID != 0 {
				x, ok := appIdx[r.TrackID]
				if !ok {
					x = int32(len(in.appIDs))
					appIdx[r.TrackID] = x
					in.appIDs = append(in.appIDs, r.TrackID)
				}
				in.app = append(in.app, x)
				in.off[len(in.off)-1]++
			}
		}
		if len(in.keywords) > MaxFullPassKeywords {
			return nil, fmt.Errorf("segments: more than %d searched keywords: over the full pass's measured bound", MaxFullPassKeywords)
		}
		if n < ReadChunk {
			break
		}
	}
	appIdx = nil
	in.oldSeg = make([]int64, len(in.keywords))
	var gone []string
	var goneSeg []int64
	for after := ""; ; {
		var rows []struct {
			Keyword   string `json:"keyword"`
			SegmentID int64  `json:"segment_id"`
		}
		if err := s.DB.Query(ctx, &rows, allSegmentKwSQL, after, ReadChunk*5); err != nil {
			return nil, err
		}
		for _, r := range rows {
			if i, ok := slices.BinarySearch(in.keywords, r.Keyword); ok {
				in.oldSeg[i] = r.SegmentID
			} else {
				// No longer searched: it leaves its segment.
				gone, goneSeg = append(gone, r.Keyword), append(goneSeg, r.SegmentID)
			}
			after = r.Keyword
		}
		if len(rows) < ReadChunk*5 {
			break
		}
	}
	for i, k := range gone {
		in.keywords = append(in.keywords, k)
		in.off = append(in.off, in.off[len(in.off)-1])
		in.oldSeg = append(in.oldSeg, goneSeg[i])
	}
	return in, nil
}

// readFigures reads the apps' figures, ReadChunk apps a read, into an
// array by app index.
func (s Store) readFigures(ctx context.Context, ids []int64) ([]appFigures, error) {
	out := make([]appFigures, len(ids))
	for i := range out {
		out[i] = appFigures{rating: 0, comp: math.NaN(), v7: math.NaN(), v30: math.NaN()}
	}
	pos := make(map[int64]int32, min(len(ids), ReadChunk))
	for i := 0; i < len(ids); i += ReadChunk {
		part := ids[i:min(i+ReadChunk, len(ids))]
		clear(pos)
		for j, id := range part {
			pos[id] = int32(i + j)
		}
		var rows []appStatRow
		if err := s.DB.Query(ctx, &rows, appStatsSQL, jsonArg(part)); err != nil {
			return nil, err
		}
		for _, r := range rows {
			if x, ok := pos[r.TrackID]; ok {
				out[x] = appFigures{ratings: r.Ratings, rating: r.Rating, comp: orNaN(r.Comp), v7: orNaN(r.V7), v30: orNaN(r.V30)}
			}
		}
	}
	return out, nil
}

// writer sends statements as they are made, d1.MaxBatch a batch (one
// batch: one transaction), so a pass holds at most one batch of writes.
type writer struct {
	s       Store
	ctx     context.Context
	pending []d1.Stmt
	sent    int
}

func (w *writer) add(stmts ...d1.Stmt) error {
	w.pending = append(w.pending, stmts...)
	if len(w.pending) >= d1.MaxBatch {
		return w.flush()
	}
	return nil
}

func (w *writer) flush() error {
	if len(w.pending) == 0 {
		return nil
	}
	w.sent += len(w.pending)
	_, err := w.s.exec(w.ctx, w.pending)
	w.pending = w.pending[:0]
	return err
}

// rows gathers one write's rows, WriteChunk a statement.
type rows struct {
	w     *writer
	sql   string
	extra []any
	buf   [][]any
}

func (r *rows) add(row ...any) error {
	r.buf = append(r.buf, row)
	if len(r.buf) == WriteChunk {
		return r.flush()
	}
	return nil
}

func (r *rows) flush() error {
	if len(r.buf) == 0 {
		return nil
	}
	st := chunked(r.sql, r.buf, r.extra...)
	r.buf = r.buf[:0]
	return r.w.add(st...)
}

// daySeg is what the day's snapshot, trend and relations read of a built
// segment.
type daySeg struct {
	id       int64
	keywords int
	scores   Scores
	apps     []int64
}

// topJSON is a top's track ids as a JSON array, and their sum.
func topJSON(ids []int64) (string, int64) {
	b := make([]byte, 0, 2+len(ids)*11)
	b = append(b, '[')
	var sum int64
	for i, a := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, a, 10)
		sum += a
	}
	return string(append(b, ']')), sum
}

// Full is the daily full pass: every searched keyword re-partitioned,
// matched to every live segment, what changed written; then each live
// segment's snapshot of the day, its trend over 7 and 30 days and its
// relations. It clears the marks it covered.
func (s Store) Full(ctx context.Context, now time.Time) (RunResult, error) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(PassMemoryLimit))
	var res RunResult
	in, err := s.readFull(ctx)
	if err != nil {
		return res, err
	}
	n := len(in.keywords)
	part := func() []int32 {
		tops := make([][]int32, n)
		for i := range tops {
			tops[i] = in.top(i)
		}
		return Partition(tops, len(in.appIDs))
	}()
	// The communities' keywords, in compressed rows (keyword order).
	nc := int(maxLabel(part)) + 1
	if n == 0 {
		nc = 0
	}
	commOff := make([]int32, nc+1)
	for _, p := range part {
		if p >= 0 {
			commOff[p+1]++
		}
	}
	for c := 1; c <= nc; c++ {
		commOff[c] += commOff[c-1]
	}
	members := make([]int32, commOff[nc])
	fill := slices.Clone(commOff[:nc])
	for i, p := range part {
		if p >= 0 {
			members[fill[p]] = int32(i)
			fill[p]++
		}
	}
	fill, part = nil, nil
	// Identity: each community's overlap with the old segments.
	oldSize := map[int64]int{}
	for _, id := range in.oldSeg {
		if id != 0 {
			oldSize[id]++
		}
	}
	sizes := make([]int, nc)
	overlap := make([]map[int64]int, nc)
	for c := range nc {
		sizes[c] = int(commOff[c+1] - commOff[c])
		overlap[c] = map[int64]int{}
		for _, i := range members[commOff[c]:commOff[c+1]] {
			if id := in.oldSeg[i]; id != 0 {
				overlap[c][id]++
			}
		}
	}
	var nx []struct {
		Next int64 `json:"next"`
	}
	if err := s.DB.Query(ctx, &nx, nextIDSQL); err != nil {
		return res, err
	}
	next := int64(1)
	if len(nx) > 0 {
		next = max(nx[0].Next, 1)
	}
	m := matchOverlaps(sizes, overlap, oldSize, next)
	sizes, overlap, oldSize = nil, nil, nil
	figs, err := s.readFigures(ctx, in.appIDs)
	if err != nil {
		return res, err
	}
	// Each segment built from its own keywords' tops and its apps' figures,
	// its row written at once.
	w := &writer{s: s, ctx: ctx}
	at := d1.Time(now)
	segRows := &rows{w: w, sql: segmentRowsSQL, extra: []any{at}}
	kwSeg := make([]int64, n)
	days := make([]daySeg, 0, nc)
	for c := range nc {
		ks := members[commOff[c]:commOff[c+1]]
		kws := make([]string, len(ks))
		tops := make(map[string][]int64, len(ks))
		stats := map[int64]AppStat{}
		for x, i := range ks {
			kws[x] = in.keywords[i]
			t := make([]int64, 0, in.off[i+1]-in.off[i])
			for _, a := range in.top(int(i)) {
				id := in.appIDs[a]
				t = append(t, id)
				if _, ok := stats[id]; !ok {
					stats[id] = figs[a].stat()
				}
			}
			tops[kws[x]] = t
		}
		b := Build(kws, tops, stats)
		id := m.IDs[c]
		for _, i := range ks {
			kwSeg[i] = id
		}
		sc := b.Scores
		if err := segRows.add(id, b.Name, len(b.Keywords), sc.Apps, sc.TotalRatings, sc.AvgRating, sc.Demand, sc.HHI,
			sc.Fragmentation, sc.QualityGap, sc.Competitiveness, sc.Opportunity, sc.Velocity7d, sc.Velocity30d, jsonArg(b.Apps)); err != nil {
			return res, err
		}
		d := daySeg{id: id, keywords: len(b.Keywords), scores: sc, apps: make([]int64, len(b.Apps))}
		for x, a := range b.Apps {
			d.apps[x] = a.TrackID
		}
		days = append(days, d)
		if id >= next {
			res.New++
		}
	}
	figs, members, commOff = nil, nil, nil
	if err := segRows.flush(); err != nil {
		return res, err
	}
	kwRows := &rows{w: w, sql: keywordRowsSQL}
	ids := make([]int64, 0, TopN)
	for i, k := range in.keywords {
		ids = ids[:0]
		for _, a := range in.top(i) {
			ids = append(ids, in.appIDs[a])
		}
		top, sum := topJSON(ids)
		var seg any
		if kwSeg[i] != 0 {
			seg = kwSeg[i]
		}
		if err := kwRows.add(k, seg, sum, top); err != nil {
			return res, err
		}
	}
	if err := kwRows.flush(); err != nil {
		return res, err
	}
	if len(m.Retired) > 0 {
		if err := w.add(chunked(retireSQL, m.Retired, at)...); err != nil {
			return res, err
		}
	}
	lin := &rows{w: w, sql: lineageSQL, extra: []any{at}}
	for _, l := range m.Lineage {
		if err := lin.add(l.Child, l.Parent, l.Kind, l.Keywords); err != nil {
			return res, err
		}
	}
	if err := lin.flush(); err != nil {
		return res, err
	}
	if err := w.add(chunked(clearDirtySQL, in.keywords)...); err != nil {
		return res, err
	}
	res.Keywords, res.Segments, res.Retired, res.Lineage = n, nc, len(m.Retired), len(m.Lineage)
	in, kwSeg = nil, nil
	if err := s.daily(ctx, w, days, now); err != nil {
		return res, err
	}
	err = w.flush()
	res.Statements = w.sent
	return res, err
}

// Day is a snapshot's day, UTC.
func Day(t time.Time) string { return t.UTC().Format("2006-01-02") }

// daily writes the snapshot of the day of each live segment (once a day),
// deletes its snapshots past SnapshotRetention, and writes its trend and
// relations (where they changed), ReadChunk segments a
// read of their past snapshots.
func (s Store) daily(ctx context.Context, w *writer, days []daySeg, now time.Time) error {
	sort.Slice(days, func(i, j int) bool { return days[i].id < days[j].id })
	appsOf := make(map[int64][]int64, len(days))
	for _, d := range days {
		appsOf[d.id] = d.apps
	}
	rel := Relate(appsOf)
	appsOf = nil
	d7, d30 := Day(now.AddDate(0, 0, -TrendWeekDays)), Day(now.AddDate(0, 0, -TrendMonthDays))
	snaps := &rows{w: w, sql: snapshotSQL, extra: []any{Day(now)}}
	expired := &rows{w: w, sql: expireSnapshotsSQL, extra: []any{Day(now.Add(-SnapshotRetention))}}
	trends := &rows{w: w, sql: trendRelationsSQL}
	for i := 0; i < len(days); i += ReadChunk {
		part := days[i:min(i+ReadChunk, len(days))]
		ids := make([]int64, len(part))
		for x, d := range part {
			ids[x] = d.id
		}
		var prs []struct {
			ID      int64  `json:"segment_id"`
			Day     string `json:"day"`
			Ratings int64  `json:"total_ratings"`
			Apps    string `json:"apps"`
		}
		if err := s.DB.Query(ctx, &prs, snapshotPointsSQL, jsonArg(ids), d7, d30); err != nil {
			return err
		}
		points := map[int64]map[string]*Point{}
		for _, r := range prs {
			p := &Point{TotalRatings: r.Ratings}
			json.Unmarshal([]byte(r.Apps), &p.Apps)
			if points[r.ID] == nil {
				points[r.ID] = map[string]*Point{}
			}
			points[r.ID][r.Day] = p
		}
		for _, d := range part {
			sc := d.scores
			if err := snaps.add(d.id, d.keywords, sc.TotalRatings, sc.Demand, sc.Opportunity, sc.Velocity7d, jsonArg(d.apps)); err != nil {
				return err
			}
			if err := expired.add(d.id); err != nil {
				return err
			}
			tr := Trend(Point{TotalRatings: sc.TotalRatings, Apps: d.apps}, points[d.id][d7], points[d.id][d30], sc.Velocity7d, sc.Velocity30d)
			rs := rel[d.id]
			if rs == nil {
				rs = []Relation{}
			}
			if err := trends.add(d.id, tr.Trend, tr.Score, jsonArg(tr), jsonArg(rs)); err != nil {
				return err
			}
		}
	}
	if err := snaps.flush(); err != nil {
		return err
	}
	if err := expired.flush(); err != nil {
		return err
	}
	return trends.flush()
}
