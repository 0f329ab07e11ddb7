package enrichment

import (
	"context"
	"testing"

	controller "storecrawl/durable/enrichment"
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
