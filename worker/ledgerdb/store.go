package ledgerdb

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"storecrawl/internal/objects"
	"storecrawl/worker/d1"
)

// Store is what the consumer and the readers need of D1.
type Store interface {
	FactWriter
	MismatchStore
	// FactTotals reads D1's per-counter sums of a writer's facts.
	FactTotals(ctx context.Context, source string) (map[string]int64, error)
	// SourcesInD1 lists every writer D1 has facts from.
	SourcesInD1(ctx context.Context) ([]string, error)
	// SourcesAfter lists up to n writers D1 has facts from, after `after`
	// in source order (reconciliation's pages).
	SourcesAfter(ctx context.Context, after string, n int) ([]string, error)
	// ReconcileCursor and SaveReconcileCursor keep the ledger-reconcile
	// task's cursor: the writer its last run stopped after.
	ReconcileCursor(ctx context.Context) (d1.Cursor, error)
	SaveReconcileCursor(ctx context.Context, c d1.Cursor, source string, at time.Time) error
	// TickMinutes reads a crawl target's tick minutes in [first, last]
	// (minute starts, unix ms), by time.
	TickMinutes(ctx context.Context, source string, first, last int64) ([]TickMinute, error)
	// LimiterTotals sums every limiter key's minutes in [first, last].
	LimiterTotals(ctx context.Context, first, last int64) ([]LimiterSummary, error)
	// PipelineCounts reads the trigger-kept dashboard counters.
	PipelineCounts(ctx context.Context) (map[string]int64, error)
	// SaveDeadLetters records dead letters once each.
	SaveDeadLetters(ctx context.Context, ds []DeadLetter) error
	// DeadLetters is a page of dead letters, newest first, after cursor
	// ("" from the first), and the next page's cursor ("" at the end).
	DeadLetters(ctx context.Context, limit int, cursor string) ([]json.RawMessage, string, error)
	// DeadLettersToReplay reads the dead letter messageID, or (messageID
	// "") up to limit not yet replayed, oldest first.
	DeadLettersToReplay(ctx context.Context, messageID string, limit int) ([]DeadLetterRef, error)
	// MarkReplayed stamps a dead letter replayed at.
	MarkReplayed(ctx context.Context, messageID string, at time.Time) error
}

// The reads (HotQueries lists the ones on hot paths for the plan test).
const (
	// factTotalsSQL: reconciliation, by fact_totals' primary key.
	factTotalsSQL = `SELECT counter, total FROM fact_totals WHERE source = ?`
	// historyTicksSQL: a target's minutes in a window, one range of
	// fact_minutes' primary key (source, minute): it reads the rows it returns.
	historyTicksSQL = `SELECT minute, ticks, dispatched, completed, failed, rate_limited, item_errors, capacity, cooldown_ats,
  lookup_requests, page_requests, lookup_refusals, page_refusals
FROM fact_minutes WHERE source = ? AND minute >= ? AND minute <= ? ORDER BY minute`
	// historyLimitersSQL: every limiter key's minutes in a window, summed
	// per key. The keys come from fact_totals (a few rows per writer;
	// 'limiter;' is the next string after 'limiter:…'), so each key is one
	// range of (source, minute): a range over the keys alone would read
	// every minute of every key.
	historyLimitersSQL = `SELECT source, SUM(allowed) AS allowed, SUM(refused) AS refused, SUM(waited) AS waited FROM fact_minutes
WHERE source IN (SELECT source FROM fact_totals WHERE source >= 'limiter:' AND source < 'limiter;' AND counter = '_facts')
  AND minute >= ? AND minute <= ?
GROUP BY source`
	// sourcesSQL: every writer D1 has facts from; fact_totals holds a few
	// rows per writer, so reading it whole is cheap by design.
	sourcesSQL = `SELECT source FROM fact_totals WHERE counter = '_facts' ORDER BY source`
	// sourcesAfterSQL: a page of writers, one range of fact_totals' primary
	// key from the cursor (a few rows per writer read, n writers returned).
	sourcesAfterSQL = `SELECT source FROM fact_totals WHERE source > ? AND counter = '_facts' ORDER BY source LIMIT ?`
	// pipelineCountsSQL: the trigger-kept counters (five rows); the
	// pending apps are derived from them (PipelineCounts).
	pipelineCountsSQL = `SELECT name, n FROM pipeline_counters`
	// deadLettersSQL is a page of dead letters, newest first, after the
	// cursor (?1 the last received_at, ?2 its rowid; ?3 the page size): a
	// range of idx_dead_letters_received, whose implicit rowid breaks ties.
	deadLettersSQL = `SELECT json_object('message_id', message_id, 'queue', queue, 'event_type', event_type,
  'body', body, 'body_bytes', body_bytes, 'body_kept', body_r2_key IS NOT NULL, 'replayed_at', replayed_at,
  'replays', replays, 'received_at', received_at) AS record, received_at AS k, rowid AS r
FROM dead_letters WHERE received_at <= ?1 AND (received_at < ?1 OR rowid > ?2)
ORDER BY received_at DESC, rowid LIMIT ?3`
	// deadLettersToReplaySQL: the replay's pick, by idx_dead_letters_unreplayed.
	deadLettersToReplaySQL = `SELECT message_id, queue, COALESCE(body_r2_key, '') AS body_r2_key FROM dead_letters
WHERE replayed_at IS NULL ORDER BY received_at LIMIT ?`
	deadLetterByIDSQL = `SELECT message_id, queue, COALESCE(body_r2_key, '') AS body_r2_key FROM dead_letters WHERE message_id = ?`
)

// HotQueries lists the ledger's, the dashboard's and the dead letters' reads,
// and the facts-prune task's statements.
func HotQueries() []d1.NamedQuery {
	return []d1.NamedQuery{
		{Name: "fact totals", SQL: factTotalsSQL, Args: []any{"controller:main"}},
		{Name: "writers page", SQL: sourcesAfterSQL, Args: []any{"limiter:client:a", ReconcileBatch}},
		{Name: "history ticks", SQL: historyTicksSQL, Args: []any{"controller:main", 0, 1 << 50}},
		{Name: "history limiters", SQL: historyLimitersSQL, Args: []any{0, 1 << 50}},
		{Name: "facts prune", SQL: pruneFactsSQL, Args: []any{"controller:main", 1 << 50, PruneBatchRows}},
		{Name: "fact minutes prune", SQL: pruneMinutesSQL, Args: []any{"controller:main", "controller:main", 1 << 50, PruneBatchRows}},
		d1.CursorHotQuery(pruneCursorName),
		{Name: "dead letters, first page", SQL: deadLettersSQL, Args: []any{d1.TopText, 0, 20}, Page: true},
		{Name: "dead letters, a page deep", SQL: deadLettersSQL, Args: []any{"2025-12-31T12:00:00.000Z", 1000, 20}, Page: true},
		{Name: "dead letters to replay", SQL: deadLettersToReplaySQL, Args: []any{ReplayBatch},
			Bounded: "the oldest unreplayed: idx_dead_letters_unreplayed in order, stopped by the LIMIT (ReplayBatch); a replayed letter leaves the index"},
		{Name: "dead letter by id", SQL: deadLetterByIDSQL, Args: []any{"m1"}},
		{Name: "facts present", SQL: factsPresentSQL(2), Args: []any{"a", "b"}},
		{Name: "open mismatches", SQL: openMismatchesSQL(2), Args: []any{"controller:main", "scheduler"}},
		{Name: "open mismatches list", SQL: listOpenMismatchesSQL, Args: []any{MismatchListCap}},
		{Name: "repaired mismatches list", SQL: listClosedMismatchesSQL, Args: []any{MismatchListCap}},
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

func (s D1Store) SourcesAfter(ctx context.Context, after string, n int) ([]string, error) {
	var rows []struct {
		Source string `json:"source"`
	}
	if err := s.DB.Query(ctx, &rows, sourcesAfterSQL, after, n); err != nil {
		return nil, err
	}
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.Source
	}
	return out, nil
}

func (s D1Store) ReconcileCursor(ctx context.Context) (d1.Cursor, error) {
	return d1.ReadCursor(ctx, s.DB, reconcileCursorName)
}

// SaveReconcileCursor writes the cursor's one row when it moved.
func (s D1Store) SaveReconcileCursor(ctx context.Context, c d1.Cursor, source string, at time.Time) error {
	_, err := c.Save(ctx, s.DB, source, at)
	return err
}

// tickMinuteRow is a fact_minutes row as historyTicksSQL selects it.
type tickMinuteRow struct {
	Minute      int64    `json:"minute"`
	Ticks       int64    `json:"ticks"`
	Dispatched  int64    `json:"dispatched"`
	Completed   int64    `json:"completed"`
	Failed      int64    `json:"failed"`
	RateLimited int64    `json:"rate_limited"`
	ItemErrors  int64    `json:"item_errors"`
	Capacity    *float64 `json:"capacity"`
	CooldownAts string   `json:"cooldown_ats"` // JSON array
	LookupReqs  int64    `json:"lookup_requests"`
	PageReqs    int64    `json:"page_requests"`
	LookupRefs  int64    `json:"lookup_refusals"`
	PageRefs    int64    `json:"page_refusals"`
}

func (s D1Store) TickMinutes(ctx context.Context, source string, first, last int64) ([]TickMinute, error) {
	var rows []tickMinuteRow
	if err := s.DB.Query(ctx, &rows, historyTicksSQL, source, first, last); err != nil {
		return nil, err
	}
	out := make([]TickMinute, len(rows))
	for i, r := range rows {
		out[i] = TickMinute{Minute: r.Minute, Ticks: r.Ticks, Dispatched: r.Dispatched, Completed: r.Completed, Failed: r.Failed,
			RateLimited: r.RateLimited, ItemErrors: r.ItemErrors, Capacity: r.Capacity,
			LookupRequests: r.LookupReqs, PageRequests: r.PageReqs, LookupRefusals: r.LookupRefs, PageRefusals: r.PageRefs}
		json.Unmarshal([]byte(r.CooldownAts), &out[i].CooldownAts) // the trigger writes a JSON array of integers
	}
	return out, nil
}

func (s D1Store) LimiterTotals(ctx context.Context, first, last int64) ([]LimiterSummary, error) {
	var rows []struct {
		Source  string `json:"source"`
		Allowed int64  `json:"allowed"`
		Refused int64  `json:"refused"`
		Waited  int64  `json:"waited"`
	}
	if err := s.DB.Query(ctx, &rows, historyLimitersSQL, first, last); err != nil {
		return nil, err
	}
	out := make([]LimiterSummary, len(rows))
	for i, r := range rows {
		out[i] = LimiterSummary{Key: strings.TrimPrefix(r.Source, objects.SourceLimiterPrefix), Allowed: r.Allowed, Refused: r.Refused, Waited: r.Waited}
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
	return pendingFromSettled(out), nil
}

// pendingFromSettled derives apps_pending: the known apps less the
// settled ones, enriched or unavailable (not found, given up). The
// triggers keep no pending counter (migrations/0028): an insert then
// moves one counter, an enrichment one, a refresh none.
func pendingFromSettled(c map[string]int64) map[string]int64 {
	c["apps_pending"] = c["apps_known"] - c["apps_enriched"] - c["apps_unavailable"]
	delete(c, "apps_unavailable")
	return c
}

func (s D1Store) SaveDeadLetters(ctx context.Context, ds []DeadLetter) error {
	_, err := s.DB.Exec(ctx, DeadLetterStatements(ds)...)
	return err
}

func (s D1Store) DeadLettersToReplay(ctx context.Context, messageID string, limit int) ([]DeadLetterRef, error) {
	var refs []DeadLetterRef
	var err error
	if messageID != "" {
		err = s.DB.Query(ctx, &refs, deadLetterByIDSQL, messageID)
	} else {
		err = s.DB.Query(ctx, &refs, deadLettersToReplaySQL, limit)
	}
	return refs, err
}

func (s D1Store) MarkReplayed(ctx context.Context, messageID string, at time.Time) error {
	_, err := s.DB.Exec(ctx, d1.Stmt{SQL: `UPDATE dead_letters SET replayed_at = ?, replays = replays + 1 WHERE message_id = ?`,
		Args: []any{d1.Time(at), messageID}})
	return err
}

func (s D1Store) DeadLetters(ctx context.Context, limit int, cursor string) ([]json.RawMessage, string, error) {
	k, r := d1.TopText, int64(0)
	if cursor != "" {
		if err := d1.DecodeCursor(cursor, &k, &r); err != nil {
			return nil, "", err
		}
	}
	var rows []struct {
		Record string `json:"record"`
		K      string `json:"k"`
		R      int64  `json:"r"`
	}
	if err := s.DB.Query(ctx, &rows, deadLettersSQL, k, r, limit); err != nil {
		return nil, "", err
	}
	out := make([]json.RawMessage, 0, len(rows))
	for _, r := range rows {
		out = append(out, json.RawMessage(r.Record))
	}
	next := ""
	if len(rows) == limit && limit > 0 {
		last := rows[len(rows)-1]
		next = d1.EncodeCursor(last.K, last.R)
	}
	return out, next, nil
}

// The prune statements (HotQueries lists them for the plan test).
const (
	// pruneFactsSQL: a writer's oldest facts before the cutoff, walked on
	// idx_facts_source_at (it holds the id) from the writer's first entry,
	// so the subquery reads the rows it deletes; each is then deleted by
	// its primary key. RETURNING counts them.
	pruneFactsSQL = `DELETE FROM facts WHERE id IN (SELECT id FROM facts WHERE source = ? AND at < ? ORDER BY at LIMIT ?) RETURNING 1 AS pruned`
	// pruneMinutesSQL: the same over fact_minutes' primary key (source, minute).
	pruneMinutesSQL = `DELETE FROM fact_minutes WHERE source = ? AND minute IN
  (SELECT minute FROM fact_minutes WHERE source = ? AND minute < ? ORDER BY minute LIMIT ?) RETURNING 1 AS pruned`
)

func (s D1Store) PruneFacts(ctx context.Context, source string, before int64, n int) (int64, error) {
	return s.DB.Exec(ctx, d1.Stmt{SQL: pruneFactsSQL, Args: []any{source, before, n}})
}

func (s D1Store) PruneMinutes(ctx context.Context, source string, before int64, n int) (int64, error) {
	return s.DB.Exec(ctx, d1.Stmt{SQL: pruneMinutesSQL, Args: []any{source, source, before, n}})
}

func (s D1Store) PruneCursor(ctx context.Context) (d1.Cursor, error) {
	return d1.ReadCursor(ctx, s.DB, pruneCursorName)
}

// SavePruneCursor writes the cursor's one row when it moved.
func (s D1Store) SavePruneCursor(ctx context.Context, c d1.Cursor, source string, at time.Time) error {
	_, err := c.Save(ctx, s.DB, source, at)
	return err
}
