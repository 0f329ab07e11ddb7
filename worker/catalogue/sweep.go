package catalogue

import (
	"context"
	"fmt"
	"math"
	"time"

	"storecrawl/worker/d1"
	"storecrawl/worker/refresh"
)

// The catalogue sweep (the catalogue-sweep task): for a batch of enriched
// apps, the facts the refresh policy needs (chart presence, membership of
// a top segment, the best cluster opportunity score, rating
// observations), their 7- and 30-day rating velocities, and their refresh
// tier. Apps enriched since the last pass (no tier yet) go first; then a
// cursor walks every enriched app, so tiers follow what changed. An app's row is written only when its tier
// changes or its velocity moved (VelocityMoved): the tier decides which
// round looks at it (worker/refresh sweeps), so nothing else is scheduled.

// Sweep bounds.
const (
	// SweepBatchApps bounds one read and one write: about 7 row reads an
	// app (the app, a chart check, its clusters, three observation seeks),
	// 3,500 a read.
	SweepBatchApps = 500
	// SweepMaxBatches bounds one run: 15,000 apps; at the task's 15-minute
	// cadence, 1.44M apps a day, so a 1.1M-app catalogue is re-tiered in
	// under a day (hot apps' rounds are 6 h: a chart entry waits at most a
	// day to be seen as hot).
	SweepMaxBatches = 30
	// sweepCursorName names the cursor in sweep_cursors.
	sweepCursorName = "catalogue-sweep"
)

// Velocity writes: a stored velocity is rewritten only when the new one
// differs by more than VelocityMoveFloor ratings a day and VelocityMoveShare
// of the stored one (or one of them is unknown), so a quiet app's re-tier
// writes nothing and a moving one's at most about once a day. Velocities
// are shown (GET /v1/apps/{id}/history); the tier is computed from the
// fresh value, never the stored one.
const (
	VelocityMoveFloor = 1.0
	VelocityMoveShare = 0.2
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
	// TopSegment: the app is a top segment's (segment_focus_apps).
	TopSegment bool
	// Observations: the latest at or before each window's start, and the
	// earliest (duplicates are harmless).
	Observations []refresh.Observation
	// Tier, Velocity7d, Velocity30d are what is stored ("" and NaN: none).
	Tier                    string
	Velocity7d, Velocity30d float64
}

// Scheduled is what the sweep writes for one app.
type Scheduled struct {
	TrackID     int64
	Tier        string
	Velocity7d  float64 // NaN: unknown
	Velocity30d float64
}

// VelocityMoved reports whether a new velocity is worth writing over the
// stored one.
func VelocityMoved(stored, now float64) bool {
	sk, nk := !math.IsNaN(stored), !math.IsNaN(now)
	if sk != nk {
		return true
	}
	if !sk {
		return false
	}
	d := math.Abs(now - stored)
	return d > VelocityMoveFloor && d > VelocityMoveShare*math.Abs(stored)
}

// Plan computes one app's velocities and tier, and whether its row must be
// written: its tier changed or a velocity moved.
func Plan(a SweepApp) (s Scheduled, write bool) {
	cur := refresh.Observation{At: a.Observed, Count: a.RatingCount}
	v7, ok7 := refresh.Velocity(a.Observations, cur, refresh.Window7d)
	v30, ok30 := refresh.Velocity(a.Observations, cur, refresh.Window30d)
	if !ok7 {
		v7 = math.NaN()
	}
	if !ok30 {
		v30 = math.NaN()
	}
	f := refresh.Facts{TrackID: a.TrackID, InTopCharts: a.InTopCharts, TopSegment: a.TopSegment, ClusterScore: a.ClusterScore,
		Velocity7d: v7, RatingCount: a.RatingCount, LastEnriched: a.Enriched}
	s = Scheduled{TrackID: a.TrackID, Tier: refresh.Tier(f), Velocity7d: v7, Velocity30d: v30}
	write = s.Tier != a.Tier || VelocityMoved(a.Velocity7d, v7) || VelocityMoved(a.Velocity30d, v30)
	return s, write
}

// SweepStore is what the sweep needs of D1.
type SweepStore interface {
	SweepCursor(ctx context.Context) (d1.Cursor, error)
	// SweepApps reads up to n enriched apps: those without a tier when
	// untiered, else those past the cursor.
	SweepApps(ctx context.Context, untiered bool, cursor int64, n int) ([]SweepApp, error)
	// SaveSweep writes the plans and, when cursor is not nil, moves it
	// to to.
	SaveSweep(ctx context.Context, planned []Scheduled, cursor *d1.Cursor, to int64, at time.Time) error
}

// SweepResult is what one run did.
type SweepResult struct {
	Scheduled  int    `json:"scheduled"` // apps given their first tier
	Swept      int    `json:"swept"`     // apps re-tiered from the cursor
	Written    int    `json:"written"`   // rows written: first tiers, tier changes, moved velocities
	Hot        int    `json:"hot"`
	Velocities int    `json:"velocities"` // apps with a known 7-day velocity
	From       int64  `json:"from"`
	Next       int64  `json:"next"`
	Error      string `json:"error,omitempty"`
}

// Summary is the task's one line.
func (r SweepResult) Summary() string {
	return fmt.Sprintf("scheduled %d new, re-tiered %d from cursor %d (next %d), %d rows written; %d hot, %d with a 7-day velocity",
		r.Scheduled, r.Swept, r.From, r.Next, r.Written, r.Hot, r.Velocities)
}

// Sweep runs one catalogue sweep: untiered apps first, then the cursor
// walk, at most SweepMaxBatches batches in all. A failed batch ends the
// run with the cursor where it was.
func Sweep(ctx context.Context, st SweepStore, now time.Time) SweepResult {
	var r SweepResult
	plan := func(apps []SweepApp) []Scheduled {
		var out []Scheduled
		for _, a := range apps {
			p, write := Plan(a)
			if p.Tier == refresh.TierHot {
				r.Hot++
			}
			if !math.IsNaN(p.Velocity7d) {
				r.Velocities++
			}
			if write {
				out = append(out, p)
			}
		}
		r.Written += len(out)
		return out
	}
	batches := 0
	for ; batches < SweepMaxBatches; batches++ {
		apps, err := st.SweepApps(ctx, true, 0, SweepBatchApps)
		if err != nil {
			r.Error = "untiered: " + err.Error()
			return r
		}
		if len(apps) == 0 {
			break
		}
		if err := st.SaveSweep(ctx, plan(apps), nil, 0, now); err != nil {
			r.Error = "schedule: " + err.Error()
			return r
		}
		r.Scheduled += len(apps)
		if len(apps) < SweepBatchApps {
			batches++
			break
		}
	}
	cur, err := st.SweepCursor(ctx)
	if err != nil {
		r.Error = "cursor: " + err.Error()
		return r
	}
	cursor := cur.Int()
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
		if err := st.SaveSweep(ctx, plan(apps), &cur, next, now); err != nil {
			r.Error = "sweep write: " + err.Error()
			return r
		}
		cur = cur.Moved(next)
		r.Swept += len(apps)
		cursor, r.Next = next, next
		if next == 0 {
			break
		}
	}
	return r
}
