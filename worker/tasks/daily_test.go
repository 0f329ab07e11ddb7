//go:build !js

package tasks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"storecrawl/worker/d1"
	"storecrawl/worker/d1/d1test"
	"storecrawl/worker/logx"
)

// captureLog sends logx's events to a buffer for the test and parses them.
func captureLog(t *testing.T) func() []map[string]any {
	var buf bytes.Buffer
	logx.SetOutput(&buf)
	t.Cleanup(func() { logx.SetOutput(nopWriter{}) })
	return func() []map[string]any {
		var out []map[string]any
		for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
			var ev map[string]any
			if json.Unmarshal([]byte(line), &ev) == nil {
				out = append(out, ev)
			}
		}
		return out
	}
}

type nopWriter struct{}

func (nopWriter) Write(p []byte) (int, error) { return len(p), nil }

// qualityEvents are the pipeline.data_quality events logged.
func qualityEvents(events []map[string]any) []map[string]any {
	var out []map[string]any
	for _, ev := range events {
		if ev["event"] == "pipeline.data_quality" {
			out = append(out, ev)
		}
	}
	return out
}

// The design's seven fields, each against its own threshold; a field with
// nothing to judge is ok; the histogram is a share of the rated apps.
func TestJudgeChecksTheDesignsSevenFields(t *testing.T) {
	at := time.Date(2026, 11, 23, 3, 0, 0, 0, time.UTC)
	healthy := QualitySums{Apps: 1000, ContentRating: 950, Description: 900, Developer: 900, Languages: 850,
		Screenshots: 800, Similar: 700, Rated: 500, Histogram: 300}
	q := Judge(healthy, at)
	if !q.OK() || len(q.Fields) != 7 || q.Apps != 1000 || q.CheckedAt != "2026-11-23T03:00:00Z" {
		t.Fatalf("every field at its threshold is ok: %+v", q)
	}
	want := map[string]float64{"content_rating": MinContentRating, "description": MinDescription, "developer": MinDeveloper,
		"languages": MinLanguages, "screenshots": MinScreenshots, "similar": MinSimilar, "histogram": MinHistogram}
	for _, f := range q.Fields {
		if f.Threshold != want[f.Name] || f.Value == nil || *f.Value != want[f.Name] {
			t.Errorf("%s: %+v, want value and threshold %v", f.Name, f, want[f.Name])
		}
	}
	// One app fewer with each field: each falls below, alone.
	for i, name := range []string{"content_rating", "description", "developer", "languages", "screenshots", "similar", "histogram"} {
		s := healthy
		filled := []*int{&s.ContentRating, &s.Description, &s.Developer, &s.Languages, &s.Screenshots, &s.Similar, &s.Histogram}
		*filled[i]--
		if below := Judge(s, at).Below(); len(below) != 1 || below[0] != name {
			t.Errorf("%s one short: below %v", name, below)
		}
	}
	// Nothing sampled: nothing to judge, no value.
	if q := Judge(QualitySums{}, at); !q.OK() || q.Fields[0].Value != nil {
		t.Fatalf("empty sample: %+v", q)
	}
	// No rated app: the histogram has nothing to judge.
	if q := Judge(QualitySums{Apps: 10, ContentRating: 10, Description: 10, Developer: 10, Languages: 10, Screenshots: 10, Similar: 10}, at); !q.OK() {
		t.Fatalf("no rated app: %v below", q.Below())
	}
	// The flat JSON round-trips.
	b, _ := json.Marshal(Judge(QualitySums{Apps: 4, ContentRating: 1}, at))
	var back Quality
	if err := json.Unmarshal(b, &back); err != nil || len(back.Fields) != 7 || back.Fields[0].Name != "content_rating" || *back.Fields[0].Value != 0.25 || back.OK() {
		t.Fatalf("round trip of %s: %+v %v", b, back, err)
	}
}

// The windows are disjoint and in order, one a slice of the ids, at the
// same offset into each; the last ends past hi only by less than a slice.
func TestSampleBoundsSpreadWindowsOverTheIds(t *testing.T) {
	for _, u := range []float64{0, 0.37, 0.999999, 1, -1} {
		b := SampleBounds(284882215, 6_700_000_000, u, QualityWindows)
		if len(b) != QualityWindows+1 {
			t.Fatalf("u %v: %d bounds", u, len(b))
		}
		width := (6_700_000_000 - 284882215 + 1) / int64(QualityWindows)
		for k := 1; k < len(b); k++ {
			if d := b[k] - b[k-1]; d < width-1 || d > width+1 {
				t.Fatalf("u %v: window %d spans %d, want a slice (%d)", u, k-1, d, width)
			}
		}
		if b[0] < 284882215 || b[0] > 284882215+width || b[QualityWindows] <= 6_700_000_000 {
			t.Fatalf("u %v: bounds %v", u, b)
		}
	}
	// Fewer ids than windows: empty windows, still in order.
	b := SampleBounds(5, 7, 0.5, QualityWindows)
	for k := 1; k < len(b); k++ {
		if b[k] < b[k-1] {
			t.Fatalf("out of order: %v", b)
		}
	}
}

// seedQualityCatalogue adds n enriched apps spread over the id range
// (track ids 284882215 + 7919·i), every field filled; one app in five
// has no ratings (a histogram of zeros, as a page without ratings leaves it).
func seedQualityCatalogue(t *testing.T, drv *d1test.Driver, n int) {
	drv.Exec(t, `INSERT INTO app_registry (track_id, name, developer_id, description, content_rating, languages, artwork_url,
  similar_app_ids, rating_count, average_rating, rating_histogram, enrichment_source, enriched_at)
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < ?)
SELECT 284882215 + 7919 * i, 'app ' || i, 1 + i % 97, 'an app that does things ' || i, '4+', '["EN","FR"]', 'https://is1.example/a.png',
  '[1,2,3]', CASE WHEN i % 5 = 0 THEN 0 ELSE 10 + i END, 4.5,
  CASE WHEN i % 5 = 0 THEN '[0,0,0,0,0]' ELSE '[5,4,3,2,1]' END, 'itunes+store', '2026-11-01T00:00:00.000Z' FROM n`, n)
	// Apps not enriched (queued, not found) are not sampled.
	drv.Exec(t, `INSERT INTO app_registry (track_id, name, enrichment_source) VALUES (284882216, 'queued', NULL), (284882217, 'gone', 'not_found')`)
}

type memQualityKV map[string]string

func (m memQualityKV) Put(_ context.Context, k, v string) error { m[k] = v; return nil }
func (m memQualityKV) Get(_ context.Context, k string) (string, error) {
	return m[k], nil
}

// The daily check over D1: a healthy catalogue is all ok; languages
// missing from three apps in ten (70 %, under the design's 85 %) is not ok,
// alone, and logged as a warn naming it. Each run is two queries reading at
// most QualityWindows × QualityWindowApps rows and the two ends of the
// enriched ids, whatever the catalogue's size, and writes no D1 row.
func TestDailyQualityAgainstD1(t *testing.T) {
	events := captureLog(t)
	db, drv := d1test.New(t)
	const apps = 12_000
	seedQualityCatalogue(t, drv, apps)
	kv := memQualityKV{}
	at := time.Date(2026, 11, 23, 3, 0, 0, 0, time.UTC)
	run := func(u float64) (DailyResult, d1.CostView, int64) {
		t.Helper()
		before := drv.TotalChanges(t)
		ctx, cost := d1.WithCost(context.Background())
		res := RunDaily(ctx, D1Store{DB: db}, kv, u, func() time.Time { return at })
		if res.Error != "" {
			t.Fatalf("daily: %+v", res)
		}
		return res, cost.View(), drv.TotalChanges(t) - before
	}

	res, cost, written := run(0.42)
	sampled := QualityWindows * QualityWindowApps
	if !res.Quality.OK() || res.Quality.Apps != sampled || written != 0 {
		t.Fatalf("a healthy catalogue: %+v below %v, %d rows written", res.Quality, res.Quality.Below(), written)
	}
	for _, f := range res.Quality.Fields {
		if f.Value == nil || *f.Value != 1 {
			t.Errorf("%s: %+v", f.Name, f)
		}
	}
	// The D1 rows the check reads: the sample's apps (at most
	// QualityWindows × QualityWindowApps, however many apps there are),
	// the bounds' 2 index entries, and the windows' list (D1 counts about
	// 60 rows for it: TestPipelineEndToEnd measures a run on D1).
	t.Logf("healthy: %d queries, %d apps sampled of %d enriched apps", cost.Queries, res.Quality.Apps, apps)
	if cost.Queries != 2 || cost.RowsRead != 2 {
		t.Fatalf("two queries, a row returned each: %+v", cost)
	}
	evs := qualityEvents(events())
	if len(evs) != 1 || evs[0]["level"] != logx.Info || evs[0]["below"] != nil {
		t.Fatalf("a healthy check logs one info event: %v", evs)
	}
	var stored map[string]any
	if err := json.Unmarshal([]byte(kv[QualityKey]), &stored); err != nil || stored["checked_at"] != "2026-11-23T03:00:00Z" || stored["ok"] != true {
		t.Fatalf("stored: %s", kv[QualityKey])
	}

	// Languages lost on three apps in ten.
	drv.Exec(t, `UPDATE app_registry SET languages = '[]' WHERE (track_id - 284882215) / 7919 % 10 < 3`)
	res, _, _ = run(0.42)
	if below := res.Quality.Below(); len(below) != 1 || below[0] != "languages" {
		t.Fatalf("languages at 70 %%: below %v (%+v)", below, res.Quality)
	}
	for _, f := range res.Quality.Fields {
		if f.Name == "languages" && (f.OK || *f.Value != 0.7 || f.Threshold != MinLanguages) {
			t.Fatalf("languages: %+v", f)
		}
	}
	evs = qualityEvents(events())
	last := evs[len(evs)-1]
	if last["level"] != logx.Warn || fmt.Sprint(last["below"]) != "[languages]" {
		t.Fatalf("the drop is a warn naming the field: %v", last)
	}
	json.Unmarshal([]byte(kv[QualityKey]), &stored)
	if l, _ := stored["languages"].(map[string]any); stored["ok"] != false || l["ok"] != false || l["value"] != 0.7 || l["threshold"] != MinLanguages {
		t.Fatalf("stored: %s", kv[QualityKey])
	}
	if raw, err := (QualityLog{KV: kv}).LatestQuality(context.Background()); err != nil || string(raw) != kv[QualityKey] {
		t.Fatalf("the log reads what the check stored: %s %v", raw, err)
	}

	// The sample's reads do not grow with the catalogue: five times the
	// apps, the same work (SQLite's own counters).
	bounds := func(lo, hi int64) []any {
		return qualitySampleArgs(SampleBounds(lo, hi, 0.42, QualityWindows), QualityWindowApps)
	}
	span := int64(7919 * apps)
	small := drv.Measure(t, qualitySampleSQL, bounds(284882215, 284882215+span)...)
	_, big := d1test.New(t)
	seedQualityCatalogue(t, big, 5*apps)
	large := big.Measure(t, qualitySampleSQL, bounds(284882215, 284882215+5*span)...)
	t.Logf("sample: %d VM steps over %d apps, %d over %d", small.VMSteps, apps, large.VMSteps, 5*apps)
	// Walked: the windows' list (a temporary table of QualityWindows
	// rows), never app_registry. About 110 VM steps a sampled app: each
	// window read once, not once a sum (which was 9 times as many).
	const maxVMStepsPerApp = 200
	if small.Walked > QualityWindows || large.Walked > QualityWindows || float64(large.VMSteps) > 1.05*float64(small.VMSteps) ||
		small.VMSteps > maxVMStepsPerApp*int64(sampled) {
		t.Fatalf("the sample grows with the catalogue: %+v at %d apps, %+v at %d", small, apps, large, 5*apps)
	}
	if w := drv.Measure(t, qualityBoundsSQL); w.Walked != 0 || w.VMSteps > 100 {
		t.Fatalf("the bounds walk the index: %+v", w)
	}
}

// An empty catalogue: nothing sampled, nothing below, the result stored.
// A failed read keeps the previous result.
func TestDailyQualityEmptyAndFailing(t *testing.T) {
	captureLog(t)
	db, drv := d1test.New(t)
	kv := memQualityKV{}
	res := RunDaily(context.Background(), D1Store{DB: db}, kv, 0.5, time.Now)
	if res.Error != "" || res.Quality.Apps != 0 || !res.Quality.OK() || kv[QualityKey] == "" {
		t.Fatalf("empty: %+v %v", res, kv)
	}
	kv[QualityKey] = "previous"
	drv.FailNext.Store(1)
	if res := RunDaily(context.Background(), D1Store{DB: db}, kv, 0.5, time.Now); !strings.HasPrefix(res.Error, "read:") || kv[QualityKey] != "previous" {
		t.Fatalf("failed read: %+v %v", res, kv)
	}
	failing := failingKV{}
	if res := RunDaily(context.Background(), D1Store{DB: db}, failing, 0.5, time.Now); !strings.HasPrefix(res.Error, "kv put:") {
		t.Fatalf("failed put: %+v", res)
	}
}

type failingKV struct{}

func (failingKV) Put(context.Context, string, string) error { return errors.New("kv down") }
