package catalogue

import (
	"context"
	"fmt"
	"math"
	"time"

	"storecrawl/worker/refresh"
)

// The catalogue sweep (the catalogue-sweep task): for a batch of enriched
// apps, the facts the refresh policy needs (chart presence, the best
// cluster opportunity score, rating observations), their 7- and 30-day
// rating velocities, and their refresh schedule. Apps enriched since the
// last pass (not yet scheduled) go first; then a cursor walks every
// enriched app, so tiers follow what changed.

// Sweep bounds.
const (
	// SweepBatchApps bounds one read and one write: about 7 row reads an
	// app (the app, a chart check, its clusters, three observation seeks).
	SweepBatchApps = 200
	// SweepMaxBatches bounds one run: 1,000 apps; at the task's 15-minute
	// cadence, 96,000 apps a day, so a 100,000-app catalogue is re-tiered
	// about daily (hot apps are refreshed more often than they are re-tiered).
	SweepMaxBatches = 5
	// sweepCursorName names the cursor in sweep_cursors.
	sweepCursorName = "catalogue-sweep"
)

// SweepApp is one app's facts as the sweep reads them.
type SweepApp struct {
	TrackID     int64
	RatingCount int64
	Enriched    time.Time
	// Observed is when the stored rating count was last observed.
	Observed     time.Time
	InTopCharts  bool
	ClusterScore float64
	// Observations: the latest at or before each window's start, and the
	// earliest (duplicates are harmless).
	Observations []refresh.Observation
	// NextRefresh is the stored schedule (zero: none).
	NextRefresh time.Time
}

// Scheduled is what the sweep writes for one app.
type Scheduled struct {
	TrackID     int64
	Tier        string
	Interval    time.Duration
	NextRefresh time.Time
	Velocity7d  float64 // NaN: unknown
	Velocity30d float64
}

// Plan computes one app's velocities and schedule. The schedule never
// moves later than a stored one that is still ahead of the enrichment (a
// rediscovered version change made it due now); a tier change takes
// effect from the next enrichment on.
func Plan(a SweepApp) Scheduled {
	cur := refresh.Observation{At: a.Observed, Count: a.RatingCount}
	v7, ok7 := refresh.Velocity(a.Observations, cur, refresh.Window7d)
	v30, ok30 := refresh.Velocity(a.Observations, cur, refresh.Window30d)
	if !ok7 {
		v7 = math.NaN()
	}
	if !ok30 {
		v30 = math.NaN()
	}
	f := refresh.Facts{TrackID: a.TrackID, InTopCharts: a.InTopCharts, ClusterScore: a.ClusterScore,
		Velocity7d: v7, RatingCount: a.RatingCount, LastEnriched: a.Enriched}
	// Whole seconds: the schedule trigger adds refresh_interval_s to the
	// next enrichment, and this due time must be the same sum.
	iv := refresh.NextRefresh(f, a.Enriched).Sub(a.Enriched).Truncate(time.Second)
	next := a.Enriched.Add(iv)
	s := Scheduled{TrackID: a.TrackID, Tier: refresh.Tier(f), Interval: iv, NextRefresh: next, Velocity7d: v7, Velocity30d: v30}
	if !a.NextRefresh.IsZero() && a.NextRefresh.After(a.Enriched) && a.NextRefresh.Before(next) {
		s.NextRefresh = a.NextRefresh
	}
	return s
}

// SweepStore is what the sweep needs of D1.
type SweepStore interface {
	SweepCursor(ctx context.Context) (int64, error)
	SweepApps(ctx context.Context, unscheduled bool, cursor int64, n int) ([]SweepApp, error)
	// SaveSweep writes the plans and, when cursor ≥ 0, the cursor.
	SaveSweep(ctx context.Context, planned []Scheduled, cursor int64, at time.Time) error
}

// SweepResult is what one run did.
type SweepResult struct {
	Scheduled  int    `json:"scheduled"` // apps scheduled for the first time
	Swept      int    `json:"swept"`     // apps re-tiered from the cursor
	Hot        int    `json:"hot"`
	Velocities int    `json:"velocities"` // apps with a known 7-day velocity
	From       int64  `json:"from"`
	Next       int64  `json:"next"`
	Error      string `json:"error,omitempty"`
}

// Summary is the task's one line.
func (r SweepResult) Summary() string {
	return fmt.Sprintf("scheduled %d new, re-tiered %d from cursor %d (next %d); %d hot, %d with a 7-day velocity",
		r.Scheduled, r.Swept, r.From, r.Next, r.Hot, r.Velocities)
}

// Sweep runs one catalogue sweep: unscheduled apps first, then the cursor
// walk, at most SweepMaxBatches batches in all. A failed batch ends the
// run with the cursor where it was.
func Sweep(ctx context.Context, st SweepStore, now time.Time) SweepResult {
	var r SweepResult
	plan := func(apps []SweepApp) []Scheduled {
		out := make([]Scheduled, len(apps))
		for i, a := range apps {
			out[i] = Plan(a)
			if out[i].Tier == refresh.TierHot {
				r.Hot++
			}
			if !math.IsNaN(out[i].Velocity7d) {
				r.Velocities++
			}
		}
		return out
	}
	batches := 0
	for ; batches < SweepMaxBatches; batches++ {
		apps, err := st.SweepApps(ctx, true, 0, SweepBatchApps)
		if err != nil {
			r.Error = "unscheduled: " + err.Error()
			return r
		}
		if len(apps) == 0 {
			break
		}
		if err := st.SaveSweep(ctx, plan(apps), -1, now); err != nil {
			r.Error = "schedule: " + err.Error()
			return r
		}
		r.Scheduled += len(apps)
		if len(apps) < SweepBatchApps {
			batches++
			break
		}
	}
	cursor, err := st.SweepCursor(ctx)
	if err != nil {
		r.Error = "cursor: " + err.Error()
		return r
	}
	r.From, r.Next = cursor, cursor
	for ; batches < SweepMaxBatches; batches++ {
		apps, err := st.SweepApps(ctx, false, cursor, SweepBatchApps)
		if err != nil {
			r.Error = "sweep: " + err.Error()
			return r
		}
		next := int64(0) // a short batch is the end: wrap
		if len(apps) == SweepBatchApps {
			next = apps[len(apps)-1].TrackID
		}
		if err := st.SaveSweep(ctx, plan(apps), next, now); err != nil {
			r.Error = "sweep write: " + err.Error()
			return r
		}
		r.Swept += len(apps)
		cursor, r.Next = next, next
		if next == 0 {
			break
		}
	}
	return r
}
