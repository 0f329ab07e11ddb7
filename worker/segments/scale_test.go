//go:build unix && !js

package segments

import (
	"context"
	"os"
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"storecrawl/worker/d1"
	"storecrawl/worker/d1/d1test"
)

// scaleShape is the real store's shape at 1.1M apps (docs/scale.md):
// 100,000 searched keywords, their top TopN apps drawn from 2,000 niches
// of 550 apps, with noise and generalists.
var scaleShape = synthShape{niches: 2000, keywordsPerNiche: 50, appsPerNiche: 550, noise: 0.15, generalists: 500, generalistRate: 0.05}

// peakHeap samples the heap in use while fn runs (every 20 ms: ReadMemStats stops the world) and
// returns its peak above the heap in use before, in bytes.
func peakHeap(fn func()) uint64 {
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
			case <-time.After(20 * time.Millisecond):
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

// TestPartitionAt100kKeywordsFitsTheWorker measures a full pass's
// partition at the real store's shape: its peak heap above the input must
// stay under maxPartitionHeap, well inside the Worker's 128 MB with the
// rest of the instance. Slow (seconds): set SEGMENTS_SCALE=1 to run it
// (go test -run TestPartitionAt100k -v ./worker/segments/ prints the figures).
func TestPartitionAt100kKeywordsFitsTheWorker(t *testing.T) {
	if os.Getenv("SEGMENTS_SCALE") == "" {
		t.Skip("set SEGMENTS_SCALE=1: a 100,000-keyword partition")
	}
	const maxPartitionHeap = 64 << 20
	st := synth(1, scaleShape)
	var part []int32
	start, cpu0 := time.Now(), cpuTime()
	peak := peakHeap(func() {
		defer debug.SetMemoryLimit(debug.SetMemoryLimit(PassMemoryLimit))
		part = Partition(st.tops, st.apps)
	})
	took, cpu := time.Since(start), cpuTime()-cpu0
	ari, cov := scoreAgainstTruth(st, part)
	g := Project(st.tops, st.apps)
	t.Logf("%d keywords, %d apps: %d edges; partition %v (%v CPU), peak heap +%.1f MB; ARI %.3f, coverage %.3f",
		len(st.tops), st.apps, len(g.Adj)/2, took.Round(time.Millisecond), cpu.Round(time.Millisecond), float64(peak)/(1<<20), ari, cov)
	if peak > maxPartitionHeap {
		t.Fatalf("peak heap %d MB, over %d MB", peak>>20, maxPartitionHeap>>20)
	}
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// passShape is the full pass's input at the design's scale, as the
// living simulator's 1.1M apps give it: 100,000 searched keywords whose
// tops hold ~160,000 distinct apps (the bench's 91,093 keywords held
// 164,317).
var passShape = synthShape{niches: 2000, keywordsPerNiche: 50, appsPerNiche: 80, noise: 0.15, generalists: 500, generalistRate: 0.05}

// loadSynth writes a synthetic store's keywords (searched), their top
// TopN rankings and their apps' registry rows, in bulk statements.
func loadSynth(t *testing.T, drv *d1test.Driver, st synthStore) {
	t.Helper()
	const chunk = 5_000
	at := "2026-11-01T00:00:00.000Z"
	for i := 0; i < len(st.keywords); i += chunk {
		var kws []string
		var ranks [][3]any
		for k := i; k < min(i+chunk, len(st.keywords)); k++ {
			kws = append(kws, st.keywords[k])
			for r, a := range st.tops[k] {
				ranks = append(ranks, [3]any{st.keywords[k], int64(a) + 1, r + 1})
			}
		}
		drv.Exec(t, `INSERT INTO crawl_keywords (keyword, source, created_at, searched_at) SELECT value, 'title', ?2, ?2 FROM json_each(?1)`, jsonArg(kws), at)
		drv.Exec(t, `INSERT INTO crawl_rankings (keyword, track_id, rank, seen_at) SELECT value->>0, value->>1, value->>2, ?2 FROM json_each(?1)`, jsonArg(ranks), at)
	}
	drv.Exec(t, `INSERT INTO app_registry (track_id, name, rating_count, average_rating, competitiveness_score, rating_velocity_7d, rating_velocity_30d)
SELECT track_id, 'app', 10 + track_id * 37 % 5000, 3 + (track_id % 20) / 10.0, 50, 2, 1 FROM (SELECT DISTINCT track_id FROM crawl_rankings)`)
}

// TestFullPassAt100kKeywordsFitsTheWorker runs the full pass on D1 (SQLite
// natively) at the design's scale, twice (the first pass, then the next
// day's against the segments it made), and bounds its peak heap above the
// heap before it: maxFullPassHeap, inside the Worker's 128 MB with the
// rest of the instance. Measured at +39.6 to +44.9 MB over seeds 1–3 and
// both passes (SEGMENTS_SCALE=1 SEGMENTS_SCALE_SEEDS=1 go test -count=1
// -run TestFullPassAt100k -v ./worker/segments/ prints the figures); the
// bound leaves a quarter for the collector's timing. Slow (a
// minute): set SEGMENTS_SCALE=1 to run it.
func TestFullPassAt100kKeywordsFitsTheWorker(t *testing.T) {
	if os.Getenv("SEGMENTS_SCALE") == "" {
		t.Skip("set SEGMENTS_SCALE=1: a 100,000-keyword full pass")
	}
	const maxFullPassHeap = 56 << 20
	seeds := []uint64{1}
	if os.Getenv("SEGMENTS_SCALE_SEEDS") != "" {
		seeds = []uint64{1, 2, 3}
	}
	for _, seed := range seeds {
		db, drv := d1test.New(t)
		st := synth(seed, passShape)
		loadSynth(t, drv, st)
		s := Store{DB: db}
		now := time.Date(2026, 11, 23, 6, 0, 0, 0, time.UTC)
		for day := range 2 {
			var res RunResult
			var err error
			ctx, cost := d1.WithCost(context.Background())
			start, cpu0 := time.Now(), cpuTime()
			peak := peakHeap(func() { res, err = s.Full(ctx, now.AddDate(0, 0, day)) })
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("seed %d, day %d: %+v; %v (%v CPU), %d rows read; peak heap +%.1f MB",
				seed, day, res, time.Since(start).Round(time.Millisecond), (cpuTime() - cpu0).Round(time.Millisecond), cost.View().RowsRead, float64(peak)/(1<<20))
			if res.Keywords != len(st.keywords) {
				t.Fatalf("%d keywords partitioned, want %d", res.Keywords, len(st.keywords))
			}
			if peak > maxFullPassHeap {
				t.Fatalf("seed %d, day %d: peak heap %.1f MB, over %d MB", seed, day, float64(peak)/(1<<20), maxFullPassHeap>>20)
			}
		}
	}
}
