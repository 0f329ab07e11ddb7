package ledgerdb

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"testing"
	"time"

	"storecrawl/worker/d1"
)

// fakePrune is D1 for pruning: per writer, the times of its facts and its
// rollup minutes (ascending), and the cursor.
type fakePrune struct {
	facts, minutes map[string][]int64
	cursor         string
	saves          int
	batches        []int    // n of every delete asked
	visited        []string // writers whose facts were pruned, in order
	fail           string
}

func (f *fakePrune) SourcesInD1(context.Context) ([]string, error) {
	var out []string
	for s := range f.facts {
		out = append(out, s)
	}
	sort.Sort(sort.Reverse(sort.StringSlice(out))) // Prune orders them itself
	return out, nil
}
func (f *fakePrune) PruneCursor(context.Context) (d1.Cursor, error) {
	return d1.Cursor{Name: pruneCursorName, From: f.cursor}, nil
}
func (f *fakePrune) SavePruneCursor(_ context.Context, c d1.Cursor, s string, _ time.Time) error {
	if !c.Moves(s) {
		return nil
	}
	f.cursor = s
	f.saves++
	return nil
}
func (f *fakePrune) del(rows map[string][]int64, source string, before int64, n int) (int64, error) {
	f.batches = append(f.batches, n)
	if source == f.fail {
		return 0, errors.New("D1 unavailable")
	}
	xs := rows[source]
	k := 0
	for k < len(xs) && k < n && xs[k] < before {
		k++
	}
	rows[source] = xs[k:]
	return int64(k), nil
}
func (f *fakePrune) PruneFacts(_ context.Context, s string, before int64, n int) (int64, error) {
	if len(f.visited) == 0 || f.visited[len(f.visited)-1] != s {
		f.visited = append(f.visited, s)
	}
	return f.del(f.facts, s, before, n)
}
func (f *fakePrune) PruneMinutes(_ context.Context, s string, before int64, n int) (int64, error) {
	return f.del(f.minutes, s, before, n)
}

// times is n old times (a year ago) then k recent ones.
func times(now time.Time, old, recent int) []int64 {
	var out []int64
	for i := 0; i < old; i++ {
		out = append(out, now.Add(-365*24*time.Hour).UnixMilli()+int64(i))
	}
	for i := 0; i < recent; i++ {
		out = append(out, now.Add(-time.Minute).UnixMilli()+int64(i))
	}
	return out
}

func TestPruneIsBoundedAndResumesFromItsCursor(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	f := &fakePrune{
		facts: map[string][]int64{
			"controller:main": times(now, 25_000, 10), "limiter:a": times(now, 3_000, 5), "scheduler:v1": times(now, 500, 5),
		},
		minutes: map[string][]int64{"controller:main": times(now, 12_000, 100), "limiter:a": times(now, 0, 100)},
	}
	run := func() PruneResult {
		f.batches = nil
		r := Prune(context.Background(), f, 30*24*time.Hour, now)
		sum := 0
		for _, n := range f.batches {
			if n > PruneBatchRows || n <= 0 {
				t.Fatalf("a delete of %d rows (bound %d)", n, PruneBatchRows)
			}
			sum += n
		}
		if deleted := r.Facts + r.Minutes; deleted > PruneRunRows || r.Error != "" || r.Statements != len(f.batches) {
			t.Fatalf("run %+v: %d rows deleted (bound %d), %d statements asked", r, deleted, PruneRunRows, len(f.batches))
		}
		return r
	}
	// The first writer's backlog spends the run: the cursor stays on it.
	if r := run(); r.Facts != PruneRunRows || r.Minutes != 0 || r.Writers != 0 || r.From != "" || r.Next != "controller:main" || f.cursor != "controller:main" {
		t.Fatalf("run 1: %+v, cursor %q", r, f.cursor)
	}
	// It finishes that writer (facts, then its minutes), then spends the
	// rest on the next and stops there.
	if r := run(); r.Facts != 5_000+3_000 || r.Minutes != 12_000 || r.Writers != 1 || r.From != "controller:main" || r.Next != "limiter:a" {
		t.Fatalf("run 2: %+v", r)
	}
	// From the cursor round to the writers before it: all done, the cursor
	// is cleared.
	r := run()
	if r.Facts != 500 || r.Minutes != 0 || r.Writers != 3 || r.Next != "" || f.cursor != "" {
		t.Fatalf("run 3: %+v, cursor %q", r, f.cursor)
	}
	if r.Summary() != "pruned 500 facts and 0 rollup minutes in 6 statements; 3 writers done" {
		t.Fatalf("summary %q", r.Summary())
	}
	for src, want := range map[string]int{"controller:main": 10, "limiter:a": 5, "scheduler:v1": 5} {
		if got := len(f.facts[src]); got != want {
			t.Errorf("%s keeps %d facts, want its %d recent ones", src, got, want)
		}
	}
	if len(f.minutes["controller:main"]) != 100 || len(f.minutes["limiter:a"]) != 100 {
		t.Errorf("recent minutes pruned: %d, %d", len(f.minutes["controller:main"]), len(f.minutes["limiter:a"]))
	}
	// Nothing to do: the cursor is not written again.
	saves := f.saves
	if r := run(); r.Facts+r.Minutes != 0 || r.Writers != 3 || f.saves != saves {
		t.Fatalf("idle run: %+v, %d cursor writes", r, f.saves-saves)
	}
}

func TestPruneStatementsAreBoundedPerRun(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	// Many writers with nothing to prune (ad-hoc limiter keys): two
	// statements each, so one run reaches PruneRunStatements first.
	f := &fakePrune{facts: map[string][]int64{}, minutes: map[string][]int64{}}
	for i := 0; i < PruneRunStatements; i++ { // twice the writers one run can visit
		f.facts[fmt.Sprintf("limiter:k%03d", i)] = nil
	}
	r := Prune(context.Background(), f, 30*24*time.Hour, now)
	if r.Statements != PruneRunStatements || r.Writers != PruneRunStatements/2 || r.Next != fmt.Sprintf("limiter:k%03d", PruneRunStatements/2) {
		t.Fatalf("%+v", r)
	}
	// The next run goes on from there, round to the first writers.
	f.visited = nil
	if r = Prune(context.Background(), f, 30*24*time.Hour, now); r.Writers != PruneRunStatements/2 || f.visited[0] != "limiter:k050" || r.Next != "limiter:k000" {
		t.Fatalf("second run %+v from %s", r, f.visited[0])
	}
	// A cursor on a writer that is gone starts at the next one.
	f.cursor, f.visited = "limiter:k050x", nil
	if r = Prune(context.Background(), f, 30*24*time.Hour, now); r.From != "limiter:k050x" || f.visited[0] != "limiter:k051" {
		t.Fatalf("vanished cursor: %+v from %s", r, f.visited[0])
	}
}

func TestPruneFailureKeepsTheCursor(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	f := &fakePrune{facts: map[string][]int64{"a": times(now, 10, 0), "b": times(now, 10, 0)}, minutes: map[string][]int64{}, cursor: "a", fail: "b"}
	r := Prune(context.Background(), f, 30*24*time.Hour, now)
	if r.Error == "" || r.Facts != 10 || r.Next != "a" || f.cursor != "a" || f.saves != 0 {
		t.Fatalf("%+v, cursor %q", r, f.cursor)
	}
}
