//go:build !js

package ledgerdb

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"reflect"
	"storecrawl/worker/ratelimit"
	"strings"
	"sync"
	"testing"
	"time"

	"storecrawl/durable/ledger"
	"storecrawl/worker/config"
	"storecrawl/worker/d1"
	"storecrawl/worker/d1/d1test"
	"storecrawl/worker/logx"
)

var ctx = context.Background()

// t0 is a minute boundary: the first bucket of the history tests.
var t0 = time.UnixMilli(1_800_000_000_000).Truncate(time.Minute)

// batchOf encodes facts of one writer as a replication message.
func batchOf(t *testing.T, facts ...ledger.Fact) string {
	t.Helper()
	b, err := json.Marshal(ledger.Batch{Type: ledger.BatchType, Source: facts[0].Source, Facts: facts})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// ticks makes n controller facts, each completing 2 items.
func ticks(n int) []ledger.Fact {
	var out []ledger.Fact
	for i := 0; i < n; i++ {
		out = append(out, ledger.New("controller:main", "controller.tick", t0.Add(time.Duration(i)*time.Second), map[string]int64{"completed": 2, "ticks": 1}, nil))
	}
	return out
}

// totals reads fact_totals of a writer as counter → total.
func totals(t *testing.T, drv *d1test.Driver, source string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for _, r := range drv.Rows(t, `SELECT counter, total FROM fact_totals WHERE source = ?`, source) {
		out[r["counter"].(string)] = int64(r["total"].(float64))
	}
	return out
}

// store puts facts in D1 as the consumer does, in batches of one writer's.
func store(t *testing.T, db *d1.DB, facts ...ledger.Fact) {
	t.Helper()
	order, bySource := groupBySource(facts)
	var stats ConsumerStats
	for _, s := range order {
		for fs := bySource[s]; len(fs) > 0; fs = fs[min(len(fs), ledger.MaxBatchFacts):] {
			if err := HandleFacts(ctx, batchOf(t, fs[:min(len(fs), ledger.MaxBatchFacts)]...), D1Store{DB: db}, &stats, t0); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func TestFactsBatchIsStoredOnce(t *testing.T) {
	db, drv := d1test.New(t)
	var stats ConsumerStats
	body := batchOf(t, ticks(40)...)
	now := t0.Add(time.Minute)
	for delivery := 1; delivery <= 2; delivery++ {
		if err := HandleFacts(ctx, body, D1Store{DB: db}, &stats, now); err != nil {
			t.Fatalf("delivery %d: %v", delivery, err)
		}
	}
	if n := drv.Int(t, `SELECT COUNT(*) FROM facts`); n != 40 {
		t.Fatalf("%d facts in D1, want 40", n)
	}
	if got, want := totals(t, drv, "controller:main"), map[string]int64{"completed": 80, "ticks": 40, ledger.FactsCounter: 40}; !reflect.DeepEqual(got, want) {
		t.Fatalf("fact_totals %v, want %v", got, want)
	}
	if got := stats.View(); got["batches"] != 2 || got["facts"] != 80 || got["inserted"] != 40 || got["duplicates"] != 40 || got["faults_injected"] != 0 {
		t.Fatalf("stats %v", got)
	}
	row := drv.Rows(t, `SELECT counters, data, received_at FROM facts ORDER BY at LIMIT 1`)[0]
	if row["counters"] != `{"completed":2,"ticks":1}` || row["data"] != `{}` || int64(row["received_at"].(float64)) != now.UnixMilli() {
		t.Fatalf("row %v", row)
	}
}

func TestFailureAfterWriteThenRedeliveryIsExactlyOnce(t *testing.T) {
	db, drv := d1test.New(t)
	var stats ConsumerStats
	w := &FailAfterWrite{Writer: D1Store{DB: db}, N: 1}
	body := batchOf(t, ticks(5)...)
	if err := HandleFacts(ctx, body, w, &stats, t0); !errors.Is(err, ErrInjected) {
		t.Fatalf("first delivery: %v, want the injected failure", err)
	}
	if n := drv.Int(t, `SELECT COUNT(*) FROM facts`); n != 5 {
		t.Fatalf("the failed delivery wrote %d facts, want 5 (it fails after writing)", n)
	}
	if err := HandleFacts(ctx, body, w, &stats, t0); err != nil {
		t.Fatalf("redelivery: %v", err)
	}
	// A later batch is not failed: N batches only.
	if err := HandleFacts(ctx, batchOf(t, ticks(1)...), w, &stats, t0); err != nil {
		t.Fatalf("next batch: %v", err)
	}
	if got, want := totals(t, drv, "controller:main"), map[string]int64{"completed": 12, "ticks": 6, ledger.FactsCounter: 6}; !reflect.DeepEqual(got, want) {
		t.Fatalf("fact_totals %v, want %v", got, want)
	}
	// /v1/ledger's "consumer", as the exactly-once integration test reads it.
	want := map[string]int64{"batches": 3, "facts": 11, "inserted": 6, "duplicates": 5, "faults_injected": 1}
	if got := (&Service{Consumer: &stats}).ConsumerStats(); !reflect.DeepEqual(got, want) {
		t.Fatalf("consumer stats %v, want %v", got, want)
	}
}

func TestD1FailureLeavesAFactsBatchRetryable(t *testing.T) {
	db, drv := d1test.New(t)
	var stats ConsumerStats
	body := batchOf(t, ticks(3)...)
	drv.FailNext.Store(1)
	err := HandleFacts(ctx, body, D1Store{DB: db}, &stats, t0)
	if err == nil || errors.Is(err, ledger.ErrBadBatch) || errors.Is(err, ErrInjected) {
		t.Fatalf("D1 failure: %v, want a retryable error", err)
	}
	if n := drv.Int(t, `SELECT COUNT(*) FROM facts`) + drv.Int(t, `SELECT COUNT(*) FROM fact_totals`); n != 0 || stats.Batches.Load() != 0 {
		t.Fatalf("a failed batch left %d rows, %d batches counted", n, stats.Batches.Load())
	}
	if err := HandleFacts(ctx, body, D1Store{DB: db}, &stats, t0); err != nil {
		t.Fatalf("retry: %v", err)
	}
	if got := totals(t, drv, "controller:main"); got["completed"] != 6 || got[ledger.FactsCounter] != 3 {
		t.Fatalf("after the retry: %v", got)
	}
}

// reports is the writers' side: a report per source, or unreachable.
type reports struct {
	bySource map[string]ledger.Report
	asked    []string
	// appended are the facts the writers appended (repairs' ledger.mismatch).
	appended []ledger.Fact
	// repairs are the repair orders the writers took; refuse makes them
	// fail (an unreachable object).
	repairs []ledger.Repair
	refuse  bool
	// now is the writers' clock (t0 when unset).
	now time.Time
}

// LedgerRepair is a writer's repair, as the objects make it: the counters
// less the delta, and the ledger.mismatch fact appended (unsent: pending).
func (r *reports) LedgerRepair(_ context.Context, source string, o ledger.Repair) (ledger.Fact, error) {
	rep, ok := r.bySource[source]
	if !ok || r.refuse {
		return ledger.Fact{}, errors.New("object unreachable")
	}
	repaired, unknown := o.Apply(rep.Counters)
	if unknown != "" {
		return ledger.Fact{}, fmt.Errorf("no counter %q", unknown)
	}
	r.repairs = append(r.repairs, o)
	counters := maps.Clone(rep.Counters)
	maps.Copy(counters, repaired)
	rep.Counters = counters
	at := r.now
	if at.IsZero() {
		at = t0
	}
	f := o.Fact(source, at)
	rep.Appended++
	rep.PendingFacts++
	r.bySource[source] = rep
	r.appended = append(r.appended, f)
	return f, nil
}

func (r *reports) LedgerReport(_ context.Context, source string) (ledger.Report, error) {
	r.asked = append(r.asked, source)
	rep, ok := r.bySource[source]
	if !ok {
		return rep, errors.New("object unreachable")
	}
	return rep, nil
}

func TestReconcileComparesWritersWithD1(t *testing.T) {
	db, drv := d1test.New(t)
	now := t0.Add(time.Hour)
	store(t, db,
		ledger.New("controller:main", "controller.tick", t0, map[string]int64{"completed": 2}, nil),
		ledger.New("controller:main", "controller.tick", t0.Add(time.Second), map[string]int64{"completed": 3}, nil),
		ledger.New("scheduler:v1", "scheduler.task_run", t0, map[string]int64{"runs.charts-refresh": 1}, nil),
		ledger.New("limiter:adhoc", "limiter.minute", t0, map[string]int64{"allowed": 3}, nil),
	)
	rep := &reports{bySource: map[string]ledger.Report{
		"controller:main": {Counters: map[string]int64{"completed": 5}, Appended: 2},
		// One fact never reached D1, and the last send was an hour ago.
		"scheduler:v1":  {Counters: map[string]int64{"runs.charts-refresh": 2}, Appended: 2, LastSentAt: now.Add(-time.Hour).UnixMilli()},
		"limiter:adhoc": {Counters: map[string]int64{"allowed": 3}, Appended: 1},
		// The configured limiters (ratelimit.Limits) are unreachable.
	}}
	svc := &Service{Store: D1Store{DB: db}, Reports: rep, Now: func() time.Time { return now }}
	got := map[string]ledger.Result{}
	page, err := svc.LedgerPage(ctx, "", ReconcileBatch)
	if err != nil || page.Next != "" {
		t.Fatalf("page: %+v %v", page, err)
	}
	for _, r := range page.Writers {
		got[r.Source] = r
	}
	want := map[string]string{"controller:main": ledger.StatusOK, "scheduler:v1": ledger.StatusMismatch, "limiter:adhoc": ledger.StatusOK}
	for key := range ratelimit.Limits {
		want["limiter:"+key] = StatusError
	}
	if len(got) != len(want) {
		t.Fatalf("writers %v, want %v", got, want)
	}
	for src, status := range want {
		if got[src].Status != status {
			t.Errorf("%s: %+v, want %s", src, got[src], status)
		}
	}
	if d := got["scheduler:v1"].Diff; !reflect.DeepEqual(d, map[string]int64{"runs.charts-refresh": 1, ledger.FactsCounter: 1}) {
		t.Errorf("scheduler diff %v", d)
	}
	if got["controller:main"].FactsInD1 != 2 {
		t.Errorf("controller facts in D1: %d", got["controller:main"].FactsInD1)
	}

	// D1 unreadable: every configured writer is an error, and no object is
	// asked (D1 is read first).
	rep.asked = nil
	drv.FailNext.Store(100)
	run := svc.ReconcileRun(ctx)
	drv.FailNext.Store(0)
	summary, ok := run.Summary()
	if ok || !strings.HasPrefix(summary, fmt.Sprintf("%d writers: 0 ok, 0 settling, 0 mismatch, %d error; cursor: ", 2+len(ratelimit.Limits), 2+len(ratelimit.Limits))) || len(rep.asked) != 0 {
		t.Fatalf("with D1 down: %q ok=%v, asked %v", summary, ok, rep.asked)
	}
}

func TestHistoryOverSeededFacts(t *testing.T) {
	db, drv := d1test.New(t)
	tick := func(at time.Duration, c map[string]int64, capacity float64) ledger.Fact {
		return ledger.New("controller:main", "controller.tick", t0.Add(at), c, map[string]any{"capacity_after": capacity})
	}
	store(t, db,
		ledger.New("controller:main", "controller.tick", t0.Add(-time.Minute), map[string]int64{"completed": 1000}, nil), // before the window
		tick(time.Second, map[string]int64{"ticks": 1, "dispatched": 10, "completed": 8, "failed": 2, "rate_limited": 2}, 100),
		ledger.New("controller:main", "controller.baseline", t0.Add(2*time.Second), map[string]int64{"completed": 500}, nil), // not a tick
		tick(30*time.Second, map[string]int64{"ticks": 1, "dispatched": 10, "completed": 10}, 120),
		tick(9*time.Minute, map[string]int64{"ticks": 1, "cooldowns": 1}, 60),
		ledger.New("controller:other", "controller.tick", t0.Add(5*time.Second), map[string]int64{"completed": 7}, nil), // another target
		ledger.New("limiter:upstream-catalogue", "limiter.minute", t0.Add(10*time.Second), map[string]int64{"allowed": 50, "refused": 2}, nil),
		ledger.New("limiter:upstream-catalogue", "limiter.minute", t0.Add(70*time.Second), map[string]int64{"allowed": 30, "waited": 1}, nil),
		ledger.New("limiter:upstream-catalogue", "limiter.minute", t0.Add(-5*time.Minute), map[string]int64{"allowed": 999}, nil), // before the window
		ledger.New("limiter:adhoc", "limiter.minute", t0.Add(20*time.Second), map[string]int64{"allowed": 5}, nil),
		ledger.New("scheduler:v1", "scheduler.task_run", t0.Add(time.Second), map[string]int64{"allowed": 1}, nil), // not a limiter
	)
	now := t0.Add(10 * time.Minute)
	svc := &Service{Store: D1Store{DB: db}, Now: func() time.Time { return now }}
	q := HistoryQuery{Target: "main", Since: t0, Until: now, Bucket: time.Minute}
	h, err := svc.History(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Points) != 2 {
		t.Fatalf("points %+v", h.Points)
	}
	p := h.Points[0]
	if p.T != t0.UnixMilli() || p.Ticks != 2 || p.Dispatched != 20 || p.Completed != 18 || p.Failed != 2 || p.RateLimited != 2 ||
		*p.SuccessRate != 0.9 || p.PacePerMin != 18 || *p.CapacityMin != 120 || p.Cooldown {
		t.Fatalf("first bucket %+v", p)
	}
	last := h.Points[1]
	if last.T != t0.Add(9*time.Minute).UnixMilli() || !last.Cooldown || last.SuccessRate != nil || *last.CapacityMin != 60 {
		t.Fatalf("cooldown bucket %+v", last)
	}
	if !reflect.DeepEqual(h.Cooldowns, []int64{t0.Add(9 * time.Minute).UnixMilli()}) {
		t.Fatalf("cooldowns %v", h.Cooldowns)
	}
	if h.ThroughputPerMin != 1.8 || h.ProjectedPerDay != 2592 {
		t.Fatalf("throughput %v/min, %v/day", h.ThroughputPerMin, h.ProjectedPerDay)
	}
	wantLims := []LimiterSummary{{Key: "adhoc", Allowed: 5}, {Key: "upstream-catalogue", Allowed: 80, Refused: 2, Waited: 1}}
	if !reflect.DeepEqual(h.Limiters, wantLims) {
		t.Fatalf("limiters %+v", h.Limiters)
	}

	// Within the cache's TTL the same window is not read again, even with
	// a new fact in D1; past it, it is.
	store(t, db, tick(5*time.Minute, map[string]int64{"ticks": 1, "dispatched": 1, "completed": 1}, 90))
	calls := drv.Calls.Load()
	now = now.Add(HistoryCacheTTL - time.Second)
	if h2, err := svc.History(ctx, q); err != nil || len(h2.Points) != 2 || drv.Calls.Load() != calls {
		t.Fatalf("cached: %d points, %d D1 calls, %v", len(h2.Points), drv.Calls.Load()-calls, err)
	}
	now = now.Add(time.Second)
	if h3, err := svc.History(ctx, q); err != nil || len(h3.Points) != 3 || drv.Calls.Load() == calls {
		t.Fatalf("after the TTL: %d points, %v", len(h3.Points), err)
	}

	// A D1 failure is an error, never an empty chart.
	drv.FailNext.Store(1)
	if _, err := svc.History(ctx, HistoryQuery{Target: "main", Since: t0.Add(time.Minute), Until: now, Bucket: time.Minute}); err == nil {
		t.Fatal("History with D1 down answered")
	}
}

func TestPipelineCountsFollowTheTriggers(t *testing.T) {
	db, drv := d1test.New(t)
	svc := &Service{Store: D1Store{DB: db}}
	counts := func() map[string]int64 {
		t.Helper()
		c, err := svc.PipelineCounts(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	zero := map[string]int64{"apps_known": 0, "apps_pending": 0, "apps_enriched": 0, "clusters": 0, "opportunities": 0}
	if got := counts(); !reflect.DeepEqual(got, zero) {
		t.Fatalf("empty database: %v", got)
	}
	at := d1.Time(t0)
	drv.Exec(t, `INSERT INTO app_registry (track_id) VALUES (1)`)
	drv.Exec(t, `INSERT INTO app_registry (track_id, enriched_at, enrichment_source) VALUES (2, ?, 'itunes+store')`, at)
	drv.Exec(t, `INSERT INTO app_registry (track_id, enriched_at, enrichment_source) VALUES (3, ?, 'not_found')`, at)
	drv.Exec(t, `INSERT INTO market_clusters (cluster_id, app_count, total_ratings, computed_at) VALUES ('budget', 2, 10, ?), ('chat', 1, 5, ?)`, at, at)
	drv.Exec(t, `INSERT INTO opportunity_scores (cluster_id, score, computed_at) VALUES ('budget', 40, ?)`, at)
	want := map[string]int64{"apps_known": 3, "apps_pending": 1, "apps_enriched": 1, "clusters": 2, "opportunities": 1}
	if got := counts(); !reflect.DeepEqual(got, want) {
		t.Fatalf("after inserts: %v, want %v", got, want)
	}
	drv.Exec(t, `UPDATE app_registry SET enriched_at = ?, enrichment_source = 'itunes+store' WHERE track_id = 1`, at)
	drv.Exec(t, `DELETE FROM app_registry WHERE track_id = 3`)
	want = map[string]int64{"apps_known": 2, "apps_pending": 0, "apps_enriched": 2, "clusters": 2, "opportunities": 1}
	if got := counts(); !reflect.DeepEqual(got, want) {
		t.Fatalf("after enrichment and a delete: %v, want %v", got, want)
	}
}

func TestDeadLettersRecordedOnceAndListedNewestFirst(t *testing.T) {
	db, drv := d1test.New(t)
	st := D1Store{DB: db}
	q := config.DeadLetterQueue
	m1 := DeadMessage{ID: "m1", Body: `{"type":"clusters-ready","clusters":[]}`, Attempts: 4}
	m2 := DeadMessage{ID: "m2", Body: "not json", Attempts: 4}
	m3 := DeadMessage{ID: "m3", Body: `{"type":"app-enriched"}`, Attempts: 4}
	for i, batch := range [][]DeadMessage{{m1}, {m2}, {m3, m1}} { // m1 redelivered last
		if !RecordDeadLetters(ctx, st, nil, q, batch, t0.Add(time.Duration(i)*time.Minute)) {
			t.Fatalf("batch %d not acknowledged", i)
		}
	}
	if n := drv.Int(t, `SELECT COUNT(*) FROM dead_letters`); n != 3 {
		t.Fatalf("%d dead letters, want 3", n)
	}
	svc := &Service{Store: st}
	items, next, err := svc.DeadLetters(ctx, 10, "")
	if err != nil || next != "" {
		t.Fatal(err)
	}
	var got []map[string]any
	for _, it := range items {
		var m map[string]any
		if err := json.Unmarshal(it, &m); err != nil {
			t.Fatalf("%s: %v", it, err)
		}
		got = append(got, m)
	}
	if len(got) != 3 || got[0]["message_id"] != "m3" || got[1]["message_id"] != "m2" || got[2]["message_id"] != "m1" {
		t.Fatalf("order %v", got)
	}
	// m1 keeps its first record; m2's body is kept as it is, with no type.
	if got[2]["received_at"] != d1.Time(t0) || got[2]["event_type"] != "clusters-ready" || got[2]["queue"] != q {
		t.Fatalf("m1 %v", got[2])
	}
	if got[1]["event_type"] != nil || got[1]["body"] != "not json" {
		t.Fatalf("m2 %v", got[1])
	}
	// Pages of one follow each other by their cursors, to the end.
	var ids []string
	for cursor := ""; ; {
		page, next, err := svc.DeadLetters(ctx, 1, cursor)
		if err != nil || len(page) > 1 {
			t.Fatalf("page %s %v", page, err)
		}
		for _, it := range page {
			var m map[string]any
			json.Unmarshal(it, &m)
			ids = append(ids, m["message_id"].(string))
		}
		if next == "" {
			break
		}
		cursor = next
	}
	if strings.Join(ids, ",") != "m3,m2,m1" {
		t.Fatalf("paged %v", ids)
	}
	if _, _, err := svc.DeadLetters(ctx, 1, "5"); !errors.Is(err, d1.ErrBadCursor) {
		t.Fatalf("a cursor not handed out: %v", err)
	}
}

func TestD1FailureLeavesDeadLettersRetryable(t *testing.T) {
	db, drv := d1test.New(t)
	var logs bytes.Buffer
	logx.SetOutput(&logs)
	t.Cleanup(func() { logx.SetOutput(os.Stdout) })
	batch := []DeadMessage{{ID: "m1", Body: `{"type":"x"}`}, {ID: "m2", Body: `{"type":"y"}`}}
	drv.FailNext.Store(1)
	if RecordDeadLetters(ctx, D1Store{DB: db}, nil, config.DeadLetterQueue, batch, t0) {
		t.Fatal("acknowledged a batch D1 did not record")
	}
	if n := drv.Int(t, `SELECT COUNT(*) FROM dead_letters`); n != 0 {
		t.Fatalf("%d rows after a failed batch", n)
	}
	if s := logs.String(); !strings.Contains(s, `"event":"queue.dead_letter_record_failed"`) || strings.Contains(s, `"event":"queue.dead_letter"`) {
		t.Fatalf("logs of a failed batch:\n%s", s)
	}
	logs.Reset()
	if !RecordDeadLetters(ctx, D1Store{DB: db}, nil, config.DeadLetterQueue, batch, t0) {
		t.Fatal("retry not acknowledged")
	}
	if n := drv.Int(t, `SELECT COUNT(*) FROM dead_letters`); n != 2 || strings.Count(logs.String(), `"event":"queue.dead_letter"`) != 2 {
		t.Fatalf("%d rows, logs:\n%s", n, logs.String())
	}
}

// memBucket is an in-memory R2 bucket.
type memBucket struct {
	mu      sync.Mutex
	objects map[string][]byte
	failPut bool
}

func (b *memBucket) Put(_ context.Context, key string, body []byte, _ string, _ map[string]string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.failPut {
		return errors.New("r2 down")
	}
	if b.objects == nil {
		b.objects = map[string][]byte{}
	}
	b.objects[key] = append([]byte(nil), body...)
	return nil
}

func (b *memBucket) Get(_ context.Context, key string) ([]byte, bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	body, ok := b.objects[key]
	return body, ok, nil
}

// A facts batch that died (D1 down before the write) is kept whole and
// replayed in full: D1 then holds every fact, once, however often it is
// replayed; a preview-only row (recorded before bodies were kept) is
// skipped, never replayed truncated.
func TestDeadLetteredFactsReplayInFull(t *testing.T) {
	db, drv := d1test.New(t)
	st := D1Store{DB: db}
	bodies := &memBucket{}
	var facts []ledger.Fact
	for i := range 60 {
		facts = append(facts, ledger.New("scheduler:v1", "scheduler.run", t0.Add(time.Duration(i)*time.Second),
			map[string]int64{"runs": 1}, map[string]any{"summary": strings.Repeat("x", 100)}))
	}
	raw, _ := json.Marshal(ledger.Batch{Type: ledger.BatchType, Source: "scheduler:v1", Facts: facts})
	if len(raw) <= 2000 {
		t.Fatalf("the batch must be longer than the preview: %d", len(raw))
	}
	bodies.failPut = true
	if RecordDeadLetters(ctx, st, bodies, config.DeadLetterQueue, []DeadMessage{{ID: "f1", Body: string(raw)}}, t0) {
		t.Fatal("acknowledged a dead letter whose body was not kept")
	}
	bodies.failPut = false
	if !RecordDeadLetters(ctx, st, bodies, config.DeadLetterQueue, []DeadMessage{{ID: "f1", Body: string(raw)}}, t0) {
		t.Fatal("not recorded")
	}
	drv.Exec(t, `INSERT INTO dead_letters (message_id, queue, body, received_at) VALUES ('old', 'q', '{"type":"facts"', ?)`, d1.Time(t0.Add(-time.Hour)))

	var stats ConsumerStats
	send := func(ctx context.Context, body string) error { return HandleFacts(ctx, body, st, &stats, t0) }
	svc := &Service{Store: st, Bodies: bodies, Now: func() time.Time { return t0.Add(time.Minute) }}
	res, err := svc.ReplayDeadLetters(ctx, "", send)
	if err != nil || len(res.Replayed) != 1 || res.Replayed[0] != "f1" || len(res.Skipped) != 1 || res.Skipped[0].MessageID != "old" || res.More {
		t.Fatalf("replay: %+v %v", res, err)
	}
	if n := drv.Int(t, `SELECT COUNT(*) FROM facts WHERE source = 'scheduler:v1'`); n != 60 {
		t.Fatalf("%d facts in D1 after the replay, want 60", n)
	}
	if tot, _ := st.FactTotals(ctx, "scheduler:v1"); tot["runs"] != 60 {
		t.Fatalf("totals %v", tot)
	}
	// Replayed once: the next replay of everything has nothing to send;
	// replaying it by id again stores nothing twice.
	if res, _ := svc.ReplayDeadLetters(ctx, "", send); len(res.Replayed) != 0 {
		t.Fatalf("replayed again: %+v", res)
	}
	if res, err := svc.ReplayDeadLetters(ctx, "f1", send); err != nil || len(res.Replayed) != 1 {
		t.Fatalf("by id: %+v %v", res, err)
	}
	if n := drv.Int(t, `SELECT COUNT(*) FROM facts WHERE source = 'scheduler:v1'`); n != 60 || stats.Duplicates.Load() != 60 {
		t.Fatalf("%d facts, %d duplicates", n, stats.Duplicates.Load())
	}
	if row := drv.Rows(t, `SELECT replays, replayed_at, body_bytes FROM dead_letters WHERE message_id = 'f1'`)[0]; row["replays"] != 2.0 || row["body_bytes"] != float64(len(raw)) {
		t.Fatalf("row %v", row)
	}
	if _, err := svc.ReplayDeadLetters(ctx, "nope", send); !errors.Is(err, ErrNoSuchDeadLetter) {
		t.Fatalf("unknown id: %v", err)
	}
}

// groupBySource splits facts by writer, writers in first-seen order (the
// consumer stores one writer's facts per batch).
func groupBySource(facts []ledger.Fact) (order []string, bySource map[string][]ledger.Fact) {
	bySource = map[string][]ledger.Fact{}
	for _, f := range facts {
		if bySource[f.Source] == nil {
			order = append(order, f.Source)
		}
		bySource[f.Source] = append(bySource[f.Source], f)
	}
	return order, bySource
}
