package ledger

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"time"
)

// A writer's lifetime counters are a cache of its facts: each fact carries
// the deltas it applied to them, so summed, the facts are the truth. When
// reconciliation finds the counters differing from the facts (D1's sums
// plus the facts not sent yet) with every fact accounted for, the counters
// are what is wrong: the writer repairs them (counters − delta) and appends
// a KindMismatch fact in the same transaction. A difference in the fact
// count itself (facts missing from D1, not yet sent again by a check)
// cannot be repaired from the facts: it stays open until it clears or the
// counters alone differ.

// KindMismatch is the fact a writer appends when a mismatch of its
// counters is repaired. It changes no counter (the repair brings the
// counters back to their facts; a fact carrying the correction would undo
// it); its data: writer, delta (counter − facts, per counter), first_seen
// (unix ms), duration_ms (at − first_seen) and resolution.
const KindMismatch = "ledger.mismatch"

// Resolutions of a closed mismatch.
const (
	// ResolutionRepaired: the writer's counters were brought back to its facts.
	ResolutionRepaired = "repaired"
	// ResolutionCleared: the difference went away by itself (missing facts
	// reached D1, or the writer retired).
	ResolutionCleared = "cleared"
)

// Mismatch is one writer's difference from its facts, open (ClosedAt 0)
// or closed.
type Mismatch struct {
	Source string `json:"writer"`
	// Delta is the writer's counter minus its facts, per counter that
	// differs (FactsCounter: the fact count).
	Delta map[string]int64 `json:"delta"`
	// FirstSeen is the run that first saw it (unix ms); a mismatch that
	// persists across runs keeps it, its delta changing or not.
	FirstSeen int64 `json:"first_seen"`
	// ClosedAt is when it was repaired or cleared (unix ms; 0: open), and
	// DurationMs how long it had lasted then.
	ClosedAt   int64  `json:"closed_at,omitempty"`
	DurationMs int64  `json:"duration_ms,omitempty"`
	Resolution string `json:"resolution,omitempty"`
	// FactID is the writer's KindMismatch fact of a repair.
	FactID string `json:"fact_id,omitempty"`
}

// Repairable says whether the counters can be repaired from the facts:
// every fact is accounted for (the fact count agrees), only counters differ.
func Repairable(delta map[string]int64) bool {
	_, facts := delta[FactsCounter]
	return len(delta) > 0 && !facts
}

// What a reconciliation run does about one writer's mismatch (Track).
const (
	TrackNone   = ""       // nothing to write
	TrackOpen   = "open"   // a new mismatch, not repairable: record it open
	TrackUpdate = "update" // the open mismatch's delta changed, still not repairable
	TrackRepair = "repair" // ask the writer to repair (Repair), then close it
	TrackClear  = "clear"  // the open mismatch went away: close it
)

// Tracked is Track's decision: Op, and the mismatch as it is to be kept.
type Tracked struct {
	Op       string
	Mismatch Mismatch
}

// Track decides what a run does with one writer's comparison r, given its
// open mismatch (nil: none), at now. Only StatusMismatch opens or repairs;
// a writer in step (or retired) clears an open one; settling or an
// unreadable writer leaves it as it is. An open mismatch seen again with
// the same delta writes nothing: one record per mismatch, not per run.
func Track(open *Mismatch, r Result, now time.Time) Tracked {
	ms, status := now.UnixMilli(), r.Status
	switch {
	case status == StatusMismatch:
		m := Mismatch{Source: r.Source, Delta: maps.Clone(r.Diff), FirstSeen: ms}
		changed := true
		if open != nil {
			m.FirstSeen = open.FirstSeen
			changed = !maps.Equal(open.Delta, r.Diff)
		}
		switch {
		case Repairable(m.Delta):
			return Tracked{Op: TrackRepair, Mismatch: m}
		case open == nil:
			return Tracked{Op: TrackOpen, Mismatch: m}
		case changed:
			return Tracked{Op: TrackUpdate, Mismatch: m}
		}
		return Tracked{Op: TrackNone, Mismatch: *open}
	case open != nil && (status == StatusOK || status == statusRetired):
		m := *open
		m.ClosedAt, m.DurationMs, m.Resolution = ms, ms-m.FirstSeen, ResolutionCleared
		return Tracked{Op: TrackClear, Mismatch: m}
	}
	if open != nil {
		return Tracked{Op: TrackNone, Mismatch: *open}
	}
	return Tracked{}
}

// statusRetired is worker/ledgerdb.StatusRetired: a writer whose D1 totals
// net to zero, its storage gone.
const statusRetired = "retired"

// Repair is reconciliation's order to a writer (POST /ledger/repair): bring
// the counters back to the facts by subtracting Delta, and append the
// KindMismatch fact.
type Repair struct {
	Delta     map[string]int64 `json:"delta"`
	FirstSeen int64            `json:"first_seen"`
}

// maxRepairCounters bounds a repair's delta: no writer has more counters
// (the scheduler's, the most, stay under a hundred).
const maxRepairCounters = 128

// ParseRepair validates a repair order; field names the bad one.
func ParseRepair(body []byte) (r Repair, field, msg string) {
	if err := json.Unmarshal(body, &r); err != nil {
		return r, "body", "repair must be a JSON object {delta, first_seen}"
	}
	if r.FirstSeen <= 0 {
		return r, "first_seen", "first_seen must be a unix ms time"
	}
	if len(r.Delta) == 0 || len(r.Delta) > maxRepairCounters {
		return r, "delta", fmt.Sprintf("delta must name 1..%d counters", maxRepairCounters)
	}
	for k, v := range r.Delta {
		if k == "" || len(k) > maxNameLen || strings.HasPrefix(k, "_") || v == 0 {
			return r, "delta", fmt.Sprintf("delta counter %q: a writer counter with a non-zero difference", Truncate(k, maxNameLen))
		}
	}
	return r, "", ""
}

// Fact is the writer's KindMismatch fact of the repair at now.
func (r Repair) Fact(source string, now time.Time) Fact {
	return New(source, KindMismatch, now, nil, map[string]any{
		"writer": source, "delta": r.Delta, "first_seen": r.FirstSeen,
		"duration_ms": max(0, now.UnixMilli()-r.FirstSeen), "resolution": ResolutionRepaired,
	})
}

// Apply is counters (a writer's lifetime counters) repaired: each counter
// the delta names, less its difference. unknown names a delta counter the
// writer does not keep (then nothing is to be repaired).
func (r Repair) Apply(counters map[string]int64) (repaired map[string]int64, unknown string) {
	repaired = map[string]int64{}
	for _, k := range SortedKeys(r.Delta) {
		v, ok := counters[k]
		if !ok {
			return nil, k
		}
		repaired[k] = v - r.Delta[k]
	}
	return repaired, ""
}
