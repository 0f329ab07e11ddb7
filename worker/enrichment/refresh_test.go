//go:build !js

package enrichment

import (
	"context"
	controller "storecrawl/durable/enrichment"
	"testing"
	"time"

	"storecrawl/worker/appstore"
	"storecrawl/worker/catalogue"
	"storecrawl/worker/d1"
	"storecrawl/worker/d1/d1test"
	"storecrawl/worker/refresh"
)

// TestUnchangedRefreshCostsNoPage: a due refresh whose lookup shows the
// version and rating count its page was fetched for needs no page; its
// record is confirmed and the next refresh scheduled from now. A changed
// version needs the page.
func TestUnchangedRefreshCostsNoPage(t *testing.T) {
	db, drv := d1test.New(t)
	ctx := context.Background()
	t0 := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	a := appstore.App{TrackID: 100000001, Name: "Budget Planner", Version: "3.2", RatingCount: 800, AverageRating: 4.4, Price: 0, Currency: "USD", DeveloperID: 1, DeveloperName: "Dev"}
	drv.Exec(t, `INSERT INTO app_registry (track_id, discovered_at) VALUES (?, ?)`, a.TrackID, d1.Time(t0.Add(-time.Hour)))
	if _, err := db.Exec(ctx, SaveStatements(Record{App: a, Page: appstore.StorePage{}, FetchedAt: t0})...); err != nil {
		t.Fatal(err)
	}
	// The catalogue sweep schedules it (a cold app: about a month).
	if r := catalogue.Sweep(ctx, catalogue.D1Store{DB: db}, t0); r.Error != "" || r.Scheduled != 1 {
		t.Fatalf("sweep: %+v", r)
	}
	st := D1Store{DB: db}
	if due, _ := st.DueRefreshes(ctx, 10, t0.Add(24*time.Hour)); len(due) != 0 {
		t.Fatalf("not due a day later: %+v", due)
	}
	later := t0.Add(40 * 24 * time.Hour)
	due, err := st.DueRefreshes(ctx, 10, later)
	if err != nil || len(due) != 1 || due[0].TrackID != a.TrackID || due[0].Page.Version != "3.2" || due[0].Page.RatingCount != 800 {
		t.Fatalf("due: %+v %v", due, err)
	}
	if due[0].NeedsPage(a) {
		t.Fatal("same version and rating count: no page")
	}
	looked := a
	looked.AverageRating = 4.5
	if _, err := db.Exec(ctx, UnchangedRefreshStatements(looked, later)...); err != nil {
		t.Fatal(err)
	}
	row := drv.Rows(t, `SELECT enriched_at, next_refresh_at, refresh_interval_s, average_rating FROM app_registry WHERE track_id = ?`, a.TrackID)[0]
	iv := time.Duration(row["refresh_interval_s"].(float64)) * time.Second
	if row["enriched_at"] != d1.Time(later) || row["next_refresh_at"] != d1.Time(later.Add(iv)) || row["average_rating"] != 4.5 {
		t.Fatalf("after an unchanged refresh: %v", row)
	}
	if due, _ := st.DueRefreshes(ctx, 10, later.Add(time.Hour)); len(due) != 0 {
		t.Fatalf("a refreshed app is not due again at once: %+v", due)
	}
	changed := a
	changed.Version = "3.3"
	if !(DueRefresh{Page: due0(t, drv, a.TrackID)}).NeedsPage(changed) {
		t.Fatal("a new version needs the page")
	}
	if r, d := SplitTick(10, 100, 100, 0.3); r != 3 || d != 7 {
		t.Fatalf("split: %d %d", r, d)
	}
}

func due0(t *testing.T, drv *d1test.Driver, id int64) (fp refresh.Fingerprint) {
	row := drv.Rows(t, `SELECT page_version, page_rating_count FROM app_registry WHERE track_id = ?`, id)[0]
	fp.Version, fp.RatingCount = row["page_version"].(string), int64(row["page_rating_count"].(float64))
	return fp
}

// enrichedDue inserts an enriched app whose refresh is due at due, its
// page fetched for version and count.
func enrichedDue(t *testing.T, drv *d1test.Driver, id int64, version string, count int64, enrichedAt, due time.Time) {
	t.Helper()
	drv.Exec(t, `INSERT INTO app_registry (track_id, name, enrichment_source, enriched_at, page_status, version, rating_count, average_rating, refresh_interval_s, discovered_at)
VALUES (?, 'old name', ?, ?, 'parsed', ?, ?, 4.0, 86400, ?)`, id, SourceEnriched, d1.Time(enrichedAt), version, count, d1.Time(enrichedAt))
	drv.Exec(t, `UPDATE app_registry SET next_refresh_at = ?, page_version = ?, page_rating_count = ? WHERE track_id = ?`, d1.Time(due), version, count, id)
}

// TestRunServesDueRefreshes runs ticks against the real schema with
// never-enriched apps and due refreshes waiting: the tick's slots are
// shared by REFRESH_SHARE; an unchanged app costs a share of a lookup and
// no page; a changed one gets its page and a new record (its history and
// next refresh follow); an app the lookup no longer knows is postponed,
// never marked failed or missing; queued apps go first.
func TestRunServesDueRefreshes(t *testing.T) {
	var inflight, peak int
	srv := fixtureUpstream(t, &inflight, &peak)
	defer srv.Close()
	db, drv := d1test.New(t)
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	monthAgo := now.Add(-30 * 24 * time.Hour)
	const fixtureVersion, fixtureCount = "3.258.2", 51392 // the lookup capture's
	for _, id := range []int64{10, 11, 12} {
		drv.Exec(t, `INSERT INTO app_registry (track_id) VALUES (?)`, id)
	}
	enrichedDue(t, drv, 20, fixtureVersion, fixtureCount, monthAgo, now.Add(-3*time.Hour)) // unchanged
	enrichedDue(t, drv, 21, "3.0", 50000, monthAgo, now.Add(-2*time.Hour))                 // a new version, 1,392 new ratings
	enrichedDue(t, drv, 2, "1.0", 10, monthAgo, now.Add(-time.Hour))                       // gone from the store
	enrichedDue(t, drv, 30, "1.0", 10, monthAgo, now.Add(time.Hour))                       // not due yet
	st := D1Store{DB: db}
	r, _, _, _ := newRunner(t, srv, nil)
	r.Store, r.Refreshes, r.RefreshShare, r.Now = st, st, 0.5, func() time.Time { return now }
	r.HTML = R2HTML{Bucket: bucketFunc(func(string, []byte, string, map[string]string) error { return nil })}

	// Half of 4 slots: two refreshes (the most overdue), two queued apps.
	out := r.Run(context.Background(), controller.RunPlan{BatchSize: 4, ChunkItems: 4})
	if out.Error != "" || out.Picked != 4 {
		t.Fatalf("run: %+v", out)
	}
	got := map[int64]controller.ItemResult{}
	for _, res := range out.Results {
		got[res.TrackID] = res
	}
	if _, ok := got[10]; !ok || got[12].TrackID != 0 || !got[20].Refresh || !got[21].Refresh || got[2].TrackID != 0 {
		t.Fatalf("first tick served %v", got)
	}
	if !got[20].Unchanged || got[20].Class != controller.ClassOK || got[20].Page != "" {
		t.Fatalf("unchanged refresh: %+v", got[20])
	}
	if got[21].Unchanged || got[21].Class != controller.ClassOK || got[21].Page != controller.PageParsed {
		t.Fatalf("changed refresh: %+v", got[21])
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
	if lookups != 1 || len(pages) != 3 { // one batch; pages for 10, 11 and 21, none for 20
		t.Fatalf("%d lookups, pages for items %v", lookups, pages)
	}
	// The unchanged app: confirmed now, due again a day on, its name as it was.
	row := drv.Rows(t, `SELECT name, enriched_at, next_refresh_at, rating_count, average_rating FROM app_registry WHERE track_id = 20`)[0]
	if row["name"] != "old name" || row["enriched_at"] != d1.Time(now) || row["next_refresh_at"] != d1.Time(now.Add(24*time.Hour)) || row["average_rating"] != float64(3) {
		t.Fatalf("unchanged refresh row: %v", row)
	}
	// The changed app: a new record, the new count in its history.
	row = drv.Rows(t, `SELECT name, enriched_at, next_refresh_at, rating_count, page_rating_count FROM app_registry WHERE track_id = 21`)[0]
	if row["name"] == "old name" || row["rating_count"] != float64(fixtureCount) || row["page_rating_count"] != float64(fixtureCount) || row["next_refresh_at"] != d1.Time(now.Add(24*time.Hour)) {
		t.Fatalf("changed refresh row: %v", row)
	}
	if n := drv.Int(t, `SELECT COUNT(*) FROM app_snapshots WHERE track_id = 21 AND rating_count = ? AND taken_at = ?`, fixtureCount, d1.Time(now)); n != 1 {
		t.Fatalf("history of the changed app: %d rows", n)
	}
	// Its version change, with the release notes the lookup carried.
	if n := drv.Int(t, `SELECT COUNT(*) FROM app_version_history WHERE track_id = 21 AND version = ? AND seen_at = ? AND release_notes LIKE 'We update the app as often%'`, fixtureVersion, d1.Time(now)); n != 1 {
		t.Fatalf("version history of the changed app: %v", drv.Rows(t, `SELECT * FROM app_version_history WHERE track_id = 21`))
	}

	// The next tick: app 2 (due) and app 12 (queued) remain; the queue's
	// last app takes the slot the refreshes leave.
	out = r.Run(context.Background(), controller.RunPlan{BatchSize: 4, ChunkItems: 4})
	got = map[int64]controller.ItemResult{}
	for _, res := range out.Results {
		got[res.TrackID] = res
	}
	if len(got) != 2 || got[12].Class != controller.ClassOK || !got[2].Refresh || got[2].Class != controller.ClassNotFound {
		t.Fatalf("second tick: %v", out.Results)
	}
	row = drv.Rows(t, `SELECT enrichment_source, enriched_at, next_refresh_at FROM app_registry WHERE track_id = 2`)[0]
	if row["enrichment_source"] != SourceEnriched || row["enriched_at"] != d1.Time(monthAgo) || row["next_refresh_at"] != d1.Time(now.Add(refresh.RetryInterval)) {
		t.Fatalf("a refresh the lookup does not find is postponed, the record kept: %v", row)
	}
	// Nothing due, nothing queued: an empty tick; the app due in an hour waits.
	if out = r.Run(context.Background(), controller.RunPlan{BatchSize: 4, ChunkItems: 4}); out.Picked != 0 {
		t.Fatalf("third tick: %+v", out.Results)
	}
}

// TestRefreshesWaitWhilePagesOrLookupsArePaused: during parser drift or
// while the API host is held, the tick is the queue's alone.
func TestRefreshesWaitWhilePagesOrLookupsArePaused(t *testing.T) {
	db, drv := d1test.New(t)
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	enrichedDue(t, drv, 20, "1.0", 10, now.Add(-48*time.Hour), now.Add(-time.Hour))
	st := D1Store{DB: db}
	r := &Runner{Store: st, Refreshes: st, RefreshShare: 1, Now: func() time.Time { return now }}
	for _, plan := range []controller.RunPlan{{BatchSize: 4, SkipPages: true}, {BatchSize: 4, NoLookups: true}} {
		items, err := st.PickQueued(context.Background(), plan.BatchSize, false, now)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.withRefreshes(context.Background(), items, plan, now); len(got) != 0 {
			t.Fatalf("plan %+v served %v", plan, got)
		}
	}
	items := r.withRefreshes(context.Background(), nil, controller.RunPlan{BatchSize: 4}, now)
	if len(items) != 1 || items[0].Refresh == nil || items[0].TrackID != 20 {
		t.Fatalf("with pages and lookups running: %v", items)
	}
}
