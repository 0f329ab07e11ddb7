// Package guard is the bill the product keeps itself: month-to-date usage
// of the Workers Paid plan's metered products (Usage, kept in D1's
// usage_months by Store), the month's projection against the plan's
// inclusions and the operator's overage budget (Project), and the decision
// to slow discretionary work when the projection crosses them (Decide),
// which the crawl cycle, the reviews and analyst tasks and the enrichment
// tick's refresh share read. Pure Go, the clock passed in; docs/cost.md.
package guard

import (
	"math"
	"time"
)

// Usage is what was spent, per product (Products' keys).
type Usage struct {
	D1RowsRead      int64 `json:"d1_rows_read"`
	D1RowsWritten   int64 `json:"d1_rows_written"`
	DORequests      int64 `json:"do_requests"`
	QueueOps        int64 `json:"queue_ops"`
	R2ClassA        int64 `json:"r2_class_a"`
	R2ClassB        int64 `json:"r2_class_b"`
	KVReads         int64 `json:"kv_reads"`
	KVWrites        int64 `json:"kv_writes"`
	WorkersRequests int64 `json:"workers_requests"`
}

// refs names the fields by product key.
func (u *Usage) refs() map[string]*int64 {
	return map[string]*int64{
		"d1_rows_read": &u.D1RowsRead, "d1_rows_written": &u.D1RowsWritten, "do_requests": &u.DORequests,
		"queue_ops": &u.QueueOps, "r2_class_a": &u.R2ClassA, "r2_class_b": &u.R2ClassB,
		"kv_reads": &u.KVReads, "kv_writes": &u.KVWrites, "workers_requests": &u.WorkersRequests,
	}
}

// Of is the usage of product key (0 for an unknown key).
func (u Usage) Of(key string) int64 {
	if p, ok := u.refs()[key]; ok {
		return *p
	}
	return 0
}

// Plus is u + v, product by product.
func (u Usage) Plus(v Usage) Usage {
	out := u
	vr := v.refs()
	for k, p := range out.refs() {
		*p += *vr[k]
	}
	return out
}

// Minus is u − v, product by product.
func (u Usage) Minus(v Usage) Usage {
	out := u
	vr := v.refs()
	for k, p := range out.refs() {
		*p -= *vr[k]
	}
	return out
}

// Month is the UTC billing month holding t, as usage_months keys it.
func Month(t time.Time) string { return t.UTC().Format("2006-01") }

// monthBounds are the start and end of the UTC month holding t.
func monthBounds(t time.Time) (start, end time.Time) {
	t = t.UTC()
	start = time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
	return start, start.AddDate(0, 1, 0)
}

// MinProjectionBasis is the least time into the month a projection
// extrapolates from: usage of the month's first hours, scaled up by a
// month, says more about the hour than the month. Before it, usage is
// projected as if MinProjectionBasis had passed (what was used is always
// in the projection).
const MinProjectionBasis = 24 * time.Hour

// ProductProjection is one product's month.
type ProductProjection struct {
	Product
	Used      int64   `json:"used"`
	Projected float64 `json:"projected"`
	// Share is Projected over Included.
	Share      float64 `json:"share_of_included"`
	OverageUSD float64 `json:"overage_usd"`
}

// Projection is the month's bill as usage so far projects it.
type Projection struct {
	Month string `json:"month"`
	// Elapsed is the share of the month passed at the projection.
	Elapsed  float64             `json:"elapsed"`
	Products []ProductProjection `json:"products"`
	// OverageUSD is the month's projected overage past every inclusion;
	// BudgetUSD the operator's BUDGET_OVERAGE_USD.
	OverageUSD float64 `json:"overage_usd"`
	BudgetUSD  float64 `json:"budget_usd"`
	// OverIncluded names the products projected past their inclusion.
	OverIncluded []string `json:"over_included"`
}

// Project is the month's projection at now: each product's usage so far
// scaled linearly to the whole month (from at least MinProjectionBasis
// into it), against its inclusion and, in total, budgetUSD.
func Project(u Usage, budgetUSD float64, now time.Time) Projection {
	start, end := monthBounds(now)
	month := end.Sub(start)
	into := now.UTC().Sub(start)
	scale := float64(month) / float64(max(into, MinProjectionBasis))
	p := Projection{Month: Month(now), Elapsed: round(float64(into)/float64(month), 4), BudgetUSD: budgetUSD, OverIncluded: []string{}}
	for _, prod := range Products {
		used := u.Of(prod.Key)
		proj := max(float64(used)*scale, float64(used))
		pp := ProductProjection{Product: prod, Used: used, Projected: math.Round(proj),
			Share: round(proj/prod.Included, 4), OverageUSD: round(prod.Overage(proj), 4)}
		p.OverageUSD += prod.Overage(proj)
		if proj > prod.Included {
			p.OverIncluded = append(p.OverIncluded, prod.Key)
		}
		p.Products = append(p.Products, pp)
	}
	p.OverageUSD = round(p.OverageUSD, 4)
	return p
}

func round(x float64, places int) float64 {
	f := math.Pow(10, float64(places))
	return math.Round(x*f) / f
}

// Discretionary work, in the order the guard slows it: first-time keyword
// searches go first (new keywords can wait a month; the catalogue already
// has what they would find soonest), then re-searches (rankings already
// known age a little), then discovery scans (charts move slowly and the
// next scan reads them whole), then the reviews and analyst tasks
// (enrichment of what is known, not the catalogue itself), and the
// refresh policy last: it keeps the catalogue's promise of fresh apps, so
// it is never slowed before all the others are.
const (
	WorkFirstSearches = "first_searches"
	WorkReSearches    = "re_searches"
	WorkScans         = "discovery_scans"
	WorkReviews       = "reviews"
	WorkAnalyst       = "analyst"
	WorkRefresh       = "refresh"
)

// Order is the stages of slowing: stage k slows Order[0..k-1]'s work.
var Order = [][]string{
	{WorkFirstSearches},
	{WorkReSearches},
	{WorkScans},
	{WorkReviews, WorkAnalyst},
	{WorkRefresh},
}

// Stage bounds: the first stage starts as soon as the projected overage
// passes the budget (with the default budget 0: as soon as any product is
// projected past its inclusion); each further stage starts another
// StepUSD of projected overage past the budget, StepUSD being
// StepBudgetShare of the budget and at least MinStepUSD.
const (
	MinStepUSD      = 1.0
	StepBudgetShare = 0.25
	// RefreshSlowFactor is what the refresh share is multiplied by once the
	// last stage slows it: halved, never stopped.
	RefreshSlowFactor = 0.5
)

// Guard states.
const (
	StateOK           = "ok"            // within every inclusion
	StateOverIncluded = "over_included" // past an inclusion, within the budget
	StateThrottling   = "throttling"    // past the budget: work slowed
)

// Throttle is what the guard slows; the zero value slows nothing.
type Throttle struct {
	State string `json:"state"`
	// Stage is how many of Order's stages are slowed (0..len(Order)).
	Stage int `json:"stage"`
	// Throttled names the work slowed, in Order.
	Throttled []string `json:"throttled"`
	// ExcessUSD is the projected overage past the budget (0 within it).
	ExcessUSD float64 `json:"excess_usd"`
}

// Slowed reports whether work (a Work* name) is slowed.
func (t Throttle) Slowed(work string) bool {
	for _, w := range t.Throttled {
		if w == work {
			return true
		}
	}
	return false
}

// RefreshFactor is what the refresh share is multiplied by: 1, or
// RefreshSlowFactor once the refresh policy is slowed.
func (t Throttle) RefreshFactor() float64 {
	if t.Slowed(WorkRefresh) {
		return RefreshSlowFactor
	}
	return 1
}

// StepUSD is the projected overage between two stages at budgetUSD.
func StepUSD(budgetUSD float64) float64 { return max(MinStepUSD, budgetUSD*StepBudgetShare) }

// Decide is the throttle a projection calls for: stage 1 once the
// projected overage passes the budget, one more stage each StepUSD past
// it, up to every stage. It only rises with the overage, so the order of
// Order holds however the projection climbs.
func Decide(p Projection) Throttle {
	t := Throttle{State: StateOK, Throttled: []string{}}
	if len(p.OverIncluded) > 0 {
		t.State = StateOverIncluded
	}
	excess := p.OverageUSD - p.BudgetUSD
	if excess <= 0 || len(p.OverIncluded) == 0 {
		return t
	}
	t.State, t.ExcessUSD = StateThrottling, round(excess, 4)
	// Stage k once the excess passes (k-1) steps: (0, step] is stage 1.
	t.Stage = min(len(Order), max(1, int(math.Ceil(excess/StepUSD(p.BudgetUSD)))))
	for _, works := range Order[:t.Stage] {
		t.Throttled = append(t.Throttled, works...)
	}
	return t
}
