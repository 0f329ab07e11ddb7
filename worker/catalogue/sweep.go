package catalogue

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	"storecrawl/worker/d1"
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

// sweepSelect reads the facts of enriched apps; %s is the WHERE clause
// and ordering (a cursor or the unscheduled ones). Parameters ?1 and ?2
// are the two windows as SQLite modifiers ('-604800 seconds').
// obsAt is when an app's stored rating count was last observed: the
// latest of observed_at (rediscovery), updated_at (the enrichment's saves)
// and enriched_at.
const obsAt = `max(COALESCE(r.observed_at, ''), COALESCE(r.updated_at, ''), COALESCE(r.enriched_at, ''))`

// sweepSelect reads the facts of enriched apps; %[1]s is obsAt, %[2]s the
// WHERE clause and ordering (a cursor or the unscheduled ones). Parameters
// ?1 and ?2 are the two windows as SQLite modifiers ('-604800 seconds').
const sweepSelect = `SELECT r.track_id AS track_id, COALESCE(r.rating_count, 0) AS ratings, r.enriched_at AS enriched_at,
  %[1]s AS observed_at, COALESCE(r.next_refresh_at, '') AS next_refresh_at,
  EXISTS (SELECT 1 FROM chart_positions c WHERE c.track_id = r.track_id) AS in_charts,
  COALESCE((SELECT max(o.score) FROM market_cluster_members m JOIN opportunity_scores o ON o.cluster_id = m.cluster_id
    WHERE m.track_id = r.track_id), 0) AS cluster_score,
  (SELECT json_array(s.taken_at, s.rating_count) FROM app_snapshots s WHERE s.track_id = r.track_id AND s.source IS NOT NULL
    AND s.taken_at <= strftime('%%Y-%%m-%%dT%%H:%%M:%%fZ', %[1]s, ?1) ORDER BY s.taken_at DESC LIMIT 1) AS before_7d,
  (SELECT json_array(s.taken_at, s.rating_count) FROM app_snapshots s WHERE s.track_id = r.track_id AND s.source IS NOT NULL
    AND s.taken_at <= strftime('%%Y-%%m-%%dT%%H:%%M:%%fZ', %[1]s, ?2) ORDER BY s.taken_at DESC LIMIT 1) AS before_30d,
  (SELECT json_array(s.taken_at, s.rating_count) FROM app_snapshots s WHERE s.track_id = r.track_id AND s.source IS NOT NULL
    ORDER BY s.taken_at LIMIT 1) AS first_obs
FROM app_registry r %[2]s`

var (
	sweepCursorSQL = sync.OnceValue(func() string {
		return fmt.Sprintf(sweepSelect, obsAt, `WHERE r.track_id > ?3 AND r.enrichment_source = 'itunes+store' AND r.enriched_at IS NOT NULL ORDER BY r.track_id LIMIT ?4`)
	})
	sweepUnscheduledSQL = sync.OnceValue(func() string {
		return fmt.Sprintf(sweepSelect, obsAt, `WHERE r.enrichment_source = 'itunes+store' AND r.refresh_interval_s IS NULL AND r.enriched_at IS NOT NULL ORDER BY r.track_id LIMIT ?3`)
	})
)

// modifier is a duration back in time as a SQLite date modifier.
func modifier(d time.Duration) string {
	return "-" + strconv.FormatInt(int64(d/time.Second), 10) + " seconds"
}

type sweepRow struct {
	TrackID      int64   `json:"track_id"`
	Ratings      int64   `json:"ratings"`
	EnrichedAt   string  `json:"enriched_at"`
	ObservedAt   string  `json:"observed_at"`
	NextRefresh  string  `json:"next_refresh_at"`
	InCharts     int     `json:"in_charts"`
	ClusterScore float64 `json:"cluster_score"`
	Before7d     *string `json:"before_7d"`
	Before30d    *string `json:"before_30d"`
	FirstObs     *string `json:"first_obs"`
}

func parseObs(raw *string) (refresh.Observation, bool) {
	if raw == nil {
		return refresh.Observation{}, false
	}
	var pair []any
	if json.Unmarshal([]byte(*raw), &pair) != nil || len(pair) != 2 {
		return refresh.Observation{}, false
	}
	at, _ := pair[0].(string)
	n, ok := pair[1].(float64)
	t, err := d1.ParseTime(at)
	if err != nil || !ok {
		return refresh.Observation{}, false
	}
	return refresh.Observation{At: t, Count: int64(n)}, true
}

func (r sweepRow) app() SweepApp {
	a := SweepApp{TrackID: r.TrackID, RatingCount: r.Ratings, InTopCharts: r.InCharts != 0, ClusterScore: r.ClusterScore}
	a.Enriched, _ = d1.ParseTime(r.EnrichedAt)
	if t, err := d1.ParseTime(r.ObservedAt); err == nil {
		a.Observed = t
	} else {
		a.Observed = a.Enriched
	}
	if r.NextRefresh != "" {
		a.NextRefresh, _ = d1.ParseTime(r.NextRefresh)
	}
	for _, raw := range []*string{r.Before7d, r.Before30d, r.FirstObs} {
		if o, ok := parseObs(raw); ok {
			a.Observations = append(a.Observations, o)
		}
	}
	return a
}

// SweepApps reads up to n enriched apps: unscheduled ones when
// unscheduled, else those past the cursor.
func (s D1Store) SweepApps(ctx context.Context, unscheduled bool, cursor int64, n int) ([]SweepApp, error) {
	var rows []sweepRow
	var err error
	w7, w30 := modifier(refresh.Window7d), modifier(refresh.Window30d)
	if unscheduled {
		err = s.DB.Query(ctx, &rows, sweepUnscheduledSQL(), w7, w30, n)
	} else {
		err = s.DB.Query(ctx, &rows, sweepCursorSQL(), w7, w30, cursor, n)
	}
	if err != nil {
		return nil, err
	}
	out := make([]SweepApp, len(rows))
	for i, r := range rows {
		out[i] = r.app()
	}
	return out, nil
}

type scheduledJSON struct {
	ID       int64    `json:"id"`
	Tier     string   `json:"tier"`
	Interval int64    `json:"iv"`
	Next     string   `json:"next"`
	V7       *float64 `json:"v7"`
	V30      *float64 `json:"v30"`
}

func finite(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

// SaveSweep writes the batch's schedules and velocities and, when cursor
// is not negative, the cursor, as one atomic batch: the cursor moves only
// if every row was written.
func (s D1Store) SaveSweep(ctx context.Context, planned []Scheduled, cursor int64, at time.Time) error {
	rows := make([]scheduledJSON, len(planned))
	for i, p := range planned {
		rows[i] = scheduledJSON{ID: p.TrackID, Tier: p.Tier, Interval: int64(p.Interval / time.Second), Next: d1.Time(p.NextRefresh),
			V7: finite(p.Velocity7d), V30: finite(p.Velocity30d)}
	}
	b, _ := json.Marshal(rows)
	stmts := []d1.Stmt{{
		SQL: `WITH p AS (SELECT json_extract(value, '$.id') AS id, json_extract(value, '$.tier') AS tier, json_extract(value, '$.iv') AS iv,
  json_extract(value, '$.next') AS next, json_extract(value, '$.v7') AS v7, json_extract(value, '$.v30') AS v30 FROM json_each(?1))
UPDATE app_registry SET refresh_tier = p.tier, refresh_interval_s = p.iv, next_refresh_at = p.next,
  rating_velocity_7d = p.v7, rating_velocity_30d = p.v30
FROM p WHERE app_registry.track_id = p.id`,
		Args: []any{string(b)},
	}}
	if cursor >= 0 {
		stmts = append(stmts, d1.Stmt{
			SQL:  `INSERT INTO sweep_cursors (name, cursor, updated_at) VALUES (?,?,?) ON CONFLICT (name) DO UPDATE SET cursor = excluded.cursor, updated_at = excluded.updated_at`,
			Args: []any{sweepCursorName, cursor, d1.Time(at)},
		})
	}
	_, err := s.DB.ExecAtomic(ctx, stmts...)
	return err
}

// SweepCursor reads the sweep's cursor (0: from the start).
func (s D1Store) SweepCursor(ctx context.Context) (int64, error) {
	return s.intCursor(ctx, sweepCursorName)
}

func (s D1Store) intCursor(ctx context.Context, name string) (int64, error) {
	var rows []struct {
		Cursor any `json:"cursor"`
	}
	if err := s.DB.Query(ctx, &rows, `SELECT cursor FROM sweep_cursors WHERE name = ?`, name); err != nil {
		return 0, err
	}
	if len(rows) > 0 {
		if c, ok := rows[0].Cursor.(float64); ok {
			return int64(c), nil
		}
	}
	return 0, nil
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
