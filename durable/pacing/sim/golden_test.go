package sim

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"storecrawl/durable/pacing"
)

// The golden traces pin the default controller's every decision: each
// shipped scenario under seeds 1..goldenSeeds is simulated, and every tick's
// plan, wake-up, capacity estimate and persisted state is folded into one
// hash per run (testdata/golden/hashes.txt). A few runs are kept whole as
// readable traces (goldenTraced). A restructuring of the controller must
// leave them all unchanged; a deliberate change of behaviour re-records
// them with
//
//	go test ./durable/pacing/sim -run TestGoldenDefaultTraces -update
var update = flag.Bool("update", false, "rewrite the golden traces in testdata/golden")

const (
	goldenSeeds = 5
	goldenDir   = "testdata/golden"
	goldenHash  = "hashes.txt"
)

// goldenTraced are the runs whose first ticks are kept as readable traces:
// a penalised upstream (Retry-After) and a block with a bracket (403 storm),
// the branches a hash alone explains least.
var goldenTraced = []string{"retry-after/1", "storm-403/1"}

// tracer wraps a controller and writes every Plan and Done exactly (full,
// hashed) and, for the first goldenTraceTicks ticks, one readable line a
// tick (short: the plan, the tick's answers, the wake-up and the state's
// main fields, with a digest of the rest).
type tracer struct {
	pacing.Algorithm
	full, short bytes.Buffer
	ticks       int
	plan        string
	// reload, when set, stores the state after every tick and continues
	// from a fresh controller that decoded it, as the Durable Object does.
	reload func() pacing.Algorithm
}

// goldenTraceTicks bounds a readable trace: enough to follow a penalised
// cycle or a block, small enough to read (about 25 kB).
const goldenTraceTicks = 100

func traceAt(t time.Time) string {
	if t.Before(epoch) {
		return "-" // no hold (NotBefore 0)
	}
	return t.Sub(epoch).String()
}

func (t *tracer) Plan(now time.Time) pacing.Plan {
	p := t.Algorithm.Plan(now)
	fmt.Fprintf(&t.full, "P %s items=%d chunk=%d pause=%d stop=%t nb=%s\n",
		traceAt(now), p.Items, p.ChunkItems, p.ChunkPause.Nanoseconds(), p.StopOnThrottle, traceAt(p.NotBefore))
	t.plan = fmt.Sprintf("%s items=%d chunk=%d pause=%s nb=%s", traceAt(now), p.Items, p.ChunkItems, p.ChunkPause, traceAt(p.NotBefore))
	if p.MaxInFlight > 0 {
		// Only where set, so the plans without it hash as before.
		fmt.Fprintf(&t.full, "  inflight=%d\n", p.MaxInFlight)
		t.plan += fmt.Sprintf(" inflight=%d", p.MaxInFlight)
	}
	return p
}

func (t *tracer) Done(now time.Time, outcomes []pacing.Outcome) time.Time {
	next := t.Algorithm.Done(now, outcomes)
	a := countAnswers(outcomes)
	answers := fmt.Sprintf("sent=%d ok=%d thr=%d err=%d to=%d", a.sent, a.ok, a.refused, a.serverErr, a.timeouts)
	capacity := strconv.FormatFloat(t.CapacityPerMin(), 'g', -1, 64)
	state := canonicalState(t.Algorithm)
	fmt.Fprintf(&t.full, "D %s %s next=%d cap=%s\n  S %s\n", traceAt(now), answers, next.Sub(epoch).Nanoseconds(), capacity, state)
	if t.ticks < goldenTraceTicks {
		var m map[string]any
		_ = json.Unmarshal([]byte(state), &m)
		sum := sha256.Sum256([]byte(state))
		fmt.Fprintf(&t.short, "%s | end=%s %s next=%s | rate=%v ceiling=%v phase=%v streak=%v state=%s\n",
			t.plan, traceAt(now), answers, traceAt(next), field(m, "rate"), field(m, "ceiling"), field(m, "phase"), field(m, "streak"), hex.EncodeToString(sum[:4]))
	}
	t.ticks++
	if t.reload != nil {
		raw, err := json.Marshal(t.Algorithm)
		if err != nil {
			panic(err)
		}
		fresh := t.reload()
		if err := json.Unmarshal(raw, fresh); err != nil {
			panic(err)
		}
		t.Algorithm = fresh
	}
	return next
}

// field is a state field as the trace shows it (0 when left out as zero).
func field(m map[string]any, k string) any {
	if v, ok := m[k]; ok {
		return v
	}
	return 0
}

// canonicalState is the controller's persisted JSON with sorted keys, its
// format version left out and zero values dropped (an absent field decodes
// as its zero), so only what the next tick decides from is compared.
func canonicalState(a pacing.Algorithm) string {
	raw, err := json.Marshal(a)
	if err != nil {
		panic(err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		panic(err)
	}
	delete(m, "v")
	for k, v := range m {
		if isZeroJSON(v) {
			delete(m, k)
		}
	}
	out, err := json.Marshal(m) // map keys are sorted
	if err != nil {
		panic(err)
	}
	return string(out)
}

func isZeroJSON(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case bool:
		return !x
	case string:
		return x == ""
	case json.Number:
		f, err := x.Float64()
		return err == nil && f == 0
	case []any:
		return len(x) == 0
	case map[string]any:
		return len(x) == 0
	}
	return false
}

func TestGoldenDefaultTraces(t *testing.T) {
	scs, err := loadScenarios(allFlag)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	got := map[string]string{} // scenario/seed → hash
	traces := map[string]string{}
	t.Run("runs", func(t *testing.T) {
		for _, sc := range scs {
			for seed := uint64(1); seed <= goldenSeeds; seed++ {
				key := fmt.Sprintf("%s/%d", sc.Name, seed)
				t.Run(key, func(t *testing.T) {
					t.Parallel()
					c := *sc
					c.Seed = seed
					ctl, err := newController("default", &c)
					if err != nil {
						t.Fatal(err)
					}
					tr := &tracer{Algorithm: ctl}
					simulate(&c, tr)
					sum := sha256.Sum256(tr.full.Bytes())
					mu.Lock()
					defer mu.Unlock()
					got[key] = hex.EncodeToString(sum[:])
					for _, k := range goldenTraced {
						if k == key {
							traces[key] = tr.short.String()
						}
					}
				})
			}
		}
	})
	if t.Failed() {
		return
	}
	// Seed 1 again, the state stored and decoded after every tick: the
	// persisted state carries every decision.
	t.Run("stored", func(t *testing.T) {
		for _, sc := range scs {
			key := sc.Name + "/1"
			t.Run(key, func(t *testing.T) {
				t.Parallel()
				c := *sc
				c.Seed = 1
				fresh := func() pacing.Algorithm {
					ctl, err := newController("default", &c)
					if err != nil {
						panic(err)
					}
					return ctl
				}
				tr := &tracer{Algorithm: fresh(), reload: fresh}
				simulate(&c, tr)
				sum := sha256.Sum256(tr.full.Bytes())
				mu.Lock()
				defer mu.Unlock()
				if h := hex.EncodeToString(sum[:]); h != got[key] {
					t.Errorf("%s: decisions differ when the state is stored and decoded every tick", key)
				}
			})
		}
	})
	keys := make([]string, 0, len(got))
	for k := range got {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var hashes strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&hashes, "%s %s\n", k, got[k])
	}
	if *update {
		if err := os.MkdirAll(goldenDir, 0o755); err != nil {
			t.Fatal(err)
		}
		writeGolden(t, goldenHash, hashes.String())
		for k, tr := range traces {
			writeGolden(t, traceFile(k), tr)
		}
		return
	}
	want := readGolden(t, goldenHash)
	for _, k := range goldenTraced {
		if w := readGolden(t, traceFile(k)); w != traces[k] {
			t.Errorf("%s: trace differs from %s at line %s", k, traceFile(k), firstDiff(w, traces[k]))
		}
	}
	wantHash := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(want), "\n") {
		if k, h, ok := strings.Cut(line, " "); ok {
			wantHash[k] = h
		}
	}
	for _, k := range keys {
		if wantHash[k] != got[k] {
			t.Errorf("%s: decisions differ from the recorded trace", k)
		}
	}
	if len(wantHash) != len(keys) {
		t.Errorf("recorded %d runs, ran %d (new or removed scenarios: -update)", len(wantHash), len(keys))
	}
}

func traceFile(key string) string { return strings.ReplaceAll(key, "/", "-seed") + ".trace" }

func writeGolden(t *testing.T, name, data string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(goldenDir, name), []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readGolden(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(goldenDir, name))
	if err != nil {
		t.Fatalf("%v (record with -update)", err)
	}
	return string(b)
}

// firstDiff is the first line (1-based) where two traces differ, with both versions.
func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < max(len(al), len(bl)); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			return fmt.Sprintf("%d:\n  want %s\n  got  %s", i+1, x, y)
		}
	}
	return "none"
}
