package enrichment

import (
	"cmp"
	"context"
	"encoding/json"
	"time"

	"storecrawl/durable/controller"
	"storecrawl/worker/appstore"
	"storecrawl/worker/d1"
	"storecrawl/worker/refresh"
	"storecrawl/worker/registry"
)

// PickSQL is the controller's pick: priority, then rating count (an app
// whose lookup or a search showed more ratings matters more; unknown
// counts last), from idx_app_registry_queue_value (migrations/0024). With
// the first argument 1 it skips items that already have their lookup
// (while store pages are paused they wait for their page); the second is
// now: an item deferred by an upstream outage waits out its backoff.
// Each item comes with its stored lookup fields and lookup_at, so a fresh
// one (LOOKUP_FRESH_H) needs only its page, and with its last error class
// and page status, so an app whose page failed to parse before is known
// (drift evidence, probe choice), and with its stored page's reference,
// which a retry may reuse (ENRICHMENT_PAGE_REUSE_H).
const PickSQL = `SELECT track_id, enrich_attempts, enrich_defers, lookup_at, name, bundle_id, developer_id,
  developer_name, genre, genre_id, price, currency, average_rating, rating_count, version, release_date,
  current_version_release_date, description, content_rating, artwork_url, file_size_bytes, languages,
  COALESCE(release_notes, '') AS release_notes, COALESCE(enrich_error_class, '') AS enrich_error_class,
  COALESCE(page_status, '') AS page_status, COALESCE(html_r2_key, '') AS html_r2_key
FROM app_registry
WHERE enriched_at IS NULL AND (? = 0 OR enrichment_source IS NULL)
  AND (enrich_retry_at IS NULL OR enrich_retry_at <= ?)
ORDER BY enrich_priority DESC, rating_count DESC, track_id
LIMIT ?`

// enrichment_source values (app_registry's: worker/registry).
const (
	SourceEnriched = registry.SourceEnriched
	// SourceLookupOnly: the lookup is stored, the page fields are pending.
	SourceLookupOnly = registry.SourceLookupOnly
	SourceNotFound   = registry.SourceNotFound
	SourceFailed     = registry.SourceFailed
)

// page_status values.
const (
	PageParsedStatus   = registry.PageParsedStatus
	PagePending        = registry.PagePending
	PageUnparsedStatus = registry.PageUnparsedStatus
)

func ts(t time.Time) string { return d1.Time(t) }

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "null"
	}
	return string(b)
}

// SaveStatements writes one enriched app as one D1 batch (a single
// transaction): the registry row (registry.Enriched: upserted, so a row
// deleted meanwhile is recreated rather than lost, its similar apps in it,
// similarIDs), its developer (when new or renamed), and the similar apps
// not known yet, queued (registry.Discovered, SimilarDiscoverPerPage). A refresh's save
// (r.Refresh) sets no enrichment_source and stores nothing for an app no
// longer enriched.
func SaveStatements(r Record) []d1.Stmt {
	a, p := r.App, r.Page
	langs := a.Languages
	if langs == nil {
		langs = []string{}
	}
	iaps := p.InAppPurchases
	if iaps == nil {
		iaps = []appstore.IAP{}
	}
	similar := similarIDs(p.SimilarAppIDs)
	now := ts(r.FetchedAt)
	stmts := []d1.Stmt{registry.Enriched(r.Refresh, []any{
		a.TrackID, appstore.Truncate(a.Name, appstore.MaxTextLen), a.BundleID, a.DeveloperID,
		appstore.Truncate(a.DeveloperName, appstore.MaxTextLen), a.Genre, a.GenreID,
		a.Price, a.Currency, a.AverageRating, a.RatingCount, a.Version, a.ReleaseDate,
		a.CurrentVersionReleaseDate, appstore.Truncate(a.Description, appstore.MaxDescriptionLen),
		a.ContentRating, a.ArtworkURL, a.FileSizeBytes, jsonText(langs),
		appstore.Truncate(p.Subtitle, appstore.MaxTextLen), jsonText(p.RatingCounts(a.RatingCount)),
		len(iaps), jsonText(iaps), jsonText(similar),
		r.HTMLKey, SourceEnriched, now, now,
		PageParsedStatus, string(p.Format), jsonText(p.MissingSections), appstore.ParserVersion, jsonText(p.RatingShare),
		ts(cmp.Or(r.LookupAt, r.FetchedAt)), appstore.Truncate(a.ReleaseNotes, appstore.MaxTextLen), now,
	})}
	if a.DeveloperID > 0 {
		stmts = append(stmts, DeveloperStmt(a.DeveloperID, a.DeveloperName, now))
	}
	if ids := similarToDiscover(similar, a.TrackID); ids != "" {
		stmts = append(stmts, registry.Discovered(ids, now))
	}
	return stmts
}

// SimilarDiscoverPerPage bounds the similar apps one page's save may queue:
// a real shelf holds 10–20 (appstore.MaxSimilar bounds what is kept), so a
// real shelf is taken whole and a page naming more queues no more.
const SimilarDiscoverPerPage = 20

// similarToDiscover is the JSON array of a page's similar apps its save
// inserts when unknown (registry.Discovered: a known one writes nothing),
// the app itself left out; "" for none.
func similarToDiscover(similar []int64, self int64) string {
	ids := make([]int64, 0, min(len(similar), SimilarDiscoverPerPage))
	for _, id := range similar {
		if len(ids) == SimilarDiscoverPerPage {
			break
		}
		if id > 0 && id != self {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return ""
	}
	return jsonText(ids)
}

// SaveLookupStatements keep a lookup whose page is pending
// (registry.Lookup: written only when a value differs) and its developer.
func SaveLookupStatements(a appstore.App, htmlKey, pageStatus string, at time.Time) []d1.Stmt {
	now := ts(at)
	var key any
	if htmlKey != "" {
		key = htmlKey
	}
	stmts := []d1.Stmt{registry.Lookup(a.StoredLookupArgs(), key, pageStatus, now)}
	if a.DeveloperID > 0 {
		stmts = append(stmts, DeveloperStmt(a.DeveloperID, a.DeveloperName, now))
	}
	return stmts
}

// MarkMissingStmt dequeues an app the upstream does not know.
func MarkMissingStmt(id int64, at time.Time) d1.Stmt {
	return registry.MarkMissing(id, ts(at))
}

// RequeueStmt records a failed attempt and leaves the app queued (its
// stored page pageRef kept, when not "").
func RequeueStmt(id int64, attempts int, class controller.Class, errText, pageRef string) d1.Stmt {
	return registry.Requeue(id, attempts, string(class), appstore.Truncate(errText, appstore.MaxTextLen), pageRef)
}

// DeferStmt leaves the app queued, its attempts untouched, due again at until.
func DeferStmt(id int64, defers int, class controller.Class, errText string, until time.Time) d1.Stmt {
	return registry.Defer(id, defers, string(class), appstore.Truncate(errText, appstore.MaxTextLen), ts(until))
}

// GiveUpStmt marks the app failed; the row and its last error stay, and
// RetryFailed can put it back in the queue.
func GiveUpStmt(id int64, attempts int, class controller.Class, errText, pageRef string, at time.Time) d1.Stmt {
	return registry.GiveUp(id, attempts, string(class), appstore.Truncate(errText, appstore.MaxTextLen), pageRef, ts(at))
}

// RetryFailedBatch bounds one retry-failed call or task run: the update
// touches at most this many rows, so it stays one quick statement however
// many items gave up; the caller says whether more remain.
const RetryFailedBatch = 500

// RetryFailed puts up to RetryFailedBatch given-up items back in the queue:
// those of class (any when "") that gave up at or before olderThan. It
// returns how many it requeued; a full batch means more may remain.
func (s D1Store) RetryFailed(ctx context.Context, class string, olderThan, now time.Time) (int, error) {
	n, err := s.DB.ExecAtomic(ctx, registry.RetryFailed(class, ts(olderThan), ts(now), RetryFailedBatch))
	return int(n), err
}

// DeveloperStmt upserts one developer: a known one is rewritten only when
// its name changed (updated_at is then when it last did), so the crawl
// cycle's searches, each naming its results' developers, and the
// enrichment's saves write nothing for a developer seen before (D1 bills
// every row written; at 1.1M apps a cycle's re-searches name ~3,500).
func DeveloperStmt(id int64, name, ts string) d1.Stmt {
	return d1.Stmt{
		SQL: `INSERT INTO developers (developer_id, name, first_seen_at, updated_at) VALUES (?,?,?,?)
ON CONFLICT (developer_id) DO UPDATE SET name = excluded.name, updated_at = excluded.updated_at
WHERE developers.name IS NOT excluded.name`,
		Args: []any{id, appstore.Truncate(name, appstore.MaxTextLen), ts, ts},
	}
}

// DeveloperPortfolioDueStmt marks the developers of enriched apps (ids, a
// JSON array of developer ids) due a portfolio lookup at ts: only a
// developer never looked up and not yet due is written (a row and its
// entry in idx_developers_portfolio_due), so an app filled again (renamed)
// writes nothing for its developer.
func DeveloperPortfolioDueStmt(ids, ts string) d1.Stmt {
	return d1.Stmt{
		SQL: `UPDATE developers SET portfolio_due_at = ?1 WHERE developer_id IN (SELECT value FROM json_each(?2))
  AND portfolio_due_at IS NULL AND portfolio_at IS NULL`,
		Args: []any{ts, ids},
	}
}

// DeveloperPortfolioDoneStmt records a developer's portfolio looked up at
// ts (the crawl's lookup?id=ARTIST&entity=software): it leaves
// idx_developers_portfolio_due and is never looked up again.
func DeveloperPortfolioDoneStmt(id int64, ts string) d1.Stmt {
	return d1.Stmt{
		SQL:  `UPDATE developers SET portfolio_at = ?1 WHERE developer_id = ?2 AND portfolio_at IS NULL`,
		Args: []any{ts, id},
	}
}

// PortfolioDueSQL is the developers due a portfolio lookup, longest due
// first (?1 at most), from idx_developers_portfolio_due.
const PortfolioDueSQL = `SELECT developer_id FROM developers
WHERE portfolio_due_at IS NOT NULL AND portfolio_at IS NULL ORDER BY portfolio_due_at LIMIT ?1`

// D1Store is the work queue and the enriched-data store in D1.
type D1Store struct {
	DB *d1.DB
}

// PickQueued implements Store.
func (s D1Store) PickQueued(ctx context.Context, n int, unlookedOnly bool, now time.Time) ([]QueuedItem, error) {
	var rows []struct {
		// The lookup fields; JSON null (a column never written) leaves a
		// field empty.
		appstore.App
		Attempts   int    `json:"enrich_attempts"`
		Defers     int    `json:"enrich_defers"`
		LookupAt   string `json:"lookup_at"`
		Languages  string `json:"languages"` // a JSON array in its column
		ErrClass   string `json:"enrich_error_class"`
		PageStatus string `json:"page_status"`
		HTMLKey    string `json:"html_r2_key"`
	}
	only := 0
	if unlookedOnly {
		only = 1
	}
	if err := s.DB.Query(ctx, &rows, PickSQL, only, ts(now), n); err != nil {
		return nil, err
	}
	out := make([]QueuedItem, len(rows))
	for i, r := range rows {
		out[i] = QueuedItem{TrackID: r.TrackID, Attempts: r.Attempts, Defers: r.Defers,
			PriorParseError: r.ErrClass == string(controller.ClassParseError), PageStatus: r.PageStatus, HTMLKey: r.HTMLKey}
		at, err := d1.ParseTime(r.LookupAt)
		if r.LookupAt == "" || err != nil {
			continue // never looked up (or unreadable): it gets a lookup
		}
		app := r.App
		_ = json.Unmarshal([]byte(r.Languages), &app.Languages) // unreadable: no languages
		out[i].Lookup, out[i].LookupAt = &app, at
	}
	return out, nil
}

// SaveEnriched implements Store: one batch, so the record, its developer
// and its similar apps' discovery commit together or not at all. The
// batch's returned rows are the similar apps it inserted.
func (s D1Store) SaveEnriched(ctx context.Context, r Record) (int, error) {
	n, err := s.DB.ExecAtomic(ctx, SaveStatements(r)...)
	return int(n), err
}

// SaveLookup implements Store.
func (s D1Store) SaveLookup(ctx context.Context, app appstore.App, htmlKey, pageStatus string, at time.Time) error {
	_, err := s.DB.ExecAtomic(ctx, SaveLookupStatements(app, htmlKey, pageStatus, at)...)
	return err
}

// MarkMissing implements Store.
func (s D1Store) MarkMissing(ctx context.Context, id int64, at time.Time) error {
	_, err := s.DB.Exec(ctx, MarkMissingStmt(id, at))
	return err
}

// Requeue implements Store.
func (s D1Store) Requeue(ctx context.Context, id int64, attempts int, class controller.Class, errText, pageRef string) error {
	_, err := s.DB.Exec(ctx, RequeueStmt(id, attempts, class, errText, pageRef))
	return err
}

// Defer implements Store.
func (s D1Store) Defer(ctx context.Context, id int64, defers int, class controller.Class, errText string, until time.Time) error {
	_, err := s.DB.Exec(ctx, DeferStmt(id, defers, class, errText, until))
	return err
}

// GiveUp implements Store.
func (s D1Store) GiveUp(ctx context.Context, id int64, attempts int, class controller.Class, errText, pageRef string, at time.Time) error {
	_, err := s.DB.Exec(ctx, GiveUpStmt(id, attempts, class, errText, pageRef, at))
	return err
}

// HotQueries are the reads of the controller's path.
func HotQueries() []d1.NamedQuery {
	return []d1.NamedQuery{
		{Name: "enrichment pick", SQL: PickSQL, Args: []any{0, "2026-01-01T00:00:00.000Z", 50},
			Bounded: "the queue's head: idx_app_registry_queue_value holds only queued apps, in pick order; the walk stops at the LIMIT (deferred apps ahead of it are stepped over)"},
		// Each tier's part searches a range of idx_app_registry_refresh_sweep
		// (one tier, slots from the cursor's to the window's end) and stops
		// at the LIMIT; the retry list is idx_app_registry_refresh_retry's
		// head up to now. At 100,000 apps it walks no row it does not return.
		{Name: "refresh pick", SQL: DueRefreshSQL, Args: []any{
			// hot: a window of a twentieth of the slots; warm: a round's end
			// (to the last slot); cold: an empty window (on time).
			int64(100000), int64(0), int64(100000 + refresh.Slots/20), int64(1000000), int64(100000001), int64(refresh.Slots),
			int64(500000), int64(0), int64(500000), 50, "2026-01-01T00:00:00.000Z"}},
		{Name: "refresh cursors", SQL: refreshCursorsSQL},
		{Name: "retry-failed pick", SQL: registry.RetryFailedProbeSQL, Args: []any{"2026-01-01T00:00:00.000Z", "", "", RetryFailedBatch}},
		{Name: "app record", SQL: appJSONSQL, Args: []any{100000001}},
	}
}

// appJSONSQL builds the record in SQLite, so NULLs and JSON columns come out right.
const appJSONSQL = `SELECT json_object(
  'track_id', track_id, 'name', name, 'bundle_id', bundle_id, 'developer_id', developer_id,
  'developer_name', developer_name, 'genre', genre, 'genre_id', genre_id, 'price', price,
  'currency', currency, 'average_rating', average_rating, 'rating_count', rating_count,
  'version', version, 'release_date', release_date,
  'current_version_release_date', current_version_release_date, 'description', description,
  'content_rating', content_rating, 'artwork_url', artwork_url, 'file_size_bytes', file_size_bytes,
  'languages', json(languages), 'subtitle', subtitle, 'rating_histogram', json(rating_histogram),
  'iap_count', iap_count, 'in_app_purchases', json(in_app_purchases),
  'similar_app_ids', json(similar_app_ids), 'html_r2_key', html_r2_key,
  'enrich_priority', enrich_priority, 'enrich_attempts', enrich_attempts,
  'enrichment_source', enrichment_source, 'enrich_error', enrich_error,
  'page_status', page_status, 'page_format', page_format, 'page_missing', json(page_missing),
  'page_parser_version', page_parser_version, 'rating_share', json(rating_share),
  'enriched_at', enriched_at, 'analyzed_at', analyzed_at, 'demand_score', demand_score, 'competitiveness_score', competitiveness_score,
  'rankings_filled_at', rankings_filled_at,
  'discovered_at', discovered_at, 'updated_at', updated_at) AS record
FROM app_registry WHERE track_id = ?`

// App reads the enriched record of an app as JSON (false when there is none).
func (s D1Store) App(ctx context.Context, id int64) (json.RawMessage, bool, error) {
	var rows []struct {
		Record string `json:"record"`
	}
	if err := s.DB.Query(ctx, &rows, appJSONSQL, id); err != nil || len(rows) == 0 {
		return nil, false, err
	}
	return json.RawMessage(rows[0].Record), true, nil
}
