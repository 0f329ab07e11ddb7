// Package subreq counts the subrequests one Worker invocation makes and
// refuses the one that would pass its budget.
//
// The platform caps the subrequests of one invocation: fetches, and calls
// to D1, R2, KV, Queues and other Durable Objects alike (10,000 on Workers
// Paid, 50 on Free: SUBREQUEST_BUDGET), and D1 apart caps its queries
// (1,000 on Paid, 50 on Free). A tick that counted only its upstream
// fetches could plan hundreds of items and then die at the call past the
// limit with items half settled. Every client the enrichment run uses
// spends from the budgets its context carries before it calls out (D1
// calls from both); a call a budget cannot cover fails with ErrExhausted
// instead of reaching the platform's hard limit, and the run stops
// starting items before that happens.
package subreq

import (
	"context"
	"errors"
	"sync"
)

// PlatformLimit is the subrequests one invocation may make on Workers
// Paid: 10,000 per request (developers.cloudflare.com/workers/platform/limits/;
// 50 on Workers Free).
const PlatformLimit = 10000

// D1QueryLimit is the D1 queries one invocation may make on Workers Paid:
// 1,000 (developers.cloudflare.com/d1/platform/limits/; 50 on Free).
const D1QueryLimit = 1000

// ErrExhausted is a call the invocation's budget cannot cover.
var ErrExhausted = errors.New("subrequest budget of this invocation exhausted")

// Budget is one invocation's subrequest allowance, or an item's share of
// it (Reserve); safe for concurrent use.
type Budget struct {
	parent *Budget
	mu     sync.Mutex
	limit  int
	used   int // calls made (by this budget and its reservations)
	// reserved is what open reservations may still spend.
	reserved int
	done     bool
}

type budgetKey struct{}

// queriesKey carries the D1 queries' budget, apart from the calls'.
type queriesKey struct{}

// With returns ctx carrying a new budget of limit subrequests.
func With(ctx context.Context, limit int) (context.Context, *Budget) {
	b := &Budget{limit: limit}
	return WithBudget(ctx, b), b
}

// WithBudget returns ctx carrying b (an item's reservation, say).
func WithBudget(ctx context.Context, b *Budget) context.Context {
	return context.WithValue(ctx, budgetKey{}, b)
}

// From is ctx's budget, nil when it carries none.
func From(ctx context.Context) *Budget {
	b, _ := ctx.Value(budgetKey{}).(*Budget)
	return b
}

// Spend takes n subrequests from ctx's budget before the caller makes
// them; without a budget in ctx it always succeeds (callers outside a run).
func Spend(ctx context.Context, n int) error {
	if b := From(ctx); b != nil {
		return b.Spend(n)
	}
	return nil
}

// WithQueries returns ctx carrying b as its budget of D1 queries.
func WithQueries(ctx context.Context, b *Budget) context.Context {
	return context.WithValue(ctx, queriesKey{}, b)
}

// QueriesFrom is ctx's budget of D1 queries, nil when it carries none.
func QueriesFrom(ctx context.Context) *Budget {
	b, _ := ctx.Value(queriesKey{}).(*Budget)
	return b
}

// SpendQuery takes one D1 query: a subrequest from ctx's budget and a
// query from its D1 budget; neither is taken when either cannot be.
func SpendQuery(ctx context.Context) error {
	q := QueriesFrom(ctx)
	if q != nil {
		if err := q.Spend(1); err != nil {
			return err
		}
	}
	if err := Spend(ctx, 1); err != nil {
		if q != nil {
			q.refund(1)
		}
		return err
	}
	return nil
}

// refund gives back n spent by Spend (a call that was not made after all).
func (b *Budget) refund(n int) {
	b.mu.Lock()
	b.used -= n
	b.mu.Unlock()
	if p := b.parent; p != nil {
		p.mu.Lock()
		p.used -= n
		p.reserved += n
		p.mu.Unlock()
	}
}

// NewBudget is a budget of limit, not yet in any context.
func NewBudget(limit int) *Budget { return &Budget{limit: limit} }

// Spend takes n subrequests, or none and ErrExhausted if they do not fit.
// A reservation spends what was set aside for it in its parent.
func (b *Budget) Spend(n int) error {
	if b.parent == nil {
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.used+b.reserved+n > b.limit {
			return ErrExhausted
		}
		b.used += n
		return nil
	}
	b.mu.Lock()
	if b.done || b.used+n > b.limit {
		b.mu.Unlock()
		return ErrExhausted
	}
	b.used += n
	b.mu.Unlock()
	p := b.parent
	p.mu.Lock()
	p.reserved -= n
	p.used += n
	p.mu.Unlock()
	return nil
}

// Reserve sets n subrequests aside for one piece of work (an item's worst
// case), so work is started only when it can finish. ok is false, and
// nothing is set aside, when n do not fit. Close the reservation when the
// work is done: what it did not spend goes back.
func (b *Budget) Reserve(n int) (r *Budget, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+b.reserved+n > b.limit {
		return nil, false
	}
	b.reserved += n
	return &Budget{parent: b, limit: n}, true
}

// Close returns what a reservation did not spend to its parent.
func (b *Budget) Close() {
	if b.parent == nil {
		return
	}
	b.mu.Lock()
	if b.done {
		b.mu.Unlock()
		return
	}
	b.done = true
	left := b.limit - b.used
	b.mu.Unlock()
	b.parent.mu.Lock()
	b.parent.reserved -= left
	b.parent.mu.Unlock()
}

// Used is how many subrequests were made.
func (b *Budget) Used() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// Remaining is how many are neither made nor set aside.
func (b *Budget) Remaining() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.limit - b.used - b.reserved
}
