package sim

import "fmt"

// The goals at the product's shape (1 request per item), reported per
// family by -variants so the gap is visible; the controller is not tuned
// to them here.
const (
	// goalHoldVsOracle: where a refusal costs a block or a Retry-After
	// hold, the default keeps at least this share of the oracle's goodput.
	goalHoldVsOracle = 0.8
	// goalVariantMean: the mean vs-best over a family's variants.
	goalVariantMean = 0.95
	// goalVariantWorst: the worst variant's vs-best.
	goalVariantWorst = 0.8
)

// goalCheck is one goal on one family.
type goalCheck struct {
	Goal   string  `json:"goal"`
	Value  float64 `json:"value"`
	Bound  float64 `json:"bound"`
	AtMost bool    `json:"at_most"` // the value must not exceed the bound
	Met    bool    `json:"met"`
	// Where names the variant a worst-case check is about.
	Where string `json:"where,omitempty"`
}

func atLeast(goal string, v, bound float64) goalCheck {
	return goalCheck{Goal: goal, Value: v, Bound: bound, Met: v >= bound}
}

func atMost(goal string, v, bound float64) goalCheck {
	return goalCheck{Goal: goal, Value: v, Bound: bound, AtMost: true, Met: v <= bound}
}

// familyGoals judges a family at 1 request per item: its shipped scenario
// (base) and the variants drawn at 1 request per item. Without such a
// variant (N < 1) the variant goals are unmet at 0.
func familyGoals(r *familyRow) []goalCheck {
	g := []goalCheck{atLeast("base vs-best", r.Base.VsBest, goalShare)}
	if r.Hold {
		g = append(g, atLeast("base ÷oracle", r.Base.VsOracle, goalHoldVsOracle))
	}
	return append(g,
		atLeast("mean@1", r.MeanAtProduct, goalVariantMean),
		withWhere(atLeast("worst@1", r.WorstAtProduct, goalVariantWorst), r.WorstVariantAtProduct),
		atMost("base refused", r.Base.Refused, goalRefused),
		atMost("refused@1", r.RefusedMeanAtProduct, goalRefused),
	)
}

func withWhere(g goalCheck, where string) goalCheck {
	g.Where = where
	return g
}

// String is the check as the goal line prints it.
func (g goalCheck) String() string {
	op, bad := "≥", "<"
	if g.AtMost {
		op, bad = "≤", ">"
	}
	v, b := fmt.Sprintf("%.3f", g.Value), fmt.Sprintf("%.2f", g.Bound)
	if g.Goal == "base refused" || g.Goal == "refused@1" {
		v, b = fmt.Sprintf("%.2f%%", percent*g.Value), fmt.Sprintf("%.0f%%", percent*g.Bound)
	}
	if !g.Met {
		op = bad
	}
	if g.Where != "" {
		return fmt.Sprintf("%s %s %s %s (%s)", g.Goal, v, op, b, g.Where)
	}
	return fmt.Sprintf("%s %s %s %s", g.Goal, v, op, b)
}
