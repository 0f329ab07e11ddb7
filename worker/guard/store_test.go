//go:build !js

package guard

import (
	"context"
	"testing"
	"time"

	"storecrawl/worker/d1"
	"storecrawl/worker/d1/d1test"
)

// TestRecordCostsOneRow: a record is one statement writing one row, and
// the month's usage is one read of a row a source.
func TestRecordCostsOneRow(t *testing.T) {
	db, drv := d1test.New(t)
	s := D1Store{DB: db}
	ctx := context.Background()
	now := time.Date(2026, 11, 16, 12, 0, 0, 0, time.UTC)
	before := drv.TotalChanges(t)
	for i := 0; i < 3; i++ {
		if err := s.Record(ctx, SourceCron, Usage{D1RowsRead: 100, D1RowsWritten: 10, WorkersRequests: 1, KVReads: 1, KVWrites: 1}, now); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Record(ctx, SourceQueue, Usage{QueueOps: 3 * 25, D1RowsWritten: 40}, now); err != nil {
		t.Fatal(err)
	}
	if w := drv.TotalChanges(t) - before; w != 4*RecordRowsWritten {
		t.Fatalf("4 records wrote %d rows, want %d", w, 4*RecordRowsWritten)
	}
	// Another month's record is not this month's.
	if err := s.Record(ctx, SourceCron, Usage{D1RowsRead: 1e9}, now.AddDate(0, -1, 0)); err != nil {
		t.Fatal(err)
	}
	ctx2, cost := d1.WithCost(ctx)
	u, err := s.MonthUsage(ctx2, now)
	if err != nil {
		t.Fatal(err)
	}
	want := Usage{D1RowsRead: 300, D1RowsWritten: 30 + 40 + 4*RecordRowsWritten, WorkersRequests: 3, KVReads: 3, KVWrites: 3, QueueOps: 75}
	if u != want {
		t.Fatalf("month usage %+v, want %+v", u, want)
	}
	if v := cost.View(); v.Queries != 1 {
		t.Fatalf("month usage took %d queries", v.Queries)
	}
	if n := drv.Int(t, `SELECT COUNT(*) FROM usage_months WHERE month = ?`, Month(now)); n != 2 {
		t.Fatalf("%d rows this month, want a row a source", n)
	}
	plan := drv.Rows(t, `EXPLAIN QUERY PLAN `+monthSQL, Month(now))
	if d, _ := plan[0]["detail"].(string); d != "SEARCH usage_months USING PRIMARY KEY (month=?)" {
		t.Fatalf("month read plan %q", d)
	}
}

// TestSampleController: a sample reads the last one and writes two rows,
// and adds the totals' growth to the month.
func TestSampleController(t *testing.T) {
	db, drv := d1test.New(t)
	s := D1Store{DB: db}
	ctx := context.Background()
	now := time.Date(2026, 11, 16, 12, 0, 0, 0, time.UTC)
	before := drv.TotalChanges(t)
	if _, err := s.SampleController(ctx, Usage{D1RowsRead: 1000, D1RowsWritten: 100, DORequests: 50, R2ClassA: 5}, now); err != nil {
		t.Fatal(err)
	}
	if w := drv.TotalChanges(t) - before; w != 2 {
		t.Fatalf("a sample wrote %d rows, want 2", w)
	}
	grew, err := s.SampleController(ctx, Usage{D1RowsRead: 1500, D1RowsWritten: 130, DORequests: 60, R2ClassA: 5}, now.Add(5*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if grew != (Usage{D1RowsRead: 500, D1RowsWritten: 30, DORequests: 10}) {
		t.Fatalf("growth %+v", grew)
	}
	u, err := s.MonthUsage(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	// Both samples' growth, the first from zero.
	if u != (Usage{D1RowsRead: 1500, D1RowsWritten: 130, DORequests: 60, R2ClassA: 5}) {
		t.Fatalf("month usage %+v", u)
	}
}

type fakeReader struct {
	u     Usage
	reads int
}

func (f *fakeReader) MonthUsage(context.Context, time.Time) (Usage, error) {
	f.reads++
	return f.u, nil
}

func TestGuardCachesItsDecision(t *testing.T) {
	r := &fakeReader{u: Usage{D1RowsWritten: 40e6}}
	g := &Guard{Reader: r}
	now := time.Date(2026, 11, 16, 0, 0, 0, 0, time.UTC)
	if st := g.Status(context.Background(), now); st.Stage != 5 || !st.Slowed(WorkRefresh) {
		t.Fatalf("projected 80M written: %+v", st.Throttle)
	}
	r.u = Usage{}
	if g.Status(context.Background(), now.Add(CacheTTL-time.Second)); r.reads != 1 {
		t.Fatalf("%d reads within the TTL", r.reads)
	}
	if st := g.Status(context.Background(), now.Add(CacheTTL)); r.reads != 2 || st.State != StateOK {
		t.Fatalf("after the TTL: %d reads, %+v", r.reads, st.Throttle)
	}
}
