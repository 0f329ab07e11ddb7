package controller

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// The program lists exactly what the tick does: the fresh stored lookups
// first, the others in the plan's lookup batches up to its lookup pace,
// the rest waiting; each step's page rule; the page slots and the spend.
func TestCompileListsTheTick(t *testing.T) {
	now := time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC)
	items := []Candidate{
		{TrackID: 1}, // never looked up
		{TrackID: 2, LookupAt: now.Add(-time.Hour)},      // fresh
		{TrackID: 3, LookupAt: now.Add(-48 * time.Hour)}, // stale
		{TrackID: 4, Refresh: true},                      // a due refresh
		{TrackID: 5, LookupAt: now.Add(-24 * time.Hour)}, // fresh at the bound
		{TrackID: 6},
		{TrackID: 7},
	}
	plan := RunPlan{TickAt: now.UnixMilli() - 5, BatchSize: 3, ChunkItems: 2, ChunkPauseMs: 250, StopOnThrottle: true,
		MaxInFlight: 4, LookupBatch: 2, LookupRequests: 2, LookupFreshS: int64((24 * time.Hour).Seconds()),
		Subrequests: 900, D1Queries: 400, PendingEnriched: []int64{99}}
	p := Compile(plan, items, now)
	want := Program{
		TickAt: plan.TickAt,
		Steps: []Step{
			{TrackID: 2, Pick: 1, Lookup: LookupStored, Page: PageFetch},
			{TrackID: 5, Pick: 4, Lookup: LookupStored, Page: PageFetch},
			{TrackID: 1, Pick: 0, Lookup: LookupBatch, Page: PageFetch},
			{TrackID: 3, Pick: 2, Lookup: LookupBatch, Page: PageFetch},
			{TrackID: 4, Pick: 3, Lookup: LookupBatch, Page: PageIfChanged, Refresh: true},
			{TrackID: 6, Pick: 5, Lookup: LookupBatch, Page: PageFetch},
			{TrackID: 7, Pick: 6, Lookup: LookupNone, Page: PageFetch},
		},
		Lookups:  []Lookup{{From: 2, To: 4}, {From: 4, To: 6}},
		Pages:    3,
		Chunking: Chunking{ChunkItems: 2, ChunkPauseMs: 250, StopOnThrottle: true, MaxInFlight: 4, RideAlong: RideAlong},
		Spend: Spend{Subrequests: 900, D1Queries: 400, ItemCalls: MaxCallsPerItem, ItemD1Queries: MaxD1PerItem,
			LookupCalls: MaxCallsPerLookup, PagePutCalls: PagePutCalls, LookupRequests: 2, PageSlots: 3},
		PendingEnriched: []int64{99},
	}
	if !reflect.DeepEqual(p, want) {
		got, _ := json.MarshalIndent(p, "", " ")
		t.Fatalf("program:\n%s", got)
	}
	// The API host held: only the fresh items run, no lookup is sent.
	plan.NoLookups = true
	p = Compile(plan, items, now)
	if len(p.Lookups) != 0 || p.Spend.LookupRequests != 0 || p.Steps[2].Lookup != LookupNone || p.Steps[1].Lookup != LookupStored {
		t.Fatalf("no lookups: %+v", p)
	}
	// Freshness off: every item is looked up, in pick order.
	plan.NoLookups, plan.LookupFreshS, plan.LookupRequests = false, 0, 0
	p = Compile(plan, items, now)
	if p.Steps[0].TrackID != 1 || p.Steps[1].Lookup != LookupBatch || len(p.Lookups) != 4 || p.Lookups[3] != (Lookup{From: 6, To: 7}) {
		t.Fatalf("freshness off: %+v", p)
	}
}

// While pages are paused, nothing is fresh (no page would follow), the
// clean items probe first and the rest keep their lookups only; with no
// clean item the probe rotates by the probe count.
func TestCompileProbesWhilePagesArePaused(t *testing.T) {
	now := time.Now()
	items := []Candidate{
		{TrackID: 1, PriorParseError: true, LookupAt: now},
		{TrackID: 2},
		{TrackID: 3, PageUnparsed: true},
		{TrackID: 4},
	}
	plan := RunPlan{BatchSize: 1, SkipPages: true, PageProbes: 1, LookupFreshS: 3600, ProbeSeq: 1}
	p := Compile(plan, items, now)
	var ids []int64
	for j, s := range p.Steps {
		ids = append(ids, s.TrackID)
		wantPage := PageNone
		if j == 0 {
			wantPage = PageProbe
		}
		if s.Page != wantPage || s.Lookup != LookupBatch {
			t.Errorf("step %d: %+v", j, s)
		}
	}
	if !reflect.DeepEqual(ids, []int64{2, 4, 1, 3}) {
		t.Fatalf("probe order %v", ids)
	}
	p = Compile(plan, []Candidate{{TrackID: 1, PriorParseError: true}, {TrackID: 3, PageUnparsed: true}}, now)
	if p.Steps[0].TrackID != 3 || p.Steps[0].Page != PageProbe {
		t.Fatalf("rotated probe: %+v", p.Steps)
	}
	if !p.Steps[0].MayFetch(true) || p.Steps[1].MayFetch(false) {
		t.Fatal("a probe fetches even when the run tripped; a paused page never")
	}
}

// The pick: while pages are paused without probes only unlooked items,
// no refresh while pages or lookups are paused, else up to the tick's items.
func TestPlanPick(t *testing.T) {
	for _, c := range []struct {
		plan RunPlan
		want PickSpec
	}{
		{RunPlan{BatchSize: 4, TickItems: 40}, PickSpec{Queue: 4, Refreshes: 40, Pages: 4}},
		{RunPlan{BatchSize: 4}, PickSpec{Queue: 4, Refreshes: 4, Pages: 4}},
		{RunPlan{BatchSize: 4, SkipPages: true}, PickSpec{Queue: 4, UnlookedOnly: true, Pages: 4}},
		{RunPlan{BatchSize: 4, SkipPages: true, PageProbes: 1}, PickSpec{Queue: 4, Pages: 4}},
		{RunPlan{BatchSize: 4, NoLookups: true, TickItems: 40}, PickSpec{Queue: 4, Pages: 4}},
	} {
		if got := c.plan.Pick(); got != c.want {
			t.Errorf("%+v: pick %+v, want %+v", c.plan, got, c.want)
		}
	}
}
