package history

import (
	"context"
	"encoding/json"

	"storecrawl/worker/d1"
)

// Store is what the consumer and the readers need of D1.
type Store interface {
	FactWriter
	// FactTotals reads D1's per-counter sums of a writer's facts.
	FactTotals(ctx context.Context, source string) (map[string]int64, error)
	// SourcesInD1 lists every writer D1 has facts from.
	SourcesInD1(ctx context.Context) ([]string, error)
	// TargetFacts reads a writer's facts in [since, until] (unix ms), by time.
	TargetFacts(ctx context.Context, source string, since, until int64) ([]HistoryFact, error)
	// LimiterFacts reads every limiter key's facts in [since, until] (unix ms).
	LimiterFacts(ctx context.Context, since, until int64) ([]HistoryFact, error)
	// PipelineCounts reads the trigger-kept dashboard counters.
	PipelineCounts(ctx context.Context) (map[string]int64, error)
	// SaveDeadLetters records dead letters once each.
	SaveDeadLetters(ctx context.Context, ds []DeadLetter) error
	// DeadLetters lists recorded dead letters as JSON objects, newest first.
	DeadLetters(ctx context.Context, limit, offset int) ([]json.RawMessage, error)
}

// The reads (HotQueries lists the ones on hot paths for the plan test).
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
	// deadLettersSQL lists dead letters, newest first (idx_dead_letters_received).
	deadLettersSQL = `SELECT json_object('message_id', message_id, 'queue', queue, 'event_type', event_type,
  'body', body, 'received_at', received_at) AS record
FROM dead_letters ORDER BY received_at DESC LIMIT ? OFFSET ?`
)

// HotQueries lists the ledger's, the dashboard's and the dead letters' reads.
func HotQueries() []d1.NamedQuery {
	return []d1.NamedQuery{
		{Name: "fact totals", SQL: factTotalsSQL, Args: []any{"controller:main"}},
		{Name: "history ticks", SQL: historyTicksSQL, Args: []any{"controller:main", 0, 1 << 50}},
		{Name: "history limiters", SQL: historyLimitersSQL, Args: []any{0, 1 << 50}},
		{Name: "dead letters", SQL: deadLettersSQL, Args: []any{20, 0}},
	}
}

// D1Store is Store over D1.
type D1Store struct{ DB *d1.DB }

// WriteFacts runs the inserts and returns how many rows they added (their
// RETURNING rows: D1's meta.changes would count the trigger's writes too).
func (s D1Store) WriteFacts(ctx context.Context, stmts []d1.Stmt) (int64, error) {
	return s.DB.Exec(ctx, stmts...)
}

func (s D1Store) FactTotals(ctx context.Context, source string) (map[string]int64, error) {
	var rows []struct {
		Counter string `json:"counter"`
		Total   int64  `json:"total"`
	}
	if err := s.DB.Query(ctx, &rows, factTotalsSQL, source); err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for _, r := range rows {
		out[r.Counter] = r.Total
	}
	return out, nil
}

func (s D1Store) SourcesInD1(ctx context.Context) ([]string, error) {
	var rows []struct {
		Source string `json:"source"`
	}
	if err := s.DB.Query(ctx, &rows, sourcesSQL); err != nil {
		return nil, err
	}
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.Source
	}
	return out, nil
}

// factRow is a facts row as the history reads select it; counters and data
// are JSON text.
type factRow struct {
	Source   string `json:"source"`
	Kind     string `json:"kind"`
	At       int64  `json:"at"`
	Counters string `json:"counters"`
	Data     string `json:"data"`
}

// fact decodes a row (a column that is not a JSON object reads as empty).
func (r factRow) fact() HistoryFact {
	f := HistoryFact{Source: r.Source, Kind: r.Kind, At: r.At}
	json.Unmarshal([]byte(r.Counters), &f.Counters)
	if r.Data != "" {
		json.Unmarshal([]byte(r.Data), &f.Data)
	}
	return f
}

func (s D1Store) TargetFacts(ctx context.Context, source string, since, until int64) ([]HistoryFact, error) {
	return s.facts(ctx, historyTicksSQL, source, since, until)
}

func (s D1Store) LimiterFacts(ctx context.Context, since, until int64) ([]HistoryFact, error) {
	return s.facts(ctx, historyLimitersSQL, since, until)
}

func (s D1Store) facts(ctx context.Context, sql string, args ...any) ([]HistoryFact, error) {
	var rows []factRow
	if err := s.DB.Query(ctx, &rows, sql, args...); err != nil {
		return nil, err
	}
	out := make([]HistoryFact, len(rows))
	for i, r := range rows {
		out[i] = r.fact()
	}
	return out, nil
}

func (s D1Store) PipelineCounts(ctx context.Context) (map[string]int64, error) {
	var rows []struct {
		Name string `json:"name"`
		N    int64  `json:"n"`
	}
	if err := s.DB.Query(ctx, &rows, pipelineCountsSQL); err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for _, r := range rows {
		out[r.Name] = r.N
	}
	return out, nil
}

func (s D1Store) SaveDeadLetters(ctx context.Context, ds []DeadLetter) error {
	_, err := s.DB.Exec(ctx, DeadLetterStatements(ds)...)
	return err
}

func (s D1Store) DeadLetters(ctx context.Context, limit, offset int) ([]json.RawMessage, error) {
	var rows []struct {
		Record string `json:"record"`
	}
	if err := s.DB.Query(ctx, &rows, deadLettersSQL, limit, offset); err != nil {
		return nil, err
	}
	out := make([]json.RawMessage, 0, len(rows))
	for _, r := range rows {
		out = append(out, json.RawMessage(r.Record))
	}
	return out, nil
}
