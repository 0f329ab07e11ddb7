package main

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"storecrawl/worker/appstore"
)

// sitemapIDs reads an index and every file it names with the product's
// parser: the ids listed, each once.
func sitemapIDs(t *testing.T, base string, newApps bool) map[int64]bool {
	t.Helper()
	r := get(t, appstore.SitemapIndexURL(base, newApps))
	if r.status != http.StatusOK {
		t.Fatalf("index: %d %s", r.status, r.body)
	}
	refs, err := appstore.ParseSitemapIndex(bytes.NewReader(r.body))
	if err != nil {
		t.Fatal(err)
	}
	out := map[int64]bool{}
	for _, ref := range refs {
		u, ok := appstore.SitemapFileURL(base, ref.Loc)
		if !ok || !strings.HasPrefix(ref.Loc, base) {
			t.Fatalf("index entry %q", ref.Loc)
		}
		f := get(t, u)
		if f.status != http.StatusOK {
			t.Fatalf("%s: %d", u, f.status)
		}
		ids, err := appstore.ParseSitemapApps(bytes.NewReader(f.body))
		if err != nil {
			t.Fatalf("%s: %v", u, err)
		}
		for _, id := range ids {
			if out[id] {
				t.Fatalf("%d listed twice", id)
			}
			out[id] = true
		}
	}
	return out
}

// TestLivingSitemapsListTheStore: the two indexes together list every app
// in the living store and nothing else: a new app in the new-app index as
// soon as it appears (and in the full one from the next day), a removed
// one in neither.
func TestLivingSitemapsListTheStore(t *testing.T) {
	ts, clock := newLivingServer(t, calmConfig())
	w := livingCatalogue().living.w
	check := func(when string) {
		t.Helper()
		now := clock.Now()
		full, fresh := sitemapIDs(t, ts.URL, false), sitemapIDs(t, ts.URL, true)
		for off := int64(1); off <= w.Total(now); off++ {
			s := w.Static(off)
			id := baseTrackID + off
			if in := w.Exists(&s, now); in != (full[id] || fresh[id]) {
				t.Fatalf("%s: app %d in the store %v, full index %v, new-app index %v", when, off, in, full[id], fresh[id])
			}
		}
		if len(full)+len(fresh) == 0 {
			t.Fatalf("%s: nothing listed", when)
		}
	}
	check("epoch")
	if ids := sitemapIDs(t, ts.URL, true); len(ids) != 0 {
		t.Fatalf("new apps at the epoch: %d", len(ids))
	}
	clock.Advance(36 * time.Hour)
	check("day 1.5")
	newID := baseTrackID + w.Total(clock.Now())
	if fresh := sitemapIDs(t, ts.URL, true); !fresh[newID] || sitemapIDs(t, ts.URL, false)[newID] {
		t.Fatalf("the newest app %d: in the new-app index %v", newID, fresh[newID])
	}
	clock.Advance(24 * time.Hour)
	if !sitemapIDs(t, ts.URL, false)[newID] {
		t.Fatalf("the app %d is not in the next day's full index", newID)
	}
	clock.Advance(40 * 24 * time.Hour)
	check("day 41.5")
}

// TestSitemapsAreStorePages: a sitemap costs a store-host token like a
// page; an unknown file is a 404, and another root path is not limited.
func TestSitemapsAreStorePages(t *testing.T) {
	cfg := calmConfig()
	cfg.StoreRatePerMin, cfg.StoreBurst = 1, 2
	ts, _ := newTestServer(t, cfg)
	if r := get(t, ts.URL+"/sitemaps_apps_index_app_1.xml"); r.status != http.StatusOK || !bytes.Contains(r.body, []byte("/sitemaps_apps_app_1_1.xml.gz</loc>")) {
		t.Fatalf("index: %d %s", r.status, r.body)
	}
	if r := get(t, ts.URL+"/sitemaps_apps_app_1_1.xml.gz"); r.status != http.StatusOK {
		t.Fatalf("file: %d", r.status)
	} else if ids, err := appstore.ParseSitemapApps(bytes.NewReader(r.body)); err != nil || len(ids) != testApps {
		t.Fatalf("the static catalogue's file: %d ids (%v), want %d", len(ids), err, testApps)
	}
	if r := get(t, ts.URL+"/sitemaps_apps_app_1_2.xml.gz"); r.status != http.StatusTooManyRequests {
		t.Fatalf("past the store's burst: %d", r.status)
	}
	if r := get(t, ts.URL+"/robots.txt"); r.status != http.StatusNotFound {
		t.Fatalf("another root path: %d", r.status)
	}
	st := decodeJSON[Stats](t, get(t, ts.URL+"/__stats").body)
	if sm, h := st.ByRoute[routeSitemap], st.ByHost[hostStore]; sm.Served != 2 || sm.Refused != 1 || h.Served != 2 || h.Refused != 1 {
		t.Fatalf("sitemap %+v store host %+v", sm, h)
	}
	// A file the index does not name is a 404, counted as not found.
	ts, _ = newTestServer(t, calmConfig())
	if r := get(t, ts.URL+fmt.Sprintf("/sitemaps_apps_app_1_%d.xml.gz", 9)); r.status != http.StatusNotFound {
		t.Fatalf("a file past the index: %d", r.status)
	}
	if r := get(t, ts.URL+"/sitemaps_apps_index_new-app_1.xml"); r.status != http.StatusOK || bytes.Contains(r.body, []byte("<sitemap>")) {
		t.Fatalf("a static catalogue's new-app index: %s", r.body)
	}
}
