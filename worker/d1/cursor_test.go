//go:build !js

package d1_test

import (
	"context"
	"testing"
	"time"

	"storecrawl/worker/d1"
	"storecrawl/worker/d1/d1test"
)

// A cursor reads one row and writes its one row only when it moved: a
// pass that ends where it began writes nothing.
func TestCursorWritesOneRowOnlyWhenItMoves(t *testing.T) {
	db, drv := d1test.New(t)
	ctx := context.Background()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

	c, err := d1.ReadCursor(ctx, db, "pass")
	if err != nil || c.From != "" || c.Int() != 0 || c.Text() != "" {
		t.Fatalf("absent cursor: %+v %v", c, err)
	}
	// Wrapping from none to 0 is no move.
	before := drv.TotalChanges(t)
	if c, err = c.Save(ctx, db, int64(0), now); err != nil {
		t.Fatal(err)
	}
	if n := drv.TotalChanges(t) - before; n != 0 {
		t.Fatalf("0 from none wrote %d rows", n)
	}
	before = drv.TotalChanges(t)
	if c, err = c.Save(ctx, db, int64(4200), now); err != nil {
		t.Fatal(err)
	}
	if n := drv.TotalChanges(t) - before; n != 1 {
		t.Fatalf("a move wrote %d rows, want 1", n)
	}
	before = drv.TotalChanges(t)
	if c, err = c.Save(ctx, db, int64(4200), now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if n := drv.TotalChanges(t) - before; n != 0 {
		t.Fatalf("no move wrote %d rows", n)
	}
	// A writer that did not read the cursor (its From unknown) moving it
	// to where it is: the upsert compares, and writes nothing.
	before = drv.TotalChanges(t)
	if _, err = (d1.Cursor{Name: "pass"}).Save(ctx, db, int64(4200), now.Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if n := drv.TotalChanges(t) - before; n != 0 {
		t.Fatalf("an unread cursor written to its position wrote %d rows", n)
	}
	ctx2, cost := d1.WithCost(ctx)
	again, err := d1.ReadCursor(ctx2, db, "pass")
	if err != nil || again.Int() != 4200 || again.From != "4200" {
		t.Fatalf("read back: %+v %v", again, err)
	}
	if v := cost.View(); v.Queries != 1 || v.RowsRead > 1 {
		t.Fatalf("read cost: %+v", v)
	}
	if got := drv.Int(t, `SELECT typeof(cursor) = 'integer' FROM sweep_cursors WHERE name = 'pass'`); got != 1 {
		t.Fatal("an integer cursor is stored as an integer")
	}
	// Text cursors: the same row, the same rule; "" and 0 are both "start over".
	tc, _ := d1.ReadCursor(ctx, db, "writers")
	if tc.Write("", now) != nil || tc.Moved(int64(0)).Write("", now) != nil {
		t.Fatal("start over from none is no move")
	}
	before = drv.TotalChanges(t)
	if tc, err = tc.Save(ctx, db, "ledger:b", now); err != nil || tc.Text() != "ledger:b" {
		t.Fatalf("text save: %+v %v", tc, err)
	}
	if n := drv.TotalChanges(t) - before; n != 1 {
		t.Fatalf("a text move wrote %d rows, want 1", n)
	}
	if back, _ := d1.ReadCursor(ctx, db, "writers"); back.Text() != "ledger:b" {
		t.Fatalf("text read back: %+v", back)
	}
	// A failed write leaves the cursor where it was.
	drv.FailNext.Store(1)
	if kept, err := tc.Save(ctx, db, "ledger:c", now); err == nil || kept.Text() != "ledger:b" {
		t.Fatalf("failed save: %+v %v", kept, err)
	}
}
