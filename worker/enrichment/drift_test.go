package enrichment

import (
	"context"
	"testing"

	"storecrawl/durable/controller"
)

// brokenFirst is the first of 100 ids whose store pages never parse in
// fixtureUpstream (the simulator's permanently broken pages).
const brokenFirst = 400

func pagesOf(out controller.RunOutcome) (unparsed, skipped int) {
	for _, res := range out.Results {
		switch res.Page {
		case controller.PageUnparsed:
			unparsed++
		case controller.PageSkipped:
			skipped++
		}
	}
	return unparsed, skipped
}

// The incident: retry-failed put back apps given up on pages that never
// parse; their priority put them first, and five unparsed pages tripped
// the run's breaker. Apps that failed before weigh little: the run fetches
// every page, the good ones are enriched, and the broken ones use up
// their attempts.
func TestRetriedBrokenAppsDoNotTripTheRun(t *testing.T) {
	var inflight, peak int
	srv := fixtureUpstream(t, &inflight, &peak)
	defer srv.Close()
	var items []QueuedItem
	for i := range 5 {
		items = append(items, QueuedItem{TrackID: brokenFirst + int64(i), PriorParseError: true, PageStatus: PageUnparsedStatus})
	}
	for range 6 {
		items = append(items, QueuedItem{TrackID: fixtureID})
	}
	st := newStore(items...)
	r, _, _, _ := newRunner(t, srv, st)
	out := r.Run(context.Background(), controller.RunPlan{BatchSize: len(items), ChunkItems: 1})
	unparsed, skipped := pagesOf(out)
	if unparsed != 5 || skipped != 0 || len(st.saved) != 1 {
		t.Fatalf("unparsed %d skipped %d saved %d: the retried apps must not stop the pages", unparsed, skipped, len(st.saved))
	}
	for i := range 5 {
		if st.requeued[brokenFirst+int64(i)] != 1 {
			t.Fatalf("a retried app's parse error counts as its attempt: requeued %v", st.requeued)
		}
	}
	// One app's page, however often it fails, is not the markup either.
	items = nil
	for range 12 {
		items = append(items, QueuedItem{TrackID: brokenFirst})
	}
	st = newStore(items...)
	r, _, _, _ = newRunner(t, srv, st)
	out = r.Run(context.Background(), controller.RunPlan{BatchSize: 12, ChunkItems: 3})
	if unparsed, skipped := pagesOf(out); unparsed != 12 || skipped != 0 {
		t.Fatalf("one broken app tripped the run: unparsed %d skipped %d", unparsed, skipped)
	}
}

// While pages are paused the probe asks the markup, not a broken app: a
// clean item probes when one was picked, and the probes rotate otherwise.
func TestProbesGoToCleanAppsAndRotate(t *testing.T) {
	var inflight, peak int
	srv := fixtureUpstream(t, &inflight, &peak)
	defer srv.Close()
	broken := QueuedItem{TrackID: brokenFirst, PriorParseError: true, PageStatus: PageUnparsedStatus}
	st := newStore(broken, QueuedItem{TrackID: brokenFirst + 1, PageStatus: PageUnparsedStatus}, QueuedItem{TrackID: fixtureID})
	r, _, _, _ := newRunner(t, srv, st)
	out := r.Run(context.Background(), controller.RunPlan{BatchSize: 3, ChunkItems: 3, SkipPages: true, PageProbes: 1})
	probed := map[int64]string{}
	for _, res := range out.Results {
		if res.Probe {
			probed[res.TrackID] = res.Page
		}
	}
	if len(probed) != 1 || probed[fixtureID] != controller.PageParsed {
		t.Fatalf("the probe must take the clean app first: %v", probed)
	}
	// Only broken apps picked: successive probes take different ones.
	seen := map[int64]bool{}
	for seq := range int64(3) {
		st := newStore(broken, QueuedItem{TrackID: brokenFirst + 1, PriorParseError: true}, QueuedItem{TrackID: brokenFirst + 2, PriorParseError: true})
		r, _, _, _ := newRunner(t, srv, st)
		out := r.Run(context.Background(), controller.RunPlan{BatchSize: 3, ChunkItems: 3, SkipPages: true, PageProbes: 1, ProbeSeq: seq})
		for _, res := range out.Results {
			if res.Probe {
				seen[res.TrackID] = true
				if st.requeued[res.TrackID] != 1 {
					t.Fatalf("a retried app's unparsed probe counts toward its give-up: %v", st.requeued)
				}
			}
		}
	}
	if len(seen) != 3 {
		t.Fatalf("probes must rotate through the broken apps, probed %v", seen)
	}
}
