//go:build !js

package enrichment

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"storecrawl/worker/appstore"
	"storecrawl/worker/d1"
	"storecrawl/worker/d1/d1test"
	"storecrawl/worker/pagebatch"
)

// memPages is an R2 bucket in memory.
type memPages map[string][]byte

func (m memPages) GetHTML(_ context.Context, key string) ([]byte, bool, error) {
	if key == "r2-down" {
		return nil, false, errors.New("r2 unreachable")
	}
	b, ok := m[key]
	return b, ok, nil
}

func TestReparseHealsRecordsFromStoredPages(t *testing.T) {
	db, drv := d1test.New(t)
	at := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	good := fixture(t, "legacy_netflix_us_2023.html")
	broken := good[:bytes.Index(good, []byte(`<script name="schema:software-application"`))]
	pages := memPages{"p/1": good, "p/2": good, "p/3": broken}
	app := mustLookup(t)
	s := D1Store{DB: db}
	// 1: lookup-only, its page stored but unparsed by an older parser.
	// 2: complete, but lacking sections. 3: still unparseable. 4: no page
	// stored. 6: its key is gone from R2.
	for id, key := range map[int64]string{1: "p/1", 2: "p/2", 3: "p/3", 6: "p/6"} {
		a := app
		a.TrackID = id
		if err := s.SaveLookup(context.Background(), a, key, PageUnparsedStatus, at); err != nil {
			t.Fatal(err)
		}
	}
	drv.Exec(t, `UPDATE app_registry SET enrichment_source = ?, enriched_at = ?, page_status = ?, page_missing = '["similar_apps"]' WHERE track_id = 2`, SourceEnriched, d1.Time(at), PageParsedStatus)
	drv.Exec(t, `INSERT INTO app_registry (track_id) VALUES (4)`)

	ev := &fakeEvents{}
	r := Reparser{DB: db, Pages: pages, Events: ev, Now: func() time.Time { return at.Add(time.Hour) }}
	if job, _ := r.Latest(context.Background()); job != nil {
		t.Fatalf("no job yet: %+v", job)
	}
	job, err := r.Start(context.Background(), ReparseFailed)
	if err != nil || job.Scope != ReparseFailed || job.FinishedAt != nil {
		t.Fatalf("start: %+v %v", job, err)
	}
	summary, err := r.ReparseRun(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	done, _ := r.Latest(context.Background())
	// "failed" skips app 2 (parsed) and app 4 (no page).
	if done.FinishedAt == nil || done.Pages != 2 || done.Parsed != 1 || done.Unparsed != 1 || done.Missing != 1 || done.Completed != 1 {
		t.Fatalf("job %+v (%s)", done, summary)
	}
	row := drv.Rows(t, `SELECT enrichment_source, enriched_at, page_status, subtitle, rating_histogram, page_format FROM app_registry WHERE track_id = 1`)[0]
	if row["enrichment_source"] != SourceEnriched || row["enriched_at"] == nil || row["page_status"] != PageParsedStatus ||
		row["subtitle"] != "Start Watching" || row["rating_histogram"] != "[28780,5653,3083,2570,11306]" || row["page_format"] != "legacy" {
		t.Fatalf("healed record %v", row)
	}
	if n := drv.Int(t, `SELECT json_array_length(similar_app_ids) FROM app_registry WHERE track_id = 1`); n != 6 {
		t.Fatalf("similar apps %d", n)
	}
	if len(ev.ids) != 1 || ev.ids[0] != 1 {
		t.Fatalf("completed apps must be announced: %v", ev.ids)
	}
	if row := drv.Rows(t, `SELECT page_status, enriched_at FROM app_registry WHERE track_id = 3`)[0]; row["page_status"] != PageUnparsedStatus || row["enriched_at"] != nil {
		t.Fatalf("unparseable page stays queued: %v", row)
	}

	// "incomplete" also takes the parsed page that lacked a section.
	r.Start(context.Background(), ReparseIncomplete)
	r.ReparseRun(context.Background())
	if row := drv.Rows(t, `SELECT page_missing FROM app_registry WHERE track_id = 2`)[0]; row["page_missing"] != "[]" {
		t.Fatalf("incomplete page re-read: %v", row)
	}
	if s, _ := r.ReparseRun(context.Background()); s == "" {
		t.Fatal("a finished job still reports")
	}
}

func TestReparseStopsAtAnR2Outage(t *testing.T) {
	db, drv := d1test.New(t)
	at := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	app := mustLookup(t)
	for id, key := range map[int64]string{1: "r2-down", 2: "p/2"} {
		a := app
		a.TrackID = id
		D1Store{DB: db}.SaveLookup(context.Background(), a, key, PageUnparsedStatus, at)
	}
	r := Reparser{DB: db, Pages: memPages{"p/2": fixture(t, "legacy_netflix_us_2023.html")}, Now: func() time.Time { return at }}
	r.Start(context.Background(), ReparseAll)
	if _, err := r.ReparseRun(context.Background()); err == nil {
		t.Fatal("an R2 outage fails the run (the scheduler backs off)")
	}
	job, _ := r.Latest(context.Background())
	if job.FinishedAt != nil || job.Cursor != 0 || job.Pages != 0 {
		t.Fatalf("an unreachable page must be retried, not skipped: %+v", job)
	}
	if n := drv.Int(t, `SELECT COUNT(*) FROM app_registry WHERE page_status = 'parsed'`); n != 0 {
		t.Fatalf("nothing past the outage is written: %d", n)
	}
}

// TestPageWrittenAgainUnchangedWritesNothing: a page whose parse reads
// what is stored (a reparse after a parser change that did not touch it)
// leaves the record unwritten; a changed field writes it.
func TestPageWrittenAgainUnchangedWritesNothing(t *testing.T) {
	db, drv := d1test.New(t)
	ctx := context.Background()
	at := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	drv.Exec(t, `INSERT INTO app_registry (track_id, rating_count) VALUES (5, 100)`)
	page := appstore.StorePage{Format: "current", Subtitle: "Plan a budget", SimilarAppIDs: []int64{6, 7}}
	write := func(p appstore.StorePage, at time.Time) int64 {
		t.Helper()
		before := drv.TotalChanges(t)
		if _, err := db.ExecAtomic(ctx, PageStatements(5, 100, p, false, at)...); err != nil {
			t.Fatal(err)
		}
		return drv.TotalChanges(t) - before
	}
	// The record, and its subtitle's search term (app_search_terms).
	if n := write(page, at); n != 2 {
		t.Fatalf("a first page wrote %d rows", n)
	}
	if n := write(page, at.Add(time.Hour)); n != 0 {
		t.Fatalf("the same page again wrote %d rows", n)
	}
	// The record, and its subtitle's search term moved: one deleted, one
	// inserted.
	page.Subtitle = "Plan a budget, fast"
	if n := write(page, at.Add(2*time.Hour)); n != 3 {
		t.Fatalf("a changed page wrote %d rows", n)
	}
	if got := drv.Rows(t, `SELECT subtitle, updated_at FROM app_registry WHERE track_id = 5`)[0]; got["subtitle"] != page.Subtitle || got["updated_at"] != d1.Time(at.Add(2*time.Hour)) {
		t.Fatalf("record: %v", got)
	}
}

// memBucket is an R2 bucket in memory: whole and ranged reads, and the
// reads made (R2 Class B).
type memBucket struct {
	objects map[string][]byte
	reads   int
}

func (b *memBucket) Put(_ context.Context, key string, body []byte, _ string, _ map[string]string) error {
	b.objects[key] = bytes.Clone(body)
	return nil
}

func (b *memBucket) Get(_ context.Context, key string) ([]byte, bool, error) {
	b.reads++
	o, ok := b.objects[key]
	return o, ok, nil
}

func (b *memBucket) GetRange(_ context.Context, key string, off, n int64) ([]byte, bool, error) {
	b.reads++
	o, ok := b.objects[key]
	if !ok {
		return nil, false, nil
	}
	return o[min(off, int64(len(o))):min(off+n, int64(len(o)))], true, nil
}

// A reparse reads pages through R2HTML: pages of a tick's batch object
// (one ranged read each), a whole single-page object of the layout
// before batches, and counts a reference that can never be read as
// missing, going on past it.
func TestReparseReadsBatchedAndOldPages(t *testing.T) {
	db, drv := d1test.New(t)
	at := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	good := fixture(t, "legacy_netflix_us_2023.html")
	bucket := &memBucket{objects: map[string][]byte{HTMLKey("us", 3): good}}
	pages := R2HTML{Bucket: bucket}
	batch := pagebatch.NewBatch(pagebatch.ObjectKey("us", at, 1))
	refs := map[int64]string{3: HTMLKey("us", 3), 4: batch.Key() + "#0+99999", 5: "store-pages/batches/x.gz#oops"}
	for _, id := range []int64{1, 2} {
		ref, _, err := batch.Add(pagebatch.Header{TrackID: id, FetchedAt: at}, good)
		if err != nil {
			t.Fatal(err)
		}
		refs[id] = ref.String()
	}
	if err := pages.PutPages(context.Background(), batch.Key(), batch.Bytes(), batch.Pages()); err != nil {
		t.Fatal(err)
	}
	app := mustLookup(t)
	for id, ref := range refs {
		a := app
		a.TrackID = id
		if err := (D1Store{DB: db}).SaveLookup(context.Background(), a, ref, PageUnparsedStatus, at); err != nil {
			t.Fatal(err)
		}
	}
	r := Reparser{DB: db, Pages: pages, Now: func() time.Time { return at.Add(time.Hour) }}
	r.Start(context.Background(), ReparseFailed)
	if _, err := r.ReparseRun(context.Background()); err != nil {
		t.Fatal(err)
	}
	job, _ := r.Latest(context.Background())
	// 1, 2 from the batch, 3 whole; 4 (a range past the object) and 5 (no
	// offset) are corrupt: missing, the job finished past them.
	if job.FinishedAt == nil || job.Pages != 3 || job.Parsed != 3 || job.Missing != 2 || bucket.reads != 4 {
		t.Fatalf("job %+v, %d reads", job, bucket.reads)
	}
	if n := drv.Int(t, `SELECT COUNT(*) FROM app_registry WHERE page_status = 'parsed' AND track_id IN (1, 2, 3)`); n != 3 {
		t.Fatalf("%d pages healed, want 3", n)
	}
}
