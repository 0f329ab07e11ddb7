//go:build !js

package enrichment

import (
	"context"
	"testing"
	"time"

	"storecrawl/worker/appstore"
	"storecrawl/worker/d1"
	"storecrawl/worker/d1/d1test"
	"storecrawl/worker/registry"
)

// TestPageSaveQueuesUnknownSimilarApps: a page's save queues the similar
// apps not known yet in its own batch (no request of their own), and
// counts them; known ones, queued or enriched, are not written.
func TestPageSaveQueuesUnknownSimilarApps(t *testing.T) {
	db, drv := d1test.New(t)
	s := D1Store{DB: db}
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	drv.Exec(t, `INSERT INTO app_registry (track_id) VALUES (500)`)                                                                               // queued
	drv.Exec(t, `INSERT INTO app_registry (track_id, enrichment_source, enriched_at, name) VALUES (501, 'itunes+store', ?, 'kept')`, d1.Time(at)) // enriched
	page := appstore.StorePage{SimilarAppIDs: []int64{500, 501, 600, 601, 9}}
	rec := Record{App: appstore.App{TrackID: 9, Name: "nine"}, Page: page, FetchedAt: at}
	n, err := s.SaveEnriched(context.Background(), rec)
	if err != nil || n != 2 {
		t.Fatalf("discovered %d (%v), want 2 (600, 601)", n, err)
	}
	rows := drv.Rows(t, `SELECT track_id, discovered_at, enriched_at FROM app_registry WHERE track_id IN (600, 601) ORDER BY track_id`)
	if len(rows) != 2 || rows[0]["discovered_at"] != d1.Time(at) || rows[0]["enriched_at"] != nil {
		t.Fatalf("queued similar apps: %v", rows)
	}
	if name := drv.Rows(t, `SELECT name FROM app_registry WHERE track_id = 501`)[0]["name"]; name != "kept" {
		t.Fatalf("a known similar app was written: %v", name)
	}

	// The discovery's own rows: each new app's insert and its counter row
	// (apps_known_add); nothing for a known one.
	for _, c := range []struct {
		ids       string
		new, rows int64
	}{{`[500,501,600,601]`, 0, 0}, {`[500,601,700]`, 1, 2}, {`[710,711,712,713,714]`, 5, 10}} {
		before := drv.TotalChanges(t)
		got, err := db.Exec(context.Background(), registry.Discovered(c.ids, d1.Time(at)))
		if written := drv.TotalChanges(t) - before; err != nil || got != c.new || written != c.rows {
			t.Fatalf("%s: %d new, %d rows written (%v); want %d new, %d rows", c.ids, got, written, err, c.new, c.rows)
		}
	}
	// A page naming itself and nothing else queues nothing.
	if stmts := SaveStatements(Record{App: appstore.App{TrackID: 9}, Page: appstore.StorePage{SimilarAppIDs: []int64{9}}}); len(stmts) != 1 {
		t.Fatalf("statements: %d", len(stmts))
	}
}

// TestSeededAppIsEnrichedFirst: an operator's seed (registry.SeedApps)
// puts an unknown app, and a known queued one, at the head of the pick
// (idx_app_registry_queue_value), ahead of apps with more ratings; the
// enrichment spends the priority.
func TestSeededAppIsEnrichedFirst(t *testing.T) {
	db, drv := d1test.New(t)
	s := D1Store{DB: db}
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for id := int64(1); id <= 5; id++ {
		drv.Exec(t, `INSERT INTO app_registry (track_id, rating_count) VALUES (?, ?)`, id, 1000*id)
	}
	drv.Exec(t, `INSERT INTO app_registry (track_id, enrichment_source, enriched_at) VALUES (7, 'itunes+store', ?)`, d1.Time(at))
	before := drv.TotalChanges(t)
	n, err := db.ExecAtomic(context.Background(), registry.SeedApps(`[99,2,7]`, 100, d1.Time(at))...)
	if err != nil || n != 1 {
		t.Fatalf("seed inserted %d (%v), want 1 (99)", n, err)
	}
	// 99's insert and counter row, 2 raised; 7 (enriched) untouched.
	if written := drv.TotalChanges(t) - before; written != 3 {
		t.Fatalf("seed wrote %d rows, want 3", written)
	}
	items, err := s.PickQueued(context.Background(), 2, false, at)
	if err != nil || len(items) != 2 || items[0].TrackID != 2 || items[1].TrackID != 99 {
		t.Fatalf("pick %+v (%v): the seeded apps first", items, err)
	}
	if p := drv.Int(t, `SELECT enrich_priority FROM app_registry WHERE track_id = 7`); p != 0 {
		t.Fatalf("an enriched app's priority moved: %d", p)
	}
	if _, err := s.SaveEnriched(context.Background(), Record{App: appstore.App{TrackID: 2, Name: "two"}, FetchedAt: at}); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkMissing(context.Background(), 99, at); err != nil {
		t.Fatal(err)
	}
	if n := drv.Int(t, `SELECT count(*) FROM app_registry WHERE enrich_priority <> 0`); n != 0 {
		t.Fatalf("%d apps kept their priority past their enrichment", n)
	}
	// Seeded again, an app already queued at that priority writes nothing.
	drv.Exec(t, `INSERT INTO app_registry (track_id, enrich_priority) VALUES (50, 100)`)
	before = drv.TotalChanges(t)
	if _, err := db.ExecAtomic(context.Background(), registry.SeedApps(`[50]`, 100, d1.Time(at))...); err != nil || drv.TotalChanges(t) != before {
		t.Fatalf("a repeated seed wrote %d rows (%v)", drv.TotalChanges(t)-before, err)
	}
}
