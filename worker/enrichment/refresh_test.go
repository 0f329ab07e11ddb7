//go:build !js

package enrichment

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"storecrawl/durable/controller"
	"storecrawl/worker/appstore"
	"storecrawl/worker/catalogue"
	"storecrawl/worker/d1"
	"storecrawl/worker/d1/d1test"
	"storecrawl/worker/refresh"
)

// coldRoundEnd is an hour before a cold round ends: a cold cursor at the
// round's start has nearly every slot due.
var coldRoundEnd = time.Unix(693*int64(refresh.ColdInterval/time.Second)-3600, 0).UTC()

// tiered inserts an enriched app of tier, its page fetched for version
// and count.
func tiered(t *testing.T, drv *d1test.Driver, id int64, version string, count int64, enrichedAt time.Time, tier string) {
	t.Helper()
	drv.Exec(t, `INSERT INTO app_registry (track_id, name, enrichment_source, enriched_at, page_status, version, rating_count, average_rating,
  price, currency, discovered_at, last_seen_at, refresh_tier)
VALUES (?, 'old name', ?, ?, 'parsed', ?, ?, 4.0, 0, 'USD', ?, ?, ?)`, id, SourceEnriched, d1.Time(enrichedAt), version, count, d1.Time(enrichedAt), d1.Time(enrichedAt), tier)
	drv.Exec(t, `UPDATE app_registry SET page_version = ?, page_rating_count = ? WHERE track_id = ?`, version, count, id)
}

func setCursor(t *testing.T, drv *d1test.Driver, tier string, c refresh.Cursor) {
	t.Helper()
	b, _ := json.Marshal(c)
	drv.Exec(t, `INSERT INTO sweep_cursors (name, cursor) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET cursor = excluded.cursor`, refreshCursorName(tier), string(b))
}

func cursorOf(t *testing.T, drv *d1test.Driver, tier string) (c refresh.Cursor) {
	t.Helper()
	rows := drv.Rows(t, `SELECT CAST(cursor AS TEXT) AS c FROM sweep_cursors WHERE name = ?`, refreshCursorName(tier))
	if len(rows) == 0 {
		return c
	}
	if err := json.Unmarshal([]byte(rows[0]["c"].(string)), &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// warmBudgetPlanner is a D1 with one enriched app of the warm tier, its
// page fetched at t0 for the app's version and rating count.
func warmBudgetPlanner(t *testing.T) (*d1.DB, *d1test.Driver, time.Time, appstore.App) {
	db, drv := d1test.New(t)
	t0 := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	a := appstore.App{TrackID: 100000001, Name: "Budget Planner", Version: "3.2", RatingCount: 800, AverageRating: 4.0, Price: 0, Currency: "USD"}
	tiered(t, drv, a.TrackID, a.Version, a.RatingCount, t0, refresh.TierWarm)
	return db, drv, t0, a
}

// TestUnchangedRefreshWritesNoRow: a refresh whose lookup shows the app as
// stored writes nothing (0 rows, no index entry); a moved average rating
// writes the row and its history; a sighting older than the granularity
// writes the row alone. Before the tier sweeps the same refresh wrote 2
// rows (the row with enriched_at, and the schedule trigger's rewrite).
func TestUnchangedRefreshWritesNoRow(t *testing.T) {
	db, drv, t0, a := warmBudgetPlanner(t)
	ctx := context.Background()
	st := D1Store{DB: db}
	later := t0.Add(12 * time.Hour)
	before := drv.TotalChanges(t)
	if err := st.SaveUnchangedRefresh(ctx, a, later); err != nil {
		t.Fatal(err)
	}
	if n := drv.TotalChanges(t) - before; n != 0 {
		t.Fatalf("an unchanged refresh wrote %d rows, want 0", n)
	}
	row := drv.Rows(t, `SELECT enriched_at, last_seen_at FROM app_registry WHERE track_id = ?`, a.TrackID)[0]
	if row["enriched_at"] != d1.Time(t0) || row["last_seen_at"] != d1.Time(t0) {
		t.Fatalf("untouched: %v", row)
	}
	// The average rating moved: the row (with the observation time) and
	// its rating history, 3 rows: the app has no rating row yet (its first
	// values are its row's, migrations/0028), so its first change writes
	// them before the new value.
	moved := a
	moved.AverageRating = 4.5
	before = drv.TotalChanges(t)
	st.SaveUnchangedRefresh(ctx, moved, later)
	if n := drv.TotalChanges(t) - before; n != 3 {
		t.Fatalf("a moved rating wrote %d rows, want 3 (the app, its first values, its snapshot)", n)
	}
	if n := drv.Int(t, `SELECT COUNT(*) FROM app_snapshots WHERE track_id = ? AND taken_at = ? AND average_rating = 4.5`, a.TrackID, catalogue.Millis(later)); n != 1 {
		t.Fatal("the moved rating is in the history at the refresh's time")
	}
	// Long unseen otherwise: the sighting alone, 1 row, so the stale task
	// never marks a refreshed app.
	much := later.Add(refresh.SightingGranularity + time.Hour)
	before = drv.TotalChanges(t)
	st.SaveUnchangedRefresh(ctx, moved, much)
	if n := drv.TotalChanges(t) - before; n != 1 {
		t.Fatalf("an old sighting wrote %d rows, want 1", n)
	}
	if got := drv.Rows(t, `SELECT last_seen_at FROM app_registry WHERE track_id = ?`, a.TrackID)[0]["last_seen_at"]; got != d1.Time(much) {
		t.Fatalf("last_seen_at %v", got)
	}
	if refresh.SightingGranularity+refresh.ColdInterval >= catalogue.DefaultStaleAfter {
		t.Fatal("a cold app looked at every round must never go stale")
	}
	// A changed version needs the page.
	changed := a
	changed.Version = "3.3"
	if (DueRefresh{Page: refresh.Fingerprint{Version: "3.2", RatingCount: 800}}).NeedsPage(a) ||
		!(DueRefresh{Page: refresh.Fingerprint{Version: "3.2", RatingCount: 800}}).NeedsPage(changed) {
		t.Fatal("only a change needs the page")
	}
	if r, d := SplitTick(10, 100, 100, 0.3, 0); r != 3 || d != 7 {
		t.Fatalf("split: %d %d", r, d)
	}
}

// TestSweepPicksEachAppOncePerIntervalOnD1 runs the pick and the cursor
// writes against the real schema over a simulated day on a virtual clock
// (a tick every 5 minutes, batches of 40): each hot app is picked 4 times,
// each warm app twice, each cold app whose slot the day's thirtieth of the
// cold round passes once, the others not at all. Every app is unchanged:
// no app row is written, only the cursors, one row per tier per batch.
func TestSweepPicksEachAppOncePerIntervalOnD1(t *testing.T) {
	db, drv := d1test.New(t)
	ctx := context.Background()
	st := D1Store{DB: db}
	start := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC) // a hot and warm round boundary
	tiers := map[int64]string{}
	const perTier = 150
	for i := int64(0); i < 3*perTier; i++ {
		id := 100000001 + i*7
		tier := refresh.Tiers[i%3]
		tiers[id] = tier
		tiered(t, drv, id, "1.0", 10, start.Add(-time.Hour), tier)
	}
	// The cursors as a deploy finds them: none, so each starts at its target.
	picked := map[int64]int{}
	before := drv.TotalChanges(t)
	batches, cursorRows := 0, 0
	const n = 40
	for now := start; !now.After(start.Add(24 * time.Hour)); now = now.Add(5 * time.Minute) {
		for {
			pick, err := st.DueRefreshes(ctx, n, now)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range pick.Items {
				picked[d.TrackID]++
				if err := st.SaveUnchangedRefresh(ctx, appstore.App{TrackID: d.TrackID, Version: "1.0", RatingCount: 10, AverageRating: 4.0, Currency: "USD"}, now); err != nil {
					t.Fatal(err)
				}
			}
			fates := make([]refreshFate, len(pick.Items))
			cursors, retries := RefreshAdvance(pick, pick.Items, fates, now)
			if len(retries) > 0 {
				t.Fatalf("nothing failed, yet retries: %v", retries)
			}
			if err := st.AdvanceRefreshes(ctx, cursors, nil, now); err != nil {
				t.Fatal(err)
			}
			batches++
			cursorRows += len(cursors)
			full := false
			for _, tier := range refresh.Tiers {
				full = full || pick.Read[tier] == n
			}
			if !full {
				break
			}
		}
	}
	if w := drv.TotalChanges(t) - before; w != int64(cursorRows) {
		t.Fatalf("%d rows written for %d cursor moves: refreshes wrote app rows", w, cursorRows)
	}
	_, coldFrom := refresh.RoundAt(refresh.TierCold, start)
	_, coldTo := refresh.RoundAt(refresh.TierCold, start.Add(24*time.Hour))
	looked := map[string]int{}
	for id, tier := range tiers {
		want := map[string]int{refresh.TierHot: 4, refresh.TierWarm: 2}[tier]
		if s := refresh.Slot(id); tier == refresh.TierCold && s >= coldFrom && s < coldTo {
			want = 1
		}
		if picked[id] != want {
			t.Fatalf("%s app %d (slot %d) picked %d times in a day, want %d", tier, id, refresh.Slot(id), picked[id], want)
		}
		looked[tier] += picked[id]
	}
	t.Logf("a day: %v looks in %d batches, %d cursor rows, 0 app rows", looked, batches, cursorRows)
}

// TestRunServesDueRefreshes runs a tick against the real schema with
// never-enriched apps and a cold round due: the tick's slots are shared
// by REFRESH_SHARE; an unchanged app costs a share of a lookup and no
// page; a changed one gets its page and a new record (its history
// follows); an app the lookup no longer knows goes on the retry list,
// never marked failed or missing; the cold cursor moves past them all.
func TestRunServesDueRefreshes(t *testing.T) {
	var inflight, peak int
	srv := fixtureUpstream(t, &inflight, &peak)
	defer srv.Close()
	db, drv := d1test.New(t)
	now := coldRoundEnd
	monthAgo := now.Add(-30 * 24 * time.Hour)
	const fixtureVersion, fixtureCount = "3.258.2", 51392 // the lookup capture's
	for _, id := range []int64{10, 11, 12} {
		drv.Exec(t, `INSERT INTO app_registry (track_id) VALUES (?)`, id)
	}
	tiered(t, drv, 20, fixtureVersion, fixtureCount, monthAgo, refresh.TierCold) // unchanged
	tiered(t, drv, 21, "3.0", 50000, monthAgo, refresh.TierCold)                 // a new version, 1,392 new ratings
	tiered(t, drv, 2, "1.0", 10, monthAgo, refresh.TierCold)                     // gone from the store
	tiered(t, drv, 30, "1.0", 10, monthAgo, refresh.TierWarm)                    // its round is on time: not due
	r0, _ := refresh.RoundAt(refresh.TierCold, now)
	setCursor(t, drv, refresh.TierCold, refresh.Cursor{Round: r0})
	st := D1Store{DB: db}
	r, _, _, _ := newRunner(t, srv, nil)
	r.Store, r.Refreshes, r.RefreshShare, r.Now = st, st, 0.5, func() time.Time { return now }
	r.HTML = R2HTML{Bucket: bucketFunc(func(string, []byte, string, map[string]string) error { return nil })}

	// Half of 6 slots: the three cold refreshes, three queued apps.
	out := r.Run(context.Background(), controller.RunPlan{BatchSize: 6, ChunkItems: 6})
	if out.Error != "" || out.Picked != 6 {
		t.Fatalf("run: %+v", out)
	}
	got := map[int64]controller.ItemResult{}
	for _, res := range out.Results {
		got[res.TrackID] = res
	}
	if got[10].TrackID == 0 || got[12].TrackID == 0 || !got[20].Refresh || !got[21].Refresh || !got[2].Refresh || got[30].TrackID != 0 {
		t.Fatalf("the tick served %v", got)
	}
	if !got[20].Unchanged || got[20].Class != controller.ClassOK || got[20].Page != "" {
		t.Fatalf("unchanged refresh: %+v", got[20])
	}
	if got[21].Unchanged || got[21].Class != controller.ClassOK || got[21].Page != controller.PageParsed {
		t.Fatalf("changed refresh: %+v", got[21])
	}
	if got[2].Class != controller.ClassNotFound {
		t.Fatalf("gone: %+v", got[2])
	}
	pages := map[int]bool{}
	lookups := 0
	for _, rq := range out.Requests {
		if rq.Kind == controller.RequestLookup {
			lookups++
		} else {
			pages[rq.Item] = true
		}
	}
	if lookups != 1 || len(pages) != 4 { // one batch; pages for 10, 11, 12 and 21, none for 20 or 2
		t.Fatalf("%d lookups, pages for items %v", lookups, pages)
	}
	// The unchanged app: its record as it was; only the average rating the
	// lookup moved (4.0 to the capture's 3) is written.
	row := drv.Rows(t, `SELECT name, enriched_at, average_rating FROM app_registry WHERE track_id = 20`)[0]
	if row["name"] != "old name" || row["enriched_at"] != d1.Time(monthAgo) || row["average_rating"] != float64(3) {
		t.Fatalf("unchanged refresh row: %v", row)
	}
	// The changed app: a new record, the new count and version in its history.
	row = drv.Rows(t, `SELECT name, enriched_at, rating_count, page_rating_count FROM app_registry WHERE track_id = 21`)[0]
	if row["name"] == "old name" || row["enriched_at"] != d1.Time(now) || row["rating_count"] != float64(fixtureCount) || row["page_rating_count"] != float64(fixtureCount) {
		t.Fatalf("changed refresh row: %v", row)
	}
	if n := drv.Int(t, `SELECT COUNT(*) FROM app_snapshots WHERE track_id = 21 AND rating_count = ? AND taken_at = ?`, fixtureCount, catalogue.Millis(now)); n != 1 {
		t.Fatalf("history of the changed app: %d rows", n)
	}
	// Its notes are the app's row's (a version row keeps none).
	if n := drv.Int(t, `SELECT COUNT(*) FROM app_version_history h JOIN app_registry r USING (track_id) WHERE track_id = 21 AND h.version = ?1
  AND h.seen_at = ?2 AND h.release_notes IS NULL AND r.version = ?1 AND r.release_notes LIKE 'We update the app as often%'`, fixtureVersion, catalogue.Millis(now)); n != 1 {
		t.Fatalf("version history of the changed app: %v", drv.Rows(t, `SELECT * FROM app_version_history WHERE track_id = 21`))
	}
	// The gone app: on the retry list, its record kept.
	row = drv.Rows(t, `SELECT enrichment_source, enriched_at, refresh_retry_at FROM app_registry WHERE track_id = 2`)[0]
	if row["enrichment_source"] != SourceEnriched || row["enriched_at"] != d1.Time(monthAgo) || row["refresh_retry_at"] != d1.Time(now.Add(refresh.RetryInterval)) {
		t.Fatalf("a refresh the lookup does not find is retried later, the record kept: %v", row)
	}
	// The cold cursor read its window to the end: at the round's target.
	_, target := refresh.RoundAt(refresh.TierCold, now)
	if c := cursorOf(t, drv, refresh.TierCold); c.Round != r0 || c.Slot != target {
		t.Fatalf("cold cursor %+v, want round %d slot %d", c, r0, target)
	}
	// The pages' similar apps were queued by their saves (the shelf's
	// discovery, not this test's subject): dequeued here.
	drv.Exec(t, `UPDATE app_registry SET enriched_at = ?, enrichment_source = 'not_found' WHERE enriched_at IS NULL`, d1.Time(now))
	// Nothing due, nothing queued: an empty tick; the retry waits its time.
	if out = r.Run(context.Background(), controller.RunPlan{BatchSize: 6, ChunkItems: 6}); out.Picked != 0 {
		t.Fatalf("second tick: %+v", out.Results)
	}
	now = now.Add(refresh.RetryInterval)
	if out = r.Run(context.Background(), controller.RunPlan{BatchSize: 6, ChunkItems: 6}); out.Picked != 1 || out.Results[0].TrackID != 2 {
		t.Fatalf("the retry: %+v", out.Results)
	}
}

// TestRefreshOutageSkipsNoApp: while the lookups fail (503) the cold
// cursor stays and nothing is written; when they answer again every due
// app is looked at and the cursor moves past them.
func TestRefreshOutageSkipsNoApp(t *testing.T) {
	var inflight, peak int
	srv := fixtureUpstream(t, &inflight, &peak)
	defer srv.Close()
	db, drv := d1test.New(t)
	now := coldRoundEnd
	ids := []int64{20, 21, 22, 23}
	for _, id := range ids {
		tiered(t, drv, id, "3.258.2", 51392, now.Add(-30*24*time.Hour), refresh.TierCold)
		drv.Exec(t, `UPDATE app_registry SET average_rating = 3 WHERE track_id = ?`, id) // the capture's
	}
	r0, _ := refresh.RoundAt(refresh.TierCold, now)
	setCursor(t, drv, refresh.TierCold, refresh.Cursor{Round: r0})
	for _, tier := range []string{refresh.TierHot, refresh.TierWarm} { // on time, nothing due
		setCursor(t, drv, tier, refresh.StartCursor(tier, now))
	}
	st := D1Store{DB: db}
	r, _, _, _ := newRunner(t, srv, nil)
	r.Store, r.Refreshes, r.RefreshShare, r.Now = st, st, 1, func() time.Time { return now }
	srv.mu.Lock()
	srv.lookup = func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(503) }
	srv.mu.Unlock()
	before := drv.TotalChanges(t)
	for i := 0; i < 3; i++ {
		out := r.Run(context.Background(), controller.RunPlan{BatchSize: 2, ChunkItems: 2})
		if out.Picked != 2 || out.Results[0].Class != controller.ClassServerError {
			t.Fatalf("outage tick: %+v", out)
		}
		now = now.Add(time.Minute)
	}
	if n := drv.TotalChanges(t) - before; n != 0 {
		t.Fatalf("an outage wrote %d rows", n)
	}
	if c := cursorOf(t, drv, refresh.TierCold); c.Round != r0 || c.Slot != 0 || c.TrackID != 0 {
		t.Fatalf("the cursor moved in an outage: %+v", c)
	}
	srv.mu.Lock()
	srv.lookup = nil
	srv.mu.Unlock()
	seen := map[int64]int{}
	for i := 0; i < 3; i++ {
		out := r.Run(context.Background(), controller.RunPlan{BatchSize: 2, ChunkItems: 2})
		for _, res := range out.Results {
			if res.Class != controller.ClassOK || !res.Unchanged {
				t.Fatalf("after the outage: %+v", res)
			}
			seen[res.TrackID]++
		}
	}
	for _, id := range ids {
		if seen[id] != 1 {
			t.Fatalf("after the outage each app once: %v", seen)
		}
	}
	// Batches of 2: two cursor rows, then nothing (the window's end is in
	// the same round: not written); no app row.
	if n := drv.TotalChanges(t) - before; n != 2 {
		t.Fatalf("%d rows for two batches of unchanged apps, want 2 (the cursor)", n)
	}
}

// TestRefreshAdvance: the cursor stops before the first app not looked at
// at the end of a tier's batch; one alone in failing, with apps after it
// done, goes on the retry list instead of holding the tier back.
func TestRefreshAdvance(t *testing.T) {
	now := coldRoundEnd
	c0 := refresh.StartCursor(refresh.TierWarm, now.Add(-time.Hour))
	w := refresh.Due(refresh.TierWarm, c0, now)
	var taken []DueRefresh
	for i := int64(1); i <= 5; i++ {
		taken = append(taken, DueRefresh{TrackID: i, Tier: refresh.TierWarm, Slot: w.From.Slot + i})
	}
	pick := RefreshPick{Windows: map[string]refresh.Window{refresh.TierWarm: w}, Read: map[string]int{refresh.TierWarm: 5}, Limit: 5}
	cursors, retries := RefreshAdvance(pick, taken, []refreshFate{fateDone, fateOutage, fateDone, fateLeft, fateOutage}, now)
	if c := cursors[refresh.TierWarm]; c.Slot != taken[2].Slot || c.TrackID != 3 || c.Round != w.Round {
		t.Fatalf("cursor %+v, want at app 3", c)
	}
	if len(retries) != 1 || retries[0].TrackID != 2 || retries[0].At != d1.Time(now.Add(RefreshOutageDelay)) {
		t.Fatalf("retries %+v", retries)
	}
	// Nothing looked at: nothing written.
	if cursors, retries := RefreshAdvance(pick, taken, []refreshFate{fateOutage, fateOutage, fateLeft, fateLeft, fateLeft}, now); len(cursors)+len(retries) != 0 {
		t.Fatalf("an outage moved %v %v", cursors, retries)
	}
	// All done, the window read to its end: the cursor at the target.
	pick.Limit = 6
	cursors, _ = RefreshAdvance(pick, taken, make([]refreshFate, 5), now)
	if c := cursors[refresh.TierWarm]; c.Slot != w.UpTo || c.TrackID != 0 {
		t.Fatalf("exhausted: %+v", c)
	}
}

// TestRefreshesWaitWhilePagesOrLookupsArePaused: during parser drift or
// while the API host is held, the tick is the queue's alone.
func TestRefreshesWaitWhilePagesOrLookupsArePaused(t *testing.T) {
	db, drv := d1test.New(t)
	now := coldRoundEnd
	tiered(t, drv, 20, "1.0", 10, now.Add(-48*time.Hour), refresh.TierCold)
	drv.Exec(t, `UPDATE app_registry SET refresh_retry_at = ? WHERE track_id = 20`, d1.Time(now.Add(-time.Hour)))
	st := D1Store{DB: db}
	r := &Runner{Store: st, Refreshes: st, RefreshShare: 1, Now: func() time.Time { return now }}
	for _, plan := range []controller.RunPlan{{BatchSize: 4, SkipPages: true}, {BatchSize: 4, NoLookups: true}} {
		items, err := st.PickQueued(context.Background(), plan.BatchSize, false, now)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := r.withRefreshes(context.Background(), items, plan.Pick(), now); len(got) != 0 {
			t.Fatalf("plan %+v served %v", plan, got)
		}
	}
	items, _ := r.withRefreshes(context.Background(), nil, controller.RunPlan{BatchSize: 4}.Pick(), now)
	if len(items) != 1 || items[0].Refresh == nil || items[0].TrackID != 20 || items[0].Refresh.Tier != "" {
		t.Fatalf("with pages and lookups running, the retry list: %v", items)
	}
}

// TestPickWalksAppsSharingASlot: apps in one slot are walked by track id,
// one batch after another, none skipped or repeated.
func TestPickWalksAppsSharingASlot(t *testing.T) {
	db, drv := d1test.New(t)
	ctx := context.Background()
	now := coldRoundEnd
	var ids []int64
	for k := int64(0); k < 4; k++ {
		id := 100000001 + k*refresh.Slots // the same slot
		ids = append(ids, id)
		tiered(t, drv, id, "1.0", 10, now.Add(-time.Hour), refresh.TierCold)
	}
	if refresh.Slot(ids[0]) != refresh.Slot(ids[3]) {
		t.Fatal("not one slot")
	}
	r0, _ := refresh.RoundAt(refresh.TierCold, now)
	setCursor(t, drv, refresh.TierCold, refresh.Cursor{Round: r0})
	st := D1Store{DB: db}
	var got []int64
	for i := 0; i < 6; i++ {
		pick, err := st.DueRefreshes(ctx, 1, now)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range pick.Items {
			got = append(got, d.TrackID)
		}
		cursors, _ := RefreshAdvance(pick, pick.Items, make([]refreshFate, len(pick.Items)), now)
		if err := st.AdvanceRefreshes(ctx, cursors, nil, now); err != nil {
			t.Fatal(err)
		}
	}
	if len(got) != 4 || got[0] != ids[0] || got[1] != ids[1] || got[2] != ids[2] || got[3] != ids[3] {
		t.Fatalf("walked %v, want %v", got, ids)
	}
}

// TestDeferredRefreshRecordsTheLookupAndKeepsThePageDue: a changed refresh
// whose page waits for the new apps (refresh.DeferPage) records what its
// lookup carries (the version and rating count move, with their
// histories) while the page's fingerprint stays, so the app is still
// owed its page; it goes on the retry list for refresh.PageDeferral and
// the pick finds it there, changed. Looked at again before then with
// nothing moved it writes no row; due again, one (its retry time). Its
// statement seeks the app by its key: no walk.
func TestDeferredRefreshRecordsTheLookupAndKeepsThePageDue(t *testing.T) {
	db, drv, t0, a := warmBudgetPlanner(t)
	ctx := context.Background()
	st := D1Store{DB: db}
	looked := a
	looked.Version, looked.RatingCount, looked.AverageRating, looked.ReleaseNotes = "3.3", 850, 4.2, "Faster sync"
	looked.Name = "old name" // tiered's: a rename would also write its search entry
	at := t0.Add(12 * time.Hour)
	until := at.Add(refresh.PageDeferral)
	stmt := DeferredRefreshStatement(looked, at, until)
	w := drv.Measure(t, stmt.SQL, stmt.Args...)
	if w.Walked != 0 {
		t.Fatalf("the deferred refresh walked %d rows", w.Walked)
	}
	// The row, the first values of its ratings and version (the app had
	// no history rows: migrations/0028) and the new ones: 5 rows.
	if w.Changes != 5 {
		t.Fatalf("a deferred refresh wrote %d rows, want 5 (the app, its first and new ratings, its first and new version)", w.Changes)
	}
	row := drv.Rows(t, `SELECT version, rating_count, average_rating, release_notes, page_version, page_rating_count, refresh_retry_at, enriched_at
FROM app_registry WHERE track_id = ?`, a.TrackID)[0]
	if row["version"] != "3.3" || fmt.Sprint(row["rating_count"]) != "850" || row["average_rating"] != 4.2 || row["release_notes"] != "Faster sync" {
		t.Fatalf("the lookup is not recorded: %v", row)
	}
	if row["page_version"] != "3.2" || fmt.Sprint(row["page_rating_count"]) != "800" || row["enriched_at"] != d1.Time(t0) {
		t.Fatalf("the page's fingerprint moved: %v", row)
	}
	if row["refresh_retry_at"] != d1.Time(until) {
		t.Fatalf("retry at %v, want %v", row["refresh_retry_at"], d1.Time(until))
	}
	if n := drv.Int(t, `SELECT COUNT(*) FROM app_version_history WHERE track_id = ? AND version = '3.3' AND seen_at = ?`, a.TrackID, catalogue.Millis(at)); n != 1 {
		t.Fatal("the new version is in the history at the look's time")
	}
	// Looked at again before its retry time (its tier's round), nothing
	// moved: no row.
	before := drv.TotalChanges(t)
	if err := st.SaveDeferredRefresh(ctx, looked, at.Add(time.Hour), at.Add(time.Hour+refresh.PageDeferral)); err != nil {
		t.Fatal(err)
	}
	if n := drv.TotalChanges(t) - before; n != 0 {
		t.Fatalf("a deferred refresh already on the retry list wrote %d rows, want 0", n)
	}
	// Due on the retry list: picked, still owed its page.
	pick, err := st.DueRefreshes(ctx, 10, until)
	if err != nil {
		t.Fatal(err)
	}
	var got *DueRefresh
	for i := range pick.Items {
		if pick.Items[i].TrackID == a.TrackID && pick.Items[i].Tier == "" {
			got = &pick.Items[i]
		}
	}
	if got == nil || !got.NeedsPage(looked) {
		t.Fatalf("the deferred app is not due with its page owed: %+v", pick.Items)
	}
	// Deferred again there: its retry time moves, 1 row.
	before = drv.TotalChanges(t)
	st.SaveDeferredRefresh(ctx, looked, until, until.Add(refresh.PageDeferral))
	if n := drv.TotalChanges(t) - before; n != 1 {
		t.Fatalf("a deferred refresh due again wrote %d rows, want 1", n)
	}
	// Its page fetched at last: the record clears the retry list and the
	// page's fingerprint is the lookup's (the schedule trigger).
	drv.Exec(t, `UPDATE app_registry SET enriched_at = ? WHERE track_id = ?`, d1.Time(until.Add(time.Hour)), a.TrackID)
	row = drv.Rows(t, `SELECT page_version, page_rating_count, refresh_retry_at FROM app_registry WHERE track_id = ?`, a.TrackID)[0]
	if row["page_version"] != "3.3" || fmt.Sprint(row["page_rating_count"]) != "850" || row["refresh_retry_at"] != nil {
		t.Fatalf("after its page: %v", row)
	}
}
