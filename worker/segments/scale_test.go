//go:build unix

package segments

import (
	"os"
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
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
