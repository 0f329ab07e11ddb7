//go:build unix

package main

import (
	"context"
	"encoding/json"
	"math"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"storecrawl/worker/appstore"
	"storecrawl/worker/crawl"
	"storecrawl/worker/d1"
)

// The discovery bench's own counting (docs/scale.md, "Discovery"): the
// curve's samples and the milestones read from them, the upstream requests
// by what they were for, and the new apps each discovery source brought.

// discoSample is the catalogue at one virtual instant.
type discoSample struct {
	Day float64 `json:"day"` // virtual days since the run's start
	// Known: app_registry rows; Lookup: those with their lookup fields
	// (lookup_at set: a search result's or a lookup's); Enriched: those
	// whose enrichment settled (enriched_at set: the page parsed, or
	// given up); Parsed: those with their page parsed.
	Known    int `json:"known"`
	Lookup   int `json:"lookup"`
	Enriched int `json:"enriched"`
	Parsed   int `json:"parsed"`
}

// milestoneDay is the first day the samples' field reaches n, linear
// between the two samples around it; ok is false when it never does.
func milestoneDay(samples []discoSample, field func(discoSample) int, n int) (day float64, ok bool) {
	for i, s := range samples {
		v := field(s)
		if v < n {
			continue
		}
		if i == 0 {
			return s.Day, true
		}
		p := samples[i-1]
		pv := field(p)
		if v == pv {
			return s.Day, true
		}
		return p.Day + (s.Day-p.Day)*float64(n-pv)/float64(v-pv), true
	}
	return 0, false
}

// days is a milestone for JSON: null when never reached.
func days(samples []discoSample, field func(discoSample) int, n int) *float64 {
	d, ok := milestoneDay(samples, field, n)
	if !ok {
		return nil
	}
	d = math.Round(d*1000) / 1000
	return &d
}

func lookupField(s discoSample) int   { return s.Lookup }
func enrichedField(s discoSample) int { return s.Enriched }

// Request kinds, by the URL's shape.
const (
	kindSearch    = "search"
	kindChart     = "chart"
	kindLookup    = "lookup"    // a lookup of apps by id
	kindDeveloper = "developer" // a lookup of a developer's apps (entity=software on an artist id)
	kindPage      = "page"
	kindHints     = "hints"   // a search hints ask (the keyword-hints task's)
	kindSitemap   = "sitemap" // a sitemap index or file (the sitemap-scan task's)
	kindOther     = "other"
)

// requestKind names what an upstream URL asks for.
func requestKind(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return kindOther
	}
	switch {
	case u.Path == "/search":
		return kindSearch
	case strings.Contains(u.Path, "/rss/"):
		return kindChart
	case u.Path == "/lookup":
		if u.Query().Get("entity") != "" {
			return kindDeveloper
		}
		return kindLookup
	case strings.Contains(u.Path, "/app/"):
		return kindPage
	case u.Path == appstore.HintsPath:
		return kindHints
	case strings.HasPrefix(u.Path, "/sitemaps_"):
		return kindSitemap
	}
	return kindOther
}

// reqCount is what one kind of request did.
type reqCount struct {
	Sent    int `json:"sent"`
	Refused int `json:"refused"` // the upstream's rate_limit answers
	Failed  int `json:"failed"`  // other failures
}

// requestLedger counts a caller's upstream requests by kind.
type requestLedger struct {
	mu     sync.Mutex
	byKind map[string]*reqCount
}

func newRequestLedger() *requestLedger { return &requestLedger{byKind: map[string]*reqCount{}} }

func (l *requestLedger) add(kind string, refused, failed bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.byKind[kind]
	if c == nil {
		c = &reqCount{}
		l.byKind[kind] = c
	}
	c.Sent++
	if refused {
		c.Refused++
	} else if failed {
		c.Failed++
	}
}

func (l *requestLedger) get(kind string) reqCount {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c := l.byKind[kind]; c != nil {
		return *c
	}
	return reqCount{}
}

func (l *requestLedger) total() reqCount {
	l.mu.Lock()
	defer l.mu.Unlock()
	var t reqCount
	for _, c := range l.byKind {
		t.Sent += c.Sent
		t.Refused += c.Refused
		t.Failed += c.Failed
	}
	return t
}

// Discovery sources the bench tells apart: the crawl's saves it wraps
// (sourceCharts: category scans; sourceSearches: keyword searches;
// sourcePortfolios: developers' portfolio lookups), the similar apps of
// the enrichment's pages (sourceSimilar: the EnrichmentController's
// similar_discovered total), the sitemaps (sourceSitemaps: the
// sitemap-scan task's new_apps), and sourceOther, the rest of the
// catalogue's growth (a source the product gained that the bench does
// not tell apart is counted there, by the apps it added, not lost).
const (
	sourceSearches   = "searches"
	sourceCharts     = "charts"
	sourcePortfolios = "portfolios"
	sourceSimilar    = "similar"
	sourceSitemaps   = "sitemaps"
	sourceOther      = "other"
)

// countingStore is the crawl's D1 store, each save that can add apps
// counted: which of its apps the catalogue did not hold before. The
// saves are serialized (the scan and the keyword mapping run side by
// side in a cycle) so each new app is credited to one save.
type countingStore struct {
	crawl.Store
	DB *d1.DB

	mu  sync.Mutex
	new map[string]int // new apps by source
	// looked counts the apps the discovery lookups kept with their lookup
	// fields (known already: no new app).
	looked int
}

func newCountingStore(s crawl.Store, db *d1.DB) *countingStore {
	return &countingStore{Store: s, DB: db, new: map[string]int{}}
}

// known is which of ids app_registry holds.
func (s *countingStore) known(ctx context.Context, ids []int64) (map[int64]bool, error) {
	out := map[int64]bool{}
	if len(ids) == 0 {
		return out, nil
	}
	b, _ := json.Marshal(ids)
	var rows []struct {
		ID int64 `json:"track_id"`
	}
	if err := s.DB.Query(ctx, &rows, `SELECT track_id FROM app_registry WHERE track_id IN (SELECT value FROM json_each(?))`, string(b)); err != nil {
		return nil, err
	}
	for _, r := range rows {
		out[r.ID] = true
	}
	return out, nil
}

// counted runs save and credits source with the ids it added.
func (s *countingStore) counted(ctx context.Context, source string, ids []int64, save func() error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	distinct := map[int64]bool{}
	var list []int64
	for _, id := range ids {
		if !distinct[id] {
			distinct[id] = true
			list = append(list, id)
		}
	}
	before, err := s.known(ctx, list)
	if err != nil {
		return save() // the save is the product's; only the count is lost
	}
	if err := save(); err != nil {
		return err
	}
	after, err := s.known(ctx, list)
	if err != nil {
		return nil
	}
	for _, id := range list {
		if after[id] && !before[id] {
			s.new[source]++
		}
	}
	return nil
}

// SaveRankings implements crawl.Store: a keyword search's results.
func (s *countingStore) SaveRankings(ctx context.Context, keyword string, apps []appstore.App, now time.Time) error {
	ids := make([]int64, len(apps))
	for i, a := range apps {
		ids[i] = a.TrackID
	}
	return s.counted(ctx, sourceSearches, ids, func() error { return s.Store.SaveRankings(ctx, keyword, apps, now) })
}

// SaveScan implements crawl.Store: a category scan's charts.
func (s *countingStore) SaveScan(ctx context.Context, genreID int, country string, charts map[string][]appstore.ChartEntry, now time.Time) (int, error) {
	var ids []int64
	for _, entries := range charts {
		for _, e := range entries {
			ids = append(ids, e.TrackID)
		}
	}
	var n int
	err := s.counted(ctx, sourceCharts, ids, func() error {
		var err error
		n, err = s.Store.SaveScan(ctx, genreID, country, charts, now)
		return err
	})
	return n, err
}

// SavePortfolio implements crawl.Store: a developer's apps.
func (s *countingStore) SavePortfolio(ctx context.Context, developerID int64, apps []appstore.App, now time.Time) (int, error) {
	ids := make([]int64, len(apps))
	for i, a := range apps {
		ids[i] = a.TrackID
	}
	var n int
	err := s.counted(ctx, sourcePortfolios, ids, func() error {
		var err error
		n, err = s.Store.SavePortfolio(ctx, developerID, apps, now)
		return err
	})
	return n, err
}

// SaveLookups implements crawl.Store: the discovery lookups' apps.
func (s *countingStore) SaveLookups(ctx context.Context, cursor d1.Cursor, lastAsked int64, apps []appstore.App, now time.Time) error {
	err := s.Store.SaveLookups(ctx, cursor, lastAsked, apps, now)
	if err == nil {
		s.mu.Lock()
		s.looked += len(apps)
		s.mu.Unlock()
	}
	return err
}

func (s *countingStore) lookedUp() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.looked
}

func (s *countingStore) newBy(source string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.new[source]
}

// sourceFigure is one discovery source's yield.
type sourceFigure struct {
	Source   string  `json:"source"`
	NewApps  int     `json:"new_apps"`
	Requests int     `json:"requests"` // upstream requests sent for it (refused included)
	Refused  int     `json:"refused"`
	PerReq   float64 `json:"new_apps_per_request"`
}

// sourceFigures is the yield of each source: searches, charts and
// portfolios from the crawl's requests of those kinds and the apps its
// saves added; similar apps from the controller's count (similar, its
// similar_discovered) against the enrichment's pages, which are fetched
// for the enrichment anyway; sitemaps from the sitemap-scan task's new
// apps (sitemapNew) against the tasks' sitemap requests; other from the catalogue's growth none of
// them explains (known − the counted sources) and the crawl's requests of
// any other kind.
func sourceFigures(crawlReqs, enrichReqs, taskReqs *requestLedger, store *countingStore, similar, sitemapNew, known int) []sourceFigure {
	var out []sourceFigure
	fig := func(source string, n int, r reqCount) {
		f := sourceFigure{Source: source, NewApps: n, Requests: r.Sent, Refused: r.Refused}
		if r.Sent > 0 {
			f.PerReq = math.Round(1000*float64(n)/float64(r.Sent)) / 1000
		}
		out = append(out, f)
	}
	search, charts, portfolios := store.newBy(sourceSearches), store.newBy(sourceCharts), store.newBy(sourcePortfolios)
	fig(sourceSearches, search, crawlReqs.get(kindSearch))
	fig(sourceCharts, charts, crawlReqs.get(kindChart))
	fig(sourcePortfolios, portfolios, crawlReqs.get(kindDeveloper))
	fig(sourceSimilar, similar, enrichReqs.get(kindPage))
	fig(sourceSitemaps, sitemapNew, taskReqs.get(kindSitemap))
	var other reqCount
	crawlReqs.mu.Lock()
	kinds := make([]string, 0, len(crawlReqs.byKind))
	for k := range crawlReqs.byKind {
		kinds = append(kinds, k)
	}
	crawlReqs.mu.Unlock()
	sort.Strings(kinds)
	for _, k := range kinds {
		if k != kindSearch && k != kindChart && k != kindDeveloper {
			c := crawlReqs.get(k)
			other.Sent += c.Sent
			other.Refused += c.Refused
		}
	}
	fig(sourceOther, max(0, known-search-charts-portfolios-similar-sitemapNew), other)
	return out
}
