package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"sync/atomic"
	"time"

	"storecrawl/durable/enrichment"
	"storecrawl/durable/ledger"
	"storecrawl/worker/d1"
	"storecrawl/worker/logx"
	"storecrawl/worker/ratelimit"
)

// --- replication: the D1 side ---------------------------------------------

// FactStatements stores a batch: one idempotent insert per fact (a
// redelivered batch inserts nothing; the facts_add_totals trigger fires only
// for rows actually inserted). RETURNING names the rows inserted.
func FactStatements(b ledger.Batch, now time.Time) []d1.Stmt {
	stmts := make([]d1.Stmt, 0, len(b.Facts))
	for _, f := range b.Facts {
		counters, _ := json.Marshal(f.Counters)
		if f.Counters == nil {
			counters = []byte("{}")
		}
		data, _ := json.Marshal(f.Data)
		if f.Data == nil {
			data = []byte("{}")
		}
		stmts = append(stmts, d1.Stmt{
			SQL: `INSERT INTO facts (id, source, kind, at, counters, data, received_at) VALUES (?,?,?,?,?,?,?)
ON CONFLICT (id) DO NOTHING RETURNING id`,
			Args: []any{f.ID, f.Source, f.Kind, f.At, string(counters), string(data), now.UnixMilli()},
		})
	}
	return stmts
}

// FactWriter runs a batch of statements and reports the rows they inserted.
type FactWriter interface {
	WriteFacts(ctx context.Context, stmts []d1.Stmt) (inserted int64, err error)
}

// ConsumerStats count what this isolate's consumer did with facts batches.
type ConsumerStats struct {
	Batches        atomic.Int64
	Facts          atomic.Int64
	Inserted       atomic.Int64
	Duplicates     atomic.Int64 // facts already in D1: a redelivery absorbed
	FaultsInjected atomic.Int64
	// failAfterWrite is how many more batches fail after writing (fault
	// injection for tests: LEDGER_FAULT_FAIL_AFTER_WRITE).
	failAfterWrite atomic.Int64
	armed          atomic.Bool
}

// ArmFaults sets the fault injection once per isolate from its setting.
func (c *ConsumerStats) ArmFaults(n int64) {
	if c.armed.CompareAndSwap(false, true) {
		c.failAfterWrite.Store(n)
	}
}

// View snapshots the stats.
func (c *ConsumerStats) View() map[string]int64 {
	return map[string]int64{
		"batches": c.Batches.Load(), "facts": c.Facts.Load(), "inserted": c.Inserted.Load(),
		"duplicates": c.Duplicates.Load(), "faults_injected": c.FaultsInjected.Load(),
	}
}

// FactsConsumer is this isolate's consumer state.
var FactsConsumer ConsumerStats

// errInjected is the injected failure (the message is retried).
var errInjected = fmt.Errorf("injected failure after write (LEDGER_FAULT_FAIL_AFTER_WRITE)")

// HandleFacts stores one replication message. A bad message returns an
// error wrapping ledger.ErrBadBatch (retried into the dead-letter queue);
// a D1 failure returns an error (retried); redelivery inserts nothing new.
func HandleFacts(ctx context.Context, body string, w FactWriter, stats *ConsumerStats, now time.Time) error {
	b, err := ledger.ParseBatch([]byte(body))
	if err != nil {
		return err
	}
	changed, err := w.WriteFacts(ctx, FactStatements(b, now))
	if err != nil {
		return err
	}
	stats.Batches.Add(1)
	stats.Facts.Add(int64(len(b.Facts)))
	stats.Inserted.Add(changed)
	stats.Duplicates.Add(int64(len(b.Facts)) - changed)
	logx.Event("ledger.facts_stored", map[string]any{"source": b.Source, "facts": len(b.Facts), "inserted": changed})
	if stats.failAfterWrite.Load() > 0 && stats.failAfterWrite.Add(-1) >= 0 {
		stats.FaultsInjected.Add(1)
		return errInjected
	}
	return nil
}

// IsFactsMessage tells a replication batch from a pipeline event.
func IsFactsMessage(body string) bool {
	var probe struct {
		Type string `json:"type"`
	}
	return json.Unmarshal([]byte(body), &probe) == nil && probe.Type == ledger.BatchType
}

// --- reconciliation --------------------------------------------------------

// LedgerSources is where reconciliation reads both sides.
type LedgerSources interface {
	// FactTotals reads D1's per-counter sums of a writer's facts.
	FactTotals(ctx context.Context, source string) (map[string]int64, error)
	// LedgerReport asks the writer object for its counters and unsent facts.
	LedgerReport(ctx context.Context, source string) (ledger.Report, error)
	// SourcesInD1 lists every writer D1 has facts from (ad-hoc limiter keys too).
	SourcesInD1(ctx context.Context) ([]string, error)
}

// LedgerSourceNames are every ledger writer: the controller of each crawl
// target, the scheduler, and the limiter of each configured key.
func LedgerSourceNames() []string {
	out := []string{enrichment.DefaultConfig().Source(), ledger.SourceScheduler}
	var keys []string
	for k := range ratelimit.Limits {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out = append(out, ledger.SourceLimiterPrefix+k)
	}
	return out
}

// ReconcileLedgers compares every writer with D1, logging one
// `ledger.mismatch` event per writer that differs. D1 is read before the
// writer (see ledger.Reconcile). A writer that cannot be read is reported
// with status "error", not skipped.
func ReconcileLedgers(ctx context.Context, src LedgerSources, now func() time.Time) []ledger.Result {
	var out []ledger.Result
	names := LedgerSourceNames()
	if inD1, err := src.SourcesInD1(ctx); err != nil {
		logx.Err("ledger.reconcile_sources_failed", err, nil)
	} else {
		names = mergeSources(names, inD1)
	}
	for _, name := range names {
		d1, err := src.FactTotals(ctx, name)
		var rep ledger.Report
		if err == nil {
			rep, err = src.LedgerReport(ctx, name)
		}
		if err != nil {
			logx.Err("ledger.reconcile_failed", err, map[string]any{"source": name})
			out = append(out, ledger.Result{Source: name, Status: "error"})
			continue
		}
		r := ledger.Reconcile(rep, d1, now())
		r.Source = name
		fields := map[string]any{"source": name, "status": r.Status, "facts_in_d1": r.FactsInD1, "appended": r.Appended, "pending_facts": r.PendingFacts}
		if r.Status == ledger.StatusMismatch {
			fields["level"] = logx.Error
			fields["diff"] = r.Diff
			logx.Event("ledger.mismatch", fields)
		} else {
			logx.Event("ledger.reconciled", fields)
		}
		out = append(out, r)
	}
	return out
}

// mergeSources adds the writers D1 knows to the configured ones, in order.
func mergeSources(configured, inD1 []string) []string {
	seen := map[string]bool{}
	for _, s := range configured {
		seen[s] = true
	}
	out := configured
	for _, s := range inD1 {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// ReconcileSummary is the scheduler task's one-line result.
func ReconcileSummary(rs []ledger.Result) (summary string, ok bool) {
	counts := map[string]int{}
	for _, r := range rs {
		counts[r.Status]++
	}
	summary = fmt.Sprintf("%d writers: %d ok, %d settling, %d mismatch, %d error",
		len(rs), counts[ledger.StatusOK], counts[ledger.StatusSettling], counts[ledger.StatusMismatch], counts["error"])
	return summary, counts["error"] == 0
}

// --- history ---------------------------------------------------------------

// History window bounds.
const (
	DefaultHistoryWindow = 6 * time.Hour
	// MaxHistoryAge: older facts may be gone from the writers, and a wider
	// window reads more D1 rows than a dashboard view should.
	MaxHistoryAge    = 7 * 24 * time.Hour
	DefaultBucket    = time.Minute
	MinBucket        = time.Minute
	MaxBucket        = time.Hour
	maxTargetNameLen = 64
)

// HistoryQuery is a validated /v1/history request.
type HistoryQuery struct {
	Target string
	Since  time.Time
	Until  time.Time
	Bucket time.Duration
}

// Source is the ledger writer the query reads.
func (q HistoryQuery) Source() string { return ledger.SourceControllerPrefix + q.Target }

// ParseHistoryQuery validates target, since (RFC 3339 or unix ms) and
// bucket_s. It returns the offending field on error.
func ParseHistoryQuery(get func(string) string, now time.Time) (HistoryQuery, string, string) {
	q := HistoryQuery{Target: enrichment.DefaultTarget, Until: now, Since: now.Add(-DefaultHistoryWindow), Bucket: DefaultBucket}
	if t := get("target"); t != "" {
		if t != enrichment.DefaultTarget || len(t) > maxTargetNameLen {
			return q, "target", fmt.Sprintf("unknown crawl target %q (have: %s)", t, enrichment.DefaultTarget)
		}
		q.Target = t
	}
	if s := get("since"); s != "" {
		var since time.Time
		if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
			since = time.UnixMilli(ms)
		} else if t, err := time.Parse(time.RFC3339, s); err == nil {
			since = t
		} else {
			return q, "since", "since must be RFC 3339 or unix milliseconds"
		}
		if since.After(now) {
			return q, "since", "since is in the future"
		}
		if now.Sub(since) > MaxHistoryAge {
			return q, "since", fmt.Sprintf("since must be within the last %s", MaxHistoryAge)
		}
		q.Since = since
	}
	if b := get("bucket_s"); b != "" {
		n, err := strconv.Atoi(b)
		d := time.Duration(n) * time.Second
		if err != nil || d < MinBucket || d > MaxBucket {
			return q, "bucket_s", fmt.Sprintf("bucket_s must be an integer in [%d, %d]", int(MinBucket.Seconds()), int(MaxBucket.Seconds()))
		}
		q.Bucket = d
	}
	return q, "", ""
}

// HistoryFact is a fact as history reads it from D1.
type HistoryFact struct {
	Source   string
	Kind     string
	At       int64
	Counters map[string]int64
	Data     map[string]any
}

// HistoryPoint is one bucket of a crawl target's history.
type HistoryPoint struct {
	T           int64    `json:"t"`
	Ticks       int64    `json:"ticks"`
	Dispatched  int64    `json:"dispatched"`
	Completed   int64    `json:"completed"`
	Failed      int64    `json:"failed"`
	RateLimited int64    `json:"rate_limited"`
	ItemErrors  int64    `json:"item_errors"`
	SuccessRate *float64 `json:"success_rate"`     // null when nothing was dispatched
	PacePerMin  float64  `json:"pace_per_min"`     // completed items per minute
	CapacityMin *float64 `json:"capacity_per_min"` // the last estimate in the bucket
	Cooldown    bool     `json:"cooldown"`
}

// LimiterSummary is one limiter key over the window.
type LimiterSummary struct {
	Key     string `json:"key"`
	Allowed int64  `json:"allowed"`
	Refused int64  `json:"refused"`
	Waited  int64  `json:"waited"`
}

// History is the /v1/history answer.
type History struct {
	Target           string           `json:"target"`
	Since            int64            `json:"since"`
	Until            int64            `json:"until"`
	BucketS          int64            `json:"bucket_s"`
	Points           []HistoryPoint   `json:"points"`
	Cooldowns        []int64          `json:"cooldowns"`
	ThroughputPerMin float64          `json:"throughput_per_min"`
	ProjectedPerDay  float64          `json:"projected_per_day"`
	Limiters         []LimiterSummary `json:"limiters"`
}

// ThroughputWindow is the recent span the throughput (and its projection
// per day) is measured over.
const ThroughputWindow = 15 * time.Minute

// BuildHistory buckets a target's tick facts (ascending by time) and sums
// the limiters' minute facts.
func BuildHistory(q HistoryQuery, ticks, limiterFacts []HistoryFact) History {
	h := History{Target: q.Target, Since: q.Since.UnixMilli(), Until: q.Until.UnixMilli(), BucketS: int64(q.Bucket / time.Second),
		Points: []HistoryPoint{}, Cooldowns: []int64{}, Limiters: []LimiterSummary{}}
	bucket := q.Bucket.Milliseconds()
	recentFrom := q.Until.Add(-ThroughputWindow).UnixMilli()
	var recent int64
	byT := map[int64]*HistoryPoint{}
	for _, f := range ticks {
		if f.Kind != "controller.tick" {
			continue
		}
		t := f.At / bucket * bucket
		p := byT[t]
		if p == nil {
			h.Points = append(h.Points, HistoryPoint{T: t})
			p = &h.Points[len(h.Points)-1]
			byT = map[int64]*HistoryPoint{t: p} // facts are in time order: only the last bucket grows
		}
		c := f.Counters
		p.Ticks += c["ticks"]
		p.Dispatched += c["dispatched"]
		p.Completed += c["completed"]
		p.Failed += c["failed"]
		p.RateLimited += c["rate_limited"]
		p.ItemErrors += c["item_errors"]
		if v, ok := f.Data["capacity_after"].(float64); ok {
			p.CapacityMin = &v
		}
		if c["cooldowns"] > 0 {
			p.Cooldown = true
			h.Cooldowns = append(h.Cooldowns, f.At)
		}
		if f.At >= recentFrom {
			recent += c["completed"]
		}
	}
	for i := range h.Points {
		p := &h.Points[i]
		if served := p.Dispatched; served > 0 {
			r := round3(float64(served-p.Failed) / float64(served))
			p.SuccessRate = &r
		}
		p.PacePerMin = round3(float64(p.Completed) / (float64(bucket) / 60000))
	}
	span := min(ThroughputWindow, q.Until.Sub(q.Since))
	if span > 0 {
		h.ThroughputPerMin = round3(float64(recent) / span.Minutes())
		h.ProjectedPerDay = float64(int64(h.ThroughputPerMin * 60 * 24))
	}
	byKey := map[string]*LimiterSummary{}
	for _, f := range limiterFacts {
		key := f.Source[len(ledger.SourceLimiterPrefix):]
		s := byKey[key]
		if s == nil {
			s = &LimiterSummary{Key: key}
			byKey[key] = s
		}
		s.Allowed += f.Counters["allowed"]
		s.Refused += f.Counters["refused"]
		s.Waited += f.Counters["waited"]
	}
	for _, s := range byKey {
		h.Limiters = append(h.Limiters, *s)
	}
	sort.Slice(h.Limiters, func(i, j int) bool { return h.Limiters[i].Key < h.Limiters[j].Key })
	return h
}

// The ledger's D1 reads (LedgerHotQueries lists them for the plan test).
const (
	// factTotalsSQL: reconciliation, by fact_totals' primary key.
	factTotalsSQL = `SELECT counter, total FROM fact_totals WHERE source = ?`
	// historyTicksSQL: a target's facts in a window, by idx_facts_source_at.
	historyTicksSQL = `SELECT kind, at, counters, data FROM facts WHERE source = ? AND at >= ? AND at <= ? ORDER BY at`
	// historyLimitersSQL: every limiter key's facts in a window, a range of
	// idx_facts_source_at ('limiter;' is the next string after 'limiter:…').
	historyLimitersSQL = `SELECT source, counters FROM facts WHERE source >= 'limiter:' AND source < 'limiter;' AND at >= ? AND at <= ?`
	// sourcesSQL: every writer D1 has facts from; fact_totals holds a few
	// rows per writer, so reading it whole is cheap by design.
	sourcesSQL = `SELECT source FROM fact_totals WHERE counter = '_facts' ORDER BY source`
	// pipelineCountsSQL: the trigger-kept counters (five rows).
	pipelineCountsSQL = `SELECT name, n FROM pipeline_counters`
)

// LedgerHotQueries lists the ledger's and the dashboard's reads.
func LedgerHotQueries() []HotQuery {
	return []HotQuery{
		{"fact totals", factTotalsSQL, []any{"controller:main"}},
		{"history ticks", historyTicksSQL, []any{"controller:main", 0, 1 << 50}},
		{"history limiters", historyLimitersSQL, []any{0, 1 << 50}},
	}
}
