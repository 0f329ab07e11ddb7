package analyst

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"storecrawl/worker/d1"
	"storecrawl/worker/llm"
	"storecrawl/worker/reviews"
)

// Evaluation states (segment_evaluations.state) and step states
// (segment_evaluation_steps.state: pending, then ready/calling for a call,
// done or failed).
const (
	EvalOpen    = "open"
	EvalDone    = "done"
	EvalFailed  = "failed"
	StepPending = "pending"
)

// ErrNoSegment: an evaluation of a segment that does not exist (or has no
// apps) can never be written (failed, not retried).
var ErrNoSegment = errors.New("analyst: no such live segment with apps")

// EvalStepRow is one segment_evaluation_steps row with its evaluation's
// segment.
type EvalStepRow struct {
	EvalID           string `json:"eval_id"`
	SegmentID        int64  `json:"segment_id"`
	Step             int    `json:"step"`
	Name             string `json:"name"`
	State            string `json:"state"`
	Attempt          int    `json:"attempt"`
	Calls            int    `json:"calls"`
	InputJSON        string `json:"input_json"`
	PromptHash       string `json:"prompt_hash"`
	MessagesJSON     string `json:"messages_json"`
	OutputJSON       string `json:"output_json"`
	Error            string `json:"error"`
	PromptTokens     int64  `json:"prompt_tokens"`
	CompletionTokens int64  `json:"completion_tokens"`
	Cost             int64  `json:"cost_micro_usd"`
	UpdatedAt        string `json:"updated_at"`
	FinishedAt       string `json:"finished_at"`
}

const stepCols = `s.eval_id, e.segment_id, s.step, s.name, s.state, s.attempt, s.calls, s.input_json, s.prompt_hash, s.messages_json,
  s.output_json, s.error, s.prompt_tokens, s.completion_tokens, s.cost_micro_usd, s.updated_at, s.finished_at`

const (
	// topSegmentsWithoutEvalSQL: of the top ?1 live segments by opportunity
	// (a search of idx_segments_opportunity from ?3, above any score, as
	// the listing's first page), those with no evaluation created since ?2
	// and none open (one the cap holds back is resumed, not duplicated).
	topSegmentsWithoutEvalSQL = `SELECT t.id FROM (SELECT id, opportunity FROM segments WHERE retired_at IS NULL AND opportunity < ?3
  ORDER BY opportunity DESC, id LIMIT ?1) t
WHERE NOT EXISTS (SELECT 1 FROM segment_evaluations e WHERE e.segment_id = t.id AND (e.created_at >= ?2 OR e.state = 'open'))
ORDER BY t.opportunity DESC, t.id`
	// nextEvalStepSQL: the first unfinished step of the oldest open
	// evaluation that can move (pending or ready, or calling for longer
	// than a call takes: its run crashed).
	nextEvalStepSQL = `SELECT ` + stepCols + ` FROM segment_evaluations e
JOIN segment_evaluation_steps s ON s.eval_id = e.eval_id
  AND s.step = (SELECT MIN(x.step) FROM segment_evaluation_steps x WHERE x.eval_id = e.eval_id AND x.state != 'done')
WHERE e.state = 'open' AND (s.state IN ('pending', 'ready') OR (s.state = 'calling' AND s.updated_at < ?1))
ORDER BY e.created_at, e.eval_id LIMIT 1`
	evalStepsSQL = `SELECT ` + stepCols + ` FROM segment_evaluation_steps s JOIN segment_evaluations e ON e.eval_id = s.eval_id
WHERE s.eval_id = ?1 ORDER BY s.step`
	openEvalCountSQL = `SELECT COUNT(*) AS n FROM segment_evaluations WHERE state = 'open'`
	// latestEvalSQL: a segment's newest evaluation, a done one first.
	latestEvalSQL = `SELECT eval_id, segment_id, state, trigger, model, prompt_version, error, cost_micro_usd, created_at, updated_at, finished_at
FROM segment_evaluations WHERE segment_id = ?1 ORDER BY state = 'done' DESC, created_at DESC LIMIT 1`
	segmentExistsSQL = `SELECT COUNT(*) AS n FROM segments WHERE id = ?1`
	// evalSegmentSQL is the segment as GET /v1/segments/{id} serves its
	// scores, with its apps (leaders first, at most segments.MaxSegmentApps).
	evalSegmentSQL = `SELECT name, apps, trend, COALESCE(trend_figures, 'null') AS trend_figures,
  json_object('app_count', app_count, 'total_ratings', total_ratings, 'avg_rating', avg_rating, 'demand', demand,
    'hhi', hhi, 'fragmentation', fragmentation, 'quality_gap', quality_gap, 'competitiveness', competitiveness,
    'opportunity', opportunity, 'leaders_velocity_7d', leaders_velocity_7d, 'leaders_velocity_30d', leaders_velocity_30d) AS scores
FROM segments WHERE id = ?1 AND retired_at IS NULL`
	evalKeywordsSQL = `SELECT keyword FROM segment_keywords WHERE segment_id = ?1 ORDER BY keyword LIMIT ?2`
	evalAppsSQL     = `SELECT track_id, COALESCE(name, '') AS name, COALESCE(developer_name, '') AS developer_name,
  COALESCE(average_rating, 0) AS average_rating, COALESCE(rating_count, 0) AS rating_count,
  rating_velocity_7d, rating_velocity_30d FROM app_registry WHERE track_id IN (SELECT value FROM json_each(?1))`
	evalFetchedSQL = `SELECT EXISTS (SELECT 1 FROM review_fetches WHERE app_id IN (SELECT value FROM json_each(?1))) AS n`
)

// aboveAnyScore starts the top segments' search above every opportunity.
const aboveAnyScore = 1e308

// TopSegmentsWithoutEval lists the top n live segments by opportunity with
// no evaluation created since `since`.
func (s Store) TopSegmentsWithoutEval(ctx context.Context, n int, since time.Time) ([]int64, error) {
	var rows []struct {
		ID int64 `json:"id"`
	}
	if err := s.DB.Query(ctx, &rows, topSegmentsWithoutEvalSQL, n, d1.Time(since), aboveAnyScore); err != nil {
		return nil, err
	}
	out := make([]int64, len(rows))
	for i, r := range rows {
		out[i] = r.ID
	}
	return out, nil
}

// EnqueueEval inserts an open evaluation and its pending steps, one batch.
func (s Store) EnqueueEval(ctx context.Context, evalID string, segmentID int64, trigger, model string, now time.Time) error {
	ts := d1.Time(now)
	names, _ := json.Marshal(StepNames[1:])
	_, err := s.DB.ExecAtomic(ctx,
		d1.Stmt{SQL: `INSERT INTO segment_evaluations (eval_id, segment_id, state, trigger, model, prompt_version, created_at, updated_at)
VALUES (?, ?, 'open', ?, ?, ?, ?, ?)`, Args: []any{evalID, segmentID, trigger, model, EvalPromptVersion, ts, ts}},
		d1.Stmt{SQL: `INSERT INTO segment_evaluation_steps (eval_id, step, name, state, updated_at)
SELECT ?1, key + 1, value, 'pending', ?2 FROM json_each(?3)`, Args: []any{evalID, ts, string(names)}})
	return err
}

// NextEvalStep is the step the task advances next.
func (s Store) NextEvalStep(ctx context.Context, now time.Time) (EvalStepRow, bool, error) {
	var rows []EvalStepRow
	if err := s.DB.Query(ctx, &rows, nextEvalStepSQL, d1.Time(now.Add(-StaleCall))); err != nil || len(rows) == 0 {
		return EvalStepRow{}, false, err
	}
	return rows[0], true, nil
}

// EvalSteps reads an evaluation's steps, in order.
func (s Store) EvalSteps(ctx context.Context, evalID string) ([]EvalStepRow, error) {
	var rows []EvalStepRow
	err := s.DB.Query(ctx, &rows, evalStepsSQL, evalID)
	return rows, err
}

// OpenEvalCount is the evaluations not finished.
func (s Store) OpenEvalCount(ctx context.Context) (int64, error) {
	var rows []struct {
		N int64 `json:"n"`
	}
	if err := s.DB.Query(ctx, &rows, openEvalCountSQL); err != nil || len(rows) == 0 {
		return 0, err
	}
	return rows[0].N, nil
}

// refSource is step 1's input: the segment and its apps as read.
type refSource struct {
	Segment SegmentFacts `json:"segment"`
	Apps    []struct {
		TrackID int64   `json:"track_id"`
		Share   float64 `json:"share"`
	} `json:"apps"`
}

// themesSource is step 2's input: the reviews the themes were read from.
type themesSource struct {
	AppIDs        []int64  `json:"app_ids"`
	ReviewsPerApp int      `json:"reviews_per_app"`
	ReviewIDs     []string `json:"review_ids"`
}

// ReadReferenceApps is step 1: the segment's facts and its apps (input),
// and its leaders and fastest risers (output). ErrNoSegment when the
// segment is unknown, retired or has no apps.
func (s Store) ReadReferenceApps(ctx context.Context, segmentID int64) (refSource, []RefApp, error) {
	var segs []struct {
		Name         string          `json:"name"`
		Apps         string          `json:"apps"`
		Trend        string          `json:"trend"`
		TrendFigures json.RawMessage `json:"trend_figures"`
		Scores       json.RawMessage `json:"scores"`
	}
	if err := s.DB.Query(ctx, &segs, evalSegmentSQL, segmentID); err != nil {
		return refSource{}, nil, err
	}
	if len(segs) == 0 {
		return refSource{}, nil, ErrNoSegment
	}
	src := refSource{Segment: SegmentFacts{SegmentID: segmentID, Name: cut(segs[0].Name, maxNameRunes), Keywords: []string{},
		Scores: segs[0].Scores, Trend: segs[0].Trend, TrendFigures: segs[0].TrendFigures}}
	if err := json.Unmarshal([]byte(segs[0].Apps), &src.Apps); err != nil || len(src.Apps) == 0 {
		return refSource{}, nil, ErrNoSegment
	}
	var kws []struct {
		Keyword string `json:"keyword"`
	}
	if err := s.DB.Query(ctx, &kws, evalKeywordsSQL, segmentID, EvalKeywords); err != nil {
		return refSource{}, nil, err
	}
	for _, k := range kws {
		src.Segment.Keywords = append(src.Segment.Keywords, cut(k.Keyword, maxNameRunes))
	}
	ids := make([]int64, len(src.Apps))
	for i, a := range src.Apps {
		ids[i] = a.TrackID
	}
	var stats []struct {
		TrackID     int64    `json:"track_id"`
		Name        string   `json:"name"`
		Developer   string   `json:"developer_name"`
		Rating      float64  `json:"average_rating"`
		RatingCount int64    `json:"rating_count"`
		V7          *float64 `json:"rating_velocity_7d"`
		V30         *float64 `json:"rating_velocity_30d"`
	}
	if err := s.DB.Query(ctx, &stats, evalAppsSQL, mustJSON(ids)); err != nil {
		return refSource{}, nil, err
	}
	byID := map[int64]RefApp{}
	for _, st := range stats {
		byID[st.TrackID] = RefApp{AppID: st.TrackID, Name: cut(st.Name, maxNameRunes), Developer: cut(st.Developer, maxNameRunes),
			Rating: round3(st.Rating), RatingCount: st.RatingCount, Velocity7d: st.V7, Velocity30d: st.V30}
	}
	return src, referenceApps(src, byID), nil
}

// referenceApps picks the leaders (the first EvalLeaders apps, leaders
// first as the segment keeps them) and the fastest risers (the other apps
// with the highest positive 7-day rating velocity, at most EvalRisers).
func referenceApps(src refSource, byID map[int64]RefApp) []RefApp {
	var out, rest []RefApp
	for i, a := range src.Apps {
		r, ok := byID[a.TrackID]
		if !ok {
			r = RefApp{AppID: a.TrackID}
		}
		r.Share = round3(a.Share)
		if i < EvalLeaders {
			r.Role = "leader"
			out = append(out, r)
		} else if r.Velocity7d != nil && *r.Velocity7d > 0 {
			rest = append(rest, r)
		}
	}
	sort.SliceStable(rest, func(i, j int) bool {
		if *rest[i].Velocity7d != *rest[j].Velocity7d {
			return *rest[i].Velocity7d > *rest[j].Velocity7d
		}
		return rest[i].AppID < rest[j].AppID
	})
	for _, r := range rest[:min(len(rest), EvalRisers)] {
		r.Role = "riser"
		out = append(out, r)
	}
	return out
}

// ReadThemes is step 2: the complaint themes of the reference apps' newest
// reviews (EvalReviewsPerApp each), with example reviews quoted, or why
// there are none.
func (s Store) ReadThemes(ctx context.Context, apps []RefApp) (themesSource, ThemesOutput, error) {
	src := themesSource{AppIDs: make([]int64, 0, len(apps)), ReviewsPerApp: EvalReviewsPerApp, ReviewIDs: []string{}}
	var all []reviews.Review
	var exclude []string
	for _, a := range apps {
		src.AppIDs = append(src.AppIDs, a.AppID)
		exclude = append(exclude, strings.Fields(strings.ToLower(a.Name+" "+a.Developer))...)
		var rs []reviews.Review
		if err := s.DB.Query(ctx, &rs, inputAppReviewsSQL, a.AppID, EvalReviewsPerApp); err != nil {
			return src, ThemesOutput{}, err
		}
		all = append(all, rs...)
	}
	byID := make(map[string]reviews.Review, len(all))
	for _, r := range all {
		src.ReviewIDs = append(src.ReviewIDs, r.ID)
		byID[r.ID] = r
	}
	themes := reviews.ComplaintThemes(reviews.ScoreAll(all), reviews.ThemeOptions{MaxThemes: EvalThemes, Exclude: exclude})
	out := ThemesOutput{ReviewsRead: len(all), Themes: boundThemes(ThemeInputs(themes, byID), EvalThemes)}
	var fetched []struct {
		N int `json:"n"`
	}
	if err := s.DB.Query(ctx, &fetched, evalFetchedSQL, mustJSON(src.AppIDs)); err != nil {
		return src, ThemesOutput{}, err
	}
	out.ThemesMissingReason = themesMissing(len(fetched) > 0 && fetched[0].N > 0, len(all), len(out.Themes))
	return src, out, nil
}

// evalInputOf rebuilds an LLM step's input from the stored outputs of the
// steps before it: the same stored rows always give the same input.
func evalInputOf(steps []EvalStepRow, step int) (EvalInput, error) {
	var in EvalInput
	for _, st := range steps {
		if st.Step >= step {
			break
		}
		if st.State != StateDone {
			return in, fmt.Errorf("analyst: step %d is %s, not done", st.Step, st.State)
		}
		var err error
		switch st.Step {
		case StepReferenceApps:
			var src refSource
			if err = json.Unmarshal([]byte(st.InputJSON), &src); err == nil {
				in.Segment = src.Segment
				err = json.Unmarshal([]byte(st.OutputJSON), &in.ReferenceApps)
			}
		case StepThemes:
			err = json.Unmarshal([]byte(st.OutputJSON), &in.Complaints)
		case StepMethods:
			in.Methods = &MethodsOutput{}
			err = json.Unmarshal([]byte(st.OutputJSON), in.Methods)
		case StepCritic:
			in.Critic = &CriticOutput{}
			err = json.Unmarshal([]byte(st.OutputJSON), in.Critic)
		}
		if err != nil {
			return in, fmt.Errorf("analyst: step %d's stored output is unreadable: %w", st.Step, err)
		}
	}
	return in, nil
}

// StepView is one step of GET /v1/segments/{id}/evaluation.
type StepView struct {
	Step             int             `json:"step"`
	Name             string          `json:"name"`
	LLM              bool            `json:"llm_call"`
	State            string          `json:"state"`
	Output           json.RawMessage `json:"output"`
	Input            json.RawMessage `json:"input"`
	PromptHash       string          `json:"prompt_hash,omitempty"`
	Attempts         int             `json:"attempts"`
	Calls            int             `json:"calls"`
	PromptTokens     int64           `json:"prompt_tokens"`
	CompletionTokens int64           `json:"completion_tokens"`
	Cost             int64           `json:"cost_micro_usd"`
	Error            string          `json:"error,omitempty"`
	FinishedAt       string          `json:"finished_at,omitempty"`
}

// EvaluationView is GET /v1/segments/{id}/evaluation: the evaluation's
// state, each step with its output, exact input, prompt hash, tokens and
// cost, and the total.
type EvaluationView struct {
	EvalID           string       `json:"eval_id"`
	SegmentID        int64        `json:"segment_id"`
	State            string       `json:"state"`
	Trigger          string       `json:"trigger"`
	Model            string       `json:"model"`
	PromptVersion    string       `json:"prompt_version"`
	Error            string       `json:"error,omitempty"`
	Steps            []StepView   `json:"steps"`
	PromptTokens     int64        `json:"prompt_tokens"`
	CompletionTokens int64        `json:"completion_tokens"`
	Cost             llm.MicroUSD `json:"cost_micro_usd"`
	CostUSD          string       `json:"cost_usd"`
	CreatedAt        string       `json:"created_at"`
	FinishedAt       string       `json:"finished_at,omitempty"`
}

// Evaluation is a segment's newest evaluation (a done one first). found is
// false when there is none; ErrNoSegment when the segment is unknown.
func (a *Analyst) Evaluation(ctx context.Context, segmentID int64) (EvaluationView, bool, error) {
	var evs []struct {
		EvalID        string `json:"eval_id"`
		SegmentID     int64  `json:"segment_id"`
		State         string `json:"state"`
		Trigger       string `json:"trigger"`
		Model         string `json:"model"`
		PromptVersion string `json:"prompt_version"`
		Error         string `json:"error"`
		Cost          int64  `json:"cost_micro_usd"`
		CreatedAt     string `json:"created_at"`
		FinishedAt    string `json:"finished_at"`
	}
	if err := a.Store.DB.Query(ctx, &evs, latestEvalSQL, segmentID); err != nil {
		return EvaluationView{}, false, err
	}
	if len(evs) == 0 {
		var n []struct {
			N int `json:"n"`
		}
		if err := a.Store.DB.Query(ctx, &n, segmentExistsSQL, segmentID); err != nil {
			return EvaluationView{}, false, err
		}
		if len(n) == 0 || n[0].N == 0 {
			return EvaluationView{}, false, ErrNoSegment
		}
		return EvaluationView{}, false, nil
	}
	e := evs[0]
	steps, err := a.Store.EvalSteps(ctx, e.EvalID)
	if err != nil {
		return EvaluationView{}, true, err
	}
	v := EvaluationView{EvalID: e.EvalID, SegmentID: e.SegmentID, State: e.State, Trigger: e.Trigger, Model: e.Model,
		PromptVersion: e.PromptVersion, Error: e.Error, Steps: make([]StepView, 0, len(steps)), Cost: e.Cost, CostUSD: llm.USD(e.Cost),
		CreatedAt: e.CreatedAt, FinishedAt: e.FinishedAt}
	for _, st := range steps {
		v.Steps = append(v.Steps, StepView{Step: st.Step, Name: st.Name, LLM: st.Step >= StepMethods, State: st.State,
			Output: rawOrNull(st.OutputJSON), Input: rawOrNull(st.InputJSON), PromptHash: st.PromptHash, Attempts: st.Attempt,
			Calls: st.Calls, PromptTokens: st.PromptTokens, CompletionTokens: st.CompletionTokens, Cost: st.Cost, Error: st.Error,
			FinishedAt: st.FinishedAt})
		v.PromptTokens += st.PromptTokens
		v.CompletionTokens += st.CompletionTokens
	}
	return v, true, nil
}
