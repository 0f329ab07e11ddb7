package enrichment

import (
	"context"
	"fmt"
	"testing"
	"time"

	"storecrawl/durable/controller"
	"storecrawl/worker/appstore"
)

// The run performs its program and decides nothing the program lists: a
// stale stored lookup the program says to use is used (no lookup sent), a
// fresh one it says to look up is looked up, the lookup goes out as the
// program split it, a step it leaves without a lookup stays queued,
// untouched, and a step without a page keeps its lookup only.
func TestRunPerformsItsProgramExactly(t *testing.T) {
	var inflight, peak int
	srv := fixtureUpstream(t, &inflight, &peak)
	defer srv.Close()
	now := time.Now()
	stored := func(id int64, age time.Duration) QueuedItem {
		app := appstore.App{TrackID: id, Name: fmt.Sprint("stored ", id), RatingCount: 1000 + id, Version: "1.0", Languages: []string{"EN"}}
		return QueuedItem{TrackID: id, Lookup: &app, LookupAt: now.Add(-age)}
	}
	const staleStored, freshStored, waiting, lookupOnly = fixtureID, fixtureID + 1, 10, 11
	items := []QueuedItem{stored(staleStored, 48*time.Hour), stored(freshStored, time.Minute), {TrackID: waiting}, {TrackID: lookupOnly}}
	prog := controller.Program{
		TickAt: now.UnixMilli(),
		Steps: []controller.Step{
			{TrackID: staleStored, Pick: 0, Lookup: controller.LookupStored, Page: controller.PageFetch},
			{TrackID: freshStored, Pick: 1, Lookup: controller.LookupBatch, Page: controller.PageFetch},
			{TrackID: lookupOnly, Pick: 3, Lookup: controller.LookupBatch, Page: controller.PageNone},
			{TrackID: waiting, Pick: 2, Lookup: controller.LookupNone, Page: controller.PageFetch},
		},
		Lookups:  []controller.Lookup{{From: 1, To: 3}},
		Pages:    4,
		Chunking: controller.Chunking{ChunkItems: 4, RideAlong: controller.RideAlong},
		Spend:    controller.RunPlan{}.Spend(),
	}
	st := newStore()
	r, _, _, _ := newRunner(t, srv, st)
	out := r.Perform(context.Background(), prog, items)

	if want := []string{fmt.Sprintf("%d,%d", freshStored, lookupOnly)}; fmt.Sprint(srv.asked()) != fmt.Sprint(want) {
		t.Fatalf("lookups %q, want the program's one %q", srv.asked(), want)
	}
	kinds := map[string]int{}
	for _, rq := range out.Requests {
		kinds[rq.Kind]++
	}
	if kinds[controller.RequestLookup] != 1 || kinds[controller.RequestPage] != 2 {
		t.Fatalf("requests %v, want 1 lookup and 2 pages", kinds)
	}
	if out.Picked != 3 || out.Skipped != 1 || len(out.Results) != 3 {
		t.Fatalf("picked %d skipped %d: %+v", out.Picked, out.Skipped, out.Results)
	}
	for j, want := range []struct {
		id     int64
		stored bool
		page   string
	}{{staleStored, true, controller.PageParsed}, {freshStored, false, controller.PageParsed}, {lookupOnly, false, controller.PageSkipped}} {
		res := out.Results[j]
		if res.TrackID != want.id || res.Class != controller.ClassOK || res.StoredLookup != want.stored || res.Page != want.page {
			t.Errorf("step %d: %+v, want %+v", j, res, want)
		}
	}
	if rec := st.saved[staleStored]; rec.App.Name != fmt.Sprint("stored ", staleStored) {
		t.Errorf("the stale stored lookup the program named was not used: %+v", rec.App)
	}
	if rec, ok := st.saved[freshStored]; !ok || rec.App.Name == fmt.Sprint("stored ", freshStored) {
		t.Errorf("the fresh item the program looks up kept its stored fields: %+v", rec.App)
	}
	if st.lookups[lookupOnly] != PagePending {
		t.Errorf("the page-less step keeps its lookup only: %v", st.lookups)
	}
	if _, ok := st.saved[waiting]; ok || st.lookups[waiting] != "" || st.requeued[waiting] != 0 {
		t.Errorf("the step without a lookup was touched")
	}
}

// Run is its program: the same picked items performed through Compile
// give the outcome Run gives, the fresh-lookup rule applied once.
func TestRunIsItsCompiledProgram(t *testing.T) {
	now := time.Now()
	stored := func(id int64, age time.Duration) QueuedItem {
		app := appstore.App{TrackID: id, Name: fmt.Sprint("stored ", id), RatingCount: 1000 + id, Version: "1.0", Languages: []string{"EN"}}
		return QueuedItem{TrackID: id, Lookup: &app, LookupAt: now.Add(-age)}
	}
	items := []QueuedItem{{TrackID: 3}, stored(fixtureID, time.Hour), stored(4, 48*time.Hour), stored(fixtureID+1, 23*time.Hour)}
	plan := controller.RunPlan{BatchSize: 4, ChunkItems: 4, LookupFreshS: int64((24 * time.Hour).Seconds())}
	summary := func(out controller.RunOutcome, asked []string) string {
		s := fmt.Sprint(asked, out.Picked, out.Skipped)
		for _, res := range out.Results {
			s += fmt.Sprintf(" %d:%s:%s:%v", res.TrackID, res.Class, res.Page, res.StoredLookup)
		}
		return s
	}
	var runs []string
	for _, perform := range []bool{false, true} {
		var inflight, peak int
		srv := fixtureUpstream(t, &inflight, &peak)
		st := newStore(items...)
		r, _, _, _ := newRunner(t, srv, st)
		var out controller.RunOutcome
		if perform {
			out = r.Perform(context.Background(), controller.Compile(plan, Candidates(items), now), items)
		} else {
			r.Now = func() time.Time { return now }
			out = r.Run(context.Background(), plan)
		}
		runs = append(runs, summary(out, srv.asked()))
		srv.Close()
	}
	if runs[0] != runs[1] {
		t.Fatalf("run %s\nprogram %s", runs[0], runs[1])
	}
}
