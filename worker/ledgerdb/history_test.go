package ledgerdb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"storecrawl/worker/ratelimit"
	"strings"
	"testing"
	"time"

	"storecrawl/durable/ledger"
	"storecrawl/worker/config"
	"storecrawl/worker/d1"
)

// memFacts is D1's facts table in memory: the id is the key, a conflicting
// insert does nothing (as ON CONFLICT (id) DO NOTHING).
type memFacts struct {
	rows map[string]d1.Stmt
	fail error
}

func (m *memFacts) WriteFacts(_ context.Context, stmts []d1.Stmt) (int64, error) {
	if m.fail != nil {
		return 0, m.fail
	}
	var n int64
	for _, s := range stmts {
		id := s.Args[0].(string)
		if _, ok := m.rows[id]; !ok {
			m.rows[id] = s
			n++
		}
	}
	return n, nil
}

func batchBody(t *testing.T, n int) string {
	var facts []ledger.Fact
	for i := 0; i < n; i++ {
		facts = append(facts, ledger.New("controller:main", "controller.tick", time.UnixMilli(1_800_000_000_000+int64(i)), map[string]int64{"completed": 2}, nil))
	}
	b, _ := json.Marshal(ledger.Batch{Type: ledger.BatchType, Source: "controller:main", Facts: facts})
	return string(b)
}

func TestHandleFactsIsIdempotentAcrossAFailedDelivery(t *testing.T) {
	db := &memFacts{rows: map[string]d1.Stmt{}}
	var stats ConsumerStats
	w := &FailAfterWrite{Writer: db, N: 1}
	body := batchBody(t, 40)
	if !IsFactsMessage(body) || IsFactsMessage(`{"type":"app-enriched"}`) {
		t.Fatal("IsFactsMessage")
	}
	now := time.UnixMilli(1_800_000_100_000)
	// First delivery: written, then the injected failure (the queue retries).
	if err := HandleFacts(context.Background(), body, w, &stats, now); !errors.Is(err, ErrInjected) {
		t.Fatalf("first delivery: %v", err)
	}
	// Redelivery: nothing new, acked (the writer failed its one batch).
	if err := HandleFacts(context.Background(), body, w, &stats, now); err != nil {
		t.Fatalf("redelivery: %v", err)
	}
	v := stats.View()
	if len(db.rows) != 40 || v["inserted"] != 40 || v["duplicates"] != 40 || v["faults_injected"] != 1 || v["batches"] != 2 {
		t.Fatalf("rows %d, stats %v", len(db.rows), v)
	}
	// A D1 failure is retried (an error that is not a bad batch), nothing lost.
	db.fail = errors.New("D1 unavailable")
	if err := HandleFacts(context.Background(), batchBody(t, 3), w, &stats, now); err == nil || errors.Is(err, ledger.ErrBadBatch) || errors.Is(err, ErrInjected) {
		t.Fatalf("D1 failure: %v", err)
	}
	// A malformed batch goes to the dead-letter queue.
	if err := HandleFacts(context.Background(), `{"type":"facts","source":"x","facts":[]}`, w, &stats, now); !errors.Is(err, ledger.ErrBadBatch) {
		t.Fatalf("bad batch: %v", err)
	}
	// Statements are chunkable inserts keyed by id.
	b, _ := ledger.ParseBatch([]byte(body))
	st := FactStatements(b, now)
	if len(st) != 40 || st[0].Args[0] != b.Facts[0].ID || st[0].Args[4] != `{"completed":2}` {
		t.Fatalf("statements %+v", st[0])
	}
}

func TestParseHistoryQuery(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	parse := func(raw string) (HistoryQuery, string) {
		v, _ := url.ParseQuery(raw)
		q, field, _ := ParseHistoryQuery(v.Get, now)
		return q, field
	}
	q, field := parse("")
	if field != "" || q.Target != "main" || !q.Since.Equal(now.Add(-6*time.Hour)) || q.Bucket != time.Minute {
		t.Fatalf("defaults %+v %s", q, field)
	}
	q, field = parse("since=2026-11-22T10:00:00Z&bucket_s=300")
	if field != "" || !q.Since.Equal(now.Add(-2*time.Hour)) || q.Bucket != 5*time.Minute {
		t.Fatalf("explicit %+v %s", q, field)
	}
	if q, field = parse("since=" + "1795000000000"); field != "" || q.Since.UnixMilli() != 1795000000000 {
		t.Fatalf("unix ms %+v %s", q, field)
	}
	for raw, want := range map[string]string{
		"target=other": "target", "since=soon": "since", "since=2026-11-23T00:00:00Z": "since",
		"since=2026-01-01T00:00:00Z": "since", "bucket_s=59": "bucket_s", "bucket_s=7200": "bucket_s",
		"bucket_s=90": "bucket_s", // the rollups' grain is a minute
	} {
		if _, field := parse(raw); field != want {
			t.Errorf("%s: field %q, want %q", raw, field, want)
		}
	}
}

func TestBuildHistoryBucketsTicks(t *testing.T) {
	until := time.UnixMilli(1_800_000_000_000).Truncate(time.Minute).Add(10 * time.Minute)
	q := HistoryQuery{Target: "main", Since: until.Add(-10 * time.Minute), Until: until, Bucket: time.Minute}
	m0 := q.Since.UnixMilli()
	capacity := func(v float64) *float64 { return &v }
	ticks := []TickMinute{
		{Minute: m0, Ticks: 2, Dispatched: 20, Completed: 18, Failed: 2, RateLimited: 2, Capacity: capacity(120)},
		{Minute: m0 + 9*60000, Ticks: 1, Capacity: capacity(60), CooldownAts: []int64{m0 + 9*60000 + 5000}},
	}
	lims := []LimiterSummary{{Key: "upstream-catalogue", Allowed: 80, Refused: 2, Waited: 1}, {Key: "adhoc", Allowed: 1}}
	h := BuildHistory(q, ticks, lims)
	if len(h.Points) != 2 {
		t.Fatalf("points %+v", h.Points)
	}
	p := h.Points[0]
	if p.T != m0 || p.Dispatched != 20 || p.Completed != 18 || *p.SuccessRate != 0.9 || p.PacePerMin != 18 || *p.CapacityMin != 120 || p.Cooldown {
		t.Fatalf("first bucket %+v", p)
	}
	if last := h.Points[1]; last.SuccessRate != nil || !last.Cooldown || len(h.Cooldowns) != 1 || h.Cooldowns[0] != m0+9*60000+5000 {
		t.Fatalf("cooldown bucket %+v %v", last, h.Cooldowns)
	}
	// 18 completed in the last 10 minutes of a 10-minute window: 1.8/min.
	if h.ThroughputPerMin != 1.8 || h.ProjectedPerDay != 2592 {
		t.Fatalf("throughput %v/min, %v/day", h.ThroughputPerMin, h.ProjectedPerDay)
	}
	if len(h.Limiters) != 2 || h.Limiters[0].Key != "adhoc" || h.Limiters[1] != (LimiterSummary{Key: "upstream-catalogue", Allowed: 80, Refused: 2, Waited: 1}) {
		t.Fatalf("limiters %+v", h.Limiters)
	}

	// Five-minute buckets: each minute falls in one; the bucket's capacity
	// is its latest minute's, its cooldowns all of its minutes', in order.
	q.Bucket = 5 * time.Minute
	ticks = []TickMinute{
		{Minute: m0 + 5*60000, Completed: 1, Capacity: capacity(10), CooldownAts: []int64{m0 + 5*60000 + 900, m0 + 5*60000 + 100}},
		{Minute: m0 + 6*60000, Completed: 4},
		{Minute: m0 + 7*60000, Completed: 5, Capacity: capacity(30), CooldownAts: []int64{m0 + 7*60000}},
	}
	h = BuildHistory(q, ticks, nil)
	if len(h.Points) != 1 || h.Points[0].T != m0+5*60000 || h.Points[0].Completed != 10 || h.Points[0].PacePerMin != 2 || *h.Points[0].CapacityMin != 30 {
		t.Fatalf("five-minute bucket %+v", h.Points)
	}
	if want := []int64{m0 + 5*60000 + 100, m0 + 5*60000 + 900, m0 + 7*60000}; !slices.Equal(h.Cooldowns, want) {
		t.Fatalf("cooldowns %v, want %v", h.Cooldowns, want)
	}
}

// fakeWriters answers reconciliation from maps: one writer consistent, one
// short in D1 long after its last send, one unreachable.
type fakeWriters struct {
	d1      map[string]map[string]int64
	reports map[string]ledger.Report
}

func (f fakeWriters) FactTotals(_ context.Context, s string) (map[string]int64, error) {
	return f.d1[s], nil
}
func (f fakeWriters) LedgerReport(_ context.Context, s string) (ledger.Report, error) {
	r, ok := f.reports[s]
	if !ok {
		return r, errors.New("object unreachable")
	}
	return r, nil
}
func (f fakeWriters) SourcesAfter(_ context.Context, after string, n int) ([]string, error) {
	var out []string
	for _, s := range []string{"limiter:adhoc", "scheduler:v1"} {
		if s > after && len(out) < n {
			out = append(out, s)
		}
	}
	return out, nil
}

func TestReconcileLedgersCoversConfiguredAndKnownWriters(t *testing.T) {
	now := time.UnixMilli(1_800_000_000_000)
	f := fakeWriters{
		d1: map[string]map[string]int64{
			"controller:main": {"completed": 5, ledger.FactsCounter: 2},
			"scheduler:v1":    {"runs.charts-refresh": 1, ledger.FactsCounter: 1},
			"limiter:adhoc":   {"allowed": 3, ledger.FactsCounter: 1},
		},
		reports: map[string]ledger.Report{
			"controller:main": {Counters: map[string]int64{"completed": 5}, Appended: 2},
			"scheduler:v1":    {Counters: map[string]int64{"runs.charts-refresh": 2}, Appended: 2, LastSentAt: now.Add(-time.Hour).UnixMilli()},
			"limiter:adhoc":   {Counters: map[string]int64{"allowed": 3}, Appended: 1},
		},
	}
	p, err := ReconcilePage(context.Background(), f, "", ReconcileBatch, true, func() time.Time { return now })
	if err != nil || p.Next != "" {
		t.Fatalf("page: %+v %v", p, err)
	}
	rs := p.Writers
	got := map[string]string{}
	for _, r := range rs {
		got[r.Source] = r.Status
	}
	want := map[string]string{"controller:main": "ok", "scheduler:v1": "mismatch", "limiter:adhoc": "ok"}
	for key := range ratelimit.Limits { // configured, unreachable here
		want["limiter:"+key] = "error"
	}
	if len(got) != len(want) {
		t.Fatalf("writers %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %s, want %s", k, got[k], v)
		}
	}
	if summary, ok := ReconcileSummary(rs); ok || summary != fmt.Sprintf("%d writers: 2 ok, 0 settling, 1 mismatch, %d error", 3+len(ratelimit.Limits), len(ratelimit.Limits)) {
		t.Fatalf("summary %q ok=%v", summary, ok)
	}
}

func TestDeadLetterRecordsWhatItCanRead(t *testing.T) {
	at := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	d := NewDeadLetter("m1", config.DeadLetterQueue, `{"type":"clusters-ready","clusters":[]}`, at)
	if d.EventType != "clusters-ready" || d.Queue != config.DeadLetterQueue {
		t.Fatalf("%+v", d)
	}
	junk := NewDeadLetter("m2", config.DeadLetterQueue, strings.Repeat("x", 5000), at)
	stmts := DeadLetterStatements([]DeadLetter{d, junk})
	if junk.EventType != "" || len([]rune(junk.Body)) > 2000 || len(stmts) != 2 || stmts[1].Args[2] != nil ||
		!strings.HasPrefix(stmts[0].SQL, "INSERT OR IGNORE INTO dead_letters") || strings.Count(stmts[0].SQL, "?") != len(stmts[0].Args) ||
		stmts[0].Args[6] != "2026-03-01T00:00:00.000Z" || stmts[1].Args[5] != 5000 {
		t.Fatalf("%+v", stmts)
	}
}
