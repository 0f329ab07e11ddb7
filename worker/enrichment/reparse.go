package enrichment

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"storecrawl/worker/appstore"
	"storecrawl/worker/d1"
	"storecrawl/worker/logx"
	"storecrawl/worker/pagebatch"
	"storecrawl/worker/registry"
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
// R2: one R2 read each (a ranged read of its tick's batch object, or a
// whole single-page object of the layout before batches), then one D1 batch for them all, the job's cursor
// included, so a batch's writes commit together. Each page writes
// pageStatementsMax statements; the cursor is one more (within
// d1.MaxBatch: reparseBatchFits). With ReparseBatchesPerRun it bounds a
// run's R2 reads (264).
const ReparseBatch = 33

// pageStatementsMax is PageStatements' length: the record update.
const pageStatementsMax = 1

// reparseBatchFits does not compile when a batch's statements exceed
// d1.MaxBatch (a negative array length).
var _ [d1.MaxBatch - ReparseBatch*pageStatementsMax - 1]struct{}

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

// PageSource reads raw pages back (R2) by their stored reference
// (html_r2_key). found is false for a missing object; a reference that
// can never be read is pagebatch.ErrCorrupt.
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
		if errors.Is(err, pagebatch.ErrCorrupt) {
			// A reference or bytes no retry can read: counted as missing,
			// never a cursor stuck on it.
			logx.Err("reparse.page_corrupt", err, map[string]any{"track_id": row.TrackID})
			err, found = nil, false
		}
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
			stmts = append(stmts, registry.PageUnparsed(row.TrackID, appstore.ParserVersion, d1.Time(now)))
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

// PageStatements write what a parsed page says into an app's record
// (registry.PageFields: only what it changes): the page fields (its
// similar apps in similar_app_ids, bounded like the parsed shelf) and,
// for a lookup-only record (complete), the completion that dequeues it.
func PageStatements(trackID, ratingCount int64, p appstore.StorePage, complete bool, at time.Time) []d1.Stmt {
	iaps := p.InAppPurchases
	return []d1.Stmt{registry.PageFields(trackID, registry.Page{
		Subtitle: appstore.Truncate(p.Subtitle, appstore.MaxTextLen), RatingHistogram: jsonText(p.RatingCounts(ratingCount)),
		RatingShare: jsonText(p.RatingShare), IAPCount: len(iaps), InAppPurchases: jsonText(iaps),
		SimilarAppIDs: jsonText(similarIDs(p.SimilarAppIDs)), Format: string(p.Format), Missing: jsonText(p.MissingSections),
		ParserVersion: appstore.ParserVersion,
	}, complete, d1.Time(at))}
}

// similarIDs is a page's similar-app shelf as the record keeps it
// (similar_app_ids): bounded like the parsed shelf, [] for none. The
// shelf is kept there alone: the edge table app_similar (0001) has no
// reader, and writing it cost a row an edge (three a new app at 1.1M
// apps); a reader that needs the edges indexed can read them back with
// json_each(similar_app_ids).
func similarIDs(similar []int64) []int64 {
	similar = similar[:min(len(similar), appstore.MaxSimilar)]
	if similar == nil {
		similar = []int64{}
	}
	return similar
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
