package enrichment

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"storecrawl/worker/appstore"
	"storecrawl/worker/d1"
)

// Reparse scopes: which stored pages a reparse reads again.
const (
	ReparseAll        = "all"        // every stored page
	ReparseFailed     = "failed"     // pages that did not parse
	ReparseIncomplete = "incomplete" // pages that did not parse or lack sections
)

// ReparseScopes lists the valid scopes, for validation.
var ReparseScopes = []string{ReparseAll, ReparseFailed, ReparseIncomplete}

// ReparseBatch is how many pages one page-reparse batch reads back from
// R2: one R2 read each, then one D1 batch for them all, the job's cursor
// included, so a batch's writes commit together. Each page writes
// pageStatementsMax statements; the cursor is one more.
const ReparseBatch = (d1.MaxBatch - 1) / pageStatementsMax

// pageStatementsMax is PageStatements' length: the record update and the
// two statements of similarStmts.
const pageStatementsMax = 3

// ReparseJob is one reparse, as GET /v1/enrichment/reparse shows it.
type ReparseJob struct {
	ID         int64   `json:"id"`
	Scope      string  `json:"scope"`
	Cursor     int64   `json:"cursor"`
	StartedAt  string  `json:"started_at"`
	FinishedAt *string `json:"finished_at"`
	Pages      int64   `json:"pages"`
	Parsed     int64   `json:"parsed"`
	Unparsed   int64   `json:"unparsed"`
	Missing    int64   `json:"missing"`
	Completed  int64   `json:"completed"`
}

// PageSource reads raw pages back (R2). found is false for a missing key.
type PageSource interface {
	GetHTML(ctx context.Context, key string) (body []byte, found bool, err error)
}

// Reparser re-runs the current page parsers over stored pages, healing the
// records after a parser fix without a single upstream request.
type Reparser struct {
	DB     *d1.DB
	Pages  PageSource
	Events Events
	Now    func() time.Time
}

const jobColumns = `id, scope, cursor, started_at, finished_at, pages, parsed, unparsed, missing, completed`

// Start begins a reparse of scope; a reparse still running is finished
// first (superseded), so there is one active job.
func (r Reparser) Start(ctx context.Context, scope string) (ReparseJob, error) {
	now := d1.Time(r.Now())
	if _, err := r.DB.Exec(ctx,
		d1.Stmt{SQL: `UPDATE reparse_jobs SET finished_at = ? WHERE finished_at IS NULL`, Args: []any{now}},
		d1.Stmt{SQL: `INSERT INTO reparse_jobs (scope, started_at) VALUES (?, ?)`, Args: []any{scope, now}},
	); err != nil {
		return ReparseJob{}, err
	}
	job, err := r.Latest(ctx)
	if err != nil || job == nil {
		return ReparseJob{}, errors.Join(errors.New("reparse job not recorded"), err)
	}
	return *job, nil
}

// Latest is the newest job, nil when none was ever started.
func (r Reparser) Latest(ctx context.Context) (*ReparseJob, error) {
	var jobs []ReparseJob
	if err := r.DB.Query(ctx, &jobs, `SELECT `+jobColumns+` FROM reparse_jobs ORDER BY id DESC LIMIT 1`); err != nil {
		return nil, err
	}
	if len(jobs) == 0 {
		return nil, nil
	}
	return &jobs[0], nil
}

// reparseRow is one app whose stored page a reparse reads.
type reparseRow struct {
	TrackID     int64  `json:"track_id"`
	HTMLKey     string `json:"html_r2_key"`
	RatingCount int64  `json:"rating_count"`
	Source      string `json:"enrichment_source"`
}

// scopeFilter selects the rows of a scope (after the common conditions).
var scopeFilter = map[string]string{
	ReparseAll:        ``,
	ReparseFailed:     ` AND COALESCE(page_status, '') <> '` + PageParsedStatus + `'`,
	ReparseIncomplete: ` AND (COALESCE(page_status, '') <> '` + PageParsedStatus + `' OR COALESCE(page_missing, '[]') <> '[]')`,
}

// Step runs one batch of the active job: read each page back, parse it
// with today's parsers, write what it says. done is true when there is no
// active job or this batch finished it.
func (r Reparser) Step(ctx context.Context) (job *ReparseJob, done bool, err error) {
	job, err = r.Latest(ctx)
	if err != nil || job == nil || job.FinishedAt != nil {
		return job, true, err
	}
	filter, ok := scopeFilter[job.Scope]
	if !ok {
		return job, true, fmt.Errorf("reparse job %d: unknown scope %q", job.ID, job.Scope)
	}
	var rows []reparseRow
	if err := r.DB.Query(ctx, &rows, `SELECT track_id, html_r2_key, COALESCE(rating_count, 0) AS rating_count,
  COALESCE(enrichment_source, '') AS enrichment_source FROM app_registry
WHERE track_id > ? AND html_r2_key IS NOT NULL`+filter+` ORDER BY track_id LIMIT ?`, job.Cursor, ReparseBatch); err != nil {
		return job, false, err
	}
	now := r.Now()
	var stmts []d1.Stmt
	var completed []int64
	var r2err error
	for _, row := range rows {
		job.Cursor = row.TrackID
		body, found, err := r.Pages.GetHTML(ctx, row.HTMLKey)
		if err != nil {
			// R2 unreachable: stop before this row; the next run retries it.
			job.Cursor = row.TrackID - 1
			r2err = fmt.Errorf("reparse: read page of %d: %w", row.TrackID, err)
			break
		}
		if !found {
			job.Missing++
			continue
		}
		job.Pages++
		page, perr := appstore.ParseStorePage(body)
		if perr != nil {
			job.Unparsed++
			stmts = append(stmts, d1.Stmt{
				SQL:  `UPDATE app_registry SET page_status = ?, page_parser_version = ?, updated_at = ? WHERE track_id = ?`,
				Args: []any{PageUnparsedStatus, appstore.ParserVersion, d1.Time(now), row.TrackID},
			})
			continue
		}
		job.Parsed++
		complete := row.Source == SourceLookupOnly
		if complete {
			job.Completed++
			completed = append(completed, row.TrackID)
		}
		stmts = append(stmts, PageStatements(row.TrackID, row.RatingCount, page, complete, now)...)
	}
	done = len(rows) < ReparseBatch && r2err == nil
	finished := any(nil)
	if done {
		finished = d1.Time(now)
	}
	stmts = append(stmts, d1.Stmt{
		SQL: `UPDATE reparse_jobs SET cursor = ?, pages = ?, parsed = ?, unparsed = ?, missing = ?, completed = ?, finished_at = ?
WHERE id = ? AND finished_at IS NULL`,
		Args: []any{job.Cursor, job.Pages, job.Parsed, job.Unparsed, job.Missing, job.Completed, finished, job.ID},
	})
	if _, err := r.DB.ExecAtomic(ctx, stmts...); err != nil {
		return job, false, err
	}
	if len(completed) > 0 && r.Events != nil {
		if err := r.Events.AppsEnriched(ctx, completed); err != nil {
			return job, done, fmt.Errorf("reparse: announce %d completed apps: %w", len(completed), err)
		}
	}
	return job, done, r2err
}

// ReparseBatchesPerRun bounds one page-reparse task run: each batch costs
// ReparseBatch R2 reads and one D1 batch, and a run stays far below a
// Worker invocation's subrequest limit (1,000).
const ReparseBatchesPerRun = 8

// ReparseRun runs up to ReparseBatchesPerRun batches of the active job and
// says where it stands (the scheduler's task summary).
func (r Reparser) ReparseRun(ctx context.Context) (string, error) {
	for i := 0; i < ReparseBatchesPerRun; i++ {
		job, done, err := r.Step(ctx)
		if err != nil {
			return "", err
		}
		if job == nil {
			return "no reparse job", nil
		}
		if done {
			if i == 0 && job.FinishedAt != nil {
				return fmt.Sprintf("job %d finished", job.ID), nil
			}
			return fmt.Sprintf("job %d done: %d pages, %d parsed, %d unparsed, %d missing, %d completed", job.ID, job.Pages, job.Parsed, job.Unparsed, job.Missing, job.Completed), nil
		}
		if i == ReparseBatchesPerRun-1 {
			return fmt.Sprintf("job %d at track %d: %d pages so far", job.ID, job.Cursor, job.Pages), nil
		}
	}
	return "", nil
}

// PageStatements write what a parsed page says into an app's record: the
// page fields, its similar-app edges (replaced), and, for a lookup-only
// record (complete), the completion that dequeues it.
func PageStatements(trackID, ratingCount int64, p appstore.StorePage, complete bool, at time.Time) []d1.Stmt {
	iaps, similar := p.InAppPurchases, p.SimilarAppIDs
	now := d1.Time(at)
	set := `subtitle = ?, rating_histogram = ?, rating_share = ?, iap_count = ?, in_app_purchases = ?,
  similar_app_ids = ?, page_status = ?, page_format = ?, page_missing = ?, page_parser_version = ?, updated_at = ?`
	args := []any{appstore.Truncate(p.Subtitle, appstore.MaxTextLen), jsonText(p.RatingCounts(ratingCount)),
		jsonText(p.RatingShare), len(iaps), jsonText(iaps), jsonText(similar),
		PageParsedStatus, string(p.Format), jsonText(p.MissingSections), appstore.ParserVersion, now}
	if complete {
		set += `, enrichment_source = ?, enrich_error = NULL, enriched_at = ?`
		args = append(args, SourceEnriched, now)
	}
	stmts := []d1.Stmt{{SQL: `UPDATE app_registry SET ` + set + ` WHERE track_id = ?`, Args: append(args, trackID)}}
	return append(stmts, similarStmts(trackID, similar)...)
}

// similarStmts make an app's similar-app edges the page's, writing only
// what changed: the edges gone are deleted, the new ones inserted, a
// kept one rewritten only when its position moved (an id listed twice
// keeps its first). A page saved again with the same shelf (a refresh,
// a reparse) writes no edge; D1 bills every row written, and replacing
// the shelf wholesale wrote each edge twice (deleted, inserted).
func similarStmts(trackID int64, similar []int64) []d1.Stmt {
	// Two statements however long the shelf, so an app's save is always
	// one batch; the edges are bounded like the parsed shelf.
	similar = similar[:min(len(similar), appstore.MaxSimilar)]
	if similar == nil {
		similar = []int64{}
	}
	ids := jsonText(similar)
	return []d1.Stmt{
		{SQL: `DELETE FROM app_similar WHERE app_id = ?1 AND similar_id NOT IN (SELECT value FROM json_each(?2))`, Args: []any{trackID, ids}},
		{SQL: `INSERT INTO app_similar (app_id, similar_id, position)
SELECT ?1, value, min(key) FROM json_each(?2) WHERE true GROUP BY value
ON CONFLICT (app_id, similar_id) DO UPDATE SET position = excluded.position WHERE app_similar.position IS NOT excluded.position`,
			Args: []any{trackID, ids}},
	}
}

// StartReparse starts a job and returns it as JSON (the API's side).
func (r Reparser) StartReparse(ctx context.Context, scope string) (json.RawMessage, error) {
	job, err := r.Start(ctx, scope)
	if err != nil {
		return nil, err
	}
	return json.Marshal(job)
}

// ReparseStatus returns the newest job as JSON, null when none ran.
func (r Reparser) ReparseStatus(ctx context.Context) (json.RawMessage, error) {
	job, err := r.Latest(ctx)
	if err != nil {
		return nil, err
	}
	return json.Marshal(job)
}
