package ledgerdb

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"time"

	"storecrawl/durable/ledger"
	"storecrawl/worker/d1"
	"storecrawl/worker/logx"
)

// Bounds of the mismatch record (ledger_mismatches, migrations/0037).
const (
	// MismatchListCap bounds each list GET /v1/ledger shows (open, and
	// repaired or cleared, newest first).
	MismatchListCap = 20
	// MismatchRetention keeps a closed mismatch this long; a run that
	// closes one deletes those older (a range of idx_ledger_mismatches_closed).
	MismatchRetention = 30 * 24 * time.Hour
)

// The mismatch statements (HotQueries lists the reads).
const (
	// openMismatchesSQL: the open mismatches of the writers a run compares,
	// by idx_ledger_mismatches_open (one row per open one; at most
	// len(LedgerSourceNames())+ReconcileBatch sources, under D1's 100
	// bound parameters).
	openMismatchesSQLHead = `SELECT source, first_seen, delta FROM ledger_mismatches WHERE closed_at IS NULL AND source IN `
	// listOpenMismatchesSQL: GET /v1/ledger's open list, in writer order.
	listOpenMismatchesSQL = `SELECT source, first_seen, delta FROM ledger_mismatches WHERE closed_at IS NULL ORDER BY source LIMIT ?`
	// listClosedMismatchesSQL: its repaired list, newest first.
	listClosedMismatchesSQL = `SELECT source, first_seen, delta, closed_at, duration_ms, resolution, fact_id FROM ledger_mismatches
WHERE closed_at IS NOT NULL ORDER BY closed_at DESC LIMIT ?`
	// openMismatchSQL records a new open mismatch; a writer's open one
	// already there (the unique open index) is kept, first seen and all.
	openMismatchSQL = `INSERT INTO ledger_mismatches (source, first_seen, delta) VALUES (?, ?, ?) ON CONFLICT DO NOTHING`
	// updateMismatchSQL: an open mismatch whose delta changed.
	updateMismatchSQL = `UPDATE ledger_mismatches SET delta = ? WHERE source = ? AND first_seen = ? AND closed_at IS NULL`
	// closeMismatchSQL closes a mismatch: the open row, or a new closed one
	// (a repair in the run that first saw it).
	closeMismatchSQL = `INSERT INTO ledger_mismatches (source, first_seen, delta, closed_at, duration_ms, resolution, fact_id)
VALUES (?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (source, first_seen) DO UPDATE SET delta = excluded.delta, closed_at = excluded.closed_at,
  duration_ms = excluded.duration_ms, resolution = excluded.resolution, fact_id = excluded.fact_id`
	// pruneMismatchesSQL deletes the closed mismatches past retention.
	pruneMismatchesSQL = `DELETE FROM ledger_mismatches WHERE closed_at IS NOT NULL AND closed_at < ?`
)

func openMismatchesSQL(n int) string { return openMismatchesSQLHead + "(" + d1.Placeholders(n) + ")" }

// mismatchRow is a ledger_mismatches row as the reads select it.
type mismatchRow struct {
	Source     string `json:"source"`
	FirstSeen  int64  `json:"first_seen"`
	Delta      string `json:"delta"`
	ClosedAt   int64  `json:"closed_at"`
	DurationMs int64  `json:"duration_ms"`
	Resolution string `json:"resolution"`
	FactID     string `json:"fact_id"`
}

func (r mismatchRow) mismatch() ledger.Mismatch {
	m := ledger.Mismatch{Source: r.Source, FirstSeen: r.FirstSeen, ClosedAt: r.ClosedAt, DurationMs: r.DurationMs,
		Resolution: r.Resolution, FactID: r.FactID}
	json.Unmarshal([]byte(r.Delta), &m.Delta) // written by mismatchStatement: a JSON object of integers
	return m
}

func (s D1Store) mismatches(ctx context.Context, q string, args ...any) ([]ledger.Mismatch, error) {
	var rows []mismatchRow
	if err := s.DB.Query(ctx, &rows, q, args...); err != nil {
		return nil, err
	}
	out := make([]ledger.Mismatch, len(rows))
	for i, r := range rows {
		out[i] = r.mismatch()
	}
	return out, nil
}

// OpenMismatches reads the open mismatches of sources, by writer.
func (s D1Store) OpenMismatches(ctx context.Context, sources []string) (map[string]*ledger.Mismatch, error) {
	out := map[string]*ledger.Mismatch{}
	if len(sources) == 0 {
		return out, nil
	}
	ms, err := s.mismatches(ctx, openMismatchesSQL(len(sources)), d1.Args(sources)...)
	for i := range ms {
		out[ms[i].Source] = &ms[i]
	}
	return out, err
}

// ListMismatches reads up to n open and n closed mismatches (GET /v1/ledger).
func (s D1Store) ListMismatches(ctx context.Context, n int) (Mismatches, error) {
	open, err := s.mismatches(ctx, listOpenMismatchesSQL, n)
	if err != nil {
		return Mismatches{}, err
	}
	closed, err := s.mismatches(ctx, listClosedMismatchesSQL, n)
	return Mismatches{Open: open, Repaired: closed}, err
}

// SaveMismatches writes what a run decided (one batch).
func (s D1Store) SaveMismatches(ctx context.Context, ts []ledger.Tracked, now time.Time) error {
	var stmts []d1.Stmt
	closed := false
	for _, t := range ts {
		if st, ok := mismatchStatement(t); ok {
			stmts = append(stmts, st)
			closed = closed || t.Mismatch.ClosedAt > 0
		}
	}
	if closed {
		stmts = append(stmts, d1.Stmt{SQL: pruneMismatchesSQL, Args: []any{now.Add(-MismatchRetention).UnixMilli()}})
	}
	if len(stmts) == 0 {
		return nil
	}
	_, err := s.DB.Exec(ctx, stmts...)
	return err
}

// mismatchStatement is the write of one decision (none for TrackNone).
func mismatchStatement(t ledger.Tracked) (d1.Stmt, bool) {
	m := t.Mismatch
	delta, _ := json.Marshal(m.Delta)
	switch t.Op {
	case ledger.TrackOpen:
		return d1.Stmt{SQL: openMismatchSQL, Args: []any{m.Source, m.FirstSeen, string(delta)}}, true
	case ledger.TrackUpdate:
		return d1.Stmt{SQL: updateMismatchSQL, Args: []any{string(delta), m.Source, m.FirstSeen}}, true
	case ledger.TrackRepair, ledger.TrackClear:
		var factID any
		if m.FactID != "" {
			factID = m.FactID
		}
		return d1.Stmt{SQL: closeMismatchSQL, Args: []any{m.Source, m.FirstSeen, string(delta), m.ClosedAt, m.DurationMs, m.Resolution, factID}}, true
	}
	return d1.Stmt{}, false
}

// Mismatches is GET /v1/ledger's record of mismatches: the open ones, and
// the repaired or cleared ones, newest first (MismatchListCap each).
type Mismatches struct {
	Open     []ledger.Mismatch `json:"open"`
	Repaired []ledger.Mismatch `json:"repaired"`
}

// MismatchStore keeps the mismatch record (ledger_mismatches).
type MismatchStore interface {
	OpenMismatches(ctx context.Context, sources []string) (map[string]*ledger.Mismatch, error)
	ListMismatches(ctx context.Context, n int) (Mismatches, error)
	SaveMismatches(ctx context.Context, ts []ledger.Tracked, now time.Time) error
}

// LedgerRepairs asks a writer object to repair its counters
// (POST /ledger/repair): it returns the ledger.mismatch fact it appended.
type LedgerRepairs interface {
	LedgerRepair(ctx context.Context, source string, r ledger.Repair) (ledger.Fact, error)
}

// MismatchCounts is what a run did about mismatches.
type MismatchCounts struct {
	Opened   int `json:"opened"`
	Repaired int `json:"repaired"`
	Cleared  int `json:"cleared"`
}

// trackMismatches keeps the mismatch record of a run's writers: it reads
// their open mismatches (one query), decides for each (ledger.Track), has
// each repairable one repaired by its writer, and writes what changed in
// one batch. A writer that could not repair keeps its mismatch open, first
// seen and all, for the next run.
func trackMismatches(ctx context.Context, st MismatchStore, rep LedgerRepairs, writers []ledger.Result, now time.Time) (MismatchCounts, error) {
	var c MismatchCounts
	var sources []string
	for _, w := range writers {
		if w.Status != StatusError {
			sources = append(sources, w.Source)
		}
	}
	open, err := st.OpenMismatches(ctx, sources)
	if err != nil {
		return c, fmt.Errorf("open mismatches: %w", err)
	}
	var ts []ledger.Tracked
	for _, w := range writers {
		if w.Status == StatusError {
			continue
		}
		t := ledger.Track(open[w.Source], w, now)
		if t.Op == ledger.TrackRepair {
			t = repairOne(ctx, rep, open[w.Source], t)
		}
		switch t.Op {
		case ledger.TrackOpen:
			c.Opened++
		case ledger.TrackRepair:
			c.Repaired++
		case ledger.TrackClear:
			c.Cleared++
		}
		ts = append(ts, t)
	}
	if err := st.SaveMismatches(ctx, ts, now); err != nil {
		return c, fmt.Errorf("save mismatches: %w", err)
	}
	return c, nil
}

// repairOne asks the writer to repair; on success the mismatch is closed
// as its fact says, else it stays (or is recorded) open.
func repairOne(ctx context.Context, rep LedgerRepairs, open *ledger.Mismatch, t ledger.Tracked) ledger.Tracked {
	m := t.Mismatch
	f, err := rep.LedgerRepair(ctx, m.Source, ledger.Repair{Delta: m.Delta, FirstSeen: m.FirstSeen})
	if err != nil {
		logx.Err("ledger.repair_failed", err, map[string]any{"source": m.Source, "delta": m.Delta, "first_seen": m.FirstSeen})
		switch {
		case open == nil:
			return ledger.Tracked{Op: ledger.TrackOpen, Mismatch: m}
		case !maps.Equal(open.Delta, m.Delta):
			return ledger.Tracked{Op: ledger.TrackUpdate, Mismatch: m}
		}
		return ledger.Tracked{Op: ledger.TrackNone, Mismatch: *open}
	}
	m.ClosedAt, m.DurationMs, m.Resolution, m.FactID = f.At, max(0, f.At-m.FirstSeen), ledger.ResolutionRepaired, f.ID
	logx.Event("ledger.mismatch_repaired", map[string]any{"level": logx.Warn, "source": m.Source, "delta": m.Delta,
		"first_seen": m.FirstSeen, "duration_ms": m.DurationMs, "fact_id": f.ID})
	return ledger.Tracked{Op: ledger.TrackRepair, Mismatch: m}
}
