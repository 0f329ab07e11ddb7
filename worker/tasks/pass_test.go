package tasks

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"storecrawl/worker/d1"
)

// memApp is one enriched app of memPass.
type memApp struct {
	id          int64
	ratings     int64
	snapshotted int64 // the latest snapshot's count (-1: none)
}

// memPass is PassStore over an in-memory catalogue of enriched apps, with
// named cursors; failRead / failWrite fail the n-th read or snapshot write.
type memPass struct {
	apps                []memApp
	cursors             map[string]string
	reads, writes       int
	failRead, failWrite int
	cursorWrites        int
}

func newMemPass(n int) *memPass {
	m := &memPass{cursors: map[string]string{}}
	for i := 1; i <= n; i++ {
		m.apps = append(m.apps, memApp{id: int64(i), ratings: int64(i) * 10, snapshotted: int64(i) * 10})
	}
	return m
}

func (m *memPass) ReadCursor(_ context.Context, name string) (d1.Cursor, error) {
	return d1.Cursor{Name: name, From: m.cursors[name]}, nil
}

func (m *memPass) SaveCursor(_ context.Context, c d1.Cursor, to int64, _ time.Time) (d1.Cursor, error) {
	if c.Moves(to) {
		m.cursorWrites++
		m.cursors[c.Name] = strconv.FormatInt(to, 10)
	}
	return c.Moved(to), nil
}

func (m *memPass) PassBatch(_ context.Context, after int64, n int) (PassBatch, error) {
	m.reads++
	if m.reads == m.failRead {
		return PassBatch{}, errors.New("D1 unavailable")
	}
	var b PassBatch
	for _, a := range m.apps {
		if a.id > after && b.Apps < n {
			b.Apps++
			b.Last = a.id
			if a.snapshotted != a.ratings {
				b.Unsnapshotted++
			}
		}
	}
	return b, nil
}

func (m *memPass) SnapshotUnsnapshotted(_ context.Context, after, last int64, _ time.Time) (int64, error) {
	m.writes++
	if m.writes == m.failWrite {
		return 0, errors.New("D1 unavailable")
	}
	var n int64
	for i, a := range m.apps {
		if a.id > after && a.id <= last && a.snapshotted != a.ratings {
			m.apps[i].snapshotted = a.ratings
			n++
		}
	}
	return n, nil
}

func TestRunPassIsBoundedResumesAndWritesOnlyWhatMoved(t *testing.T) {
	b := PassBounds{Cursor: "p", BatchApps: 100, MaxBatches: 3, Snapshot: true}
	m := newMemPass(350)
	m.cursors["other"] = "42"
	m.apps[5].ratings++ // app 6's ratings changed with no snapshot of it
	now := time.Date(2026, 3, 1, 3, 0, 0, 0, time.UTC)
	r := RunPass(context.Background(), m, b, now)
	if r.Apps != 300 || r.Batches != 3 || r.Wrapped || r.Error != "" || r.From != 0 || r.Next != 300 || m.reads != 3 {
		t.Fatalf("first run stops at its bound: %+v reads %d", r, m.reads)
	}
	// One app to copy: one write, in its batch only; one cursor write a run.
	if r.Snapshots != 1 || m.writes != 1 || m.cursorWrites != 1 || m.cursors["other"] != "42" {
		t.Fatalf("writes: %+v snapshot writes %d cursor writes %d", r, m.writes, m.cursorWrites)
	}
	r = RunPass(context.Background(), m, b, now)
	if r.Apps != 50 || !r.Wrapped || r.Next != 0 || r.From != 300 || r.Snapshots != 0 || m.writes != 1 {
		t.Fatalf("second run finishes and wraps: %+v", r)
	}
	// A catalogue that fits one run: it starts and ends at 0, no cursor write.
	small := newMemPass(50)
	RunPass(context.Background(), small, b, now)
	RunPass(context.Background(), small, b, now)
	if small.cursorWrites != 0 || small.writes != 0 {
		t.Fatalf("a pass over unchanged apps ending where it began wrote %d cursors, %d snapshots", small.cursorWrites, small.writes)
	}
	// Without Snapshot: no snapshot writes however stale.
	cov := newMemPass(10)
	cov.apps[0].ratings++
	if r := RunPass(context.Background(), cov, PassBounds{Cursor: "d", BatchApps: 100, MaxBatches: 1}, now); r.Snapshots != 0 || cov.writes != 0 {
		t.Fatalf("coverage pass wrote: %+v", r)
	}
}

func TestRunPassSavesTheLastWholeBatchOnFailure(t *testing.T) {
	b := PassBounds{Cursor: "p", BatchApps: 100, MaxBatches: 3, Snapshot: true}
	m := newMemPass(350)
	m.failRead = 2
	r := RunPass(context.Background(), m, b, time.Now())
	if r.Batches != 1 || !strings.Contains(r.Error, "D1 unavailable") || m.cursors["p"] != "100" {
		t.Fatalf("%+v cursor %q", r, m.cursors["p"])
	}
	m = newMemPass(350)
	m.apps[150].ratings++
	m.failWrite = 1
	r = RunPass(context.Background(), m, b, time.Now())
	if r.Batches != 1 || !strings.HasPrefix(r.Error, "write:") || m.cursors["p"] != "100" {
		t.Fatalf("a failed copy keeps its batch for the next run: %+v cursor %q", r, m.cursors["p"])
	}
}
