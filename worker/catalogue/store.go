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
	"storecrawl/worker/registry"
)

// The sweep's side of D1 (sweep.go holds its plan): the apps' facts read,
// the schedules and the cursor written.

// obsAt is when an app's stored rating count was last observed: the
// latest of observed_at (rediscovery), updated_at (the enrichment's saves)
// and enriched_at.
const obsAt = `max(COALESCE(r.observed_at, ''), COALESCE(r.updated_at, ''), COALESCE(r.enriched_at, ''))`

// sweepSelect reads the facts of enriched apps; %[1]s is obsAt, %[2]s the
// WHERE clause and ordering (a cursor or the untiered ones), %[3]s
// firstObs. Parameters
// ?1 and ?2 are the two windows as SQLite modifiers ('-604800 seconds').
// app_snapshots' times are milliseconds (migrations/0035), read back as
// Layout text.
const sweepSelect = `SELECT r.track_id AS track_id, COALESCE(r.rating_count, 0) AS ratings, r.enriched_at AS enriched_at,
  %[1]s AS observed_at, COALESCE(r.refresh_tier, '') AS tier, r.rating_velocity_7d AS v7, r.rating_velocity_30d AS v30,
  EXISTS (SELECT 1 FROM chart_positions c WHERE c.track_id = r.track_id) AS in_charts,
` + topSegmentFact + `  COALESCE((SELECT max(o.score) FROM crawl_rankings m JOIN opportunity_scores o ON o.cluster_id = m.keyword
    WHERE m.track_id = r.track_id), 0) AS cluster_score,
  COALESCE((SELECT json_array(strftime('%%Y-%%m-%%dT%%H:%%M:%%fZ', s.taken_at / 1000.0, 'unixepoch'), s.rating_count) FROM app_snapshots s WHERE s.track_id = r.track_id AND s.source IS NOT NULL
    AND s.taken_at <= CAST(round((julianday(%[1]s, ?1) - 2440587.5) * 86400000) AS INTEGER) ORDER BY s.taken_at DESC LIMIT 1),
    CASE WHEN COALESCE(r.values_at, r.discovered_at) <= strftime('%%Y-%%m-%%dT%%H:%%M:%%fZ', %[1]s, ?1) THEN %[3]s END) AS before_7d,
  COALESCE((SELECT json_array(strftime('%%Y-%%m-%%dT%%H:%%M:%%fZ', s.taken_at / 1000.0, 'unixepoch'), s.rating_count) FROM app_snapshots s WHERE s.track_id = r.track_id AND s.source IS NOT NULL
    AND s.taken_at <= CAST(round((julianday(%[1]s, ?2) - 2440587.5) * 86400000) AS INTEGER) ORDER BY s.taken_at DESC LIMIT 1),
    CASE WHEN COALESCE(r.values_at, r.discovered_at) <= strftime('%%Y-%%m-%%dT%%H:%%M:%%fZ', %[1]s, ?2) THEN %[3]s END) AS before_30d,
  COALESCE((SELECT json_array(strftime('%%Y-%%m-%%dT%%H:%%M:%%fZ', s.taken_at / 1000.0, 'unixepoch'), s.rating_count) FROM app_snapshots s WHERE s.track_id = r.track_id AND s.source IS NOT NULL
    ORDER BY s.taken_at LIMIT 1), %[3]s) AS first_obs
FROM app_registry r %[2]s`

// topSegmentFact is whether the app is a top segment's (by key).
const topSegmentFact = `  EXISTS (SELECT 1 FROM segment_focus_apps f WHERE f.track_id = r.track_id) AS top_segment,
`

// firstObs is an app's first rating observation when it has none in
// app_snapshots: its first count, held since values_at (its discovery
// for a row without one; migrations/0028 writes history on change only,
// and the first change writes this point too). NULL when the app has an
// observation.
const firstObs = `(SELECT json_array(COALESCE(r.values_at, r.discovered_at), r.rating_count) WHERE r.rating_count IS NOT NULL
    AND NOT EXISTS (SELECT 1 FROM app_snapshots s WHERE s.track_id = r.track_id AND s.source IS NOT NULL))`

var (
	// Formatted on first use, not in the Worker's cold start.
	sweepCursorSQL = sync.OnceValue(func() string {
		return fmt.Sprintf(sweepSelect, obsAt, `WHERE r.track_id > ?3 AND r.enrichment_source = 'itunes+store' AND r.enriched_at IS NOT NULL ORDER BY r.track_id LIMIT ?4`, firstObs)
	})
	sweepUntieredSQL = sync.OnceValue(func() string {
		return fmt.Sprintf(sweepSelect, obsAt, `WHERE r.enrichment_source = 'itunes+store' AND r.refresh_tier IS NULL AND r.enriched_at IS NOT NULL ORDER BY r.track_id LIMIT ?3`, firstObs)
	})
)

// modifier is a duration back in time as a SQLite date modifier.
func modifier(d time.Duration) string {
	return "-" + strconv.FormatInt(int64(d/time.Second), 10) + " seconds"
}

type sweepRow struct {
	TrackID      int64    `json:"track_id"`
	Ratings      int64    `json:"ratings"`
	EnrichedAt   string   `json:"enriched_at"`
	ObservedAt   string   `json:"observed_at"`
	Tier         string   `json:"tier"`
	V7           *float64 `json:"v7"`
	V30          *float64 `json:"v30"`
	InCharts     int      `json:"in_charts"`
	TopSegment   int      `json:"top_segment"`
	ClusterScore float64  `json:"cluster_score"`
	Before7d     *string  `json:"before_7d"`
	Before30d    *string  `json:"before_30d"`
	FirstObs     *string  `json:"first_obs"`
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
	a := SweepApp{TrackID: r.TrackID, RatingCount: r.Ratings, InTopCharts: r.InCharts != 0, TopSegment: r.TopSegment != 0, ClusterScore: r.ClusterScore}
	a.Enriched, _ = d1.ParseTime(r.EnrichedAt)
	if t, err := d1.ParseTime(r.ObservedAt); err == nil {
		a.Observed = t
	} else {
		a.Observed = a.Enriched
	}
	a.Tier, a.Velocity7d, a.Velocity30d = r.Tier, math.NaN(), math.NaN()
	if r.V7 != nil {
		a.Velocity7d = *r.V7
	}
	if r.V30 != nil {
		a.Velocity30d = *r.V30
	}
	for _, raw := range []*string{r.Before7d, r.Before30d, r.FirstObs} {
		if o, ok := parseObs(raw); ok {
			a.Observations = append(a.Observations, o)
		}
	}
	return a
}

// SweepApps implements SweepStore.
func (s D1Store) SweepApps(ctx context.Context, untiered bool, cursor int64, n int) ([]SweepApp, error) {
	var rows []sweepRow
	var err error
	w7, w30 := modifier(refresh.Window7d), modifier(refresh.Window30d)
	if untiered {
		err = s.DB.Query(ctx, &rows, sweepUntieredSQL(), w7, w30, n)
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
	ID   int64    `json:"id"`
	Tier string   `json:"tier"`
	V7   *float64 `json:"v7"`
	V30  *float64 `json:"v30"`
}

func finite(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

// SaveSweep writes the batch's tiers and velocities (the apps Plan says
// to write, registry.Tiers: one row each, plus, for a tier change, the
// app's entry moved in idx_app_registry_refresh_sweep and, for a first
// tier, its entry gone from idx_app_registry_untiered) and, when cursor is
// not nil, moves it to to (d1.Cursor: no row when it stays), as one atomic
// batch: the cursor moves only if every row was written.
func (s D1Store) SaveSweep(ctx context.Context, planned []Scheduled, cursor *d1.Cursor, to int64, at time.Time) error {
	var stmts []d1.Stmt
	if len(planned) > 0 {
		rows := make([]scheduledJSON, len(planned))
		for i, p := range planned {
			rows[i] = scheduledJSON{ID: p.TrackID, Tier: p.Tier, V7: finite(p.Velocity7d), V30: finite(p.Velocity30d)}
		}
		b, _ := json.Marshal(rows)
		stmts = append(stmts, registry.Tiers(string(b)))
	}
	if cursor != nil {
		stmts = append(stmts, cursor.Write(to, at)...)
	}
	if len(stmts) == 0 {
		return nil
	}
	_, err := s.DB.ExecAtomic(ctx, stmts...)
	return err
}

// SweepCursor reads the sweep's cursor (none: from the start).
func (s D1Store) SweepCursor(ctx context.Context) (d1.Cursor, error) {
	return d1.ReadCursor(ctx, s.DB, sweepCursorName)
}
