// Package registry owns the writes of app_registry, the catalogue's one row
// per app: every statement that inserts or updates a row is here
// (internal/archtest's TestTablesHaveOneWriter holds every other package
// to it). The features that write an app (the catalogue's sightings and
// sweep, the searches, the enrichment and its refreshes, the markets'
// scores) call these functions for d1.Stmt values and put them in their
// own batches, so each write still commits with the work it records.
// Reads stay with the features that read.
//
// Every statement writes only on change: its WHERE compares what it sets
// with what is stored, so a value written again writes no row and no
// index entry (D1 bills both), or it records an event that always
// changes the row (its doc says which). The package is a platform store:
// it imports worker/d1 alone and takes plain values, never a feature's
// types.
package registry

import (
	"fmt"
	"strings"
	"sync"

	"storecrawl/worker/d1"
)

// enrichment_source values.
const (
	SourceEnriched = "itunes+store"
	// SourceLookupOnly: the lookup is stored, the page fields are pending.
	SourceLookupOnly = "itunes"
	SourceNotFound   = "not_found"
	SourceFailed     = "failed"
)

// page_status values.
const (
	PageParsedStatus   = "parsed"
	PagePending        = "pending"
	PageUnparsedStatus = "unparsed"
)

// LookupColumns are the app_registry columns a lookup or search result
// fills, in the order of appstore.App.StoredLookupArgs: one list for every
// statement that stores lookup fields (enrichment, searches).
const LookupColumns = `track_id, name, bundle_id, developer_id, developer_name, genre, genre_id,
  price, currency, average_rating, rating_count, version, release_date, current_version_release_date,
  description, content_rating, artwork_url, file_size_bytes, languages, release_notes`

// lookupUpdates sets those columns but track_id from an upsert's excluded
// row.
const lookupUpdates = `name=excluded.name, bundle_id=excluded.bundle_id, developer_id=excluded.developer_id,
  developer_name=excluded.developer_name, genre=excluded.genre, genre_id=excluded.genre_id,
  price=excluded.price, currency=excluded.currency, average_rating=excluded.average_rating,
  rating_count=excluded.rating_count, version=excluded.version, release_date=excluded.release_date,
  current_version_release_date=excluded.current_version_release_date, description=excluded.description,
  content_rating=excluded.content_rating, artwork_url=excluded.artwork_url,
  file_size_bytes=excluded.file_size_bytes, languages=excluded.languages, release_notes=excluded.release_notes`

// lookupColumnList is LookupColumns one name each.
func lookupColumnList() []string {
	cols := strings.Split(LookupColumns, ",")
	for i, c := range cols {
		cols[i] = strings.TrimSpace(c)
	}
	return cols
}

// The enrichment's writes.

// Enriched is the whole record an enrichment (or a refresh that fetched
// the page) stores. Args are the values of the INSERT's columns in their
// order, enrich_error (always NULL) left out: the enrichment builds them
// from its record. A refresh's save (refresh) sets no enrichment_source:
// the app is enriched already, and setting the column, even to its value,
// rewrites the entries of the three partial indexes on it
// (idx_app_registry_enriched, _fill_due, _unscheduled); and it writes only
// an app still enriched. values_at is set once, when the record brings
// the app's first lookup-level values (migrations/0028).
//
// Not compared: every save carries the time of its page (enriched_at,
// updated_at), so the row always changes. A first enrichment moves the
// app out of the queue; a refresh fetches a page only when the version or
// rating count moved (refresh.Unchanged), so its record differs too.
func Enriched(refresh bool, args []any) d1.Stmt {
	// A first enrichment dequeues the app: its priority (an operator's
	// seed, SeedApps) is spent.
	stateUpdate, refreshGuard := "enrichment_source=excluded.enrichment_source, enrich_priority=0, ", ""
	if refresh {
		stateUpdate, refreshGuard = "", "\nWHERE app_registry.enrichment_source = '"+SourceEnriched+"'"
	}
	return d1.Stmt{
		SQL: `INSERT INTO app_registry (track_id, name, bundle_id, developer_id, developer_name, genre, genre_id,
  price, currency, average_rating, rating_count, version, release_date, current_version_release_date,
  description, content_rating, artwork_url, file_size_bytes, languages, subtitle, rating_histogram,
  iap_count, in_app_purchases, similar_app_ids, html_r2_key, enrichment_source, enrich_error,
  enriched_at, updated_at, page_status, page_format, page_missing, page_parser_version, rating_share, lookup_at, release_notes, values_at)
VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,NULL,?,?,?,?,?,?,?,?,?,?)
ON CONFLICT (track_id) DO UPDATE SET
  name=excluded.name, bundle_id=excluded.bundle_id, developer_id=excluded.developer_id,
  developer_name=excluded.developer_name, genre=excluded.genre, genre_id=excluded.genre_id,
  price=excluded.price, currency=excluded.currency, average_rating=excluded.average_rating,
  rating_count=excluded.rating_count, version=excluded.version, release_date=excluded.release_date,
  current_version_release_date=excluded.current_version_release_date, description=excluded.description,
  content_rating=excluded.content_rating, artwork_url=excluded.artwork_url,
  file_size_bytes=excluded.file_size_bytes, languages=excluded.languages, subtitle=excluded.subtitle,
  rating_histogram=excluded.rating_histogram, iap_count=excluded.iap_count,
  in_app_purchases=excluded.in_app_purchases, similar_app_ids=excluded.similar_app_ids,
  html_r2_key=excluded.html_r2_key, ` + stateUpdate + `enrich_error=NULL,
  enrich_error_class=NULL, enrich_retry_at=NULL, enrich_defers=0,
  enriched_at=excluded.enriched_at, updated_at=excluded.updated_at, page_status=excluded.page_status,
  page_format=excluded.page_format, page_missing=excluded.page_missing,
  page_parser_version=excluded.page_parser_version, rating_share=excluded.rating_share, lookup_at=excluded.lookup_at,
  release_notes=excluded.release_notes, values_at=COALESCE(app_registry.values_at, excluded.values_at)` + refreshGuard,
		Args: args,
	}
}

// Lookup keeps a lookup whose page is pending: lookup (the values of
// LookupColumns), the raw page's key (htmlKey, nil when none was stored),
// the page status, the time. enrichment_source becomes 'itunes', never
// downgrading a complete record; the app stays queued (enriched_at
// untouched). A known row is written only when a value differs
// (lookupChanged): a stored lookup saved again with the same page status
// (a page that failed again) writes nothing, where the update wrote the
// row and its entry in idx_app_registry_queue_value (rating_count is in
// its key).
func Lookup(lookup []any, htmlKey any, pageStatus, now string) d1.Stmt {
	return d1.Stmt{
		SQL: `INSERT INTO app_registry (` + LookupColumns + `, html_r2_key, enrichment_source,
  page_status, updated_at, lookup_at, values_at)
VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)
ON CONFLICT (track_id) DO UPDATE SET ` + lookupUpdates + `,
  html_r2_key=COALESCE(excluded.html_r2_key, app_registry.html_r2_key),
  enrichment_source=CASE WHEN app_registry.enrichment_source = '` + SourceEnriched + `' THEN app_registry.enrichment_source ELSE excluded.enrichment_source END,
  page_status=CASE WHEN app_registry.page_status = '` + PageParsedStatus + `' THEN app_registry.page_status ELSE excluded.page_status END,
  updated_at=excluded.updated_at, lookup_at=excluded.lookup_at, values_at=COALESCE(app_registry.values_at, excluded.values_at)
WHERE ` + lookupChanged(),
		Args: append(lookup, htmlKey, SourceLookupOnly, pageStatus, now, now, now),
	}
}

// lookupChanged is Lookup's update condition: one of the values it sets
// differs from the stored one. A raw page's reference alone is a change
// only for a row that has none: every fetch of a page is a new reference
// (a byte range of its tick's batch object), and a page that failed again
// with nothing else moved keeps the reference it has (a page of the same
// failure, kept pagebatch.KeptDays by the bucket's lifecycle rule) rather than write
// the row; any write of the row takes the newest.
var lookupChanged = sync.OnceValue(func() string {
	var or []string
	for _, c := range lookupColumnList() {
		if c != "track_id" {
			or = append(or, "app_registry."+c+" IS NOT excluded."+c)
		}
	}
	return strings.Join(append(or,
		"(excluded.html_r2_key IS NOT NULL AND app_registry.html_r2_key IS NULL)",
		"(app_registry.enrichment_source IS NOT '"+SourceEnriched+"' AND app_registry.enrichment_source IS NOT excluded.enrichment_source)",
		"(app_registry.page_status IS NOT '"+PageParsedStatus+"' AND app_registry.page_status IS NOT excluded.page_status)",
		"app_registry.updated_at IS NOT excluded.updated_at", "app_registry.lookup_at IS NOT excluded.lookup_at"), "\n  OR ")
})

// MarkMissing dequeues an app the upstream does not know (its priority
// spent, like every dequeue's). Not compared:
// it records the event at its time (enriched_at), for a queued app
// (enriched_at NULL), so the row always changes.
func MarkMissing(id int64, at string) d1.Stmt {
	return d1.Stmt{
		SQL: `UPDATE app_registry SET enrichment_source = ?, enriched_at = ?, updated_at = ?, enrich_error = NULL,
  enrich_error_class = NULL, enrich_retry_at = NULL, enrich_defers = 0, enrich_priority = 0 WHERE track_id = ?`,
		Args: []any{SourceNotFound, at, at, id},
	}
}

// Requeue records a failed attempt (errText already cut to its bound) and
// leaves the app queued; the same attempt recorded again writes nothing.
// pageRef, when not "", is the raw page the attempt stored, kept in
// html_r2_key for a retry to reuse.
func Requeue(id int64, attempts int, class, errText, pageRef string) d1.Stmt {
	return d1.Stmt{
		SQL: `UPDATE app_registry SET enrich_attempts = ?1, enrich_error = ?2, enrich_error_class = ?3,
  html_r2_key = COALESCE(?5, html_r2_key) WHERE track_id = ?4
  AND (enrich_attempts IS NOT ?1 OR enrich_error IS NOT ?2 OR enrich_error_class IS NOT ?3 OR html_r2_key IS NOT COALESCE(?5, html_r2_key))`,
		Args: []any{attempts, errText, class, id, nullable(pageRef)},
	}
}

// nullable is s, or NULL for "".
func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// Defer leaves the app queued, its attempts untouched, due again at
// until; the same deferral recorded again writes nothing.
func Defer(id int64, defers int, class, errText, until string) d1.Stmt {
	return d1.Stmt{
		SQL: `UPDATE app_registry SET enrich_defers = ?1, enrich_retry_at = ?2, enrich_error = ?3, enrich_error_class = ?4 WHERE track_id = ?5
  AND (enrich_defers IS NOT ?1 OR enrich_retry_at IS NOT ?2 OR enrich_error IS NOT ?3 OR enrich_error_class IS NOT ?4)`,
		Args: []any{defers, until, errText, class, id},
	}
}

// GiveUpExtraWaitDays is how much longer than the retry-failed task's age
// (ENRICHMENT_RETRY_FAILED_AFTER_H, a day by default) an app waits after
// its nth give-up (n from 1; the last entry for every later one): with a
// day's age, 1, 2, 4, 8, 16 and then 30 days. An app whose page or lookup
// fails for good is then requeued a few times a month, not every day: a
// requeue writes its row and index entries, and its attempts their own.
var GiveUpExtraWaitDays = []int{0, 1, 3, 7, 15, 29}

// giveUpRetryAtSQL is the retry time GiveUp sets: the give-up's time (?6)
// plus the extra wait of the app's give-ups so far (the column's value
// before the update, so the first give-up's is GiveUpExtraWaitDays[0]).
func giveUpRetryAtSQL() string {
	var b strings.Builder
	b.WriteString("strftime('%Y-%m-%dT%H:%M:%fZ', julianday(?6) + CASE min(enrich_give_ups, ")
	fmt.Fprintf(&b, "%d)", len(GiveUpExtraWaitDays)-1)
	for i, d := range GiveUpExtraWaitDays {
		fmt.Fprintf(&b, " WHEN %d THEN %d", i, d)
	}
	b.WriteString(" END)")
	return b.String()
}

// GiveUp marks the app failed; the row and its last error stay, and
// RetryFailed can put it back in the queue once its retry time
// (enrich_retry_at: the give-up's time and its extra wait,
// GiveUpExtraWaitDays) is old enough. Not compared: it records the event
// at its time (enriched_at), for a queued app (enriched_at NULL), so the
// row always changes. pageRef is Requeue's.
func GiveUp(id int64, attempts int, class, errText, pageRef, at string) d1.Stmt {
	return d1.Stmt{
		SQL: `UPDATE app_registry SET enrich_attempts = ?1, enrich_error = ?2, enrich_error_class = ?3, enrichment_source = ?4,
  enriched_at = ?6, updated_at = ?6, html_r2_key = COALESCE(?5, html_r2_key), enrich_priority = 0,
  enrich_retry_at = ` + giveUpRetryAtSQL() + `, enrich_give_ups = enrich_give_ups + 1 WHERE track_id = ?7`,
		Args: []any{attempts, errText, class, SourceFailed, nullable(pageRef), at, id},
	}
}

// retryFailedSQL puts given-up items back in the queue, the earliest
// retry time first: attempts and backoff reset (the give-ups counted on),
// the last error kept for operators. Arguments: the time, the latest
// retry time to include, the class (” = any), the batch size.
// idx_app_registry_failed (the failed apps' retry times) serves the inner
// select. Change-only by its WHERE: it takes failed apps alone, and each
// leaves that state.
const retryFailedSQL = `UPDATE app_registry SET enriched_at = NULL, enrichment_source = NULL,
  enrich_attempts = 0, enrich_defers = 0, enrich_retry_at = NULL, updated_at = ?
WHERE track_id IN (SELECT track_id FROM app_registry
  WHERE enrichment_source = '` + SourceFailed + `' AND enrich_retry_at <= ? AND (? = '' OR enrich_error_class = ?)
  ORDER BY enrich_retry_at LIMIT ?)
RETURNING track_id`

// RetryFailedProbeSQL is the read side of RetryFailed, for the hot-query
// check.
const RetryFailedProbeSQL = `SELECT track_id FROM app_registry
  WHERE enrichment_source = '` + SourceFailed + `' AND enrich_retry_at <= ? AND (? = '' OR enrich_error_class = ?)
  ORDER BY enrich_retry_at LIMIT ?`

// RetryFailed requeues up to batch given-up apps of class ("" any) whose
// retry time (the give-up's, plus its extra wait) is at or before
// olderThan, at now (it returns their ids).
func RetryFailed(class, olderThan, now string, batch int) d1.Stmt {
	return d1.Stmt{SQL: retryFailedSQL, Args: []any{now, olderThan, class, class, batch}}
}

// PageUnparsed records a page today's parsers cannot read (a reparse):
// the status and the parsers' version, written only when either moved.
func PageUnparsed(id int64, parserVersion int, now string) d1.Stmt {
	return d1.Stmt{
		SQL: `UPDATE app_registry SET page_status = ?1, page_parser_version = ?2, updated_at = ?3 WHERE track_id = ?4
  AND (page_status IS NOT ?1 OR page_parser_version IS NOT ?2)`,
		Args: []any{PageUnparsedStatus, parserVersion, now, id},
	}
}

// Page is what a parsed store page sets on an app's record, as stored
// (JSON columns as their text).
type Page struct {
	Subtitle        string
	RatingHistogram string
	RatingShare     string
	IAPCount        int
	InAppPurchases  string
	SimilarAppIDs   string
	Format          string
	Missing         string
	ParserVersion   int
}

// PageFields write what a parsed page says into an app's record (its
// status parsed) and, for a lookup-only record (complete), the completion
// that dequeues it. A record the page leaves as it is (a reparse whose
// parsers read what they read before) is not written: D1 bills every
// row, and a reparse of every page would otherwise rewrite the catalogue.
func PageFields(trackID int64, p Page, complete bool, now string) d1.Stmt {
	cols := []string{"subtitle", "rating_histogram", "rating_share", "iap_count", "in_app_purchases",
		"similar_app_ids", "page_status", "page_format", "page_missing", "page_parser_version"}
	args := []any{p.Subtitle, p.RatingHistogram, p.RatingShare, p.IAPCount, p.InAppPurchases, p.SimilarAppIDs,
		PageParsedStatus, p.Format, p.Missing, p.ParserVersion}
	if complete {
		cols = append(cols, "enrichment_source", "enriched_at")
		args = append(args, SourceEnriched, now)
	}
	set, changed := make([]string, len(cols)), make([]string, len(cols))
	for i, c := range cols {
		set[i] = fmt.Sprintf("%s = ?%d", c, i+1)
		changed[i] = fmt.Sprintf("%s IS NOT ?%d", c, i+1)
	}
	if complete {
		set = append(set, "enrich_error = NULL", "enrich_priority = 0")
	}
	n := len(args)
	sql := fmt.Sprintf("UPDATE app_registry SET %s, updated_at = ?%d\nWHERE track_id = ?%d AND (%s)",
		strings.Join(set, ", "), n+1, n+2, strings.Join(changed, " OR "))
	return d1.Stmt{SQL: sql, Args: append(args, now, trackID)}
}

// The refreshes' writes.

// PostponeRefresh puts an enriched app on the retry list, due at until
// (only an enriched app; the same due time again writes nothing).
func PostponeRefresh(id int64, until string) d1.Stmt {
	return d1.Stmt{SQL: `UPDATE app_registry SET refresh_retry_at = ?1 WHERE track_id = ?2 AND enrichment_source = '` + SourceEnriched + `'
  AND refresh_retry_at IS NOT ?1`,
		Args: []any{until, id}}
}

// RetryRefreshes puts apps on the retry list: retries is a JSON array of
// {"id", "at"}. An app already due at its time is not written.
func RetryRefreshes(retries string) d1.Stmt {
	return d1.Stmt{SQL: `WITH p AS (SELECT json_extract(value, '$.id') AS id, json_extract(value, '$.at') AS at FROM json_each(?1))
UPDATE app_registry SET refresh_retry_at = p.at FROM p
WHERE app_registry.track_id = p.id AND app_registry.enrichment_source = '` + SourceEnriched + `'
  AND app_registry.refresh_retry_at IS NOT p.at`, Args: []any{retries}}
}

// UnchangedRefresh records a refresh whose lookup showed nothing that
// needs a page. The row is written only when something moved: the
// lookup's other fields (average rating, price, currency; then their
// observation time too, which the history triggers record them at), a
// stale mark, a place on the retry list, or a sighting older than
// seenBefore (so the stale task still sees refreshed apps as seen).
// Otherwise the update matches no row and writes nothing: neither the row
// nor an index entry. enriched_at stays the time of the record (the
// page), not of the last look.
func UnchangedRefresh(id int64, averageRating, price float64, currency, now, seenBefore string) d1.Stmt {
	return d1.Stmt{
		SQL: `UPDATE app_registry SET average_rating = ?1, price = ?2, currency = ?3,
  observed_at = CASE WHEN average_rating IS NOT ?1 OR price IS NOT ?2 OR currency IS NOT ?3 THEN ?4 ELSE observed_at END,
  updated_at = CASE WHEN average_rating IS NOT ?1 OR price IS NOT ?2 OR currency IS NOT ?3 THEN ?4 ELSE updated_at END,
  last_seen_at = max(COALESCE(last_seen_at, ''), ?4), stale_at = NULL, refresh_retry_at = NULL
WHERE track_id = ?5 AND enrichment_source = '` + SourceEnriched + `'
  AND (average_rating IS NOT ?1 OR price IS NOT ?2 OR currency IS NOT ?3 OR stale_at IS NOT NULL
    OR refresh_retry_at IS NOT NULL OR COALESCE(last_seen_at, '') < ?6)`,
		Args: []any{averageRating, price, currency, now, id, seenBefore},
	}
}

// DeferredRefresh records a changed refresh whose page waited for the new
// apps (refresh.DeferPage): what its lookup carries (lookup, the values
// of LookupColumns: version, rating count, price, notes and the rest), so
// the catalogue and its histories move now, while page_version and
// page_rating_count keep what the stored page was fetched for, so the
// page stays owed (refresh.Unchanged sees the change again). The app goes
// on the retry list at until unless it is due there later already. The
// row is written only when a lookup value moved or it is not on the
// retry list for later; then observed_at and updated_at are the look's
// (the history triggers record the values at it). An app already on the
// retry list for later with nothing moved writes nothing.
func DeferredRefresh(lookup []any, now, until string) d1.Stmt {
	cols := lookupColumnList()[1:] // track_id is ?1
	set := make([]string, 0, len(cols))
	moved := make([]string, 0, len(cols))
	for i, c := range cols {
		set = append(set, fmt.Sprintf("%s = ?%d", c, i+2))
		moved = append(moved, fmt.Sprintf("%s IS NOT ?%d", c, i+2))
	}
	n := len(cols) + 1
	anyMoved := "(" + strings.Join(moved, " OR ") + ")"
	sql := fmt.Sprintf(`UPDATE app_registry SET %s,
  observed_at = CASE WHEN %[2]s THEN ?%[3]d ELSE observed_at END,
  updated_at = CASE WHEN %[2]s THEN ?%[3]d ELSE updated_at END,
  last_seen_at = max(COALESCE(last_seen_at, ''), ?%[3]d), stale_at = NULL,
  refresh_retry_at = CASE WHEN refresh_retry_at > ?%[3]d THEN refresh_retry_at ELSE ?%[4]d END
WHERE track_id = ?1 AND enrichment_source = '`+SourceEnriched+`'
  AND (%[2]s OR refresh_retry_at IS NULL OR refresh_retry_at <= ?%[3]d OR stale_at IS NOT NULL)`,
		strings.Join(set, ", "), anyMoved, n+1, n+2)
	return d1.Stmt{SQL: sql, Args: append(append([]any(nil), lookup...), now, until)}
}

// Discovery's inserts.

// seedRaiseSQL and seedInsertSQL queue an operator's app ids (?1, a JSON
// array) at priority ?2, discovered at ?3: a known app still queued whose
// priority is lower is raised (the enrichment pick,
// idx_app_registry_queue_value, takes it next); an unknown one is
// inserted. The update runs first, so the insert's RETURNING rows are the
// new apps alone.
const seedRaiseSQL = `UPDATE app_registry SET enrich_priority = ?2
WHERE track_id IN (SELECT value FROM json_each(?1)) AND enriched_at IS NULL AND enrich_priority < ?2`

const seedInsertSQL = `INSERT INTO app_registry (track_id, enrich_priority, discovered_at)
SELECT value, ?2, ?3 FROM json_each(?1) WHERE true
ON CONFLICT (track_id) DO NOTHING RETURNING track_id`

// SeedApps queues ids (a JSON array of track ids) for enrichment first at
// priority, at now: known queued apps raised, unknown ones inserted (the
// batch returns a row for each inserted app). An enriched app is left as
// it is: its refreshes keep it. Every dequeue resets the priority
// (Enriched, PageFields, MarkMissing, GiveUp).
func SeedApps(ids string, priority int, now string) []d1.Stmt {
	return []d1.Stmt{
		{SQL: seedRaiseSQL, Args: []any{ids, priority}},
		{SQL: seedInsertSQL, Args: []any{ids, priority, now}},
	}
}

// DiscoveredSQL queues apps met by id alone (?1, a JSON array of track
// ids), discovered at ?2: an unknown one is inserted and returned, a
// known one is not touched (no row written). A page's similar apps take
// it: free, their page fetched already.
const DiscoveredSQL = `INSERT INTO app_registry (track_id, discovered_at)
SELECT value, ?2 FROM json_each(?1) WHERE true
ON CONFLICT (track_id) DO NOTHING RETURNING track_id`

// Discovered is DiscoveredSQL for ids (a JSON array) at now.
func Discovered(ids, now string) d1.Stmt {
	return d1.Stmt{SQL: DiscoveredSQL, Args: []any{ids, now}}
}

// Segment priorities: the apps of the top market segments
// (worker/segments' focus pass).

// RaisePriority raises queued apps (ids, a JSON array of track ids) to
// priority: only an app still queued whose priority is lower is written
// (seedRaiseSQL), so an operator's higher seed priority stays.
func RaisePriority(ids string, priority int) d1.Stmt {
	return d1.Stmt{SQL: seedRaiseSQL, Args: []any{ids, priority}}
}

// LowerPriority returns queued apps (ids) at exactly priority to the
// default 0: an app raised higher since (an operator's seed) stays.
func LowerPriority(ids string, priority int) d1.Stmt {
	return d1.Stmt{
		SQL: `UPDATE app_registry SET enrich_priority = 0
WHERE track_id IN (SELECT value FROM json_each(?1)) AND enriched_at IS NULL AND enrich_priority = ?2`,
		Args: []any{ids, priority},
	}
}

// RaiseTier moves tiered apps (ids) whose tier is one of from (a JSON
// array of tier names) to tier: an untiered app (the catalogue sweep tiers
// it) or one already at another tier is not written. A written app is its
// row and its entry moved in idx_app_registry_refresh_sweep.
func RaiseTier(ids, tier, from string) d1.Stmt {
	return d1.Stmt{
		SQL: `UPDATE app_registry SET refresh_tier = ?2
WHERE track_id IN (SELECT value FROM json_each(?1)) AND refresh_tier IN (SELECT value FROM json_each(?3))`,
		Args: []any{ids, tier, from},
	}
}
