//go:build unix

package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"sort"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"storecrawl/internal/upstreammodel"
	"storecrawl/worker/appstore"
	"storecrawl/worker/crawl"
	"storecrawl/worker/d1"
	"storecrawl/worker/events"
	"storecrawl/worker/module"
	"storecrawl/worker/segments"
)

// The segments bench (docs/markets.md, "Segments on the living
// simulator"): a living world of -apps apps drawn from hidden niches
// (upstreammodel), its most typed hint terms as the keywords (the plan's
// share: segKeywordsPerApp), each searched with the world's own search
// (what upstream-sim -living answers) and saved through the crawl's store
// (crawl.D1Store.SaveRankings) on d1test's SQLite with the migrations;
// then the segments' own tasks (segments.Tasks: segments-full, and
// segments-update every segments.UpdateEvery after the rankings-updated
// consumer's marks, segments.Store.MarkEvent) over two virtual days. The
// segments are scored against the world's hidden niches (World.NicheOf).

var (
	onlySegments = flag.Bool("only-segments", false, "run only the segments bench: segments of -apps apps (default 110,000; 1,100,000 for the design's scale) on the living simulator, their ARI against its hidden niches, coverage, rows a day and peak heap")
	segSeed      = flag.Uint64("segments-seed", 1, "segments: the living world's seed")
	segBulk      = flag.Bool("segments-bulk", false, "segments: write the first day's searches with bulk statements (rankings, the keywords' searched mark, new apps' registry rows) instead of the crawl's store; for 1,100,000 apps, whose 100,000 first searches through the crawl's store take ~15 min of CPU")
)

const (
	// segDefaultApps runs in about a minute: 10,000 keywords.
	segDefaultApps = 110_000
	// segKeywordsPerApp is the plan's keyword share (docs/scale.md:
	// 100,000 keywords at 1.1M apps).
	segKeywordsPerApp = 100_000.0 / designApps
	// segResearchEvery is a keyword's rest when its market has no score
	// yet (the bench runs no market scoring): crawl.ResearchInterval(0),
	// the cold keywords' month. A day re-searches 1/30 of the keywords.
	segResearchEvery = crawl.ColdKeywordResearch
	// segBaseTrackID and segBaseDeveloperID number the world's apps and
	// developers as upstream-sim does (its baseTrackID, baseDeveloperID).
	segBaseTrackID     = 100_000_000
	segBaseDeveloperID = 300_000_000
	// segBulkKeywords is the keywords one bulk write carries (50 rankings
	// each: 10,000 rows a statement).
	segBulkKeywords = 200
	// segHeapSample is how often the peak heap is sampled while a pass
	// runs (ReadMemStats stops the world).
	segHeapSample = 20 * time.Millisecond
	// Plan inclusions (Workers Paid, docs/scale.md): D1 rows a month.
	planRowsWrittenMonth = 50_000_000
	planRowsReadMonth    = 25_000_000_000
)

// segEpoch is the world's time zero.
var segEpoch = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

// segReport is the bench's figures (-json).
type segReport struct {
	Apps     int     `json:"apps"`
	Niches   int     `json:"niches"`
	Keywords int     `json:"keywords"`
	ARI      float64 `json:"ari"`
	// ARIKeywords is the ARI over keywords (segKeywordARI).
	ARIKeywords float64 `json:"ari_keywords"`
	// ARISubjects is ari's labelling against the niches' subjects (a
	// niche is a subject crossed with a facet, upstreammodel.Niche).
	ARISubjects float64 `json:"ari_subjects"`
	// ARIPerfectKeywords is the ARI the apps would score were every
	// keyword labelled by its truth (segKeywordARI's), apps by the same
	// rule as ari; ARIPerfectKeywordsWeighted the same with each app
	// taking the label its keywords give the most evidence for, a keyword's
	// evidence its purity to segments.SettlePurityPower (segPerfectKeywords).
	ARIPerfectKeywords         float64 `json:"ari_perfect_keywords"`
	ARIPerfectKeywordsWeighted float64 `json:"ari_perfect_keywords_weighted"`
	Segments                   int     `json:"segments"`
	// Coverage is the share of ranked apps (in some searched keyword's
	// top segments.TopN) that are in a segment.
	Coverage float64 `json:"coverage"`
	// RankedApps is that denominator.
	RankedApps int `json:"ranked_apps"`
	// RowsWrittenDay and RowsReadDay are a steady day's: the rankings-
	// updated consumer's marks, segments-update every UpdateEvery and
	// one segments-full. Written: SQLite's total_changes() (D1 adds index
	// entries); read: rows the reads returned. RowsReadDayBound counts each
	// returned ranking as the KeywordSearchSize/TopN rows its keyword's
	// primary-key range may walk.
	RowsWrittenDay   int64 `json:"rows_written_day"`
	RowsReadDay      int64 `json:"rows_read_day"`
	RowsReadDayBound int64 `json:"rows_read_day_bound"`
	// PlanWrittenShare, PlanReadShare: a month of them against the plan's
	// included rows (the read share from the bound).
	PlanWrittenShare float64 `json:"plan_written_share"`
	PlanReadShare    float64 `json:"plan_read_share"`
	// PeakMemoryMB is the Go heap in use at its peak during a full pass,
	// above the heap before it (the larger of the two passes).
	PeakMemoryMB float64 `json:"peak_memory_mb"`
	// FullPassS and FullPassCPUS are the steady day's full pass.
	FullPassS    float64 `json:"full_pass_s"`
	FullPassCPUS float64 `json:"full_pass_cpu_s"`
	FirstPass    segPass `json:"first_pass"`
	DayPasses    segDay  `json:"day"`
	WallS        float64 `json:"wall_s"`
}

// segPass is one task run's cost.
type segPass struct {
	Summary      string  `json:"summary"`
	RowsRead     int64   `json:"rows_read"`
	RowsWritten  int64   `json:"rows_written"`
	Queries      int64   `json:"queries"`
	PeakMemoryMB float64 `json:"peak_memory_mb"`
	S            float64 `json:"s"`
	CPUS         float64 `json:"cpu_s"`
}

// segDay is a steady day's segments work.
type segDay struct {
	Researched    int     `json:"researched"`
	NewKeywords   int     `json:"new_keywords"`
	Updates       int     `json:"updates"`
	UpdateErrors  int     `json:"update_errors"`
	MarkRows      int64   `json:"mark_rows_written"`
	UpdateRead    int64   `json:"update_rows_read"`
	UpdateWritten int64   `json:"update_rows_written"`
	Full          segPass `json:"full"`
}

// runSegments runs the segments bench with the flags.
func runSegments() {
	segBulkLoad = *segBulk
	n := segDefaultApps
	flag.Visit(func(f *flag.Flag) {
		if f.Name == "apps" {
			n, _ = strconv.Atoi(f.Value.String())
		}
	})
	out := io.Writer(os.Stdout)
	if *scaleJSON {
		out = os.Stderr
	}
	rep, err := benchSegments(n, *segSeed, out)
	if err != nil {
		fail("segments: %v", err)
	}
	if *scaleJSON {
		b, _ := json.MarshalIndent(rep, "", "  ")
		fmt.Println(string(b))
	}
}

// segBulkLoad: the first day's searches are written by bulkSave.
var segBulkLoad bool

// Bulk statements of the first day's searches (-segments-bulk): what the
// segments read of a search (the rankings, the keyword's searched mark,
// the apps' rating fields), without the crawl's history and sightings.
const (
	segBulkRankingsSQL = `INSERT INTO crawl_rankings (keyword, track_id, rank, seen_at)
SELECT value->>0, value->>1, value->>2, ?2 FROM json_each(?1) WHERE true ON CONFLICT DO NOTHING`
	segBulkAppsSQL = `INSERT INTO app_registry (track_id, name, rating_count, average_rating, genre_id)
SELECT value->>0, value->>1, value->>2, value->>3, value->>4 FROM json_each(?1) WHERE true ON CONFLICT DO NOTHING`
	segBulkSearchedSQL = `UPDATE crawl_keywords SET searched_at = ?2, result_count = j.value->>1
FROM json_each(?1) j WHERE crawl_keywords.keyword = j.value->>0`
)

// bulkSave writes searches (keyword → its answer) in segBulkKeywords
// chunks; known holds the apps already written.
func bulkSave(ctx context.Context, db *d1.DB, kws []string, answers [][]appstore.App, known map[int64]bool, now time.Time) error {
	ts := d1.Time(now)
	var ranks, apps, searched [][]any
	for i, kw := range kws {
		for r, a := range answers[i] {
			ranks = append(ranks, []any{kw, a.TrackID, r + 1})
			if !known[a.TrackID] {
				known[a.TrackID] = true
				apps = append(apps, []any{a.TrackID, a.Name, a.RatingCount, a.AverageRating, a.GenreID})
			}
		}
		searched = append(searched, []any{kw, len(answers[i])})
	}
	j := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	_, err := db.Exec(ctx, d1.Stmt{SQL: segBulkAppsSQL, Args: []any{j(apps)}},
		d1.Stmt{SQL: segBulkRankingsSQL, Args: []any{j(ranks), ts}},
		d1.Stmt{SQL: segBulkSearchedSQL, Args: []any{j(searched), ts}})
	return err
}

// segWorld is the living world the crawl searches, and what it answers.
type segWorld struct {
	w  *upstreammodel.World
	ix *upstreammodel.Index
}

// search is the world's answer to a keyword at t, as the crawl parses it:
// up to crawl.KeywordSearchSize apps, best first.
func (sw segWorld) search(kw string, t time.Time) []appstore.App {
	hits := sw.ix.Search(kw, t, crawl.KeywordSearchSize)
	out := make([]appstore.App, 0, len(hits))
	for _, h := range hits {
		s := sw.w.Static(h.Off)
		txt := sw.w.TextOf(&s)
		st := sw.w.At(&s, t)
		primary, _ := sw.w.GenreOf(&s)
		out = append(out, appstore.App{
			TrackID: segBaseTrackID + h.Off, Name: txt.Title, BundleID: fmt.Sprintf("com.sim.app%d", h.Off),
			DeveloperID: segBaseDeveloperID + int64(s.Dev) + 1, DeveloperName: fmt.Sprintf("Developer %d", s.Dev+1),
			Price: st.Price, Currency: "USD", Genre: primary.Name, GenreID: primary.ID,
			AverageRating: segAverage(h.Off), RatingCount: st.Ratings, Version: st.Version,
			ReleaseDate: s.Appear.UTC().Format(time.RFC3339), CurrentVersionReleaseDate: st.Updated.UTC().Format(time.RFC3339),
			Description: txt.Description,
		})
	}
	return out
}

// segAverage is an app's rating average (the world draws none): 3.0–4.9.
func segAverage(off int64) float64 { return 3 + float64(off*7919%20)/10 }

// segCounter is the rows a run cost: d1's counters (reads) and SQLite's
// total_changes() (writes).
type segCounter struct {
	db *d1.DB
}

func (c segCounter) changes() int64 {
	var rows []struct {
		N int64 `json:"n"`
	}
	if err := c.db.Query(context.Background(), &rows, `SELECT total_changes() AS n`); err != nil || len(rows) == 0 {
		fail("segments: total_changes: %v", err)
	}
	return rows[0].N
}

// measure runs fn under a cost context and returns its rows and queries.
func (c segCounter) measure(fn func(ctx context.Context)) (read, written, queries int64) {
	ctx, cost := d1.WithCost(context.Background())
	before := c.changes()
	fn(ctx)
	v := cost.View()
	return v.RowsRead, c.changes() - before, v.Queries
}

// benchSegments runs the bench on a world of n apps and prints its table to out.
func benchSegments(n int, seed uint64, out io.Writer) (segReport, error) {
	start := time.Now()
	say := func(format string, args ...any) { fmt.Fprintf(out, format, args...) }
	rep := segReport{Apps: n}
	w := upstreammodel.NewWorld(seed, n, segEpoch, upstreammodel.DefaultRates())
	sw := segWorld{w: w, ix: upstreammodel.NewIndex(w)}
	rep.Niches = len(w.Niches)
	// The search hints: the simulator's, over the apps' names at Epoch.
	hintApps := make([]upstreammodel.HintApp, 0, n)
	for off := int64(1); off <= int64(n); off++ {
		s := w.Static(off)
		hintApps = append(hintApps, upstreammodel.HintApp{Name: w.TextOf(&s).Title, Ratings: w.RatingsAt(&s, segEpoch)})
	}
	hints := upstreammodel.NewHintIndex(hintApps)
	hintApps = nil
	k := max(1, int(math.Round(float64(n)*segKeywordsPerApp)))
	newPerDay := int(math.Round(float64(crawl.HintNewKeywordsPerDay) * float64(n) / designApps))
	terms := hints.MostTyped(k + newPerDay)
	// Fewer terms than the plan's share: the day's new keywords are kept
	// from them all the same.
	k = min(k, len(terms)-min(newPerDay, len(terms)/2))
	rep.Keywords = k
	say("\nSegments on the living simulator: %d apps in %d hidden niches, seed %d; %d keywords (the most typed of %d hint terms), each searched (top %d) at Epoch\n",
		n, rep.Niches, seed, k, hints.Len(), crawl.KeywordSearchSize)

	db, _, err := openFastD1()
	if err != nil {
		return rep, err
	}
	store := crawl.D1Store{DB: db}
	ctr := segCounter{db: db}
	seg := segments.Store{DB: db}
	tasks := map[string]module.Task{}
	for _, t := range segments.Tasks(&seg) {
		tasks[t.Name] = t
	}
	ctx := context.Background()
	queue := func(kws []string, now time.Time) error {
		hk := make([]crawl.HintKeyword, len(kws))
		for i, kw := range kws {
			hk[i] = crawl.HintKeyword{Keyword: kw, Value: crawl.HintTermKeywordValue(i, len(kws))}
		}
		stmts := crawl.HintStatements(nil, hk, nil, now)
		for i := 0; i < len(stmts); i += 1000 {
			if _, err := db.Exec(ctx, stmts[i:min(i+1000, len(stmts))]...); err != nil {
				return err
			}
		}
		return nil
	}
	searchAll := func(kws []string, now time.Time) error {
		for _, kw := range kws {
			if err := store.SaveRankings(ctx, kw, sw.search(kw, now), now); err != nil {
				return fmt.Errorf("save %q: %w", kw, err)
			}
		}
		return nil
	}
	// Day 0: the keywords found and searched, then the day's full pass.
	day0 := segEpoch
	if err := queue(terms[:k], day0); err != nil {
		return rep, err
	}
	t0 := time.Now()
	if segBulkLoad {
		known := map[int64]bool{}
		for i := 0; i < k; i += segBulkKeywords {
			part := terms[i:min(i+segBulkKeywords, k)]
			answers := make([][]appstore.App, len(part))
			for j, kw := range part {
				answers[j] = sw.search(kw, day0)
			}
			if err := bulkSave(ctx, db, part, answers, known, day0); err != nil {
				return rep, fmt.Errorf("bulk save: %w", err)
			}
		}
		say("  searched %d keywords, saved by bulk statements in %.1f s\n", k, time.Since(t0).Seconds())
	} else {
		if err := searchAll(terms[:k], day0); err != nil {
			return rep, err
		}
		say("  searched and saved %d keywords through the crawl's store in %.1f s\n", k, time.Since(t0).Seconds())
	}
	full := func(now time.Time) (segPass, error) {
		var p segPass
		var res module.Result
		cpu0, wall0 := segCPU(), time.Now()
		var peak uint64
		p.RowsRead, p.RowsWritten, p.Queries = ctr.measure(func(ctx context.Context) {
			peak = segPeakHeap(func() { res = tasks["segments-full"].Run(ctx, func() time.Time { return now }) })
		})
		p.S, p.CPUS = time.Since(wall0).Seconds(), (segCPU() - cpu0).Seconds()
		p.PeakMemoryMB = float64(peak) / (1 << 20)
		p.Summary = res.Summary
		if !res.OK {
			return p, fmt.Errorf("segments-full: %s", res.Error)
		}
		return p, nil
	}
	rep.FirstPass, err = full(day0.Add(23 * time.Hour))
	if err != nil {
		return rep, err
	}
	say("  first full pass: %s; %.1f s (%.1f s CPU), peak heap +%.1f MB, %d rows read, %d written\n",
		rep.FirstPass.Summary, rep.FirstPass.S, rep.FirstPass.CPUS, rep.FirstPass.PeakMemoryMB, rep.FirstPass.RowsRead, rep.FirstPass.RowsWritten)

	// Day 1: every segments.UpdateEvery, the cycle's searches (the
	// keywords due on the cold schedule, 1/30 a day, and the day's new
	// keywords), the consumer's marks of what they changed, and
	// segments-update; then the day's full pass.
	day1 := segEpoch.Add(24 * time.Hour)
	cycles := int(24 * time.Hour / segments.UpdateEvery)
	researchDay := k * int(24*time.Hour) / int(segResearchEvery)
	var researched []string
	for i := 0; i < k && len(researched) < researchDay; i += max(1, k/max(researchDay, 1)) {
		researched = append(researched, terms[i])
	}
	fresh := terms[k:]
	day := &rep.DayPasses
	for c := 0; c < cycles; c++ {
		now := day1.Add(time.Duration(c) * segments.UpdateEvery)
		re := researched[c*len(researched)/cycles : (c+1)*len(researched)/cycles]
		nw := fresh[c*len(fresh)/cycles : (c+1)*len(fresh)/cycles]
		if err := queue(nw, now); err != nil {
			return rep, err
		}
		kws := append(append([]string{}, re...), nw...)
		if err := searchAll(kws, now); err != nil {
			return rep, err
		}
		day.Researched += len(re)
		day.NewKeywords += len(nw)
		// The rankings-updated consumer: a message names at most MaxKeys.
		_, wr, _ := ctr.measure(func(ctx context.Context) {
			for i := 0; i < len(kws); i += events.MaxKeys {
				body, _ := json.Marshal(events.Event{Type: events.RankingsUpdated, Keywords: kws[i:min(i+events.MaxKeys, len(kws))], At: d1.Time(now)})
				if err := seg.MarkEvent(ctx, string(body), now); err != nil {
					fail("segments: mark: %v", err)
				}
			}
		})
		day.MarkRows += wr
		rd, wr, _ := ctr.measure(func(ctx context.Context) {
			res := tasks["segments-update"].Run(ctx, func() time.Time { return now.Add(time.Minute) })
			if !res.OK {
				day.UpdateErrors++
			}
		})
		day.Updates++
		day.UpdateRead += rd
		day.UpdateWritten += wr
	}
	day.Full, err = full(day1.Add(23 * time.Hour))
	if err != nil {
		return rep, err
	}
	rep.RowsWrittenDay = day.MarkRows + day.UpdateWritten + day.Full.RowsWritten
	rep.RowsReadDay = day.UpdateRead + day.Full.RowsRead
	rep.RowsReadDayBound = rep.RowsReadDay * int64(crawl.KeywordSearchSize/segments.TopN)
	rep.PlanWrittenShare = float64(rep.RowsWrittenDay) * 30 / planRowsWrittenMonth
	rep.PlanReadShare = float64(rep.RowsReadDayBound) * 30 / planRowsReadMonth
	rep.PeakMemoryMB = max(rep.FirstPass.PeakMemoryMB, day.Full.PeakMemoryMB)
	rep.FullPassS, rep.FullPassCPUS = day.Full.S, day.Full.CPUS
	say("  a day: %d re-searched and %d new keywords over %d cycles; %d marked (rows written); %d segments-update runs (%d refused), %d rows read, %d written\n",
		day.Researched, day.NewKeywords, cycles, day.MarkRows, day.Updates, day.UpdateErrors, day.UpdateRead, day.UpdateWritten)
	say("  the day's full pass: %s; %.1f s (%.1f s CPU), peak heap +%.1f MB, %d rows read, %d written\n",
		day.Full.Summary, day.Full.S, day.Full.CPUS, day.Full.PeakMemoryMB, day.Full.RowsRead, day.Full.RowsWritten)

	// The segments against the hidden niches.
	rep.ARI, rep.ARISubjects, rep.Coverage, rep.Segments, rep.RankedApps, err = segScore(db, w)
	if err != nil {
		return rep, err
	}
	if rep.ARIKeywords, err = segKeywordARI(db, w); err != nil {
		return rep, err
	}
	if rep.ARIPerfectKeywords, rep.ARIPerfectKeywordsWeighted, err = segPerfectKeywords(db, w); err != nil {
		return rep, err
	}
	rep.WallS = time.Since(start).Seconds()
	say("\n%-22s %14s\n", "figure", "value")
	say("%-22s %14.3f   (goal ≥ 0.8: segments' apps against the world's hidden niches)\n", "ari", rep.ARI)
	say("%-22s %14.3f   (keywords, each by the niche of most of its top %d apps)\n", "ari_keywords", rep.ARIKeywords, segments.TopN)
	say("%-22s %14.3f   (apps, against their niche's subject)\n", "ari_subjects", rep.ARISubjects)
	say("%-22s %14.3f   (apps, had every keyword its truth's label; %.3f by weighted evidence)\n", "ari_perfect_keywords", rep.ARIPerfectKeywords, rep.ARIPerfectKeywordsWeighted)
	say("%-22s %14d\n", "segments", rep.Segments)
	say("%-22s %14.3f   (goal ≥ 0.9: of %d ranked apps)\n", "coverage", rep.Coverage, rep.RankedApps)
	say("%-22s %14d   (×30 = %.2f %% of the plan's %d M rows written a month)\n", "rows_written_day", rep.RowsWrittenDay, 100*rep.PlanWrittenShare, planRowsWrittenMonth/1_000_000)
	say("%-22s %14d   (bound %d; ×30 = %.4f %% of the plan's %d B rows read a month)\n", "rows_read_day", rep.RowsReadDay, rep.RowsReadDayBound, 100*rep.PlanReadShare, planRowsReadMonth/1_000_000_000)
	say("%-22s %14.1f   (Go heap above the pass's start; the Worker's isolate has 128 MB)\n", "peak_memory_mb", rep.PeakMemoryMB)
	say("%-22s %14.1f   (%.1f s CPU, natively)\n", "full pass s", rep.FullPassS, rep.FullPassCPUS)
	say("bench wall time %.0f s\n", rep.WallS)
	return rep, nil
}

// segScore reads the segments back and scores them: each ranked app (in a
// searched keyword's top segments.TopN) takes the segment whose keywords'
// tops hold it most often (ties: the lower id); an app in no segmented
// keyword's top is unsegmented, its own singleton for the ARI. It scores
// the same labelling against the niches' subjects too.
func segScore(db *d1.DB, w *upstreammodel.World) (ari, ariSubjects, coverage float64, nSeg, ranked int, err error) {
	ctx := context.Background()
	var rows []struct {
		TrackID int64  `json:"track_id"`
		Segment *int64 `json:"segment_id"`
		N       int    `json:"n"`
	}
	err = db.Query(ctx, &rows, `SELECT r.track_id AS track_id, s.segment_id AS segment_id, count(*) AS n
FROM crawl_rankings r LEFT JOIN segment_keywords s ON s.keyword = r.keyword
WHERE r.rank <= ?1 GROUP BY r.track_id, s.segment_id`, segments.TopN)
	if err != nil {
		return
	}
	type best struct {
		seg int64
		n   int
	}
	byApp := map[int64]best{}
	for _, r := range rows {
		b, ok := byApp[r.TrackID]
		if !ok {
			b = best{seg: -1}
		}
		if r.Segment != nil && (r.N > b.n || r.N == b.n && *r.Segment < b.seg) {
			b = best{*r.Segment, r.N}
		}
		byApp[r.TrackID] = b
	}
	ids := make([]int64, 0, len(byApp))
	for id := range byApp {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	truth := make([]int, len(ids))
	subjects := make([]int, len(ids))
	subjectID := map[string]int{}
	labels := make([]int, len(ids))
	covered := 0
	for i, id := range ids {
		truth[i] = w.NicheOf(id - segBaseTrackID)
		subj := w.Niches[truth[i]].Vocab[0]
		if _, ok := subjectID[subj]; !ok {
			subjectID[subj] = len(subjectID)
		}
		subjects[i] = subjectID[subj]
		if b := byApp[id]; b.seg >= 0 {
			labels[i] = int(b.seg)
			covered++
		} else {
			labels[i] = -1 - i
		}
	}
	var live []struct {
		N int `json:"n"`
	}
	if err = db.Query(ctx, &live, `SELECT count(*) AS n FROM segments WHERE retired_at IS NULL`); err != nil {
		return
	}
	if len(ids) == 0 {
		return 0, 0, 0, live[0].N, 0, nil
	}
	return segments.AdjustedRand(truth, labels), segments.AdjustedRand(subjects, labels), float64(covered) / float64(len(ids)), live[0].N, len(ids), nil
}

// segKeywordARI is the ARI over the searched keywords: a keyword's truth
// is the niche most of its top segments.TopN apps come from (ties: the
// lower niche), its label its segment (unsegmented: its own singleton).
func segKeywordARI(db *d1.DB, w *upstreammodel.World) (float64, error) {
	var rows []struct {
		Keyword string `json:"keyword"`
		TrackID *int64 `json:"track_id"`
		Segment *int64 `json:"segment_id"`
	}
	err := db.Query(context.Background(), &rows, `SELECT s.keyword AS keyword, r.track_id AS track_id, s.segment_id AS segment_id
FROM segment_keywords s LEFT JOIN crawl_rankings r ON r.keyword = s.keyword AND r.rank <= ?1 ORDER BY s.keyword`, segments.TopN)
	if err != nil {
		return 0, err
	}
	var truth, labels []int
	votes := map[int]int{}
	flush := func(seg *int64) {
		best, bn := -1, 0
		for n, c := range votes {
			if c > bn || c == bn && n < best {
				best, bn = n, c
			}
		}
		clear(votes)
		i := len(truth)
		truth = append(truth, best)
		if seg != nil {
			labels = append(labels, int(*seg))
		} else {
			labels = append(labels, -1-i)
		}
	}
	for i, r := range rows {
		if r.TrackID != nil {
			votes[w.NicheOf(*r.TrackID-segBaseTrackID)]++
		}
		if i+1 == len(rows) || rows[i+1].Keyword != r.Keyword {
			flush(r.Segment)
		}
	}
	if len(truth) == 0 {
		return 0, nil
	}
	return segments.AdjustedRand(truth, labels), nil
}

// segPerfectKeywords is what ari would be with every searched keyword
// labelled by its truth (the niche most of its top segments.TopN apps come
// from, ties: the lower), over the same apps (every app in a keyword's top
// segments.TopN): majority, each app taking the label most of its keywords
// carry (ties: the lower), as segScore does with segments; weighted, each
// app taking the label its keywords give the most evidence for, a
// keyword's evidence being its purity (the share of its top from its
// label's niche) to segments.SettlePurityPower. It bounds what keyword
// segments can score by their keywords alone.
func segPerfectKeywords(db *d1.DB, w *upstreammodel.World) (majority, weighted float64, err error) {
	var rows []struct {
		Keyword string `json:"keyword"`
		TrackID int64  `json:"track_id"`
	}
	err = db.Query(context.Background(), &rows, `SELECT keyword, track_id FROM crawl_rankings WHERE rank <= ?1 ORDER BY keyword`, segments.TopN)
	if err != nil || len(rows) == 0 {
		return 0, 0, err
	}
	type vote struct{ count, weight float64 }
	votes := map[int64]map[int]*vote{}
	for lo := 0; lo < len(rows); {
		hi := lo
		for hi < len(rows) && rows[hi].Keyword == rows[lo].Keyword {
			hi++
		}
		n := map[int]int{}
		best, bn := -1, 0
		for _, r := range rows[lo:hi] {
			x := w.NicheOf(r.TrackID - segBaseTrackID)
			n[x]++
			if n[x] > bn || n[x] == bn && x < best {
				best, bn = x, n[x]
			}
		}
		ev := math.Pow(float64(bn)/float64(hi-lo), segments.SettlePurityPower)
		for _, r := range rows[lo:hi] {
			if votes[r.TrackID] == nil {
				votes[r.TrackID] = map[int]*vote{}
			}
			v := votes[r.TrackID][best]
			if v == nil {
				v = &vote{}
				votes[r.TrackID][best] = v
			}
			v.count++
			v.weight += ev
		}
		lo = hi
	}
	ids := make([]int64, 0, len(votes))
	for id := range votes {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	truth := make([]int, len(ids))
	byCount := make([]int, len(ids))
	byWeight := make([]int, len(ids))
	for i, id := range ids {
		truth[i] = w.NicheOf(id - segBaseTrackID)
		bc, bw := -1, -1
		for x, v := range votes[id] {
			if c := votes[id][bc]; bc < 0 || v.count > c.count || v.count == c.count && x < bc {
				bc = x
			}
			if c := votes[id][bw]; bw < 0 || v.weight > c.weight || v.weight == c.weight && x < bw {
				bw = x
			}
		}
		byCount[i], byWeight[i] = bc, bw
	}
	return segments.AdjustedRand(truth, byCount), segments.AdjustedRand(truth, byWeight), nil
}

// segPeakHeap samples the heap in use while fn runs and returns its peak
// above the heap in use before, in bytes.
func segPeakHeap(fn func()) uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	var peak atomic.Uint64
	done := make(chan struct{})
	go func() {
		var s runtime.MemStats
		for {
			select {
			case <-done:
				return
			case <-time.After(segHeapSample):
				runtime.ReadMemStats(&s)
				if s.HeapInuse > peak.Load() {
					peak.Store(s.HeapInuse)
				}
			}
		}
	}()
	fn()
	close(done)
	runtime.ReadMemStats(&ms)
	p := max(peak.Load(), ms.HeapInuse)
	if p < base {
		return 0
	}
	return p - base
}

// segCPU is the process's user and system CPU time so far.
func segCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
