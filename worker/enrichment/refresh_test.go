//go:build !js

package enrichment

import (
	"context"
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
