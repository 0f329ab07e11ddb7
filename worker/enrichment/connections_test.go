package enrichment

import (
	"context"
	"testing"
	"time"

	"storecrawl/durable/controller"
	"storecrawl/durable/pacing"
)

func TestConnectionGateHoldsItemsToItsSlots(t *testing.T) {
	g := newConnectionGate(controller.Chunking{MaxInFlight: 1, StopOnThrottle: true})
	first, ok := g.enter()
	if !ok {
		t.Fatal("the first item must start")
	}
	entered := make(chan bool)
	go func() { _, ok := g.enter(); entered <- ok }()
	select {
	case <-entered:
		t.Fatal("a second item started while the only connection was taken")
	case <-time.After(20 * time.Millisecond):
	}
	// The page comes back (via the item's context), served: the next starts.
	pageBack(withLease(context.Background(), first), false)
	pageBack(withLease(context.Background(), first), false) // once only: no second slot freed
	if ok := <-entered; !ok {
		t.Fatal("the next item must start once the connection is back")
	}
	if n := len(g.slots); n != 1 {
		t.Fatalf("slots taken %d, want 1", n)
	}
}

func TestConnectionGateStartsNothingAfterARefusal(t *testing.T) {
	for _, stop := range []bool{true, false} {
		g := newConnectionGate(controller.Chunking{MaxInFlight: 2, StopOnThrottle: stop})
		a, _ := g.enter()
		a.done(true) // refused
		if _, ok := g.enter(); ok != !stop {
			t.Errorf("stop on throttle %v: an item after a refusal started %v, want %v", stop, ok, !stop)
		}
		if stop && len(g.slots) != 0 {
			t.Errorf("an item refused entry holds a slot: %d taken", len(g.slots))
		}
	}
	// A refusal found once the page is parsed (a challenge page) stops too.
	g := newConnectionGate(controller.Chunking{StopOnThrottle: true})
	g.noteRefused()
	if _, ok := g.enter(); ok {
		t.Error("an item started after a challenge page")
	}
}

func TestConnectionGateBounds(t *testing.T) {
	if g := newConnectionGate(controller.Chunking{}); g != nil {
		t.Fatal("no MaxInFlight and no stop: the runtime queues, no gate")
	}
	if g := newConnectionGate(controller.Chunking{StopOnThrottle: true}); cap(g.slots) != pacing.MaxConnections {
		t.Fatalf("stop on throttle: %d slots, want the runtime's %d", cap(g.slots), pacing.MaxConnections)
	}
	var none *connectionGate
	if l, ok := none.enter(); l != nil || !ok {
		t.Fatal("no gate: every item starts")
	}
	none.noteRefused()
	pageBack(context.Background(), true) // no lease: nothing to give back
}
