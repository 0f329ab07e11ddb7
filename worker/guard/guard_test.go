package guard

import (
	"math"
	"slices"
	"testing"
	"time"
)

var midMonth = time.Date(2026, 11, 16, 0, 0, 0, 0, time.UTC) // half of a 30-day month

func TestProjectScalesUsageToTheMonth(t *testing.T) {
	p := Project(Usage{D1RowsWritten: 30e6, KVReads: 1000}, 0, midMonth)
	if p.Month != "2026-11" || p.Elapsed != 0.5 {
		t.Fatalf("month %q elapsed %v", p.Month, p.Elapsed)
	}
	w := p.Products[slices.IndexFunc(p.Products, func(x ProductProjection) bool { return x.Key == "d1_rows_written" })]
	// 30M written half-way: 60M in the month, 10M past the 50M included at $1/M.
	if w.Used != 30e6 || w.Projected != 60e6 || w.OverageUSD != 10 || w.Share != 1.2 {
		t.Fatalf("rows written %+v", w)
	}
	if p.OverageUSD != 10 || !slices.Equal(p.OverIncluded, []string{"d1_rows_written"}) {
		t.Fatalf("overage %v over %v", p.OverageUSD, p.OverIncluded)
	}
	// The month's end: the projection is the usage.
	end := Project(Usage{D1RowsWritten: 30e6}, 0, time.Date(2026, 11, 30, 23, 59, 59, 0, time.UTC))
	if got := end.Products[1].Projected; math.Abs(got-30e6) > 30e6*1e-5 {
		t.Fatalf("at the month's end projected %v", got)
	}
	// The month's first hour projects from a day, never below the usage.
	early := Project(Usage{D1RowsWritten: 1e6}, 0, time.Date(2026, 11, 1, 1, 0, 0, 0, time.UTC))
	if got := early.Products[1].Projected; got != 30e6 {
		t.Fatalf("first hour projected %v, want 30M (a day's basis)", got)
	}
	over := Project(Usage{D1RowsWritten: 80e6}, 0, time.Date(2026, 11, 1, 1, 0, 0, 0, time.UTC))
	if got := over.Products[1].Projected; got < 80e6 {
		t.Fatalf("projected %v below the usage", got)
	}
	// Nothing used: nothing projected, state ok.
	if z := Project(Usage{}, 0, midMonth); z.OverageUSD != 0 || len(z.OverIncluded) != 0 || Decide(z).State != StateOK {
		t.Fatalf("empty usage %+v", z)
	}
}

// stageOf is the stage at which work is first slowed in Order.
func stageOf(work string) int {
	for i, ws := range Order {
		if slices.Contains(ws, work) {
			return i + 1
		}
	}
	return -1
}

// TestGuardSlowsFirstSearchesFirstAndRefreshLast: a projection past the
// budget slows first-time searches; as the projection rises the stages
// come in Order, and the refresh policy is never slowed while any other
// work is not.
func TestGuardSlowsFirstSearchesFirstAndRefreshLast(t *testing.T) {
	for _, budget := range []float64{0, 2, 40} {
		prev := Throttle{}
		slowedFirst := false
		for written := 40e6; written <= 200e6; written += 0.25e6 {
			// Written half-way through the month: projected twice that.
			th := Decide(Project(Usage{D1RowsWritten: int64(written / 2)}, budget, midMonth))
			overage := max(0, written-50e6) / 1e6
			if overage > budget {
				if !th.Slowed(WorkFirstSearches) || th.State != StateThrottling {
					t.Fatalf("budget %v, projected %v written ($%.2f over): first-time searches not slowed: %+v", budget, written, overage, th)
				}
				slowedFirst = true
			} else if th.Stage != 0 || len(th.Throttled) != 0 {
				t.Fatalf("budget %v, projected $%.2f over: slowed %v within the budget", budget, overage, th.Throttled)
			}
			if th.Stage < prev.Stage {
				t.Fatalf("budget %v: stage fell from %d to %d as the projection rose", budget, prev.Stage, th.Stage)
			}
			// The order holds: whatever is slowed, all work before it is.
			for _, w := range th.Throttled {
				for _, before := range Order[:stageOf(w)-1] {
					for _, b := range before {
						if !th.Slowed(b) {
							t.Fatalf("budget %v: %s slowed before %s: %v", budget, w, b, th.Throttled)
						}
					}
				}
			}
			if th.Slowed(WorkRefresh) {
				for _, w := range []string{WorkFirstSearches, WorkReSearches, WorkScans, WorkReviews, WorkAnalyst} {
					if !th.Slowed(w) {
						t.Fatalf("budget %v: refresh slowed before %s", budget, w)
					}
				}
				if th.RefreshFactor() != RefreshSlowFactor {
					t.Fatalf("refresh factor %v", th.RefreshFactor())
				}
			} else if th.RefreshFactor() != 1 {
				t.Fatalf("refresh factor %v while not slowed", th.RefreshFactor())
			}
			prev = th
		}
		if !slowedFirst || prev.Stage != len(Order) {
			t.Fatalf("budget %v: the climb ended at stage %d", budget, prev.Stage)
		}
	}
}

func TestDecideStages(t *testing.T) {
	for _, c := range []struct {
		overage, budget float64
		stage           int
		first           string
	}{
		{0.01, 0, 1, WorkFirstSearches},
		{1.0, 0, 1, WorkFirstSearches},
		{1.01, 0, 2, WorkReSearches},
		{3.5, 0, 4, WorkReviews},
		{4.01, 0, 5, WorkRefresh},
		{100, 0, 5, WorkRefresh},
		{10, 10, 0, ""},
		{12, 10, 1, WorkFirstSearches}, // a step is $2.50 at a $10 budget
		{15.1, 10, 3, WorkScans},
	} {
		p := Projection{OverageUSD: c.overage, BudgetUSD: c.budget, OverIncluded: []string{"d1_rows_written"}}
		th := Decide(p)
		if th.Stage != c.stage {
			t.Errorf("overage %v budget %v: stage %d, want %d", c.overage, c.budget, th.Stage, c.stage)
		}
		if c.first != "" && !th.Slowed(c.first) {
			t.Errorf("overage %v budget %v: %s not slowed: %v", c.overage, c.budget, c.first, th.Throttled)
		}
	}
	if th := Decide(Projection{OverIncluded: []string{"kv_writes"}}); th.State != StateOverIncluded || th.Stage != 0 {
		t.Fatalf("over an inclusion within the budget: %+v", th)
	}
}

func TestSampleGrowth(t *testing.T) {
	last := Usage{D1RowsRead: 100, DORequests: 10}
	if g := SampleGrowth(last, Usage{D1RowsRead: 150, DORequests: 12}); g != (Usage{D1RowsRead: 50, DORequests: 2}) {
		t.Fatalf("growth %+v", g)
	}
	// A reset: the totals restarted from zero.
	if g := SampleGrowth(last, Usage{D1RowsRead: 30, DORequests: 12}); g != (Usage{D1RowsRead: 30, DORequests: 2}) {
		t.Fatalf("growth after a reset %+v", g)
	}
}
