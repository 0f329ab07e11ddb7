//go:build !js

package crawl

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"storecrawl/durable/limiter"
	"storecrawl/internal/objects"
	"storecrawl/worker/appstore"
	"storecrawl/worker/config"
	"storecrawl/worker/d1"
	"storecrawl/worker/d1/d1test"
	"storecrawl/worker/ratelimit"
	"storecrawl/worker/subreq"
	"storecrawl/worker/upstream"
)

// fullScanStep is a plan step that reads a whole table (no index); the
// catalogue-scale check of every package's hot queries, walks through an
// index included, is worker/queryplan_test.go.
var fullScanStep = regexp.MustCompile(`^SCAN \w+( AS \w+)?$`)

// TestCrawlHotQueriesUseIndexes runs EXPLAIN QUERY PLAN of the crawl's
// reads (the steering's included) on the migrated schema natively.
func TestCrawlHotQueriesUseIndexes(t *testing.T) {
	_, drv := d1test.New(t)
	for _, q := range HotQueries() {
		var steps []string
		for _, r := range drv.Rows(t, "EXPLAIN QUERY PLAN "+q.SQL, q.Args...) {
			d := fmt.Sprint(r["detail"])
			steps = append(steps, d)
			if fullScanStep.MatchString(d) {
				t.Errorf("%s scans a table: %q", q.Name, d)
			}
		}
		t.Logf("%s: %s", q.Name, strings.Join(steps, " | "))
	}
}

func TestValueAndIntervalPolicy(t *testing.T) {
	if ResearchInterval(80) != HotKeywordResearch || ResearchInterval(40) != WarmKeywordResearch || ResearchInterval(5) != ColdKeywordResearch {
		t.Fatal("intervals by score")
	}
	if !(HotKeywordResearch < WarmKeywordResearch && WarmKeywordResearch < ColdKeywordResearch) {
		t.Fatal("the interval must shrink as the market's score grows")
	}
	if KeywordValue(80, 0) <= KeywordValue(10, KeywordCarrierCap) || KeywordValue(10, 50) != KeywordValue(10, KeywordCarrierCap) || KeywordValue(150, 0) != MaxOpportunityScore {
		t.Fatal("value: score first, carriers capped, score bounded")
	}
	if PendingKeywordValue(0, 0) <= KeywordValue(0, 0) || PendingKeywordValue(0, 0) >= KeywordValue(30, 0) {
		t.Fatal("a plain new keyword beats a searched one with no market, not a scored market")
	}
}

// TestTopSegmentKeywordPolicy: a top segment's keyword is worth more than
// any other keyword, less than an operator's seed, and rests as a hot
// market's.
func TestTopSegmentKeywordPolicy(t *testing.T) {
	best := PendingKeywordValue(MaxOpportunityScore, KeywordCarrierCap)
	if TopSegmentValue(0, 0, true) <= best || TopSegmentValue(MaxOpportunityScore, KeywordCarrierCap, true) >= SeedKeywordValue {
		t.Fatal("value: above any other keyword, below a seed")
	}
	if TopSegmentValue(40, 3, false) != KeywordValue(40, 3) || TopSegmentInterval(5, false) != ResearchInterval(5) {
		t.Fatal("a keyword of no top segment keeps its market's value and interval")
	}
	if TopSegmentInterval(0, true) != HotKeywordResearch {
		t.Fatal("a top segment's keyword rests a day")
	}
}

// TestMigrationBackfillMatchesPolicy: migration 0023's literals are the
// policy's numbers.
func TestMigrationBackfillMatchesPolicy(t *testing.T) {
	b, err := os.ReadFile("../../migrations/0023_keyword_steering.sql")
	if err != nil {
		t.Fatal(err)
	}
	sql := string(b)
	cold := strconv.FormatInt(int64(ColdKeywordResearch/time.Second), 10)
	if !strings.Contains(sql, "SET value = "+num(FirstSearchValue)+" WHERE searched_at IS NULL") ||
		!strings.Contains(sql, "research_interval_s = "+cold) || !strings.Contains(sql, "'+"+cold+" seconds'") {
		t.Fatalf("migration literals differ from FirstSearchValue %v / ColdKeywordResearch %s", FirstSearchValue, cold)
	}
}

func searchResults(ids ...int64) []appstore.App {
	out := make([]appstore.App, len(ids))
	for i, id := range ids {
		out[i] = appstore.App{TrackID: id, Name: fmt.Sprint("app ", id)}
	}
	return out
}

// TestKeywordOrderByValueAndSchedule runs the real SQL: searched keywords
// wait out their interval (a day for a hot market, a month for a plain
// one), then come due; the pick orders pending and due keywords by value.
func TestKeywordOrderByValueAndSchedule(t *testing.T) {
	db, drv := d1test.New(t)
	s := D1Store{DB: db}
	ctx := context.Background()
	t0 := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	pick := func() []string {
		t.Helper()
		kws, err := s.PickKeywords(ctx, 10, Slow{})
		if err != nil {
			t.Fatal(err)
		}
		return kws
	}
	// steer runs the cycle's gap check, then the steering step as the
	// cycle does: the promote step only when the check found keywords
	// waiting; a step that promotes must have been asked to.
	steer := func(at time.Time) SteerResult {
		t.Helper()
		g, err := s.Gaps(ctx, at)
		if err != nil {
			t.Fatal(err)
		}
		r, err := s.Steer(ctx, at, g.KeywordsWaiting)
		if err != nil {
			t.Fatal(err)
		}
		if all, err := s.Steer(ctx, at, true); err != nil || all.Promoted != 0 {
			t.Fatalf("at %s the check found none waiting (%v), yet the promote step made %d due (%v)", at, g.KeywordsWaiting, all.Promoted, err)
		}
		return r
	}
	// Apps 1-3 are enriched; 7-9 only queued.
	for _, id := range []int{1, 2, 3} {
		drv.Exec(t, `INSERT INTO app_registry (track_id, name, enrichment_source, enriched_at) VALUES (?, 'x', 'itunes+store', ?)`, id, d1.Time(t0))
	}
	// Both keywords pending, then searched at t0.
	drv.Exec(t, `INSERT INTO crawl_keywords (keyword, source, created_at) VALUES ('hotkw', 'title', ?), ('plainkw', 'title', ?)`, d1.Time(t0), d1.Time(t0))
	if got := pick(); len(got) != 2 {
		t.Fatalf("pending keywords: %q", got)
	}
	if err := s.SaveRankings(ctx, "hotkw", searchResults(1, 2, 3), t0); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveRankings(ctx, "plainkw", searchResults(7, 8, 9), t0); err != nil {
		t.Fatal(err)
	}
	if got := pick(); len(got) != 0 {
		t.Fatalf("just-searched keywords must wait: %q", got)
	}
	// The markets stage scores their clusters; app 1 is a member of hotkw's
	// (its ranking there, from the search).
	drv.Exec(t, `INSERT INTO opportunity_scores (cluster_id, score, computed_at) VALUES ('hotkw', 80, ?), ('plainkw', 5, ?)`, d1.Time(t0.Add(time.Minute)), d1.Time(t0.Add(time.Minute)))
	if r := steer(t0.Add(2 * time.Minute)); r.Revalued != 2 || r.Promoted != 0 {
		t.Fatalf("revalue: %+v", r)
	}
	hot := drv.Rows(t, `SELECT value, research_interval_s, next_search_at, due_value FROM crawl_keywords WHERE keyword = 'hotkw'`)[0]
	if hot["value"] != KeywordValue(80, 3) || hot["research_interval_s"] != float64(HotKeywordResearch/time.Second) ||
		hot["next_search_at"] != d1.Time(t0.Add(HotKeywordResearch)) || hot["due_value"] != nil {
		t.Fatalf("hot keyword scheduled as %v", hot)
	}
	// The plain keyword's tier (cold) and schedule hold: not rewritten;
	// its value (searched with no market: 0) is brought up to its score
	// when it is promoted.
	plain := drv.Rows(t, `SELECT value, next_search_at FROM crawl_keywords WHERE keyword = 'plainkw'`)[0]
	if plain["value"] != KeywordValue(0, 0) || plain["next_search_at"] != d1.Time(t0.Add(ColdKeywordResearch)) {
		t.Fatalf("plain keyword scheduled as %v", plain)
	}
	// The cursor moved: the same scores are not read again.
	if r := steer(t0.Add(3 * time.Minute)); r.Revalued != 0 {
		t.Fatalf("revalued twice: %+v", r)
	}
	// A day later only the hot market's keyword is due.
	if r := steer(t0.Add(HotKeywordResearch - time.Second)); r.Promoted != 0 {
		t.Fatalf("due early: %+v", r)
	}
	if r := steer(t0.Add(HotKeywordResearch)); r.Promoted != 1 {
		t.Fatalf("promote at the interval: %+v", r)
	}
	if got := pick(); !reflect.DeepEqual(got, []string{"hotkw"}) {
		t.Fatalf("a day on: %q", got)
	}
	// New terms from the hints: the first completion of its answer
	// ("budget"), then the others.
	answers := []HintAnswer{{Prefix: HintSeed{"budget", 50}, Terms: []string{"budget", "budget tracker", "tracker"}},
		{Prefix: HintSeed{"chess", 50}, Terms: []string{"chess", "chess master", "master"}}}
	if _, err := db.Exec(ctx, HintStatements(answers, NewHintKeywords(answers, nil, 10), nil, t0.Add(HotKeywordResearch))...); err != nil {
		t.Fatal(err)
	}
	// A month on, the plain keyword is due too.
	at := t0.Add(ColdKeywordResearch)
	if r := steer(at); r.Promoted != 1 {
		t.Fatalf("plain keyword due after a month: %+v", r)
	}
	if v := drv.Rows(t, `SELECT value, due_value FROM crawl_keywords WHERE keyword = 'plainkw'`)[0]; v["value"] != KeywordValue(5, 0) || v["due_value"] != KeywordValue(5, 0) {
		t.Fatalf("promoted at its value now: %v", v)
	}
	got := pick()
	// The hot market's due keyword first, then the hints' terms by their
	// place in their answers, the cold keyword last.
	want := []string{"hotkw", "budget", "chess", "budget tracker", "chess master", "master", "tracker", "plainkw"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("pick order %q, want %q", got, want)
	}
	if v := drv.Rows(t, `SELECT value, source FROM crawl_keywords WHERE keyword = 'budget'`)[0]; v["value"] != HintTermKeywordValue(0, 3) || v["source"] != KeywordSourceHints {
		t.Fatalf("the first completion: %v", v)
	}
	// Searched again: it leaves the due set and rests its interval anew.
	later := at.Add(time.Hour)
	if err := s.SaveRankings(ctx, "hotkw", searchResults(1, 2), later); err != nil {
		t.Fatal(err)
	}
	hot = drv.Rows(t, `SELECT value, next_search_at, due_value FROM crawl_keywords WHERE keyword = 'hotkw'`)[0]
	if hot["due_value"] != nil || hot["next_search_at"] != d1.Time(later.Add(HotKeywordResearch)) || hot["value"] != KeywordValue(80, 2) {
		t.Fatalf("re-searched: %v", hot)
	}
	// The market falls out of favour: re-scored to 10, its next search is a month after the last.
	drv.Exec(t, `UPDATE opportunity_scores SET score = 10, computed_at = ? WHERE cluster_id = 'hotkw'`, d1.Time(later.Add(time.Minute)))
	steer(later.Add(2 * time.Minute))
	if n := drv.Rows(t, `SELECT next_search_at FROM crawl_keywords WHERE keyword = 'hotkw'`)[0]["next_search_at"]; n != d1.Time(later.Add(ColdKeywordResearch)) {
		t.Fatalf("re-scored down: %v", n)
	}
}

// sideFetch answers charts and searches, tracking requests in flight.
type sideFetch struct {
	inflight, peak, charts, searches atomic.Int64
	// refuseFrom: searches from this one on (1-based) are refused (0: none).
	refuseFrom int64
	mu         sync.Mutex
	refused    []string
}

func (f *sideFetch) fetch(ctx context.Context, u string) upstream.Response {
	n := f.inflight.Add(1)
	defer f.inflight.Add(-1)
	for p := f.peak.Load(); n > p && !f.peak.CompareAndSwap(p, n); p = f.peak.Load() {
	}
	time.Sleep(2 * time.Millisecond)
	if strings.Contains(u, "/search?") {
		k := f.searches.Add(1)
		if f.refuseFrom > 0 && k >= f.refuseFrom {
			f.mu.Lock()
			f.refused = append(f.refused, u)
			f.mu.Unlock()
			return upstream.Response{Class: objects.ClassRateLimit, Remaining: -1, Err: fmt.Errorf("global limit: refused")}
		}
		return upstream.Response{Class: objects.ClassOK, Body: []byte(`{"resultCount":1,"results":[{"trackId":9,"trackName":"x","artistId":70,"artistName":"Dev"}]}`), Remaining: -1}
	}
	f.charts.Add(1)
	return upstream.Response{Class: objects.ClassOK, Body: []byte(`{"feed":{"results":[{"id":"1","name":"a"}]}}`), Remaining: -1}
}

func manyKeywords(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("kw%03d", i)
	}
	return out
}

// TestKeywordMappingRunsBesideAScan: a cycle with a scan due also maps
// KeywordSearchesPerCycle keywords, with never more than ConnectionBudget
// requests in flight.
func TestKeywordMappingRunsBesideAScan(t *testing.T) {
	f := &sideFetch{}
	d := &fakeDiscovery{due: map[string]bool{"high": true}, pending: manyKeywords(3 * KeywordSearchesPerCycle)}
	r := CrawlCycle(context.Background(), d, f.fetch, "http://up", "us", noSleep, 0.1, time.Now())
	if r.Action != "category_scan" || r.Side == nil || r.Side.Action != "keyword_mapping" || r.Error != "" {
		t.Fatalf("%+v side %+v", r, r.Side)
	}
	if f.charts.Load() != int64(len(appstore.ChartCollections)) || f.searches.Load() != int64(KeywordSearchesPerCycle) ||
		r.Side.Searches != KeywordSearchesPerCycle || len(d.rankings) != KeywordSearchesPerCycle || len(r.Keywords) != KeywordSearchesPerCycle {
		t.Fatalf("charts %d searches %d saved %d", f.charts.Load(), f.searches.Load(), len(d.rankings))
	}
	if f.peak.Load() > ConnectionBudget || r.Side.Conns != ConnectionBudget-ScanConnections {
		t.Fatalf("in flight at most %d, mapping %d at once", f.peak.Load(), r.Side.Conns)
	}
}

// TestSearchesStayWithinTheCycleBound: ranking fill sends no search; the
// keywords it queues join mapping's, within the cycle's searches and
// connections.
func TestSearchesStayWithinTheCycleBound(t *testing.T) {
	f := &sideFetch{}
	d := &fakeDiscovery{due: map[string]bool{}, pending: manyKeywords(3 * KeywordSearchesPerCycle),
		fillApps: []FillApp{{TrackID: 1, Name: "Budget Planner", Subtitle: "Track spending"}}}
	r := CrawlCycle(context.Background(), d, f.fetch, "http://up", "us", noSleep, 0.1, time.Now())
	if r.Action != "keyword_mapping" || r.Fill == nil || r.Fill.Action != "ranking_fill" || r.Fill.Filled != 1 {
		t.Fatalf("%+v", r)
	}
	if n := f.searches.Load(); n != int64(KeywordSearchesPerCycle) || r.Searches != KeywordSearchesPerCycle {
		t.Fatalf("%d searches, mapping %d", n, r.Searches)
	}
	if f.peak.Load() > ConnectionBudget {
		t.Fatalf("in flight %d", f.peak.Load())
	}
}

// TestSearchesStopWhenTheLimiterRefuses: the first refusal ends the
// cycle's searches after its chunk; nothing refused is saved.
func TestSearchesStopWhenTheLimiterRefuses(t *testing.T) {
	f := &sideFetch{refuseFrom: 8}
	d := &fakeDiscovery{due: map[string]bool{"high": true}, pending: manyKeywords(KeywordSearchesPerCycle)}
	r := CrawlCycle(context.Background(), d, f.fetch, "http://up", "us", noSleep, 0.1, time.Now())
	chunk := int64(ConnectionBudget - ScanConnections)
	if r.Side == nil || !r.Side.RateLimited || r.Action != "category_scan" {
		t.Fatalf("%+v side %+v", r, r.Side)
	}
	// Searches 1-5, then 6-10 (8 refused): no third chunk.
	if n := f.searches.Load(); n != 2*chunk || r.Side.Searches != int(2*chunk) || len(d.rankings) != 7 {
		t.Fatalf("searches %d, saved %d", n, len(d.rankings))
	}
	for _, u := range f.refused {
		for kw := range d.rankings {
			if strings.Contains(u, "term="+kw+"&") {
				t.Fatalf("refused %s saved", kw)
			}
		}
	}
}

// limiterDoer answers every request with an empty search.
type limiterDoer struct{ calls atomic.Int64 }

func (d *limiterDoer) Do(*http.Request) (*http.Response, error) {
	d.calls.Add(1)
	return &http.Response{StatusCode: 200, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(`{"resultCount":0,"results":[]}`))}, nil
}

// countingLimiter admits the first admit acquires of any key, then refuses
// for longer than a call may wait; it records the keys asked.
type countingLimiter struct {
	mu    sync.Mutex
	admit int
	keys  map[string]int
}

func (c *countingLimiter) CallLimiter(_ context.Context, key, _, _ string, _ []byte) (int, []byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.keys[key]++
	n := 0
	for _, v := range c.keys {
		n += v
	}
	a := limiter.AcquireAnswer{Allowed: n <= c.admit, RetryAfterMs: int64(time.Minute / time.Millisecond)}
	b, _ := json.Marshal(a)
	return 200, b, nil
}

// TestSearchesGoThroughTheAPIHostLimit: through upstream.Limited, every
// search asks the API host's key, and once it refuses the cycle stops.
func TestSearchesGoThroughTheAPIHostLimit(t *testing.T) {
	lim := &countingLimiter{admit: 3, keys: map[string]int{}}
	doer := &limiterDoer{}
	l := upstream.Limited{Client: &upstream.Client{HTTP: doer}, Limits: &ratelimit.Client{Caller: lim, MaxWait: time.Second, Sleep: noSleep}, Key: upstream.CatalogueLimit}
	d := &fakeDiscovery{due: map[string]bool{}, pending: manyKeywords(KeywordSearchesPerCycle)}
	r := CrawlCycle(context.Background(), d, l.Get, "http://up", "us", noSleep, 0.1, time.Now())
	if r.Action != "keyword_mapping" || !r.RateLimited || doer.calls.Load() != 3 || r.Searches != ConnectionBudget {
		t.Fatalf("%+v upstream calls %d", r, doer.calls.Load())
	}
	// The refusals are the pacing's to handle: counted, the keywords left
	// due, and no error for the cron record to log at level error.
	if r.Error != "" || r.Refused != ConnectionBudget-3 {
		t.Fatalf("refused searches: error %q, refused %d", r.Error, r.Refused)
	}
	if len(lim.keys) != 1 || lim.keys[ratelimit.Catalogue] != ConnectionBudget {
		t.Fatalf("limiter keys %v", lim.keys)
	}
}

// TestSearchesPerDayAtDefaults prints the keyword search rate the defaults
// give and checks it against the cycle's other bounds.
func TestSearchesPerDayAtDefaults(t *testing.T) {
	p := ratelimit.Limits[upstream.CatalogueLimit]
	perDay := SearchesPerDay(KeywordSearchesPerCycle)
	t.Logf("API host limit %d per %gs; %d searches a cycle of %s; %d a day", p.Limit, p.Window, KeywordSearchesPerCycle, CyclePeriod, perDay)
	if KeywordSearchesPerCycle != 100 || perDay != 28800 {
		t.Fatalf("at the defaults: %d a cycle, %d a day", KeywordSearchesPerCycle, perDay)
	}
	if SearchesPerCycle(limiter.Policy{Limit: 600, Window: 60}) != 50 || SearchesPerCycle(limiter.Policy{Limit: 1200, Window: 120}) != 50 {
		t.Fatal("the bound follows the limit's per-minute allowance")
	}
	if config.CronCrawlCycle != "*/5 * * * *" || CyclePeriod != 5*time.Minute {
		t.Fatalf("CyclePeriod %s does not match the crawl cron %q", CyclePeriod, config.CronCrawlCycle)
	}
	ids := make([]int64, KeywordSearchSize)
	for i := range ids {
		ids[i] = int64(i + 1)
	}
	full := len(RankingStatements("kw", searchResults(ids...), time.Now()))
	if batches := (full + d1.MaxBatch - 1) / d1.MaxBatch; SubrequestsPerSearch != 2+batches {
		t.Fatalf("a full search is %d statements, %d batches: SubrequestsPerSearch %d", full, batches, SubrequestsPerSearch)
	}
	// Worst case: every result from a new developer.
	developerBatches := (KeywordSearchesPerCycle*KeywordSearchSize + d1.MaxBatch - 1) / d1.MaxBatch
	if KeywordSearchesPerCycle*SubrequestsPerSearch+developerBatches+2*len(appstore.ChartCollections)+10 > subreq.PlatformLimit {
		t.Fatal("a cycle's searches must fit an invocation's subrequests")
	}
	if KeywordPromoteBatch < KeywordSearchesPerCycle || KeywordRevalueBatch < KeywordSearchesPerCycle {
		t.Fatal("the cycle's bounds must leave mapping searches and keep the due set fed")
	}
}

// TestRevalueRewritesOnlyChangedSchedules: the revalue step reads the
// keywords of the clusters re-scored since its cursor; a keyword whose
// schedule comes out the same (its tier held) is not rewritten, so a
// re-scoring that moves no keyword to another tier writes the cursor alone (before: every keyword of
// every re-scored cluster, 10 here, and their index entries).
func TestRevalueRewritesOnlyChangedSchedules(t *testing.T) {
	db, drv := d1test.New(t)
	s := D1Store{DB: db}
	ctx := context.Background()
	t0 := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	kws := manyKeywords(10)
	for i, kw := range kws {
		drv.Exec(t, `INSERT INTO crawl_keywords (keyword, source, created_at) VALUES (?, 'title', ?)`, kw, d1.Time(t0))
		if err := s.SaveRankings(ctx, kw, searchResults(int64(i+1)), t0); err != nil {
			t.Fatal(err)
		}
		drv.Exec(t, `INSERT INTO opportunity_scores (cluster_id, score, computed_at) VALUES (?, 40, ?)`, kw, d1.Time(t0.Add(time.Minute)))
	}
	revalue := func(at time.Time) (SteerResult, int64) {
		t.Helper()
		before := drv.TotalChanges(t)
		r, err := s.Steer(ctx, at, false)
		if err != nil {
			t.Fatal(err)
		}
		return r, drv.TotalChanges(t) - before
	}
	if r, w := revalue(t0.Add(2 * time.Minute)); r.Revalued != 10 || w != 10+1 {
		t.Fatalf("first scores: revalued %d, wrote %d rows, want 10 keywords and the cursor", r.Revalued, w)
	}
	// Re-scored within their tier (warm): nothing to reschedule.
	drv.Exec(t, `UPDATE opportunity_scores SET score = 41, computed_at = ?`, d1.Time(t0.Add(3*time.Minute)))
	r, w := revalue(t0.Add(4 * time.Minute))
	t.Logf("a re-scoring of %d clusters that moves no keyword: %d rows written", r.Revalued, w)
	if r.Revalued != 10 || w != 1 {
		t.Fatalf("unchanged scores: revalued %d, wrote %d rows, want the cursor alone", r.Revalued, w)
	}
	// One cluster moves to the hot tier: its keyword alone.
	drv.Exec(t, `UPDATE opportunity_scores SET score = 90, computed_at = ? WHERE cluster_id = ?`, d1.Time(t0.Add(5*time.Minute)), kws[3])
	if r, w := revalue(t0.Add(6 * time.Minute)); r.Revalued != 1 || w != 1+1 {
		t.Fatalf("one hot cluster: revalued %d, wrote %d rows", r.Revalued, w)
	}
	if iv := drv.Int(t, `SELECT research_interval_s FROM crawl_keywords WHERE keyword = ?`, kws[3]); iv != int64(HotKeywordResearch/time.Second) {
		t.Fatalf("hot keyword's interval %d", iv)
	}
}
