package segments

import "math"

// Trend thresholds: a segment is heating when its demand (its apps'
// ratings) grew at least HeatingGrowth7d in a week, or when its leaders
// gained ratings faster this week than over the month by HeatingVelocityRatio
// while it grew; cooling when it grew less than CoolingGrowth30d in a month
// and its leaders slowed below CoolingVelocityRatio of their monthly pace
// (or no velocity is measured); steady otherwise, and while it has less
// than a week of history.
const (
	HeatingGrowth7d      = 0.02
	HeatingVelocityRatio = 1.25
	CoolingGrowth30d     = 0.005
	CoolingVelocityRatio = 0.8
)

// Trend names.
const (
	Heating = "heating"
	Steady  = "steady"
	Cooling = "cooling"
)

// Point is what a daily snapshot keeps that trends read.
type Point struct {
	TotalRatings int64
	Apps         []int64
}

// TrendFigures are the figures behind a trend, as served.
type TrendFigures struct {
	Trend          string   `json:"trend"`
	DemandGrowth7d *float64 `json:"demand_growth_7d"`
	DemandGrowth30 *float64 `json:"demand_growth_30d"`
	NewEntrants7d  *int     `json:"new_entrants_7d"`
	NewEntrants30d *int     `json:"new_entrants_30d"`
	Velocity7d     *float64 `json:"leaders_velocity_7d"`
	Velocity30d    *float64 `json:"leaders_velocity_30d"`
	// Score orders segments by trend: heating above steady above cooling,
	// then by the week's demand growth.
	Score float64 `json:"-"`
}

// Trend computes a segment's trend from now, its snapshots a week and a
// month ago (nil: none) and its leaders' rating velocity (ratings a day,
// over 7 and 30 days; nil: unmeasured). Pure: the thresholds above.
func Trend(now Point, week, month *Point, v7, v30 *float64) TrendFigures {
	f := TrendFigures{Trend: Steady, Velocity7d: v7, Velocity30d: v30}
	growth := func(then *Point) *float64 {
		if then == nil || then.TotalRatings <= 0 {
			return nil
		}
		g := math.Round(float64(now.TotalRatings-then.TotalRatings)/float64(then.TotalRatings)*10000) / 10000
		return &g
	}
	entrants := func(then *Point) *int {
		if then == nil {
			return nil
		}
		had := map[int64]bool{}
		for _, a := range then.Apps {
			had[a] = true
		}
		n := 0
		for _, a := range now.Apps {
			if !had[a] {
				n++
			}
		}
		return &n
	}
	f.DemandGrowth7d, f.DemandGrowth30 = growth(week), growth(month)
	f.NewEntrants7d, f.NewEntrants30d = entrants(week), entrants(month)
	accelerating := v7 != nil && v30 != nil && *v30 > 0 && *v7 >= HeatingVelocityRatio**v30
	slowing := v7 == nil || v30 == nil || *v7 < CoolingVelocityRatio**v30
	switch g7, g30 := f.DemandGrowth7d, f.DemandGrowth30; {
	case g7 == nil:
	case *g7 >= HeatingGrowth7d || (accelerating && *g7 > 0):
		f.Trend = Heating
	case g30 != nil && *g30 < CoolingGrowth30d && slowing:
		f.Trend = Cooling
	}
	base := map[string]float64{Heating: 2, Steady: 1, Cooling: 0}[f.Trend]
	g := 0.0
	if f.DemandGrowth7d != nil {
		g = math.Max(-0.99, math.Min(0.99, *f.DemandGrowth7d))
	}
	f.Score = math.Round((base*2+1+g)*10000) / 10000
	return f
}
