package analyst

import (
	"context"
	"encoding/json"
	"time"

	"storecrawl/worker/d1"
	"storecrawl/worker/llm"
)

// Brief states.
const (
	StateQueued  = "queued"  // asked for; its input is not gathered yet
	StateReady   = "ready"   // input and prompt stored; the next call may start
	StateCalling = "calling" // a call is reserved and in flight
	StateDone    = "done"
	StateFailed  = "failed"
)

// Triggers of a brief.
const (
	TriggerSchedule = "schedule"
	TriggerAPI      = "api"
)

// BriefRow is one analyst_briefs row.
type BriefRow struct {
	BriefID          string `json:"brief_id"`
	ClusterID        string `json:"cluster_id"`
	State            string `json:"state"`
	Trigger          string `json:"trigger"`
	Attempt          int    `json:"attempt"`
	Calls            int    `json:"calls"`
	PromptVersion    string `json:"prompt_version"`
	Model            string `json:"model"`
	InputJSON        string `json:"input_json"`
	PromptHash       string `json:"prompt_hash"`
	MessagesJSON     string `json:"messages_json"`
	Answer           string `json:"answer"`
	BriefJSON        string `json:"brief_json"`
	Headline         string `json:"headline"`
	Confidence       string `json:"confidence"`
	Error            string `json:"error"`
	PromptTokens     int64  `json:"prompt_tokens"`
	CompletionTokens int64  `json:"completion_tokens"`
	Cost             int64  `json:"cost_micro_usd"`
	CreatedAt        string `json:"created_at"`
	UpdatedAt        string `json:"updated_at"`
	FinishedAt       string `json:"finished_at"`
}

const briefCols = `brief_id, cluster_id, state, trigger, attempt, calls, prompt_version, model, input_json, prompt_hash,
  messages_json, answer, brief_json, headline, confidence, error, prompt_tokens, completion_tokens, cost_micro_usd,
  created_at, updated_at, finished_at`

// nextOpenSQL is the task's next brief: queued or ready, or calling for
// longer than a call can take (its run crashed), oldest first.
const nextOpenSQL = `SELECT ` + briefCols + ` FROM analyst_briefs
WHERE state IN ('queued', 'ready') OR (state = 'calling' AND updated_at < ?)
ORDER BY created_at, brief_id LIMIT 1`

// topWithoutBriefSQL: of the top clusters by opportunity, those with no
// brief (of any state) created since a given time and whose leaders (the
// first MaxLeaders members by position, those the brief describes) all had
// their reviews fetched (reviews-refresh, which fetches the top clusters'
// members leaders first): a brief stands on the complaint themes, so it
// waits for them. One fetched member among fifty is not enough.
const topWithoutBriefSQL = `SELECT t.cluster_id FROM (SELECT cluster_id, score FROM opportunity_scores ORDER BY score DESC LIMIT ?) t
WHERE NOT EXISTS (SELECT 1 FROM analyst_briefs b WHERE b.cluster_id = t.cluster_id AND b.created_at >= ?)
  AND EXISTS (SELECT 1 FROM crawl_rankings m WHERE m.keyword = t.cluster_id)
  AND NOT EXISTS (SELECT 1 FROM crawl_rankings l
    WHERE l.track_id IN (SELECT track_id FROM crawl_rankings WHERE keyword = t.cluster_id ORDER BY rank, track_id LIMIT ?)
      AND l.keyword = t.cluster_id
      AND NOT EXISTS (SELECT 1 FROM review_fetches f WHERE f.app_id = l.track_id))
ORDER BY t.score DESC, t.cluster_id`

const openForClusterSQL = `SELECT ` + briefCols + ` FROM analyst_briefs WHERE cluster_id = ? AND state IN ('queued', 'ready', 'calling')
ORDER BY created_at DESC LIMIT 1`

// latestBriefSQL: a cluster's newest brief, a done one first.
const latestBriefSQL = `SELECT ` + briefCols + ` FROM analyst_briefs WHERE cluster_id = ?
ORDER BY state = 'done' DESC, created_at DESC LIMIT 1`

const openCountSQL = `SELECT COUNT(*) AS n FROM analyst_briefs WHERE state IN ('queued', 'ready', 'calling')`

// heldSQL is a day's spend: settled and lost calls at their cost, reserved
// ones at their worst case.
const heldSQL = `SELECT COALESCE(SUM(CASE WHEN state = 'reserved' THEN reserved_micro_usd ELSE cost_micro_usd END), 0) AS held FROM llm_spend WHERE day = ?`

// HotQueries are the analyst's reads with sample arguments: TestHotQueriesUseIndexes
// checks their plans on SQLite with the real migrations (no full-table scan),
// worker/queryplan_test.go on a 100,000-app catalogue (no walk of a large table).
func HotQueries() []d1.NamedQuery {
	return []d1.NamedQuery{
		{Name: "analyst next open brief", SQL: nextOpenSQL, Args: []any{"2026-01-01T00:00:00.000Z"}},
		{Name: "analyst latest brief", SQL: latestBriefSQL, Args: []any{"budget"}},
		{Name: "llm spend held", SQL: heldSQL, Args: []any{"2026-01-01"}},
		{Name: "analyst top without brief", SQL: topWithoutBriefSQL, Args: []any{TopClusters, "2026-01-01T00:00:00.000Z", MaxLeaders},
			Bounded: "the top TopClusters of idx_opportunity_scores_score in order, stopped by the subquery's LIMIT"},
		{Name: "analyst top briefs", SQL: topBriefsSQL, Args: []any{TopShown},
			Bounded: "the top TopShown of idx_opportunity_scores_score in order, stopped by the subquery's LIMIT"},
		{Name: "analyst next evaluation step", SQL: nextEvalStepSQL, Args: []any{"2026-01-01T00:00:00.000Z"}},
		{Name: "analyst latest evaluation", SQL: latestEvalSQL, Args: []any{1}},
		{Name: "analyst evaluation steps", SQL: evalStepsSQL, Args: []any{"e1"}},
		{Name: "analyst evaluation segment", SQL: evalSegmentSQL, Args: []any{1}},
		{Name: "analyst evaluation keywords", SQL: evalKeywordsSQL, Args: []any{1, EvalKeywords}},
		{Name: "analyst evaluation apps", SQL: evalAppsSQL, Args: []any{"[1,2]"}},
		{Name: "analyst evaluation reviews fetched", SQL: evalFetchedSQL, Args: []any{"[1,2]"}},
		{Name: "analyst open evaluations", SQL: openEvalCountSQL},
		{Name: "analyst top segments without evaluation", SQL: topSegmentsWithoutEvalSQL, Args: []any{TopSegments, "2026-01-01T00:00:00.000Z", aboveAnyScore}},
	}
}

// Call is one llm_spend row.
type Call struct {
	CallID           string `json:"call_id"`
	Day              string `json:"day"`
	ClusterID        string `json:"cluster_id"`
	BriefID          string `json:"brief_id"`
	State            string `json:"state"`
	EstTokens        int64  `json:"est_tokens"`
	Reserved         int64  `json:"reserved_micro_usd"`
	PromptTokens     int64  `json:"prompt_tokens"`
	CompletionTokens int64  `json:"completion_tokens"`
	Cost             int64  `json:"cost_micro_usd"`
	Outcome          string `json:"outcome"`
	CreatedAt        string `json:"created_at"`
	SettledAt        string `json:"settled_at"`
}

// Store is the analyst's D1 side.
type Store struct{ DB *d1.DB }

func (s Store) one(ctx context.Context, sql string, args ...any) (BriefRow, bool, error) {
	var rows []BriefRow
	if err := s.DB.Query(ctx, &rows, sql, args...); err != nil || len(rows) == 0 {
		return BriefRow{}, false, err
	}
	return rows[0], true, nil
}

// NextOpen is the oldest brief the task can advance.
func (s Store) NextOpen(ctx context.Context, now time.Time) (BriefRow, bool, error) {
	return s.one(ctx, nextOpenSQL, d1.Time(now.Add(-StaleCall)))
}

// Latest is a cluster's newest brief (a done one first).
func (s Store) Latest(ctx context.Context, clusterID string) (BriefRow, bool, error) {
	return s.one(ctx, latestBriefSQL, clusterID)
}

// Get reads one brief.
func (s Store) Get(ctx context.Context, briefID string) (BriefRow, bool, error) {
	return s.one(ctx, `SELECT `+briefCols+` FROM analyst_briefs WHERE brief_id = ?`, briefID)
}

// Calls lists a brief's LLM calls, in order.
func (s Store) Calls(ctx context.Context, briefID string) ([]Call, error) {
	var rows []Call
	err := s.DB.Query(ctx, &rows, `SELECT call_id, day, cluster_id, brief_id, state, est_tokens, reserved_micro_usd, prompt_tokens,
  completion_tokens, cost_micro_usd, outcome, created_at, settled_at FROM llm_spend WHERE brief_id = ? ORDER BY created_at, call_id`, briefID)
	return rows, err
}

// Held is a day's spend plus its reservations, micro-dollars.
func (s Store) Held(ctx context.Context, day string) (llm.MicroUSD, error) {
	var rows []struct {
		Held int64 `json:"held"`
	}
	if err := s.DB.Query(ctx, &rows, heldSQL, day); err != nil || len(rows) == 0 {
		return 0, err
	}
	return rows[0].Held, nil
}

// DaySpend is a day's spend, per cluster.
type DaySpend struct {
	Day       string            `json:"day"`
	Spent     llm.MicroUSD      `json:"spent_micro_usd"`
	Reserved  llm.MicroUSD      `json:"reserved_micro_usd"`
	Calls     int64             `json:"calls"`
	ByCluster []ClusterDaySpend `json:"by_cluster"`
}

// ClusterDaySpend is one cluster's share of a day.
type ClusterDaySpend struct {
	ClusterID string       `json:"cluster_id"`
	Spent     llm.MicroUSD `json:"spent_micro_usd"`
	Calls     int64        `json:"calls"`
}

// Spend sums a day's ledger rows, per cluster (largest first).
func (s Store) Spend(ctx context.Context, day string) (DaySpend, error) {
	var rows []struct {
		ClusterID string `json:"cluster_id"`
		Spent     int64  `json:"spent"`
		Reserved  int64  `json:"reserved"`
		Calls     int64  `json:"calls"`
	}
	err := s.DB.Query(ctx, &rows, `SELECT cluster_id, SUM(CASE WHEN state = 'reserved' THEN 0 ELSE cost_micro_usd END) AS spent,
  SUM(CASE WHEN state = 'reserved' THEN reserved_micro_usd ELSE 0 END) AS reserved, COUNT(*) AS calls
FROM llm_spend WHERE day = ? GROUP BY cluster_id ORDER BY spent DESC, cluster_id`, day)
	out := DaySpend{Day: day, ByCluster: []ClusterDaySpend{}}
	for _, r := range rows {
		out.Spent += r.Spent
		out.Reserved += r.Reserved
		out.Calls += r.Calls
		out.ByCluster = append(out.ByCluster, ClusterDaySpend{ClusterID: r.ClusterID, Spent: r.Spent, Calls: r.Calls})
	}
	return out, err
}

// StatusRow is the analyst_status row.
type StatusRow struct {
	State        string `json:"state"`
	Message      string `json:"message"`
	StoppedAtCap int    `json:"stopped_at_cap"`
	UpdatedAt    string `json:"updated_at"`
}

// Status reads the analyst's last state ("idle" before any run).
func (s Store) Status(ctx context.Context) (StatusRow, error) {
	var rows []StatusRow
	if err := s.DB.Query(ctx, &rows, `SELECT state, message, stopped_at_cap, updated_at FROM analyst_status WHERE id = 1`); err != nil {
		return StatusRow{}, err
	}
	if len(rows) == 0 {
		return StatusRow{State: "idle", Message: "the analyst has not run yet"}, nil
	}
	return rows[0], nil
}

func statusStmt(state, msg string, atCap bool, now time.Time) d1.Stmt {
	return d1.Stmt{SQL: `INSERT INTO analyst_status (id, state, message, stopped_at_cap, updated_at) VALUES (1, ?, ?, ?, ?)
ON CONFLICT (id) DO UPDATE SET state = excluded.state, message = excluded.message, stopped_at_cap = excluded.stopped_at_cap, updated_at = excluded.updated_at`,
		Args: []any{state, msg, atCap, d1.Time(now)}}
}

// SetStatus records the analyst's state.
func (s Store) SetStatus(ctx context.Context, state, msg string, atCap bool, now time.Time) error {
	_, err := s.DB.Exec(ctx, statusStmt(state, msg, atCap, now))
	return err
}

// OpenCount is the briefs not finished.
func (s Store) OpenCount(ctx context.Context) (int64, error) {
	var rows []struct {
		N int64 `json:"n"`
	}
	if err := s.DB.Query(ctx, &rows, openCountSQL); err != nil || len(rows) == 0 {
		return 0, err
	}
	return rows[0].N, nil
}

// TopWithoutBrief lists the top n clusters with no brief since `since`.
func (s Store) TopWithoutBrief(ctx context.Context, n int, since time.Time) ([]string, error) {
	var rows []struct {
		ClusterID string `json:"cluster_id"`
	}
	if err := s.DB.Query(ctx, &rows, topWithoutBriefSQL, n, d1.Time(since), MaxLeaders); err != nil {
		return nil, err
	}
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.ClusterID
	}
	return out, nil
}

// Enqueue inserts a queued brief.
func (s Store) Enqueue(ctx context.Context, briefID, clusterID, trigger, model string, now time.Time) error {
	_, err := s.DB.Exec(ctx, d1.Stmt{SQL: `INSERT INTO analyst_briefs (brief_id, cluster_id, state, trigger, model, prompt_version, created_at, updated_at)
VALUES (?, ?, 'queued', ?, ?, ?, ?, ?)`, Args: []any{briefID, clusterID, trigger, model, PromptVersion, d1.Time(now), d1.Time(now)}})
	return err
}

// OpenFor is a cluster's unfinished brief, if any.
func (s Store) OpenFor(ctx context.Context, clusterID string) (BriefRow, bool, error) {
	return s.one(ctx, openForClusterSQL, clusterID)
}

// ClusterExists reports whether a market cluster exists.
func (s Store) ClusterExists(ctx context.Context, clusterID string) (bool, error) {
	var rows []struct {
		N int `json:"n"`
	}
	if err := s.DB.Query(ctx, &rows, `SELECT COUNT(*) AS n FROM market_clusters WHERE cluster_id = ?`, clusterID); err != nil {
		return false, err
	}
	return len(rows) > 0 && rows[0].N > 0, nil
}

// TopBrief is one top opportunity with its newest brief's headline.
type TopBrief struct {
	ClusterID   string  `json:"cluster_id"`
	Score       float64 `json:"opportunity_score"`
	BriefID     string  `json:"brief_id,omitempty"`
	State       string  `json:"brief_state,omitempty"`
	Headline    string  `json:"headline,omitempty"`
	Confidence  string  `json:"confidence,omitempty"`
	CostMicro   int64   `json:"cost_micro_usd"`
	CompletedAt string  `json:"finished_at,omitempty"`
}

// topBriefsSQL: the top opportunities, each with its newest brief (a done
// one first) by analyst_briefs_by_cluster.
const topBriefsSQL = `SELECT o.cluster_id AS cluster_id, o.score AS opportunity_score, b.brief_id AS brief_id, b.state AS brief_state,
  b.headline AS headline, b.confidence AS confidence, COALESCE(b.cost_micro_usd, 0) AS cost_micro_usd, b.finished_at AS finished_at
FROM (SELECT cluster_id, score FROM opportunity_scores ORDER BY score DESC LIMIT ?) o
LEFT JOIN analyst_briefs b ON b.brief_id = (SELECT x.brief_id FROM analyst_briefs x WHERE x.cluster_id = o.cluster_id
  ORDER BY x.state = 'done' DESC, x.created_at DESC LIMIT 1)
ORDER BY o.score DESC, o.cluster_id`

// TopBriefs lists the top n opportunities with their newest brief (a done
// one first).
func (s Store) TopBriefs(ctx context.Context, n int) ([]TopBrief, error) {
	var rows []TopBrief
	err := s.DB.Query(ctx, &rows, topBriefsSQL, n)
	if rows == nil {
		rows = []TopBrief{}
	}
	return rows, err
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
