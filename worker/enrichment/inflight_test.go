package enrichment

import (
	"context"
	"testing"

	"storecrawl/durable/controller"
	"storecrawl/durable/pacing"
)

func TestRunKeepsThePlansBoundOnRequestsInFlight(t *testing.T) {
	// Six items in one chunk: without a bound the runtime's six
	// connections carry them at once; with MaxInFlight 2 (an upstream
	// whose burst is two) never more than two pages are in flight.
	for _, tc := range []struct{ bound, least, most int }{{0, 3, 6}, {2, 1, 2}} {
		var inflight, peak int
		srv := fixtureUpstream(t, &inflight, &peak)
		st := newStore(QueuedItem{TrackID: 11}, QueuedItem{TrackID: 12}, QueuedItem{TrackID: 13},
			QueuedItem{TrackID: 14}, QueuedItem{TrackID: 15}, QueuedItem{TrackID: 16})
		r, _, _, _ := newRunner(t, srv, st)
		out := r.Run(context.Background(), controller.RunPlan{BatchSize: 6, ChunkItems: 6, MaxInFlight: tc.bound})
		srv.Close()
		if out.Picked != 6 || out.Error != "" {
			t.Fatalf("bound %d: outcome %+v", tc.bound, out)
		}
		if peak < tc.least || peak > tc.most {
			t.Errorf("bound %d: peak requests in flight %d, want %d..%d", tc.bound, peak, tc.least, tc.most)
		}
	}
}

func TestRunStartsNoItemAfterARefusalCameBack(t *testing.T) {
	// One chunk of eight, one item in flight at a time: the first page is
	// refused (Retry-After), and the runtime would have sent the other
	// seven after that answer. Where the plan stops on a refusal they stay
	// queued, untouched; where it does not, all eight go.
	for _, tc := range []struct {
		stop         bool
		picked, sent int
	}{{true, 1, 1}, {false, 8, 8}} {
		var inflight, peak int
		srv := fixtureUpstream(t, &inflight, &peak)
		st := newStore(QueuedItem{TrackID: 3}, QueuedItem{TrackID: 11}, QueuedItem{TrackID: 12}, QueuedItem{TrackID: 13},
			QueuedItem{TrackID: 14}, QueuedItem{TrackID: 15}, QueuedItem{TrackID: 16}, QueuedItem{TrackID: 17})
		r, _, _, _ := newRunner(t, srv, st)
		out := r.Run(context.Background(), controller.RunPlan{BatchSize: 8, ChunkItems: 8, MaxInFlight: 1, StopOnThrottle: tc.stop})
		srv.Close()
		pages := 0
		for _, rq := range out.Requests {
			if rq.Kind == controller.RequestPage {
				pages++
			}
		}
		if out.Picked != tc.picked || out.Skipped != 8-tc.picked || pages != tc.sent {
			t.Errorf("stop on throttle %v: picked %d, skipped %d, pages sent %d; want %d, %d, %d",
				tc.stop, out.Picked, out.Skipped, pages, tc.picked, 8-tc.picked, tc.sent)
		}
	}
}

func TestRunHoldsAChunkToTheConnectionsWhereItStopsOnARefusal(t *testing.T) {
	// Twelve items in one chunk, no bound from the pacing: the runner
	// itself keeps them to the runtime's six connections, so that an item
	// starts only when one frees up (and can see a refusal first).
	var inflight, peak int
	srv := fixtureUpstream(t, &inflight, &peak)
	defer srv.Close()
	var queued []QueuedItem
	for id := 11; id < 23; id++ {
		queued = append(queued, QueuedItem{TrackID: int64(id)})
	}
	r, _, _, _ := newRunner(t, srv, newStore(queued...))
	out := r.Run(context.Background(), controller.RunPlan{BatchSize: 12, ChunkItems: 12, StopOnThrottle: true})
	if out.Picked != 12 || out.Error != "" {
		t.Fatalf("outcome %+v", out)
	}
	if peak > pacing.MaxConnections {
		t.Errorf("peak requests in flight %d, want at most %d", peak, pacing.MaxConnections)
	}
}
