package enrichment

import (
	"context"
	"sync"
	"sync/atomic"

	"storecrawl/durable/controller"
	"storecrawl/durable/pacing"
)

// The runtime lets six requests wait for their answers at once and queues
// the rest, sending them when a connection frees up: after the answer that
// said stop too (a Retry-After's hold among them). A run therefore holds a
// chunk's items to the connections itself (connectionGate): an item takes
// one to send its page and gives it back when the page has come back (not
// when it is parsed and saved), and where the program stops on a refusal no
// item starts once one has come back. The pacing simulator's chunks run
// the same way.

// connectionGate is a run's connections: at most slots items between
// starting and their page's answer, and the refusal that stops the rest.
type connectionGate struct {
	slots   chan struct{}
	stop    bool // the program stops on a refusal (StopOnThrottle)
	refused atomic.Bool
}

// newConnectionGate bounds a run to the program's MaxInFlight, else to the
// runtime's connections where the program stops on a refusal; nil (no
// bound) otherwise, as the runtime then queues what it must.
func newConnectionGate(c controller.Chunking) *connectionGate {
	switch {
	case c.MaxInFlight > 0:
		return &connectionGate{slots: make(chan struct{}, c.MaxInFlight), stop: c.StopOnThrottle}
	case c.StopOnThrottle:
		return &connectionGate{slots: make(chan struct{}, pacing.MaxConnections), stop: true}
	}
	return nil
}

// enter waits for a connection for the next item; false means a refusal
// has come back and the program stops on one: the item must not start (and
// holds nothing).
func (g *connectionGate) enter() (*connectionLease, bool) {
	if g == nil {
		return nil, true
	}
	g.slots <- struct{}{}
	if g.stop && g.refused.Load() {
		<-g.slots
		return nil, false
	}
	return &connectionLease{gate: g}, true
}

// noteRefused records a refusal (a challenge page found only once parsed,
// say) for the items not yet started.
func (g *connectionGate) noteRefused() {
	if g != nil {
		g.refused.Store(true)
	}
}

// connectionLease is one item's connection, given back once.
type connectionLease struct {
	gate *connectionGate
	once sync.Once
}

// done gives the connection back, noting first whether the answer was a
// refusal, so no item waiting for it starts after that. Safe on nil and
// more than once.
func (l *connectionLease) done(refused bool) {
	if l == nil {
		return
	}
	l.once.Do(func() {
		if refused {
			l.gate.refused.Store(true)
		}
		<-l.gate.slots
	})
}

type leaseKey struct{}

// withLease carries an item's connection to where its page comes back.
func withLease(ctx context.Context, l *connectionLease) context.Context {
	if l == nil {
		return ctx
	}
	return context.WithValue(ctx, leaseKey{}, l)
}

// pageBack gives the item's connection back when its page has come back
// (or it will send none): refused says the answer was a refusal.
func pageBack(ctx context.Context, refused bool) {
	l, _ := ctx.Value(leaseKey{}).(*connectionLease)
	l.done(refused)
}
