//go:build !js

package catalogue

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"testing"
	"time"

	"storecrawl/worker/d1"
	"storecrawl/worker/d1/d1test"
	"storecrawl/worker/refresh"
)

var t0 = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

const day = 24 * time.Hour

// enrich stores an enriched record the way the enrichment's save does
// (rating count, version, price, page parsed, enriched_at = updated_at).
func enrich(t *testing.T, drv *d1test.Driver, id int64, ratings int64, version string, at time.Time) {
	t.Helper()
	ts := d1.Time(at)
	// Queued first (found by a crawl), then enriched by an update, as the
	// pipeline does.
	drv.Exec(t, `INSERT OR IGNORE INTO app_registry (track_id, discovered_at) VALUES (?, ?)`, id, d1.Time(at.Add(-time.Hour)))
	drv.Exec(t, `INSERT INTO app_registry (track_id, name, rating_count, average_rating, version, price, currency, enrichment_source, enriched_at, updated_at, page_status)
VALUES (?, 'Budget Planner', ?, 4.5, ?, 0, 'USD', 'itunes+store', ?, ?, 'parsed')
ON CONFLICT (track_id) DO UPDATE SET rating_count = excluded.rating_count, average_rating = excluded.average_rating,
  price = excluded.price, currency = excluded.currency, version = excluded.version, enrichment_source = excluded.enrichment_source,
  enriched_at = excluded.enriched_at, updated_at = excluded.updated_at, page_status = excluded.page_status`, id, ratings, version, ts, ts)
}

func search(id, ratings int64, version string, price float64) Seen {
	return Seen{TrackID: id, Name: "Budget Planner", GenreID: 6015, Lookup: true, RatingCount: ratings, AverageRating: 4.5,
		Price: price, Currency: "USD", Version: version, VersionDate: "2026-10-01T00:00:00Z"}
}

func TestObserveUpdatesAndAppendsHistoryOnChange(t *testing.T) {
	db, drv := d1test.New(t)
	ctx := context.Background()
	// First sighting: a new app queued with what the search showed; its
	// first values are its row's (no history rows: migrations/0028), and
	// the history answer shows them at its discovery.
	if _, err := db.Exec(ctx, ObserveStmt([]Seen{search(1, 100, "1.0", 0), search(1, 999, "9", 9)}, t0)...); err != nil {
		t.Fatal(err)
	}
	row := drv.Rows(t, `SELECT rating_count, version, last_seen_at, observed_at, enriched_at FROM app_registry WHERE track_id = 1`)[0]
	if row["rating_count"] != 100.0 || row["version"] != "1.0" || row["last_seen_at"] != d1.Time(t0) || row["enriched_at"] != nil {
		t.Fatalf("new app (the list's first sighting wins): %v", row)
	}
	count := func(table string) int64 { return drv.Int(t, `SELECT COUNT(*) FROM `+table+` WHERE track_id = 1`) }
	if count("app_snapshots") != 0 || count("app_version_history") != 0 || count("app_price_history") != 0 {
		t.Fatalf("first observation: %d ratings, %d versions, %d prices", count("app_snapshots"), count("app_version_history"), count("app_price_history"))
	}
	series := func() string {
		t.Helper()
		raw, ok, err := D1Store{DB: db}.AppHistory(ctx, HistoryQuery{TrackID: 1, Days: 90, Limit: 10}, t0.Add(4*day))
		if err != nil || !ok {
			t.Fatalf("history: %v %v", ok, err)
		}
		var h struct{ Ratings, Versions, Prices []map[string]any }
		json.Unmarshal(raw, &h)
		return fmt.Sprint(h.Ratings, h.Versions, h.Prices)
	}
	first := fmt.Sprintf("[map[at:%[1]s average_rating:4.5 rating_count:100 source:observed]] [map[at:%[1]s release_date:2026-10-01T00:00:00Z release_notes:<nil> version:1.0]] [map[at:%[1]s currency:USD price:0]]", d1.Time(t0))
	if got := series(); got != first {
		t.Fatalf("first observation's history:\n%s\nwant\n%s", got, first)
	}
	// Seen again a day later, unchanged: nothing is written (the sighting
	// is within SightingGranularity); a granularity later last_seen_at
	// moves; no history.
	before := drv.TotalChanges(t)
	db.Exec(ctx, ObserveStmt([]Seen{search(1, 100, "1.0", 0)}, t0.Add(day))...)
	if n := drv.TotalChanges(t) - before; n != 0 {
		t.Fatalf("an unchanged sighting a day later wrote %d rows", n)
	}
	db.Exec(ctx, ObserveStmt([]Seen{search(1, 100, "1.0", 0)}, t0.Add(SightingGranularity+time.Minute))...)
	if count("app_snapshots") != 0 || count("app_version_history") != 0 || count("app_price_history") != 0 || series() != first {
		t.Fatal("an unchanged sighting appends nothing")
	}
	if got := drv.Rows(t, `SELECT last_seen_at FROM app_registry WHERE track_id = 1`)[0]["last_seen_at"]; got != d1.Time(t0.Add(SightingGranularity+time.Minute)) {
		t.Fatalf("last_seen_at: %v", got)
	}
	// Ratings, version and price change: one row each, at the sighting,
	// after the first values at the discovery (the first change writes
	// them): the answer is the same series with the change on top.
	db.Exec(ctx, ObserveStmt([]Seen{search(1, 130, "1.1", 1.99)}, t0.Add(2*day))...)
	if count("app_snapshots") != 2 || count("app_version_history") != 2 || count("app_price_history") != 2 {
		t.Fatalf("changes: %d ratings, %d versions, %d prices", count("app_snapshots"), count("app_version_history"), count("app_price_history"))
	}
	changed := fmt.Sprintf("[map[at:%[2]s average_rating:4.5 rating_count:130 source:observed] map[at:%[1]s average_rating:4.5 rating_count:100 source:observed]] [map[at:%[2]s release_date:2026-10-01T00:00:00Z release_notes:<nil> version:1.1] map[at:%[1]s release_date:2026-10-01T00:00:00Z release_notes:<nil> version:1.0]] [map[at:%[2]s currency:USD price:1.99] map[at:%[1]s currency:USD price:0]]", d1.Time(t0), d1.Time(t0.Add(2*day)))
	if got := series(); got != changed {
		t.Fatalf("after the changes:\n%s\nwant\n%s", got, changed)
	}
	if n := drv.Int(t, `SELECT rating_count FROM app_snapshots WHERE track_id = 1 AND taken_at = ?`, Millis(t0.Add(2*day))); n != 130 {
		t.Fatalf("the observation is dated when it was seen: %d", n)
	}
	// A chart sighting carries no ratings: they stay; the stale mark goes.
	drv.Exec(t, `UPDATE app_registry SET stale_at = ? WHERE track_id = 1`, d1.Time(t0))
	db.Exec(ctx, ObserveStmt([]Seen{{TrackID: 1, Name: "Budget Planner"}}, t0.Add(3*day))...)
	row = drv.Rows(t, `SELECT rating_count, version, price, stale_at, observed_at FROM app_registry WHERE track_id = 1`)[0]
	if row["rating_count"] != 130.0 || row["version"] != "1.1" || row["price"] != 1.99 || row["stale_at"] != nil || row["observed_at"] != d1.Time(t0.Add(2*day)) {
		t.Fatalf("chart sighting: %v", row)
	}
	if count("app_snapshots") != 2 {
		t.Fatal("a chart sighting observes no ratings")
	}
}

func TestSweepTiersAndVersionChangePutsOnRetryList(t *testing.T) {
	db, drv := d1test.New(t)
	ctx := context.Background()
	enrich(t, drv, 1, 500, "2.0", t0)
	row := drv.Rows(t, `SELECT refresh_tier, refresh_retry_at, page_version, page_rating_count FROM app_registry WHERE track_id = 1`)[0]
	if row["refresh_tier"] != nil || row["refresh_retry_at"] != nil || row["page_version"] != "2.0" || row["page_rating_count"] != 500.0 {
		t.Fatalf("first enrichment: untiered until the sweep, page fingerprint kept: %v", row)
	}
	// The sweep gives it its tier: one row.
	before := drv.TotalChanges(t)
	res := Sweep(ctx, D1Store{DB: db}, t0.Add(time.Hour))
	if res.Error != "" || res.Scheduled != 1 || res.Written != 1 {
		t.Fatalf("sweep: %+v", res)
	}
	if got := drv.Rows(t, `SELECT refresh_tier FROM app_registry WHERE track_id = 1`)[0]["refresh_tier"]; got != refresh.TierCold {
		t.Fatalf("tier: %v", got)
	}
	// The run's cursor walk re-tiered it to the same tier: nothing more
	// than the tier row. The walk wrapped from no cursor to 0, which is
	// no move (d1.Cursor): the cursor writes no row.
	if n := drv.TotalChanges(t) - before; n != 1 {
		t.Fatalf("a first tier writes %d rows, want 1 (the app)", n)
	}
	// A search shows a new version: the app goes on the retry list now.
	db.Exec(ctx, ObserveStmt([]Seen{search(1, 510, "2.1", 0)}, t0.Add(2*day))...)
	if got := drv.Rows(t, `SELECT refresh_retry_at FROM app_registry WHERE track_id = 1`)[0]["refresh_retry_at"]; got != d1.Time(t0.Add(2*day)) {
		t.Fatalf("version change: retry at %v", got)
	}
	// The same version seen again: nothing more.
	db.Exec(ctx, ObserveStmt([]Seen{search(1, 520, "2.1", 0)}, t0.Add(2*day+time.Minute))...)
	if got := drv.Rows(t, `SELECT refresh_retry_at FROM app_registry WHERE track_id = 1`)[0]["refresh_retry_at"]; got != d1.Time(t0.Add(2*day)) {
		t.Fatalf("same version: retry at %v", got)
	}
	if refresh.Unchanged(refresh.Fingerprint{Version: "2.0", RatingCount: 500}, refresh.Fingerprint{Version: "2.1", RatingCount: 510}) {
		t.Fatal("the page must be fetched for the new version")
	}
	// The refresh stores the record: off the retry list, the page
	// fingerprint follows, the tier stays.
	enrich(t, drv, 1, 510, "2.1", t0.Add(2*day+time.Hour))
	row = drv.Rows(t, `SELECT refresh_retry_at, refresh_tier, page_version, last_seen_at FROM app_registry WHERE track_id = 1`)[0]
	if row["refresh_retry_at"] != nil || row["refresh_tier"] != refresh.TierCold || row["page_version"] != "2.1" || row["last_seen_at"] != d1.Time(t0.Add(2*day+time.Hour)) {
		t.Fatalf("after the refresh: %v", row)
	}
}

func TestSweepVelocityFromObservations(t *testing.T) {
	db, drv := d1test.New(t)
	ctx := context.Background()
	// Enriched 40 days ago with 1,000 ratings; searches saw it grow.
	enrich(t, drv, 7, 1000, "1.0", t0.Add(-40*day))
	for _, o := range []struct {
		d int
		n int64
	}{{-20, 1600}, {-10, 2000}, {-5, 2200}, {0, 2700}} {
		db.Exec(ctx, ObserveStmt([]Seen{search(7, o.n, "1.0", 0)}, t0.Add(time.Duration(o.d)*day))...)
	}
	// Sweep rows (copies of stored values, source NULL) are not observations.
	drv.Exec(t, `INSERT INTO app_snapshots (track_id, taken_at, rating_count, average_rating) VALUES (7, ?, 99999, 4)`, Millis(t0.Add(-8*day)))
	res := Sweep(ctx, D1Store{DB: db}, t0)
	// Scheduled first, then re-tiered by the cursor walk of the same run.
	if res.Error != "" || res.Scheduled != 1 || res.Swept != 1 || res.Velocities != 2 {
		t.Fatalf("sweep: %+v", res)
	}
	row := drv.Rows(t, `SELECT rating_velocity_7d, rating_velocity_30d, refresh_tier FROM app_registry WHERE track_id = 7`)[0]
	// 7 days: 2,000 held from day -10 to day -7, so (2700-2000)/7 = 100 a day.
	// 30 days: 1,000 held from day -40 to day -30: (2700-1000)/30 = 56.667.
	if row["rating_velocity_7d"] != 100.0 || math.Abs(row["rating_velocity_30d"].(float64)-56.667) > 1e-9 || row["refresh_tier"] != refresh.TierHot {
		t.Fatalf("velocities: %v", row)
	}
	// A second pass walks the cursor over every enriched app.
	// Nothing changed: no app row written, and the cursor, wrapping from
	// 0 to 0, stays (d1.Cursor): nothing at all.
	before := drv.TotalChanges(t)
	res = Sweep(ctx, D1Store{DB: db}, t0)
	if res.Scheduled != 0 || res.Swept != 1 || res.Next != 0 || res.Written != 0 {
		t.Fatalf("cursor pass: %+v", res)
	}
	if n := drv.TotalChanges(t) - before; n != 0 {
		t.Fatalf("an unchanged pass wrote %d rows, want 0", n)
	}
	// D1 down: an error, nothing moves.
	drv.FailNext.Store(1)
	if res := Sweep(ctx, D1Store{DB: db}, t0); res.Error == "" {
		t.Fatal("a failed read must be reported")
	}
}

// TestSweepVelocityFromTheFirstValues: an app a search found has no
// history rows until a value changes (migrations/0028); its velocities
// count from the values it was found with, as from a first snapshot.
func TestSweepVelocityFromTheFirstValues(t *testing.T) {
	db, drv := d1test.New(t)
	ctx := context.Background()
	// Found 40 days ago with 1,000 ratings, enriched with the same.
	db.Exec(ctx, ObserveStmt([]Seen{search(8, 1000, "1.0", 0)}, t0.Add(-40*day))...)
	enrich(t, drv, 8, 1000, "1.0", t0.Add(-40*day+time.Hour))
	if n := drv.Int(t, `SELECT count(*) FROM app_snapshots WHERE track_id = 8`); n != 0 {
		t.Fatalf("history rows of an unchanged app: %d", n)
	}
	// Seen again unchanged 10 days ago: 0 a day over both windows (known).
	db.Exec(ctx, ObserveStmt([]Seen{search(8, 1000, "1.0", 0)}, t0.Add(-10*day))...)
	Sweep(ctx, D1Store{DB: db}, t0)
	row := drv.Rows(t, `SELECT rating_velocity_7d, rating_velocity_30d FROM app_registry WHERE track_id = 8`)[0]
	if row["rating_velocity_7d"] != 0.0 || row["rating_velocity_30d"] != 0.0 {
		t.Fatalf("velocities of an unchanged app: %v", row)
	}
	// It grows 5 days ago: the first change writes the first values too,
	// and the windows count from them: (1300-1000)/7 and /30.
	db.Exec(ctx, ObserveStmt([]Seen{search(8, 1300, "1.0", 0)}, t0.Add(-5*day))...)
	if n := drv.Int(t, `SELECT count(*) FROM app_snapshots WHERE track_id = 8 AND source IS NOT NULL`); n != 2 {
		t.Fatalf("observations after the first change: %d", n)
	}
	Sweep(ctx, D1Store{DB: db}, t0.Add(time.Minute))
	row = drv.Rows(t, `SELECT rating_velocity_7d, rating_velocity_30d FROM app_registry WHERE track_id = 8`)[0]
	if math.Abs(row["rating_velocity_7d"].(float64)-42.857) > 1e-9 || row["rating_velocity_30d"] != 10.0 {
		t.Fatalf("velocities after a change: %v", row)
	}
}

func TestPlanWritesOnlyOnChange(t *testing.T) {
	nan := math.NaN()
	a := SweepApp{TrackID: 3, RatingCount: 10, Enriched: t0, Observed: t0, Tier: refresh.TierCold, Velocity7d: nan, Velocity30d: nan}
	if p, write := Plan(a); write || p.Tier != refresh.TierCold {
		t.Fatalf("same tier, no velocity: no write: %+v", p)
	}
	a.InTopCharts = true
	if p, write := Plan(a); !write || p.Tier != refresh.TierHot {
		t.Fatalf("a tier change is written: %+v", p)
	}
	a.InTopCharts, a.Tier = false, ""
	if _, write := Plan(a); !write {
		t.Fatal("a first tier is written")
	}
	// Velocities: written when first known, or moved by more than the
	// floor and the share.
	if !VelocityMoved(nan, 3) || VelocityMoved(nan, nan) || !VelocityMoved(3, nan) {
		t.Fatal("known vs unknown")
	}
	if VelocityMoved(100, 115) || !VelocityMoved(100, 125) || VelocityMoved(0.2, 1.1) || !VelocityMoved(0.2, 1.3) {
		t.Fatal("the floor and the share")
	}
}

func TestMarkStale(t *testing.T) {
	db, drv := d1test.New(t)
	ctx := context.Background()
	for id := 1; id <= StaleBatchApps+10; id++ {
		drv.Exec(t, `INSERT INTO app_registry (track_id, discovered_at, last_seen_at) VALUES (?, ?, ?)`, id, d1.Time(t0.Add(-200*day)), d1.Time(t0.Add(-100*day)))
	}
	drv.Exec(t, `UPDATE app_registry SET last_seen_at = ? WHERE track_id = 5`, d1.Time(t0.Add(-day)))
	drv.Exec(t, `UPDATE app_registry SET enriched_at = ? WHERE track_id = 6`, d1.Time(t0.Add(-day)))
	// App 7's stored sighting is past the stale age by less than
	// SightingGranularity: it may have been seen since, unwritten.
	drv.Exec(t, `UPDATE app_registry SET last_seen_at = ? WHERE track_id = 7`, d1.Time(t0.Add(-DefaultStaleAfter-SightingGranularity/2)))
	before := drv.TotalChanges(t)
	res := MarkStale(ctx, D1Store{DB: db}, DefaultStaleAfter, t0)
	if res.Error != "" || res.Apps != StaleBatchApps+10 || res.Changed != int64(StaleBatchApps+7) || res.Next != 0 {
		t.Fatalf("mark: %+v", res)
	}
	// The marks alone: the walk began and ended at 0, so no cursor row.
	if n := drv.TotalChanges(t) - before; n != res.Changed {
		t.Fatalf("rows written %d, want the %d marks", n, res.Changed)
	}
	if n := drv.Int(t, `SELECT COUNT(*) FROM app_registry WHERE stale_at IS NOT NULL AND track_id IN (5, 6, 7)`); n != 0 {
		t.Fatal("apps seen or enriched lately are not stale")
	}
	if n := drv.Int(t, `SELECT COUNT(*) FROM app_registry`); n != StaleBatchApps+10 {
		t.Fatal("stale apps are kept")
	}
	// Seen again: unmarked.
	db.Exec(ctx, ObserveStmt([]Seen{{TrackID: 9, Name: "x"}}, t0)...)
	if n := drv.Int(t, `SELECT COUNT(*) FROM app_registry WHERE track_id = 9 AND stale_at IS NULL`); n != 1 {
		t.Fatal("a sighting clears the mark")
	}
	// A rerun marks nothing twice, and writes nothing.
	before = drv.TotalChanges(t)
	if res := MarkStale(ctx, D1Store{DB: db}, DefaultStaleAfter, t0.Add(time.Hour)); res.Changed != 0 || drv.TotalChanges(t) != before {
		t.Fatalf("rerun: %+v, %d rows written", res, drv.TotalChanges(t)-before)
	}
}

// TestWalksCoverADayAndWriteOneCursorRowARun: both walks cover a
// 1.1M-app catalogue within a day at their hourly cadence, and over
// unchanged apps write only the cursor's row, once a run.
func TestWalksCoverADayAndWriteOneCursorRowARun(t *testing.T) {
	const apps, runsADay = 1_100_000, 24 // the scale bench's catalogue; hourly tasks
	for name, perRun := range map[string]int{"catalogue-stale": StaleBatchApps * StaleMaxBatches, "history-prune": PruneBatchApps * PruneMaxBatches} {
		if days := float64(apps) / float64(perRun) / runsADay; days > 1 {
			t.Errorf("%s covers 1.1M apps in %.2f days", name, days)
		}
	}
	db, drv := d1test.New(t)
	ctx := context.Background()
	most := max(StaleBatchApps*StaleMaxBatches, PruneBatchApps*PruneMaxBatches)
	drv.Exec(t, `INSERT INTO app_registry (track_id, discovered_at, last_seen_at)
WITH RECURSIVE i(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM i WHERE n < ?) SELECT n, ?2, ?2 FROM i`, most+5, d1.Time(t0.Add(-day)))
	st := D1Store{DB: db}
	for _, walk := range []struct {
		name   string
		perRun int
		run    func(ctx context.Context, at time.Time) RangeResult
	}{
		{"stale", StaleBatchApps * StaleMaxBatches, func(ctx context.Context, at time.Time) RangeResult { return MarkStale(ctx, st, DefaultStaleAfter, at) }},
		{"prune", PruneBatchApps * PruneMaxBatches, func(ctx context.Context, at time.Time) RangeResult { return PruneHistory(ctx, st, at) }},
	} {
		var wrote, queries []int64
		for run := 0; ; run++ {
			before := drv.TotalChanges(t)
			ctx, cost := d1.WithCost(ctx)
			res := walk.run(ctx, t0.Add(time.Duration(run)*time.Hour))
			if res.Error != "" || res.Changed != 0 {
				t.Fatalf("%s run %d: %+v", walk.name, run, res)
			}
			wrote = append(wrote, drv.TotalChanges(t)-before)
			queries = append(queries, cost.Queries.Load())
			if run == 0 && (res.Apps != walk.perRun || res.Next == 0) {
				t.Fatalf("%s: the first run is bounded: %+v", walk.name, res)
			}
			if res.Next == 0 {
				break
			}
		}
		t.Logf("%s: rows written a run over unchanged apps %v, D1 statements %v", walk.name, wrote, queries)
		for i, n := range wrote {
			if n != 1 {
				t.Errorf("%s run %d wrote %d rows, want the cursor's 1", walk.name, i, n)
			}
		}
	}
}

func TestPruneHistory(t *testing.T) {
	db, drv := d1test.New(t)
	ctx := context.Background()
	for id := 1; id <= PruneBatchApps+3; id++ {
		drv.Exec(t, `INSERT INTO app_registry (track_id) VALUES (?)`, id)
	}
	// Rank rows name keywords by id (migrations/0035): budget 1, chat 2, held 3.
	for _, kw := range []string{"budget", "chat", "held"} {
		drv.Exec(t, `INSERT INTO crawl_keywords (keyword, source, created_at) VALUES (?, 'title', ?)`, kw, d1.Time(t0))
	}
	old, recent := t0.Add(-800*day), t0.Add(-10*day)
	for _, id := range []int{1, PruneBatchApps + 2} {
		for _, at := range []time.Time{old, t0.Add(-100 * day), recent} {
			drv.Exec(t, `INSERT INTO app_snapshots (track_id, taken_at, rating_count, source) VALUES (?, ?, 1, 1)`, id, Millis(at))
			drv.Exec(t, `INSERT INTO app_version_history (track_id, seen_at, version) VALUES (?, ?, 'v')`, id, Millis(at))
			drv.Exec(t, `INSERT INTO keyword_rank_history (track_id, keyword_id, day, rank) VALUES (?, 1, ?, 3)`, id, Day(at))
			// A keyword the app left 100 days ago, and one whose rank
			// changed 800 days ago and holds since.
			if at == old {
				drv.Exec(t, `INSERT INTO keyword_rank_history (track_id, keyword_id, day, rank) VALUES (?, 2, ?, 5), (?, 3, ?, 7)`, id, Day(at), id, Day(at))
			} else if at != recent {
				drv.Exec(t, `INSERT INTO keyword_rank_history (track_id, keyword_id, day, rank) VALUES (?, 2, ?, NULL)`, id, Day(at))
			}
			drv.Exec(t, `INSERT INTO chart_position_history (country, collection, genre_id, track_id, seen_at, rank) VALUES ('us', 'topfreeapplications', 6015, ?, ?, 4)`, id, d1.Time(at))
		}
	}
	// App 3 has not changed for longer than the retentions: its only
	// rating, version and price rows are what it still has, and stay; of
	// app 4's two old snapshots the newer stays.
	for _, at := range []time.Time{old, old.Add(day)} {
		drv.Exec(t, `INSERT INTO app_snapshots (track_id, taken_at, rating_count, source) VALUES (4, ?, 1, 1)`, Millis(at))
	}
	drv.Exec(t, `INSERT INTO app_snapshots (track_id, taken_at, rating_count, source) VALUES (3, ?, 1, 1)`, Millis(old))
	drv.Exec(t, `INSERT INTO app_version_history (track_id, seen_at, version) VALUES (3, ?, 'v')`, Millis(old))
	drv.Exec(t, `INSERT INTO app_price_history (track_id, seen_at, price) VALUES (3, ?, 0)`, Millis(old))
	before := drv.TotalChanges(t)
	res := PruneHistory(ctx, D1Store{DB: db}, t0)
	// Per app: the 800-day rating and version rows, the 800- and 100-day
	// chart ranks (2), and 3 keyword ranks (changes): 'budget' keeps its
	// 100-day row (in effect when the 90 days open) and loses the 800-day
	// one it replaced; 'chat' loses both (replaced, then left); 'held'
	// keeps its 800-day rank, still in effect. And app 4's older snapshot.
	if res.Error != "" || res.Changed != 2*(1+1+2+3)+1 || res.Next != 0 || res.Apps != PruneBatchApps+3 {
		t.Fatalf("prune: %+v", res)
	}
	if n := drv.TotalChanges(t) - before; n != res.Changed {
		t.Fatalf("rows written %d, want the %d deletes (the walk wrapped from 0 to 0: no cursor row)", n, res.Changed)
	}
	if got := drv.Rows(t, `SELECT keyword_id, day FROM keyword_rank_history WHERE track_id = 1 ORDER BY keyword_id, day`); fmt.Sprint(got) !=
		fmt.Sprintf("[map[day:%d keyword_id:1] map[day:%d keyword_id:1] map[day:%d keyword_id:3]]", Day(t0.Add(-100*day)), Day(recent), Day(old)) {
		t.Fatalf("rank changes kept: %v", got)
	}
	for table, want := range map[string]int64{"app_snapshots": 4 + 2, "app_version_history": 4 + 1, "app_price_history": 1, "keyword_rank_history": 6, "chart_position_history": 2} {
		if n := drv.Int(t, `SELECT COUNT(*) FROM `+table); n != want {
			t.Errorf("%s: %d rows left, want %d", table, n, want)
		}
	}
	if n := drv.Int(t, `SELECT COUNT(*) FROM app_snapshots WHERE track_id = 4 AND taken_at = ?`, Millis(old.Add(day))); n != 1 {
		t.Error("app 4 keeps its newest snapshot")
	}
	if res := PruneHistory(ctx, D1Store{DB: db}, t0); res.Changed != 0 {
		t.Fatalf("rerun deletes nothing: %+v", res)
	}
}

func TestAppHistory(t *testing.T) {
	db, drv := d1test.New(t)
	ctx := context.Background()
	enrich(t, drv, 1, 100, "1.0", t0.Add(-3*day))
	db.Exec(ctx, ObserveStmt([]Seen{search(1, 150, "1.1", 0.99)}, t0.Add(-day))...)
	// Searches of two keywords, as crawl records them: the rank changes,
	// then the rankings (a rank held keeps its seen_at). 'chat' ranked the
	// app 4th 40 days ago and holds it (no row: its ranking's rank);
	// 'budget' 3rd 40 days ago, then 2nd and 1st on one day (the day's last
	// is kept; the first change wrote the 3rd first); 'gone' ranked it,
	// then left.
	for _, kw := range []string{"chat", "budget", "gone"} {
		drv.Exec(t, `INSERT INTO crawl_keywords (keyword, source, created_at) VALUES (?, 'title', ?)`, kw, d1.Time(t0.Add(-50*day)))
	}
	search := func(kw string, ids []int64, at time.Time) {
		db.Exec(ctx, KeywordRankStmt(kw, ids, at)...)
		drv.Exec(t, `DELETE FROM crawl_rankings WHERE keyword = ? AND track_id NOT IN (SELECT value ->> 0 FROM json_each(?))`, kw, RankPairs(ids))
		for i, id := range ids {
			drv.Exec(t, `INSERT INTO crawl_rankings (keyword, track_id, rank, seen_at) VALUES (?, ?, ?, ?)
ON CONFLICT (keyword, track_id) DO UPDATE SET rank = excluded.rank, seen_at = excluded.seen_at WHERE crawl_rankings.rank IS NOT excluded.rank`, kw, id, i+1, d1.Time(at))
		}
	}
	search("chat", []int64{5, 6, 7, 1}, t0.Add(-40*day))
	search("budget", []int64{5, 6, 1}, t0.Add(-40*day))
	search("gone", []int64{1}, t0.Add(-40*day))
	search("gone", []int64{5}, t0.Add(-35*day))
	search("chat", []int64{5, 6, 7, 1}, t0.Add(-2*day)) // held: no row
	search("budget", []int64{2, 1}, t0.Add(-day))
	search("budget", []int64{1, 2}, t0.Add(-day+time.Hour))
	rec, ok, err := D1Store{DB: db}.AppHistory(ctx, HistoryQuery{TrackID: 1, Days: 30, Limit: 10}, t0)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	var h struct {
		Current  map[string]any   `json:"current"`
		Ratings  []map[string]any `json:"ratings"`
		Versions []map[string]any `json:"versions"`
		Prices   []map[string]any `json:"prices"`
		Ranks    []map[string]any `json:"keyword_ranks"`
	}
	if err := json.Unmarshal(rec, &h); err != nil {
		t.Fatal(err, string(rec))
	}
	if len(h.Ratings) != 2 || h.Ratings[0]["rating_count"] != 150.0 || h.Ratings[1]["rating_count"] != 100.0 {
		t.Fatalf("ratings newest first: %s", rec)
	}
	if len(h.Versions) != 2 || h.Versions[0]["version"] != "1.1" || len(h.Prices) != 2 || h.Prices[0]["price"] != 0.99 {
		t.Fatalf("versions and prices: %s", rec)
	}
	// The 30 days: budget's change (1st, the day's last); what held when
	// they opened: chat's 4th, budget's 3rd (both from 40 days ago); not
	// 'gone', which the app left.
	if len(h.Ranks) != 3 || fmt.Sprintf("%v %v", h.Ranks[0]["keyword"], h.Ranks[0]["rank"]) != "budget 1" || h.Ranks[0]["day"] != t0.Add(-day).UTC().Format("2006-01-02") ||
		fmt.Sprintf("%v %v %v %v", h.Ranks[1]["keyword"], h.Ranks[1]["rank"], h.Ranks[2]["keyword"], h.Ranks[2]["rank"]) != "budget 3 chat 4" ||
		h.Ranks[1]["day"] != t0.Add(-40*day).UTC().Format("2006-01-02") || h.Current["rating_count"] != 150.0 {
		t.Fatalf("ranks and current: %s", rec)
	}
	// The 50 days: every change, 'gone' leaving (rank null) included.
	rec, _, _ = D1Store{DB: db}.AppHistory(ctx, HistoryQuery{TrackID: 1, Days: 50, Limit: 10}, t0)
	json.Unmarshal(rec, &h)
	if len(h.Ranks) != 5 || fmt.Sprintf("%v %v", h.Ranks[1]["keyword"], h.Ranks[1]["rank"]) != "gone <nil>" {
		t.Fatalf("50 days of ranks: %s", rec)
	}
	// A short window and a limit cut the series.
	rec, _, _ = D1Store{DB: db}.AppHistory(ctx, HistoryQuery{TrackID: 1, Days: 2, Limit: 1}, t0)
	json.Unmarshal(rec, &h)
	if len(h.Ratings) != 1 || h.Ratings[0]["rating_count"] != 150.0 {
		t.Fatalf("window: %s", rec)
	}
	if _, ok, err := (D1Store{DB: db}).AppHistory(ctx, HistoryQuery{TrackID: 2, Days: 30, Limit: 10}, t0); ok || err != nil {
		t.Fatal("no such app")
	}
	// Untiered: no next refresh. Tiered: when its round reaches its slot,
	// or its retry when sooner.
	if h.Current["next_refresh_at"] != nil {
		t.Fatalf("untiered: %v", h.Current["next_refresh_at"])
	}
	drv.Exec(t, `UPDATE app_registry SET refresh_tier = 'warm', refresh_retry_at = NULL WHERE track_id = 1`)
	rec, _, _ = D1Store{DB: db}.AppHistory(ctx, HistoryQuery{TrackID: 1, Days: 2, Limit: 1}, t0)
	json.Unmarshal(rec, &h)
	if want := d1.Time(refresh.NextLook(refresh.TierWarm, refresh.Slot(1), t0)); h.Current["next_refresh_at"] != want || h.Current["refresh_tier"] != "warm" {
		t.Fatalf("tiered: %v, want %s", h.Current, want)
	}
	drv.Exec(t, `UPDATE app_registry SET refresh_retry_at = ? WHERE track_id = 1`, d1.Time(t0.Add(time.Minute)))
	rec, _, _ = D1Store{DB: db}.AppHistory(ctx, HistoryQuery{TrackID: 1, Days: 2, Limit: 1}, t0)
	json.Unmarshal(rec, &h)
	if h.Current["next_refresh_at"] != d1.Time(t0.Add(time.Minute)) || len(h.Ratings) != 1 {
		t.Fatalf("retry: %s", rec)
	}
}

func TestParseHistoryQuery(t *testing.T) {
	get := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	if q, f, _ := ParseHistoryQuery("7", get(nil)); f != "" || q.Days != DefaultHistoryDays || q.Limit != DefaultHistoryLimit || q.TrackID != 7 {
		t.Fatalf("defaults: %+v %s", q, f)
	}
	for _, c := range []struct {
		id    string
		q     map[string]string
		field string
	}{
		{"abc", nil, "id"}, {"0", nil, "id"}, {"7", map[string]string{"days": "0"}, "days"},
		{"7", map[string]string{"days": "731"}, "days"}, {"7", map[string]string{"limit": "x"}, "limit"},
		{"7", map[string]string{"limit": "1001"}, "limit"},
	} {
		if _, f, msg := ParseHistoryQuery(c.id, get(c.q)); f != c.field || msg == "" {
			t.Errorf("%s %v: field %q", c.id, c.q, f)
		}
	}
}

// TestObservedVersionKeepsItsOwnReleaseNotes: a search showing a new
// version records it; the history answers the current version with the
// notes it carried and older versions with none (a version row keeps no
// notes: migrations/0055); a chart sighting of a new version (no notes)
// leaves them unknown, never the old version's.
func TestObservedVersionKeepsItsOwnReleaseNotes(t *testing.T) {
	db, drv := d1test.New(t)
	ctx := context.Background()
	t0 := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	seen := func(v, notes string, at time.Time) {
		t.Helper()
		s := Seen{TrackID: 7, Name: "App", Lookup: true, RatingCount: 10, Version: v, ReleaseNotes: notes}
		if _, err := db.Exec(ctx, ObserveStmt([]Seen{s}, at)...); err != nil {
			t.Fatal(err)
		}
	}
	versions := func() string {
		t.Helper()
		raw, ok, err := D1Store{DB: db}.AppHistory(ctx, HistoryQuery{TrackID: 7, Days: 30, Limit: 10}, t0.Add(day))
		if err != nil || !ok {
			t.Fatalf("history: %v %v", ok, err)
		}
		var h struct {
			Versions []struct{ Version, Release_notes any }
		}
		json.Unmarshal(raw, &h)
		return fmt.Sprint(h.Versions)
	}
	seen("1.0", "First release.", t0)
	// A new version writes the app's row and its version rows (the first
	// change: the first version's row too), notes or not.
	before := drv.TotalChanges(t)
	seen("1.1", "Bug fixes.", t0.Add(time.Hour))
	if n := drv.TotalChanges(t) - before; n != 3 {
		t.Fatalf("a new version wrote %d rows, want 3", n)
	}
	if got := versions(); got != "[{1.1 Bug fixes.} {1.0 <nil>}]" {
		t.Fatalf("versions: %s", got)
	}
	seen("1.2", "", t0.Add(2*time.Hour))
	if got := versions(); got != "[{1.2 <nil>} {1.1 <nil>} {1.0 <nil>}]" {
		t.Fatalf("versions after a sighting without notes: %s", got)
	}
	if n := drv.Int(t, `SELECT count(*) FROM app_version_history WHERE track_id = 7 AND release_notes IS NOT NULL`); n != 0 {
		t.Fatalf("%d version rows keep notes", n)
	}
}

// TestSearchSightingOfATieredAppFollowsItsRefreshes: a re-search that
// finds a known app unchanged writes nothing; an app with a refresh tier
// (looked up by its sweep, its sighting kept by its refreshes) has its
// sighting moved only past refresh.SightingGranularity, an untiered one
// past SightingGranularity.
func TestSearchSightingOfATieredAppFollowsItsRefreshes(t *testing.T) {
	db, drv := d1test.New(t)
	ctx := context.Background()
	db.Exec(ctx, ObserveStmt([]Seen{search(1, 100, "1.0", 0), search(2, 100, "1.0", 0)}, t0)...)
	drv.Exec(t, `UPDATE app_registry SET refresh_tier = 'cold' WHERE track_id = 1`)
	written := func(at time.Time) int64 {
		before := drv.TotalChanges(t)
		db.Exec(ctx, ObserveStmt([]Seen{search(1, 100, "1.0", 0), search(2, 100, "1.0", 0)}, at)...)
		return drv.TotalChanges(t) - before
	}
	// Ten days on: the untiered app's sighting moves (past a week), the
	// tiered one's does not.
	if n := written(t0.Add(10 * day)); n != 1 {
		t.Fatalf("ten days on: %d rows, want the untiered app's 1", n)
	}
	if got := drv.Rows(t, `SELECT last_seen_at FROM app_registry WHERE track_id = 1`)[0]["last_seen_at"]; got != d1.Time(t0) {
		t.Fatalf("the tiered app's sighting moved: %v", got)
	}
	// Past the refresh's granularity: both move.
	if n := written(t0.Add(refresh.SightingGranularity + day)); n != 2 {
		t.Fatalf("past 45 days: %d rows, want 2", n)
	}
}
