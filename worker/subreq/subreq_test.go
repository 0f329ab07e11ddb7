package subreq

import (
	"context"
	"errors"
	"sync"
	"testing"
)

func TestBudgetRefusesTheCallThatWouldPassIt(t *testing.T) {
	ctx, b := With(context.Background(), 10)
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := 0
	for range 25 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if Spend(ctx, 1) == nil {
				mu.Lock()
				ok++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if ok != 10 || b.Used() != 10 || b.Remaining() != 0 {
		t.Fatalf("%d calls allowed, used %d, remaining %d", ok, b.Used(), b.Remaining())
	}
	if err := Spend(ctx, 1); !errors.Is(err, ErrExhausted) {
		t.Fatalf("over budget: %v", err)
	}
	if err := Spend(context.Background(), 1000); err != nil || From(context.Background()) != nil {
		t.Fatal("no budget in the context: nothing to count")
	}
}

func TestReservationsSetTheWorstCaseAsideAndGiveBackTheRest(t *testing.T) {
	ctx, b := With(context.Background(), 20)
	Spend(ctx, 2) // the pick
	r1, ok1 := b.Reserve(10)
	r2, ok2 := b.Reserve(10)
	if !ok1 || ok2 || b.Remaining() != 8 {
		t.Fatalf("a second worst case must not fit: %v %v, remaining %d", ok1, ok2, b.Remaining())
	}
	item := WithBudget(ctx, r1)
	for range 4 {
		if err := Spend(item, 1); err != nil {
			t.Fatal(err)
		}
	}
	if b.Used() != 6 || b.Remaining() != 8 {
		t.Fatalf("spent inside the reservation: used %d remaining %d", b.Used(), b.Remaining())
	}
	r1.Close()
	r1.Close() // idempotent
	if b.Remaining() != 14 || r2 != nil {
		t.Fatalf("the unspent 6 go back: remaining %d", b.Remaining())
	}
	if err := Spend(item, 1); !errors.Is(err, ErrExhausted) {
		t.Fatal("a closed reservation spends nothing")
	}
	r3, _ := b.Reserve(2)
	item3 := WithBudget(ctx, r3)
	Spend(item3, 2)
	if err := Spend(item3, 1); !errors.Is(err, ErrExhausted) {
		t.Fatal("a reservation cannot spend past its size")
	}
}

// D1 queries count against both budgets: the calls' and D1's own.
func TestQueriesSpendBothBudgets(t *testing.T) {
	ctx, calls := With(context.Background(), 10)
	queries := NewBudget(3)
	ctx = WithQueries(ctx, queries)
	for range 3 {
		if err := SpendQuery(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := SpendQuery(ctx); !errors.Is(err, ErrExhausted) || calls.Used() != 3 || queries.Used() != 3 {
		t.Fatalf("4th query: %v, calls %d, queries %d", err, calls.Used(), queries.Used())
	}
	if err := Spend(ctx, 7); err != nil {
		t.Fatalf("other calls go on: %v", err)
	}
	// Calls exhausted: a query is refused and its D1 share given back.
	ctx2, _ := With(context.Background(), 0)
	q2 := NewBudget(5)
	if err := SpendQuery(WithQueries(ctx2, q2)); !errors.Is(err, ErrExhausted) || q2.Used() != 0 {
		t.Fatalf("refused query: %v, D1 used %d", err, q2.Used())
	}
}
