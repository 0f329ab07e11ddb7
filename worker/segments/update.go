package segments

import (
	"context"
	"encoding/json"
	"sort"
	"time"

	"storecrawl/worker/d1"
)

// The incremental update re-places the marked keywords into the existing
// segments; re-partitioning is the daily full pass's. Each marked keyword
// goes to the segment its strongest links point to: its links are the
// full pass's (Project: Σ 1/(dₐ−1) over the apps both tops share, an app
// over MaxAppKeywords linking none, its MaxNeighbours strongest kept),
// read from its own top apps' keywords, and the segment is the one whose
// keywords hold most of that weight (a tie keeps its segment, then the
// lower id); a keyword linked to no segmented keyword is unsegmented. A
// segment a keyword leaves or enters, or whose keyword's top changed, is
// updated from its stored apps: the keyword's old top (as it was placed,
// segment_keywords.top) taken out, its new top put in, the apps ranked and
// scored again. Its name, relations and trend are the full pass's, and so
// are new segments, splits, merges and lineage: ids never change here, and
// a segment left with no keyword is retired.
//
// What a run reads is bounded by the marks it takes, never by the
// segments' sizes: MaxDirtyPerRun keywords, each one's ~44 rankings, its
// TopN apps' first MaxAppKeywords+1 keywords, its MaxNeighbours
// neighbours' segments, and the rows of the segments it touches (two a
// keyword at most) with their MaxSegmentApps apps' figures.

// PlaceAppsPerRead is how many apps' keywords one read names: at most
// (MaxAppKeywords+1) rows an app, ~10,000 rows a read.
const PlaceAppsPerRead = 50

// placed is a keyword as stored: its segment (0: none) and the top it was
// placed with (nil: unknown).
type placed struct {
	seg int64
	top []int64
}

type link struct {
	keyword string
	w       float32
}

// neighbours are keyword k's MaxNeighbours strongest links from its top
// apps' keywords (appKws: each app's, read up to MaxAppKeywords+1), summed
// in ascending app order as Project sums them.
func neighbours(k string, top []int64, appKws map[int64][]string) []link {
	apps := append([]int64(nil), top...)
	sort.Slice(apps, func(i, j int) bool { return apps[i] < apps[j] })
	acc := map[string]float32{}
	var order []string
	for _, a := range apps {
		kws := appKws[a]
		d := len(kws)
		if d < 2 || d > MaxAppKeywords {
			continue
		}
		w := 1 / float32(d-1)
		for _, j := range kws {
			if j == k {
				continue
			}
			if _, ok := acc[j]; !ok {
				order = append(order, j)
			}
			acc[j] += w
		}
	}
	out := make([]link, len(order))
	for i, j := range order {
		out[i] = link{j, acc[j]}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].w != out[j].w {
			return out[i].w > out[j].w
		}
		return out[i].keyword < out[j].keyword
	})
	return out[:min(MaxNeighbours, len(out))]
}

// place picks a keyword's segment from its links and its neighbours'
// segments (segOf: 0 or absent for none): the segment holding the most
// link weight; a tie keeps own, then the lower id; 0 when no neighbour is
// segmented.
func place(links []link, segOf map[string]int64, own int64) int64 {
	score := map[int64]float64{}
	for _, l := range links {
		if s := segOf[l.keyword]; s != 0 {
			score[s] += float64(l.w)
		}
	}
	var best int64
	var bestW float64
	for s, w := range score {
		switch {
		case w > bestW, w == bestW && s == own, w == bestW && best != own && s < best:
			best, bestW = s, w
		}
	}
	return best
}

// Update is one incremental run: it takes the marked keywords (at most
// MaxDirtyPerRun), re-places each into the segment its links point to,
// updates the segments they left, entered or changed, writes what changed
// and clears the marks.
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
	tops, err := s.tops(ctx, dirty)
	if err != nil {
		return res, err
	}
	// As placed.
	was := map[string]placed{}
	for i := 0; i < len(dirty); i += ReadChunk {
		var rows []struct {
			Keyword   string  `json:"keyword"`
			SegmentID int64   `json:"segment_id"`
			Top       *string `json:"top"`
		}
		if err := s.DB.Query(ctx, &rows, placedSQL, jsonArg(dirty[i:min(i+ReadChunk, len(dirty))])); err != nil {
			return res, err
		}
		for _, r := range rows {
			p := placed{seg: r.SegmentID}
			if r.Top != nil {
				json.Unmarshal([]byte(*r.Top), &p.top)
			}
			was[r.Keyword] = p
		}
	}
	// The top apps' keywords, then each marked keyword's links.
	appSet := map[int64]bool{}
	for _, t := range tops {
		for _, a := range t {
			appSet[a] = true
		}
	}
	apps := make([]int64, 0, len(appSet))
	for a := range appSet {
		apps = append(apps, a)
	}
	sort.Slice(apps, func(i, j int) bool { return apps[i] < apps[j] })
	appKws := map[int64][]string{}
	for i := 0; i < len(apps); i += PlaceAppsPerRead {
		var rows []struct {
			TrackID int64  `json:"track_id"`
			Keyword string `json:"keyword"`
		}
		if err := s.DB.Query(ctx, &rows, appKeywordsSQL, jsonArg(apps[i:min(i+PlaceAppsPerRead, len(apps))]), TopN, MaxAppKeywords+1); err != nil {
			return res, err
		}
		for _, r := range rows {
			appKws[r.TrackID] = append(appKws[r.TrackID], r.Keyword)
		}
	}
	links := make(map[string][]link, len(dirty))
	nbSet := map[string]bool{}
	for _, k := range dirty {
		links[k] = neighbours(k, tops[k], appKws)
		for _, l := range links[k] {
			nbSet[l.keyword] = true
		}
	}
	appKws = nil
	nb := make([]any, 0, len(nbSet))
	for k := range nbSet {
		nb = append(nb, k)
	}
	sort.Slice(nb, func(i, j int) bool { return nb[i].(string) < nb[j].(string) })
	segOf, err := s.keywordSegments(ctx, keywordSegmentsSQL, nb)
	if err != nil {
		return res, err
	}
	placedNow := map[string]int64{}
	touched := map[int64]bool{}
	for _, k := range dirty {
		placedNow[k] = place(links[k], segOf, was[k].seg)
		for _, id := range []int64{was[k].seg, placedNow[k]} {
			if id != 0 {
				touched[id] = true
			}
		}
	}
	// The touched segments as stored.
	ids := make([]int64, 0, len(touched))
	for id := range touched {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	type stored struct {
		name     string
		keywords int
		count    map[int64]int
	}
	segs := map[int64]*stored{}
	for i := 0; i < len(ids); i += ReadChunk {
		var rows []struct {
			ID       int64  `json:"id"`
			Name     string `json:"name"`
			Keywords int    `json:"keyword_count"`
			Apps     string `json:"apps"`
		}
		if err := s.DB.Query(ctx, &rows, liveSegmentsSQL, jsonArg(ids[i:min(i+ReadChunk, len(ids))])); err != nil {
			return res, err
		}
		for _, r := range rows {
			st := &stored{name: r.Name, keywords: r.Keywords, count: map[int64]int{}}
			var as []SegmentApp
			json.Unmarshal([]byte(r.Apps), &as)
			for _, a := range as {
				st.count[a.TrackID] = a.Keywords
			}
			segs[r.ID] = st
		}
	}
	// Out with the old tops, in with the new; a segment no longer live
	// takes no keyword.
	for _, k := range dirty {
		if st := segs[was[k].seg]; st != nil {
			st.keywords--
			for _, a := range was[k].top {
				st.count[a]--
			}
		}
		if segs[placedNow[k]] == nil {
			placedNow[k] = 0
			continue
		}
		st := segs[placedNow[k]]
		st.keywords++
		for _, a := range tops[k] {
			st.count[a]++
		}
	}
	appSet = map[int64]bool{}
	for _, st := range segs {
		for a, n := range st.count {
			if n > 0 {
				appSet[a] = true
			}
		}
	}
	statIDs := make([]int64, 0, len(appSet))
	for a := range appSet {
		statIDs = append(statIDs, a)
	}
	sort.Slice(statIDs, func(i, j int) bool { return statIDs[i] < statIDs[j] })
	stats, err := s.appStats(ctx, statIDs)
	if err != nil {
		return res, err
	}
	at := d1.Time(now)
	var segRows, kwRows [][]any
	var retired []int64
	for _, id := range ids {
		st := segs[id]
		if st == nil {
			continue
		}
		if st.keywords <= 0 {
			retired = append(retired, id)
			continue
		}
		var as []SegmentApp
		for a, n := range st.count {
			if n > 0 {
				as = append(as, SegmentApp{TrackID: a, Keywords: n, Ratings: max(stats[a].Ratings, 0)})
			}
		}
		as = rankApps(as)
		sc := scoreApps(as, stats)
		segRows = append(segRows, []any{id, st.name, st.keywords, sc.Apps, sc.TotalRatings, sc.AvgRating, sc.Demand, sc.HHI,
			sc.Fragmentation, sc.QualityGap, sc.Competitiveness, sc.Opportunity, sc.Velocity7d, sc.Velocity30d, jsonArg(as)})
	}
	for _, k := range dirty {
		top, sum := topJSON(tops[k])
		var seg any
		if placedNow[k] != 0 {
			seg = placedNow[k]
		}
		kwRows = append(kwRows, []any{k, seg, sum, top})
	}
	stmts := chunked(segmentRowsSQL, segRows, at)
	stmts = append(stmts, chunked(keywordRowsSQL, kwRows)...)
	if len(retired) > 0 {
		stmts = append(stmts, chunked(retireSQL, retired, at)...)
	}
	stmts = append(stmts, chunked(clearDirtySQL, dirty)...)
	res.Keywords, res.Segments, res.Retired, res.Statements = len(dirty), len(segRows), len(retired), len(stmts)
	_, err = s.exec(ctx, stmts)
	return res, err
}
