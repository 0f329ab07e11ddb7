package guard

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"storecrawl/worker/d1"
	"storecrawl/worker/logx"
)

// Sources: the invocation kinds whose spend usage_months sums, a row each
// a month.
const (
	SourceCron       = "cron"       // cron runs (RunCron)
	SourceScheduler  = "scheduler"  // the SchedulerDO's task runs (RunPeriodic)
	SourceQueue      = "queue"      // queue consumer batches
	SourceController = "controller" // the EnrichmentController's runs, sampled
)

// sampleMonth is the month key of the controller's last sampled lifetime
// totals (no month sorts before it; MonthUsage never reads it).
const sampleMonth = ""

// RecordRowsWritten is what one Record costs D1: its upsert writes the
// source's row of the month (usage_months has no secondary index). The
// record counts it in its own usage.
const RecordRowsWritten = 1

// columns are usage_months' counters, in Products' order.
var columns = func() []string {
	out := make([]string, len(Products))
	for i, p := range Products {
		out[i] = p.Key
	}
	return out
}()

func (u Usage) args() []any {
	out := make([]any, len(columns))
	for i, c := range columns {
		out[i] = u.Of(c)
	}
	return out
}

// upsertSQL adds (op "+") or sets (op "") a row's counters.
func upsertSQL(add bool) string {
	sets := make([]string, len(columns))
	for i, c := range columns {
		if add {
			sets[i] = fmt.Sprintf("%s = %s + excluded.%s", c, c, c)
		} else {
			sets[i] = fmt.Sprintf("%s = excluded.%s", c, c)
		}
	}
	return `INSERT INTO usage_months (month, source, ` + strings.Join(columns, ", ") + `) VALUES (?, ?, ` +
		d1.Placeholders(len(columns)) + `) ON CONFLICT (month, source) DO UPDATE SET ` + strings.Join(sets, ", ")
}

var (
	addSQL = upsertSQL(true)
	setSQL = upsertSQL(false)
	// monthSQL: the month's rows, one a source, by the primary key.
	monthSQL = `SELECT ` + sums() + ` FROM usage_months WHERE month = ?`
	// sampleSQL: the controller's last sample, by the primary key.
	sampleSQL = `SELECT ` + strings.Join(columns, ", ") + ` FROM usage_months WHERE month = ? AND source = ?`
)

func sums() string {
	out := make([]string, len(columns))
	for i, c := range columns {
		out[i] = fmt.Sprintf("COALESCE(SUM(%s), 0) AS %s", c, c)
	}
	return strings.Join(out, ", ")
}

// AddStatement adds u to source's row of the month holding now.
func AddStatement(source string, u Usage, now time.Time) d1.Stmt {
	return d1.Stmt{SQL: addSQL, Args: append([]any{Month(now), source}, u.args()...)}
}

// D1Store keeps usage in usage_months.
type D1Store struct{ DB *d1.DB }

// Record adds an invocation's spend (and the record's own row) to
// source's row of the month: one statement, one row written.
func (s D1Store) Record(ctx context.Context, source string, u Usage, now time.Time) error {
	u.D1RowsWritten += RecordRowsWritten
	_, err := s.DB.Exec(ctx, AddStatement(source, u, now))
	return err
}

// MonthUsage is the month-to-date usage of the month holding now: one
// read of at most one row a source.
func (s D1Store) MonthUsage(ctx context.Context, now time.Time) (Usage, error) {
	var rows []Usage
	if err := s.DB.Query(ctx, &rows, monthSQL, Month(now)); err != nil || len(rows) == 0 {
		return Usage{}, err
	}
	return rows[0], nil
}

// SampleRowsRead and SampleRowsWritten are what one SampleController
// costs D1 (its read of the last sample; the month's add and the new
// base), counted by the crawl cycle's cron run that samples.
const (
	SampleRowsRead    = 1
	SampleRowsWritten = 2
)

// SampleController adds what the EnrichmentController's lifetime totals
// grew by since the last sample to this month's controller row, and keeps
// them as the next sample's base: one read, two rows written (counted by
// the invocation that samples, the crawl cycle's cron run). Totals
// below the last sample (an operator reset them) count from zero. A
// sample's growth is charged to the month it is taken in, so the first
// sample of a month carries the previous month's last minutes (at most
// one crawl cycle's worth, 5 minutes).
func (s D1Store) SampleController(ctx context.Context, lifetime Usage, now time.Time) (Usage, error) {
	var rows []Usage
	if err := s.DB.Query(ctx, &rows, sampleSQL, sampleMonth, SourceController); err != nil {
		return Usage{}, err
	}
	grew := lifetime
	if len(rows) > 0 {
		grew = SampleGrowth(rows[0], lifetime)
	}
	_, err := s.DB.ExecAtomic(ctx,
		AddStatement(SourceController, grew, now),
		d1.Stmt{SQL: setSQL, Args: append([]any{sampleMonth, SourceController}, lifetime.args()...)})
	return grew, err
}

// SampleGrowth is what lifetime totals grew by since last: product by
// product, and a product whose total fell (the counters were reset) from
// zero.
func SampleGrowth(last, lifetime Usage) Usage {
	out := lifetime.Minus(last)
	lr := lifetime.refs()
	for k, p := range out.refs() {
		if *p < 0 {
			*p = *lr[k]
		}
	}
	return out
}

// Pending is spend an instance saw outside the recorded invocations (its
// HTTP requests and their D1 rows), added to the next Record it makes. An
// instance evicted before its next record loses it: a lower bound.
type Pending struct {
	mu sync.Mutex
	u  Usage
}

// Add adds u.
func (p *Pending) Add(u Usage) {
	p.mu.Lock()
	p.u = p.u.Plus(u)
	p.mu.Unlock()
}

// Take returns what is pending and clears it.
func (p *Pending) Take() Usage {
	p.mu.Lock()
	defer p.mu.Unlock()
	u := p.u
	p.u = Usage{}
	return u
}

// Reader is what the guard reads usage through.
type Reader interface {
	MonthUsage(ctx context.Context, now time.Time) (Usage, error)
}

// CacheTTL is how long an instance keeps a decision: the month's
// projection moves slowly, and each read is a D1 query.
const CacheTTL = 5 * time.Minute

// Status is what /v1/enrichment/status shows as cost_guard.
type Status struct {
	Throttle
	Projection Projection `json:"projection"`
	// Error says why usage could not be read (the guard then slows
	// nothing: it never stops work on a failed read).
	Error string `json:"error,omitempty"`
}

// Guard decides from a Reader's usage, a decision per CacheTTL per
// instance, and logs cost_guard.throttling (warn) when the stage it
// decides rises. Use one per instance, by pointer.
type Guard struct {
	Reader    Reader
	BudgetUSD float64

	mu     sync.Mutex
	at     time.Time
	status Status
	stage  int
}

// Status is the guard's decision at now, read again once CacheTTL passed.
func (g *Guard) Status(ctx context.Context, now time.Time) Status {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.at.IsZero() && now.Sub(g.at) < CacheTTL && now.Sub(g.at) >= 0 {
		return g.status
	}
	u, err := g.Reader.MonthUsage(ctx, now)
	if err != nil {
		logx.Err("cost_guard.read_failed", err, nil)
		return Status{Throttle: Throttle{State: StateOK, Throttled: []string{}}, Projection: Project(Usage{}, g.BudgetUSD, now), Error: err.Error()}
	}
	p := Project(u, g.BudgetUSD, now)
	st := Status{Throttle: Decide(p), Projection: p}
	if st.Stage > g.stage {
		logx.Event("cost_guard.throttling", map[string]any{"level": logx.Warn, "stage": st.Stage, "throttled": st.Throttled,
			"overage_usd": p.OverageUSD, "budget_usd": p.BudgetUSD, "over_included": p.OverIncluded})
	}
	g.at, g.status, g.stage = now, st, st.Stage
	return st
}
