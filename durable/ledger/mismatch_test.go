package ledger

import (
	"testing"
	"time"
)

// TestTrackOpensRepairsAndClears: a counter-only difference is repaired in
// the run that sees it; one in the fact count (facts missing from D1) is
// opened, kept with its first-seen time and not written again while its
// delta stands, updated when it changes, repaired once only counters
// differ, and cleared when the writer is in step again.
func TestTrackOpensRepairsAndClears(t *testing.T) {
	t1 := time.UnixMilli(1_800_000_000_000)
	t2, t3, t4 := t1.Add(15*time.Minute), t1.Add(30*time.Minute), t1.Add(45*time.Minute)
	res := func(status string, diff map[string]int64) Result {
		return Result{Source: "scheduler", Status: status, Diff: diff}
	}

	if tr := Track(nil, res(StatusMismatch, map[string]int64{"runs.a": 2}), t1); tr.Op != TrackRepair || tr.Mismatch.FirstSeen != t1.UnixMilli() {
		t.Fatalf("counter-only mismatch: %+v", tr)
	}
	missing := map[string]int64{"runs.a": 1, FactsCounter: 1}
	tr := Track(nil, res(StatusMismatch, missing), t1)
	if tr.Op != TrackOpen {
		t.Fatalf("facts missing: %+v", tr)
	}
	open := tr.Mismatch
	if tr := Track(&open, res(StatusMismatch, map[string]int64{"runs.a": 1, FactsCounter: 1}), t2); tr.Op != TrackNone || tr.Mismatch.FirstSeen != t1.UnixMilli() {
		t.Fatalf("the same delta again: %+v", tr)
	}
	if tr := Track(&open, res(StatusSettling, missing), t2); tr.Op != TrackNone {
		t.Fatalf("settling: %+v", tr)
	}
	if tr := Track(&open, res(StatusMismatch, map[string]int64{"runs.a": 2, FactsCounter: 2}), t2); tr.Op != TrackUpdate || tr.Mismatch.FirstSeen != t1.UnixMilli() {
		t.Fatalf("a changed delta: %+v", tr)
	}
	if tr := Track(&open, res(StatusMismatch, map[string]int64{"runs.a": 3}), t3); tr.Op != TrackRepair || tr.Mismatch.FirstSeen != t1.UnixMilli() {
		t.Fatalf("counters only now: %+v", tr)
	}
	tr = Track(&open, res(StatusOK, nil), t4)
	if tr.Op != TrackClear || tr.Mismatch.ClosedAt != t4.UnixMilli() || tr.Mismatch.DurationMs != (45*time.Minute).Milliseconds() || tr.Mismatch.Resolution != ResolutionCleared {
		t.Fatalf("in step again: %+v", tr)
	}
	if tr := Track(nil, res(StatusOK, nil), t4); tr.Op != TrackNone {
		t.Fatalf("in step: %+v", tr)
	}
}

// TestRepairOrder: a repair order is validated, its fact changes no
// counter, and Apply repairs only counters the writer keeps.
func TestRepairOrder(t *testing.T) {
	for _, bad := range []struct{ body, field string }{
		{`[]`, "body"},
		{`{"delta":{"a":1}}`, "first_seen"},
		{`{"delta":{},"first_seen":1}`, "delta"},
		{`{"delta":{"_facts":1},"first_seen":1}`, "delta"},
		{`{"delta":{"a":0},"first_seen":1}`, "delta"},
	} {
		if _, field, _ := ParseRepair([]byte(bad.body)); field != bad.field {
			t.Errorf("%s: field %q, want %q", bad.body, field, bad.field)
		}
	}
	r, field, _ := ParseRepair([]byte(`{"delta":{"a":5,"b":-1},"first_seen":1000}`))
	if field != "" {
		t.Fatal(field)
	}
	got, unknown := r.Apply(map[string]int64{"a": 11, "b": 2, "c": 7})
	if unknown != "" || len(got) != 2 || got["a"] != 6 || got["b"] != 3 {
		t.Fatalf("repaired %v %q", got, unknown)
	}
	if _, unknown := r.Apply(map[string]int64{"a": 11}); unknown != "b" {
		t.Fatalf("unknown counter %q", unknown)
	}
	f := r.Fact("w", time.UnixMilli(4000))
	if f.Kind != KindMismatch || f.Counters != nil || f.Data["duration_ms"] != int64(3000) || f.Data["first_seen"] != int64(1000) || f.Validate() != nil {
		t.Fatalf("fact %+v", f)
	}
}
