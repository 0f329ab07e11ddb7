//go:build !js

package alerts

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"storecrawl/worker/d1"
	"storecrawl/worker/d1/d1test"
)

// queue keeps what was sent.
type queue struct {
	mu   sync.Mutex
	msgs []string
}

func (q *queue) Send(_ context.Context, body string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.msgs = append(q.msgs, body)
	return nil
}

func (q *queue) take() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	m := q.msgs
	q.msgs = nil
	return m
}

// catalogueApps is the catalogue around the watched apps: their history
// rows are never read.
const catalogueApps = 5000

type fixture struct {
	t   *testing.T
	svc *Service
	drv *d1test.Driver
	q   *queue
}

func newFixture(t *testing.T) *fixture {
	db, drv := d1test.New(t)
	q := &queue{}
	return &fixture{t: t, svc: &Service{DB: db, Events: q, AllowLoopback: true, HTTP: http.DefaultClient}, drv: drv, q: q}
}

// run evaluates at now and returns the report and what it cost: queries,
// rows returned and rows written (triggers included).
func (f *fixture) run(now time.Time) (Report, d1.CostView, int64) {
	f.t.Helper()
	ctx, cost := d1.WithCost(context.Background())
	before := f.drv.TotalChanges(f.t)
	rep, err := f.svc.Evaluate(ctx, now)
	if err != nil {
		f.t.Fatal(err)
	}
	return rep, cost.View(), f.drv.TotalChanges(f.t) - before
}

func (f *fixture) watch(kind, target string, at time.Time) Watch {
	f.t.Helper()
	w, err := f.svc.AddWatch(context.Background(), WatchInput{Kind: kind, Target: target}, at)
	if err != nil {
		f.t.Fatal(err)
	}
	return w
}

func (f *fixture) rule(body string, at time.Time) Rule {
	f.t.Helper()
	in, fe := DecodeRule([]byte(body))
	if fe != nil {
		f.t.Fatal(fe)
	}
	r, err := f.svc.AddRule(context.Background(), in, at)
	if err != nil {
		f.t.Fatal(err)
	}
	return r
}

func (f *fixture) alertTypes() map[string]int {
	out := map[string]int{}
	for _, r := range f.drv.Rows(f.t, `SELECT type FROM alerts`) {
		out[r["type"].(string)]++
	}
	return out
}

const hook = `"channel":"webhook","url":"http://127.0.0.1:9/hook"`

// TestEvaluationReadsOnlyNewRowsOfWatches counts what each evaluation
// costs in D1: a catalogue of 5,000 apps with history, two of them
// watched. A run reads the rules, the watches, the cursor and, per
// history table a rule needs, the watched apps' new rows (a seek each);
// a watched keyword's rankings only after the crawl searched it again.
func TestEvaluationReadsOnlyNewRowsOfWatches(t *testing.T) {
	f := newFixture(t)
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	ms := func(t time.Time) int64 { return t.UnixMilli() }
	// The catalogue's history, before and after the watches: none of it is watched.
	f.drv.Exec(t, `INSERT INTO app_registry (track_id, name) WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?) SELECT i, 'app ' || i FROM n`, catalogueApps)
	for _, table := range []string{
		`INSERT INTO app_version_history (track_id, seen_at, version) SELECT track_id, ?1, '1.' || track_id FROM app_registry`,
		`INSERT INTO app_price_history (track_id, seen_at, price) SELECT track_id, ?1, 0.99 FROM app_registry`,
		`INSERT INTO app_snapshots (track_id, taken_at, rating_count, average_rating, source) SELECT track_id, ?1, 100, 4.5, 1 FROM app_registry`,
	} {
		f.drv.Exec(t, table, ms(t0.Add(-48*time.Hour)))
		f.drv.Exec(t, table, ms(t0.Add(-10*time.Minute)))
	}

	// No rules: one read.
	rep, c, w := f.run(t0)
	if c.Queries != 1 || w != 0 || rep.Rules != 0 {
		t.Fatalf("no rules: %+v %+v, %d written", rep, c, w)
	}

	watched := f.watch(KindApp, "101", t0.Add(-time.Hour))
	f.watch(KindApp, "202", t0.Add(-time.Hour))
	kw := f.watch(KindKeyword, "budget", t0.Add(-time.Hour))
	f.rule(`{"type":"new_version",`+hook+`}`, t0)
	f.rule(`{"type":"price_change",`+hook+`}`, t0)
	f.rule(`{"type":"rating_drop","drop":0.2,`+hook+`}`, t0)
	rank := f.rule(`{"type":"rank_change","places":2,`+hook+`}`, t0)
	f.rule(`{"type":"new_competitor","watch_id":`+itoa(kw.ID)+`,`+hook+`}`, t0)
	// Watched app 101 changed 5 min ago: a version, a price, a rating drop.
	at := ms(t0.Add(-5 * time.Minute))
	f.drv.Exec(t, `INSERT INTO app_version_history (track_id, seen_at, version) VALUES (101, ?1, '2.0')`, at)
	f.drv.Exec(t, `INSERT INTO app_price_history (track_id, seen_at, price, currency) VALUES (101, ?1, 1.99, 'USD')`, at)
	f.drv.Exec(t, `INSERT INTO app_snapshots (track_id, taken_at, rating_count, average_rating, source) VALUES (101, ?1, 120, 4.2, 1)`, at)
	// 202 had a sweep's copy of its snapshot, unchanged: no alert.
	f.drv.Exec(t, `INSERT INTO app_snapshots (track_id, taken_at, rating_count, average_rating) VALUES (202, ?1, 100, 4.5)`, at)
	// The keyword searched once: its baseline.
	f.drv.Exec(t, `INSERT INTO crawl_keywords (keyword, source, created_at, searched_at) VALUES ('budget', 'title', '2026-11-01T00:00:00.000Z', '2026-11-23T11:00:00.000Z')`)
	for i := int64(1); i <= 60; i++ {
		f.drv.Exec(t, `INSERT INTO crawl_rankings (keyword, track_id, rank, seen_at) VALUES ('budget', ?1, ?2, '2026-11-23T11:00:00.000Z')`, 1000+i, i)
	}

	rep, c, w = f.run(t0)
	t.Logf("first run: %+v; %d queries, %d rows returned, %d written", rep, c.Queries, c.RowsRead, w)
	if got := f.alertTypes(); got[NewVersion] != 1 || got[PriceChange] != 1 || got[RatingDrop] != 1 || len(got) != 3 {
		t.Fatalf("alerts %v", got)
	}
	// Reads: rules, watches, cursor, three history tables, searched
	// keywords, rankings (the top TrackedRanks), names, max id, stale
	// pending alerts; writes: one batch of four statements (alerts, storm
	// counts, the keyword's ranks, the cursor).
	const firstRunQueries = 11 + 4
	// Returned: 5 rules + 3 watches + cursor; the watched apps' rows since
	// the watch: 3 versions, 3 prices, 4 snapshots (202's sweep copy); 1
	// keyword + 50 ranks + 1 name + 1 max id.
	const firstRunRows = 5 + 3 + 1 + 3 + 3 + 4 + 1 + TrackedRanks + 1 + 1
	// Written: 3 alerts, 3 rules' counts, the keyword watch, the cursor.
	const firstRunWritten = 3 + 3 + 1 + 1
	if c.Queries != firstRunQueries || c.RowsRead != firstRunRows || w != firstRunWritten {
		t.Fatalf("first run: %d queries (want %d), %d rows returned (want %d), %d written (want %d)", c.Queries, firstRunQueries, c.RowsRead, firstRunRows, w, firstRunWritten)
	}
	if msgs := f.q.take(); len(msgs) != 3 || !IsDeliveryMessage(msgs[0]) {
		t.Fatalf("queued %v", msgs)
	}
	var payload Payload
	json.Unmarshal([]byte(f.drv.Rows(t, `SELECT payload FROM alerts WHERE type = 'new_version'`)[0]["payload"].(string)), &payload)
	if payload.Watch == nil || payload.Watch.ID != watched.ID || payload.Data["from"] != "1.101" || payload.Data["to"] != "2.0" || payload.Text != `app 101 (101) released version 2.0 (was 1.101)` {
		t.Fatalf("payload %+v", payload)
	}

	// Nothing new: the same reads, no history row, no keyword rankings;
	// one row written (the cursor).
	rep, c, w = f.run(t0.Add(5 * time.Minute))
	t.Logf("idle run: %+v; %d queries, %d rows returned, %d written", rep, c.Queries, c.RowsRead, w)
	const idleQueries, idleRows = 8 + 1, 5 + 3 + 1
	if rep.Alerts != 0 || c.Queries != idleQueries || c.RowsRead != idleRows || w != 1 {
		t.Fatalf("idle run: %+v, %d queries (want %d), %d rows (want %d), %d written", rep, c.Queries, idleQueries, c.RowsRead, idleRows, w)
	}

	// The crawl searches the keyword again: 1005 moves up 3 places to 2,
	// 1020 jumps into the top 10 at 9; the rest shift by one.
	f.drv.Exec(t, `UPDATE crawl_keywords SET searched_at = '2026-11-23T12:03:00.000Z' WHERE keyword = 'budget'`)
	f.drv.Exec(t, `UPDATE crawl_rankings SET rank = CASE track_id WHEN 1005 THEN 2 WHEN 1020 THEN 9 ELSE rank END WHERE keyword = 'budget'`)
	rep, c, w = f.run(t0.Add(10 * time.Minute))
	got := f.alertTypes()
	if got[RankChange] != 2 || got[NewCompetitor] != 1 {
		t.Fatalf("keyword alerts %v (%+v)", got, rep)
	}
	var rc Payload
	json.Unmarshal([]byte(f.drv.Rows(t, `SELECT payload FROM alerts WHERE type = 'rank_change' AND rule_id = ? ORDER BY id LIMIT 1`, rank.ID)[0]["payload"].(string)), &rc)
	if rc.Data["keyword"] != "budget" || rc.Data["track_id"] != 1005.0 || rc.Data["from"] != 5.0 || rc.Data["to"] != 2.0 {
		t.Fatalf("rank change %+v", rc)
	}
}

// A storm is bounded: at most MaxAlertsPerRuleHour alerts of a rule in an
// hour, then one summary.
func TestStormIsSummarised(t *testing.T) {
	f := newFixture(t)
	t0 := time.Date(2026, 11, 23, 12, 30, 0, 0, time.UTC)
	kw := f.watch(KindKeyword, "chess", t0.Add(-time.Hour))
	f.rule(`{"type":"rank_change","places":1,`+hook+`}`, t0)
	f.drv.Exec(t, `INSERT INTO crawl_keywords (keyword, source, created_at, searched_at) VALUES ('chess', 'title', '2026-11-01T00:00:00.000Z', '2026-11-23T11:00:00.000Z')`)
	for i := int64(1); i <= TrackedRanks; i++ {
		f.drv.Exec(t, `INSERT INTO crawl_rankings (keyword, track_id, rank, seen_at) VALUES ('chess', ?1, ?2, '2026-11-23T11:00:00.000Z')`, i, i)
	}
	f.run(t0) // the baseline
	// Every app moves: 50 candidates.
	f.drv.Exec(t, `UPDATE crawl_keywords SET searched_at = '2026-11-23T12:31:00.000Z'`)
	f.drv.Exec(t, `UPDATE crawl_rankings SET rank = ?1 + 1 - rank`, TrackedRanks)
	rep, _, _ := f.run(t0.Add(time.Minute))
	got := f.alertTypes()
	if rep.Changes != TrackedRanks || got[RankChange] != MaxAlertsPerRuleHour || got[Summary] != 1 || rep.Suppressed != TrackedRanks-MaxAlertsPerRuleHour {
		t.Fatalf("storm: %+v, alerts %v", rep, got)
	}
	rules, _ := f.svc.Rules(context.Background(), t0.Add(time.Minute))
	if rules[0].SuppressedThisHour != TrackedRanks-MaxAlertsPerRuleHour || rules[0].URL != "http://127.0.0.1:9/…" {
		t.Fatalf("rule %+v", rules[0])
	}
	_ = kw
}

// Reviews fetched again with a surge in the window make one alert; the
// same surge seen again does not make another.
func TestReviewSurgeOncePerWindow(t *testing.T) {
	f := newFixture(t)
	t0 := time.Date(2026, 11, 23, 12, 30, 0, 0, time.UTC)
	f.watch(KindApp, "7", t0.Add(-time.Hour))
	f.rule(`{"type":"review_surge","reviews":3,"max_stars":2,`+hook+`}`, t0)
	for i, stars := range []int{1, 2, 1, 5, 2} {
		f.drv.Exec(t, `INSERT INTO app_reviews (id, app_id, country, rating, title, body, version, author_hash, reviewed_at, sentiment, fetched_at)
VALUES (?1, 7, 'us', ?2, 't', 'b', '1.0', 'h', ?3, 0, ?4)`, itoa(int64(i)), stars, d1.Time(t0.Add(-time.Duration(i+1)*time.Hour)), d1.Time(t0.Add(-10*time.Minute)))
	}
	f.drv.Exec(t, `INSERT INTO review_fetches (app_id, country, fetched_at, reviews) VALUES (7, 'us', ?1, 5)`, d1.Time(t0.Add(-10*time.Minute)))
	rep, _, _ := f.run(t0)
	if got := f.alertTypes(); got[ReviewSurge] != 1 || rep.Alerts != 1 {
		t.Fatalf("surge: %+v %v", rep, got)
	}
	// Fetched again, the same reviews: the surge's window's alert exists.
	f.drv.Exec(t, `UPDATE review_fetches SET fetched_at = ?1`, d1.Time(t0.Add(2*time.Minute)))
	rep, _, _ = f.run(t0.Add(5 * time.Minute))
	if got := f.alertTypes(); got[ReviewSurge] != 1 || rep.Alerts != 0 {
		t.Fatalf("surge again: %+v %v", rep, got)
	}
}

// A delivery posts the signed payload; a failing receiver gets the
// attempts recorded until the last marks the alert failed.
func TestDeliverySignsAndRecordsAttempts(t *testing.T) {
	f := newFixture(t)
	t0 := time.Date(2026, 11, 23, 12, 30, 0, 0, time.UTC)
	var mu sync.Mutex
	status := http.StatusInternalServerError
	var got []byte
	var sig string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		got, _ = io.ReadAll(r.Body)
		sig = r.Header.Get(SignatureHeader)
		w.WriteHeader(status)
	}))
	defer srv.Close()
	f.watch(KindApp, "5", t0.Add(-time.Hour))
	rule := f.rule(`{"type":"new_version","channel":"webhook","url":"`+srv.URL+`/hook"}`, t0)
	slack := f.rule(`{"type":"new_version","channel":"slack","url":"`+srv.URL+`/slack"}`, t0)
	f.drv.Exec(t, `INSERT INTO app_version_history (track_id, seen_at, version) VALUES (5, ?1, '1.0'), (5, ?2, '1.1')`, t0.Add(-2*time.Hour).UnixMilli(), t0.Add(-30*time.Minute).UnixMilli())
	if rep, _, _ := f.run(t0); rep.Alerts != 2 {
		t.Fatalf("%+v", rep)
	}
	msgs := f.q.take()
	ctx := context.Background()
	for attempt := 1; attempt < MaxDeliveryAttempts; attempt++ {
		if err := f.svc.Deliver(ctx, msgs[0], attempt, t0.Add(time.Duration(attempt)*time.Minute)); err == nil {
			t.Fatal("a 500 delivered")
		}
	}
	mu.Lock()
	status = http.StatusNoContent
	mu.Unlock()
	if err := f.svc.Deliver(ctx, msgs[0], MaxDeliveryAttempts, t0.Add(5*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := Verify(rule.Secret, sig, got, t0.Add(5*time.Minute), SignatureTolerance); err != nil {
		t.Fatalf("signature: %v", err)
	}
	var p Payload
	if json.Unmarshal(got, &p) != nil || p.Type != NewVersion || p.Data["to"] != "1.1" || p.ID == 0 {
		t.Fatalf("body %s", got)
	}
	// Delivered again (a duplicate message): nothing is posted.
	got = nil
	if err := f.svc.Deliver(ctx, msgs[0], 1, t0.Add(6*time.Minute)); err != nil || got != nil {
		t.Fatalf("duplicate: %v %s", err, got)
	}
	items, next, err := f.svc.Alerts(ctx, 0, 1)
	if err != nil || len(items) != 1 || next != items[0].ID {
		t.Fatalf("page: %+v %d %v", items, next, err)
	}
	older, _, _ := f.svc.Alerts(ctx, next, 10)
	if len(older) != 1 || older[0].State != "delivered" || older[0].Attempts != MaxDeliveryAttempts {
		t.Fatalf("older page: %+v", older)
	}
	var tries []Attempt
	json.Unmarshal(older[0].Deliveries, &tries)
	if len(tries) != MaxDeliveryAttempts || tries[0].Status != 500 || tries[3].Status != 204 || tries[3].Error != "" {
		t.Fatalf("attempts %+v", tries)
	}
	// Slack gets {"text"}; a receiver that never answers 2xx marks it failed at the last attempt.
	mu.Lock()
	status = http.StatusBadGateway
	mu.Unlock()
	for attempt := 1; attempt <= MaxDeliveryAttempts; attempt++ {
		f.svc.Deliver(ctx, msgs[1], attempt, t0.Add(time.Minute))
	}
	var text map[string]string
	if json.Unmarshal(got, &text) != nil || text["text"] == "" || len(text) != 1 {
		t.Fatalf("slack body %s", got)
	}
	if st := f.drv.Rows(t, `SELECT state, attempts FROM alerts WHERE rule_id = ?`, slack.ID)[0]; st["state"] != "failed" || st["attempts"] != 4.0 {
		t.Fatalf("slack alert %v", st)
	}
}

func TestWatchesAndRulesRefuseBadInput(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	t0 := time.Date(2026, 11, 23, 12, 30, 0, 0, time.UTC)
	app := f.watch(KindApp, "5", t0)
	var conflict *ErrConflict
	if _, err := f.svc.AddWatch(ctx, WatchInput{Kind: KindApp, Target: "5"}, t0); !errors.As(err, &conflict) || conflict.Field != "target" {
		t.Fatalf("duplicate: %v", err)
	}
	f.svc.AllowLoopback = false
	in, _ := DecodeRule([]byte(`{"type":"new_version",` + hook + `}`))
	var fe *FieldError
	if _, err := f.svc.AddRule(ctx, in, t0); !errors.As(err, &fe) || fe.Field != "url" {
		t.Fatalf("loopback refused: %v", err)
	}
	f.svc.AllowLoopback = true
	for body, field := range map[string]string{
		`{"type":"new_version","watch_id":999,` + hook + `}`:                             "watch_id",
		`{"type":"rank_change","places":2,"watch_id":` + itoa(app.ID) + `,` + hook + `}`: "watch_id",
	} {
		in, _ := DecodeRule([]byte(body))
		if _, err := f.svc.AddRule(ctx, in, t0); !errors.As(err, &fe) || fe.Field != field {
			t.Fatalf("%s: %v", body, err)
		}
	}
	if n := f.drv.Int(t, `SELECT count(*) FROM alert_rules`); n != 0 {
		t.Fatalf("%d rules after bad input", n)
	}
	if err := f.svc.DeleteWatch(ctx, 999); !errors.Is(err, ErrNotFound) {
		t.Fatalf("delete unknown: %v", err)
	}
	f.rule(`{"type":"new_version","watch_id":`+itoa(app.ID)+`,`+hook+`}`, t0)
	if err := f.svc.DeleteWatch(ctx, app.ID); err != nil {
		t.Fatal(err)
	}
	if n := f.drv.Int(t, `SELECT count(*) FROM alert_rules`); n != 0 {
		t.Fatalf("the watch's rule outlived it: %d", n)
	}
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }
