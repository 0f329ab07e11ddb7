package sim

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"storecrawl/durable/pacing"
)

// A variant's name, as -variants prints its worst, reruns that variant:
// the same scenario newVariant draws, under -seed.
func TestCLIRerunsAVariantByName(t *testing.T) {
	family, err := loadScenarios("retry-after")
	if err != nil {
		t.Fatal(err)
	}
	okBySeed := map[string]int{}
	for _, seed := range []string{"1", "7"} {
		code, out, errs := runCLI(t, "-scenario", "retry-after#56", "-seed", seed, "-controller", "default", "-json")
		if code != exitOK {
			t.Fatalf("seed %s: exit %d: %s", seed, code, errs)
		}
		var got Metrics
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatal(err)
		}
		v, err := newVariant(family[0], map[string]uint64{"1": 1, "7": 7}[seed], 56)
		if err != nil {
			t.Fatal(err)
		}
		want := runOne(v, "default", false)
		if got.Scenario != "retry-after#56" || got.RequestsOK != want.RequestsOK || got.Ticks != want.Ticks {
			t.Errorf("seed %s: got %s ok=%d ticks=%d, want %s ok=%d ticks=%d",
				seed, got.Scenario, got.RequestsOK, got.Ticks, want.Scenario, want.RequestsOK, want.Ticks)
		}
		okBySeed[seed] = got.RequestsOK
	}
	if okBySeed["1"] == okBySeed["7"] {
		t.Errorf("-seed 1 and 7 ran the same variant (%d served each)", okBySeed["1"])
	}
	for _, bad := range []string{"retry-after#x", "retry-after#-1", "retry-after#1000"} {
		if code, _, errs := runCLI(t, "-scenario", bad); code != exitError || !strings.Contains(errs, "family#i") {
			t.Errorf("%s: exit %d, %q", bad, code, errs)
		}
	}
	if code, _, errs := runCLI(t, "-scenario", "no-such#3"); code != exitError || !strings.Contains(errs, "no-such") {
		t.Errorf("unknown family: exit %d, %q", code, errs)
	}
}

// -ticks prints one line per tick, from the run's start, and leaves the
// run's figures as they are without it (the wrapper decides nothing).
func TestCLITicksPrintsEveryTick(t *testing.T) {
	code, out, errs := runCLI(t, "-scenario", "retry-after", "-controller", "default", "-ticks", "-json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	head, lines, found := strings.Cut(out, "\nretry-after × default: every tick")
	if !found {
		t.Fatalf("no tick section:\n%.2000s", out)
	}
	var got Metrics
	if err := json.Unmarshal([]byte(head), &got); err != nil {
		t.Fatal(err)
	}
	sc, _ := loadScenarios("retry-after")
	want := runOne(sc[0], "default", false)
	if got.RequestsOK != want.RequestsOK || got.Ticks != want.Ticks {
		t.Errorf("with -ticks ok=%d ticks=%d, without ok=%d ticks=%d", got.RequestsOK, got.Ticks, want.RequestsOK, want.Ticks)
	}
	var ticks []string
	for _, l := range strings.Split(lines, "\n")[1:] {
		if strings.Contains(l, " → ") {
			ticks = append(ticks, l)
		}
	}
	// Ticks counts Plans, and every Plan is answered by a Done (one held
	// by a Retry-After reports no requests).
	if len(ticks) != want.Ticks {
		t.Fatalf("%d tick lines, want %d", len(ticks), want.Ticks)
	}
	first := ticks[0]
	for _, part := range []string{"0.000s  items=", "sent=", "refused=", "chunks=0.000s×", "next=", "phase=slow_start", "rate_per_min="} {
		if !strings.Contains(first, part) {
			t.Errorf("first tick %q lacks %q", first, part)
		}
	}
	refusedTicks := 0
	for _, l := range ticks {
		if !strings.Contains(l, "refused=0 ") {
			refusedTicks++
		}
	}
	if refusedTicks == 0 {
		t.Error("no tick shows a refusal: retry-after's first refusal comes in slow start")
	}
	for _, args := range [][]string{{"-ticks"}, {"-scenario", "halved", "-ticks", "-seeds", "2"}, {"-scenario", "halved", "-ticks", "-variants", "1"}} {
		if code, _, errs := runCLI(t, args...); code != exitUsage || !strings.Contains(errs, "-ticks needs one -scenario") {
			t.Errorf("%v: exit %d, %q", args, code, errs)
		}
	}
}

// chunkSends shows each chunk's first send and size, so two chunks sent
// together across a tick's boundary can be read off two lines.
func TestChunkSendsListsEachChunk(t *testing.T) {
	var out []pacing.Outcome
	for i := range 10 {
		at := epoch.Add(time.Duration(i/6) * 6129 * time.Millisecond)
		out = append(out, pacing.Outcome{Item: i, SentAt: at.Add(time.Duration(i%6) * time.Millisecond)})
	}
	if got, want := chunkSends(out, 6), "0.000s×6,6.129s×4"; got != want {
		t.Errorf("chunkSends = %q, want %q", got, want)
	}
	if got, want := chunkSends(out, 1), "0.000s×1,0.001s×1,0.002s×1,0.003s×1,+6 more"; got != want {
		t.Errorf("one item a chunk: %q, want %q", got, want)
	}
	if got := chunkSends(nil, 6); got != "-" {
		t.Errorf("no requests: %q", got)
	}
}
