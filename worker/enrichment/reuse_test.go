//go:build !js

package enrichment

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"storecrawl/durable/controller"
	"storecrawl/worker/d1/d1test"
	"storecrawl/worker/pagebatch"
	"storecrawl/worker/upstream"
)

// saveFails is the D1 store whose enriched saves fail while fail is set
// (the rest, the requeue included, reach D1).
type saveFails struct {
	D1Store
	fail bool
}

func (s *saveFails) SaveEnriched(ctx context.Context, r Record) (int, error) {
	if s.fail {
		return 0, errors.New("d1: database is busy")
	}
	return s.D1Store.SaveEnriched(ctx, r)
}

// pageCountingUpstream answers lookups from the real capture and pages
// with the real page, counting the page requests that reach it.
func pageCountingUpstream(t *testing.T, pages *atomic.Int64) *httptest.Server {
	lookup := fixture(t, "lookup_us_uber_2017.json")
	page := fixture(t, "legacy_netflix_us_2023.html")
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/lookup" {
			w.Write(lookupAnswer(lookup, r.URL.Query().Get("id"), nil, nil))
			return
		}
		pages.Add(1)
		w.Write(page)
	}))
}

// A retried item whose page an earlier attempt stored in R2 is enriched
// from that page with no page request upstream when the page is younger
// than ENRICHMENT_PAGE_REUSE_H, and fetched again when it is older: the
// attempt's D1 save failed, so its requeue (or its give-up, put back by
// retry-failed) kept the page's reference for the retry.
func TestRetryReadsItsStoredPageFromR2(t *testing.T) {
	const reuse = 24 * time.Hour
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name     string
		attempts int // before the failed attempt
		retryAt  time.Duration
		fromR2   bool
	}{
		{"requeued, page an hour old", 0, time.Hour, true},
		{"given up, put back by retry-failed", controller.MaxItemAttempts - 1, 2 * time.Hour, true},
		{"requeued, page older than the setting", 0, reuse + time.Hour, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var pages atomic.Int64
			srv := pageCountingUpstream(t, &pages)
			defer srv.Close()
			db, drv := d1test.New(t)
			ctx := context.Background()
			drv.Exec(t, `INSERT INTO app_registry (track_id, enrich_attempts) VALUES (?, ?)`, fixtureID, c.attempts)
			bucket := &memBucket{objects: map[string][]byte{}}
			store := &saveFails{D1Store: D1Store{DB: db}, fail: true}
			now := t0
			r := &Runner{
				Store: store, HTML: R2HTML{Bucket: bucket}, Stored: R2HTML{Bucket: bucket}, PageReuse: reuse,
				Upstream: &upstream.Client{HTTP: srv.Client(), Timeout: 5 * time.Second},
				APIBase:  srv.URL, StoreBase: srv.URL, Country: "us",
				Now: func() time.Time { return now }, Sleep: func(time.Duration) {},
			}
			plan := controller.RunPlan{BatchSize: 1, ChunkItems: 1}

			// The first attempt fetches and stores the page; its save fails.
			out := r.Run(ctx, plan)
			if len(out.Results) != 1 || out.Results[0].Class != controller.ClassStoreError || pages.Load() != 1 || out.PagesFromR2 != 0 {
				t.Fatalf("first attempt: %+v, %d pages", out, pages.Load())
			}
			ref := drv.Rows(t, `SELECT html_r2_key FROM app_registry WHERE track_id = ?`, fixtureID)[0]["html_r2_key"]
			key, _ := ref.(string)
			if !strings.HasPrefix(key, pagebatch.Prefix) || len(bucket.objects) != 1 {
				t.Fatalf("the failed attempt's page must be kept for its retry: ref %v, objects %d", ref, len(bucket.objects))
			}
			if c.attempts > 0 {
				if n, err := store.RetryFailed(ctx, "", t0, t0.Add(time.Minute)); err != nil || n != 1 {
					t.Fatalf("retry-failed: %d %v", n, err)
				}
			}

			// The retry.
			now, store.fail = t0.Add(c.retryAt), false
			out = r.Run(ctx, plan)
			if len(out.Results) != 1 || out.Results[0].Class != controller.ClassOK || out.Results[0].Page != controller.PageParsed {
				t.Fatalf("retry: %+v", out)
			}
			var pageReqs, lookupReqs int
			for _, rq := range out.Requests {
				switch rq.Kind {
				case controller.RequestPage:
					pageReqs++
				case controller.RequestLookup:
					lookupReqs++
				}
			}
			row := drv.Rows(t, `SELECT enrichment_source, html_r2_key, subtitle FROM app_registry WHERE track_id = ?`, fixtureID)[0]
			if row["enrichment_source"] != SourceEnriched || row["subtitle"] == nil {
				t.Fatalf("retry must enrich the app: %v", row)
			}
			if c.fromR2 {
				// One ranged read, no page request; only the lookup went upstream.
				// Subrequests: the pick, the lookup, the read, the save (no put).
				if pages.Load() != 1 || pageReqs != 0 || lookupReqs != 1 || bucket.reads != 1 || out.Subrequests != 4 ||
					!out.Results[0].PageFromR2 || out.PagesFromR2 != 1 || row["html_r2_key"] != key {
					t.Fatalf("retry from R2: %d page requests upstream (%d reported), %d R2 reads, outcome %+v, row %v",
						pages.Load()-1, pageReqs, bucket.reads, out, row)
				}
				return
			}
			// Too old: not even read back; the page is fetched again and stored anew.
			if pages.Load() != 2 || pageReqs != 1 || bucket.reads != 0 || out.Results[0].PageFromR2 || out.PagesFromR2 != 0 ||
				row["html_r2_key"] == key {
				t.Fatalf("stale page: %d page requests upstream, %d R2 reads, outcome %+v, row %v", pages.Load()-1, bucket.reads, out, row)
			}
		})
	}
}

// The reuse decision, on the clock passed in: before the read, a batch
// reference whose tick lies within the window (and a page that did not
// fail to parse); after it, a page fetched within the window that parsed
// when it was stored.
func TestReuseDecision(t *testing.T) {
	const window = 24 * time.Hour
	tick := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	ref := pagebatch.Ref{Key: pagebatch.ObjectKey("us", tick, 7), Offset: 0, Length: 100}.String()
	for _, c := range []struct {
		name       string
		ref, state string
		parseError bool
		at         time.Time
		window     time.Duration
		want       bool
	}{
		{"an hour old", ref, PagePending, false, tick.Add(time.Hour), window, true},
		{"never looked up", ref, "", false, tick.Add(time.Hour), window, true},
		{"exactly the window", ref, "", false, tick.Add(window), window, true},
		{"past the window", ref, "", false, tick.Add(window + time.Second), window, false},
		{"reuse off", ref, "", false, tick.Add(time.Second), 0, false},
		{"did not parse: the re-parse's", ref, PageUnparsedStatus, false, tick.Add(time.Hour), window, false},
		{"its last attempt a parse error, since looked up again", ref, PagePending, true, tick.Add(time.Hour), window, false},
		{"no page", "", "", false, tick, window, false},
		{"layout before batches: no time", HTMLKey("us", 7), "", false, tick, window, false},
		{"corrupt reference", "store-pages/batches/x.gz#oops", "", false, tick, window, false},
		{"within the clock skew", ref, "", false, tick.Add(-PageClockSkew), window, true},
		{"dated in the future", ref, "", false, tick.Add(-PageClockSkew - time.Second), window, false},
	} {
		if got := ReuseCandidate(c.ref, c.state, c.parseError, c.at, c.window); got != c.want {
			t.Errorf("ReuseCandidate, %s: %v, want %v", c.name, got, c.want)
		}
	}
	parsed := map[string]string{"outcome": controller.PageParsed}
	for _, c := range []struct {
		name string
		h    pagebatch.Header
		at   time.Time
		want bool
	}{
		{"parsed, an hour old", pagebatch.Header{FetchedAt: tick, Meta: parsed}, tick.Add(time.Hour), true},
		{"parsed, too old", pagebatch.Header{FetchedAt: tick, Meta: parsed}, tick.Add(window + time.Second), false},
		{"no time", pagebatch.Header{Meta: parsed}, tick, false},
		{"did not parse", pagebatch.Header{FetchedAt: tick, Meta: map[string]string{"outcome": controller.PageUnparsed}}, tick, false},
		{"a challenge page", pagebatch.Header{FetchedAt: tick, Meta: map[string]string{"outcome": controller.PageSoftBlock}}, tick, false},
	} {
		if got := ReuseStored(c.h, c.at, window); got != c.want {
			t.Errorf("ReuseStored, %s: %v, want %v", c.name, got, c.want)
		}
	}
}

// A stored page that is not there, or not one that parsed, is fetched:
// the retry pays its page request as before.
func TestStoredPageThatCannotBeReusedIsFetched(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	page := fixture(t, "legacy_netflix_us_2023.html")
	batch := pagebatch.NewBatch(pagebatch.ObjectKey("us", t0, 1))
	soft, _, err := batch.Add(pagebatch.Header{TrackID: 1, FetchedAt: t0, Meta: map[string]string{"outcome": controller.PageSoftBlock}}, page)
	if err != nil {
		t.Fatal(err)
	}
	bucket := &memBucket{objects: map[string][]byte{batch.Key(): batch.Bytes()}}
	missing := pagebatch.Ref{Key: pagebatch.ObjectKey("us", t0, 99), Length: soft.Length}
	for _, ref := range []string{soft.String(), missing.String()} {
		var pages atomic.Int64
		srv := pageCountingUpstream(t, &pages)
		st := newStore(QueuedItem{TrackID: fixtureID, Attempts: 1, HTMLKey: ref})
		r := &Runner{
			Store: st, HTML: newCache(), Stored: R2HTML{Bucket: bucket}, PageReuse: 24 * time.Hour,
			Upstream: &upstream.Client{HTTP: srv.Client(), Timeout: 5 * time.Second},
			APIBase:  srv.URL, StoreBase: srv.URL, Country: "us",
			Now: func() time.Time { return t0.Add(time.Hour) }, Sleep: func(time.Duration) {},
		}
		out := r.Run(context.Background(), controller.RunPlan{BatchSize: 1, ChunkItems: 1})
		srv.Close()
		if len(out.Results) != 1 || out.Results[0].Class != controller.ClassOK || out.Results[0].PageFromR2 || pages.Load() != 1 || out.PagesFromR2 != 0 {
			t.Fatalf("%s: %+v, %d pages upstream", ref, out, pages.Load())
		}
	}
	if bucket.reads != 2 {
		t.Fatalf("%d R2 reads, want one a retry", bucket.reads)
	}
}
