package registry

import (
	"fmt"
	"strings"
	"sync"

	"storecrawl/worker/d1"
)

// The catalogue's, the searches' and the markets' writes.

// observeSQL upserts what was seen in one statement: a new app is queued
// for enrichment with what the source showed, discovered at the time of
// the sighting, and a search's values are its first (values_at, set
// once: their time in history, where migrations/0028 writes no row for
// them); a known one gets
// last_seen_at, loses its stale mark, and takes the lookup-level fields
// the source carries (the history triggers record what changed, at
// observed_at). A new app a search found is inserted with the rest of the
// result's lookup fields ("l", SearchOwnValues) and its lookup_at, which
// the search's SearchResult statement would otherwise write over the row
// just inserted (a row more a new app); a known app's are SearchResult's. An enriched app whose version changed since its page was
// fetched is due for a refresh now. A new version's release notes are
// the source's, or unknown (NULL), never the old version's, so the version
// history records the right ones. A known app is written only when
// something changes: a value, its stale mark, its refresh, or a sighting
// older than the sighting granularity (?3; ?4 for an app with a refresh
// tier, which its refreshes already keep seen); otherwise the update is
// skipped and writes nothing (an UPDATE to the same values would still
// write the row and its index entries). Numbered parameters: ?1 the JSON
// list, ?2 the time, ?3 and ?4 the times before which a stored sighting
// moves.
var observeSQL = sync.OnceValue(func() string {
	own := searchOwnColumns()
	cols, vals := make([]string, len(own)), make([]string, len(own))
	for i, c := range own {
		cols[i], vals[i] = c, fmt.Sprintf("l ->> %d", i)
	}
	return `WITH s AS (SELECT json_extract(value, '$.id') AS id, json_extract(value, '$.name') AS name,
  json_extract(value, '$.genre') AS genre, json_extract(value, '$.n') AS n, json_extract(value, '$.r') AS r,
  json_extract(value, '$.p') AS p, json_extract(value, '$.cur') AS cur, json_extract(value, '$.v') AS v,
  json_extract(value, '$.vd') AS vd, json_extract(value, '$.rn') AS rn, value -> '$.l' AS l FROM json_each(?1))
INSERT INTO app_registry (track_id, name, genre_id, rating_count, average_rating, price, currency, version,
  current_version_release_date, release_notes, last_seen_at, observed_at, discovered_at, values_at, ` + strings.Join(cols, ", ") + `, lookup_at)
SELECT id, name, genre, n, r, p, cur, v, vd, rn, ?2, CASE WHEN n IS NOT NULL THEN ?2 END, ?2, CASE WHEN n IS NOT NULL THEN ?2 END,
  ` + strings.Join(vals, ", ") + `, CASE WHEN l IS NOT NULL THEN ?2 END FROM s WHERE true
ON CONFLICT (track_id) DO UPDATE SET
  last_seen_at = excluded.last_seen_at,
  values_at = COALESCE(app_registry.values_at, excluded.values_at),
  stale_at = NULL,
  observed_at = COALESCE(excluded.observed_at, app_registry.observed_at),
  rating_count = COALESCE(excluded.rating_count, app_registry.rating_count),
  average_rating = COALESCE(excluded.average_rating, app_registry.average_rating),
  price = COALESCE(excluded.price, app_registry.price),
  currency = COALESCE(excluded.currency, app_registry.currency),
  version = COALESCE(excluded.version, app_registry.version),
  current_version_release_date = COALESCE(excluded.current_version_release_date, app_registry.current_version_release_date),
  release_notes = CASE WHEN excluded.version IS NOT NULL AND excluded.version IS NOT app_registry.version
    THEN excluded.release_notes ELSE COALESCE(excluded.release_notes, app_registry.release_notes) END,
  next_refresh_at = CASE WHEN app_registry.next_refresh_at > ?2 AND excluded.version IS NOT NULL
      AND app_registry.page_version IS NOT NULL AND excluded.version IS NOT app_registry.page_version
    THEN ?2 ELSE app_registry.next_refresh_at END
WHERE app_registry.stale_at IS NOT NULL
  OR COALESCE(app_registry.last_seen_at, '') < CASE WHEN app_registry.refresh_tier IS NULL THEN ?3 ELSE ?4 END
  OR (excluded.rating_count IS NOT NULL AND excluded.rating_count IS NOT app_registry.rating_count)
  OR (excluded.average_rating IS NOT NULL AND excluded.average_rating IS NOT app_registry.average_rating)
  OR (excluded.price IS NOT NULL AND excluded.price IS NOT app_registry.price)
  OR (excluded.currency IS NOT NULL AND excluded.currency IS NOT app_registry.currency)
  OR (excluded.version IS NOT NULL AND excluded.version IS NOT app_registry.version)
  OR (excluded.current_version_release_date IS NOT NULL AND excluded.current_version_release_date IS NOT app_registry.current_version_release_date)
  OR (excluded.release_notes IS NOT NULL AND excluded.release_notes IS NOT app_registry.release_notes)
  OR (app_registry.next_refresh_at > ?2 AND excluded.version IS NOT NULL
      AND app_registry.page_version IS NOT NULL AND excluded.version IS NOT app_registry.page_version)`
})

// Observe records what one chart scan or search saw: seen is a JSON array
// of {"id", "name", "genre", and, when the source carries them, "n"
// (ratings), "r" (average), "p" (price), "cur", "v" (version), "vd" (its
// date), "rn" (its notes), "l" (a search result's SearchOwnValues)}, each
// app once; now the time; seenBefore the
// time before which a stored sighting moves, tieredSeenBefore the same for
// an app with a refresh tier.
func Observe(seen, now, seenBefore, tieredSeenBefore string) d1.Stmt {
	return d1.Stmt{SQL: observeSQL(), Args: []any{seen, now, seenBefore, tieredSeenBefore}}
}

// Tiers writes a catalogue sweep's tiers and velocities: plans is a JSON
// array of {"id", "tier", "v7", "v30"}. An app whose stored tier and
// velocities are the plan's is not written. A written app is its row and,
// for a tier change, its entry moved in idx_app_registry_refresh_sweep
// and, for a first tier, its entry gone from idx_app_registry_untiered.
func Tiers(plans string) d1.Stmt {
	return d1.Stmt{
		SQL: `WITH p AS (SELECT json_extract(value, '$.id') AS id, json_extract(value, '$.tier') AS tier,
  json_extract(value, '$.v7') AS v7, json_extract(value, '$.v30') AS v30 FROM json_each(?1))
UPDATE app_registry SET refresh_tier = p.tier, rating_velocity_7d = p.v7, rating_velocity_30d = p.v30
FROM p WHERE app_registry.track_id = p.id
  AND (app_registry.refresh_tier IS NOT p.tier OR app_registry.rating_velocity_7d IS NOT p.v7
    OR app_registry.rating_velocity_30d IS NOT p.v30)`,
		Args: []any{plans},
	}
}

// MarkStaleSQL marks the unseen apps of a track-id range (MarkStale; the
// text for the hot-query check). Rows written: the apps it marks
// (stale_at is in no index); a marked app is not marked again.
const MarkStaleSQL = `UPDATE app_registry SET stale_at = ?1
WHERE track_id > ?2 AND track_id <= ?3 AND stale_at IS NULL
  AND max(COALESCE(last_seen_at, ''), COALESCE(enriched_at, ''), discovered_at) < ?4`

// MarkStale marks stale at now the apps of the track-id range (after,
// last] last seen before seenBefore; it returns a row for each.
func MarkStale(after, last int64, seenBefore, now string) d1.Stmt {
	return d1.Stmt{SQL: MarkStaleSQL + ` RETURNING 1 AS marked`, Args: []any{now, after, last, seenBefore}}
}

// MarkFilled stamps apps (ids, a JSON array of track ids) filled with
// rankings at now: a row each, and each leaves idx_app_registry_unfilled.
// Only an app still unfilled is written (another run's fill stands).
func MarkFilled(ids, now string) d1.Stmt {
	return d1.Stmt{
		SQL:  `UPDATE app_registry SET rankings_filled_at = ?1 WHERE track_id IN (SELECT value FROM json_each(?2)) AND rankings_filled_at IS NULL`,
		Args: []any{now, ids},
	}
}

// SearchObserved are the lookup columns Observe writes for a search: a
// search result's statement (SearchResult) leaves them to it.
var SearchObserved = map[string]bool{"price": true, "currency": true, "average_rating": true, "rating_count": true,
	"version": true, "current_version_release_date": true, "release_notes": true}

// SearchResultSQL keeps a search result's lookup fields: a new app is
// queued with them; a queued app's fields are refreshed when they changed;
// an enriched app is left alone (no write: its record comes from its own
// enrichment). The fields Observe keeps (SearchObserved) are its own: it
// runs first in the same batch, with history for what changed. This
// statement sets the others, so it touches no index of app_registry
// (rating_count is in the enrichment pick's). A queued app is rewritten
// only when one of them differs: a re-search finding it unchanged writes
// nothing, not even lookup_at.
var SearchResultSQL = sync.OnceValue(func() string {
	return `INSERT INTO app_registry (` + LookupColumns + `, lookup_at)
VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)
ON CONFLICT (track_id) DO UPDATE SET ` + searchOwnUpdates("%[1]s=excluded.%[1]s", ", ") + `, lookup_at=excluded.lookup_at
WHERE app_registry.enriched_at IS NULL AND (` +
		searchOwnUpdates("excluded.%[1]s IS NOT app_registry.%[1]s", "\n  OR ") + `)`
})

// searchOwnColumns are LookupColumns but track_id and SearchObserved: the
// lookup fields a search result's own statement keeps.
var searchOwnColumns = sync.OnceValue(func() []string {
	var out []string
	for _, c := range lookupColumnList() {
		if c != "track_id" && !SearchObserved[c] {
			out = append(out, c)
		}
	}
	return out
})

// searchOwnUpdates formats each of searchOwnColumns with format, joined by
// sep.
func searchOwnUpdates(format, sep string) string {
	out := make([]string, 0, len(searchOwnColumns()))
	for _, c := range searchOwnColumns() {
		out = append(out, fmt.Sprintf(format, c))
	}
	return strings.Join(out, sep)
}

// SearchOwnValues picks searchOwnColumns' values from lookup (the values
// of LookupColumns, in order): what Observe inserts a new app with ("l").
func SearchOwnValues(lookup []any) []any {
	own := map[string]bool{}
	for _, c := range searchOwnColumns() {
		own[c] = true
	}
	out := make([]any, 0, len(own))
	for i, c := range lookupColumnList() {
		if own[c] && i < len(lookup) {
			out = append(out, lookup[i])
		}
	}
	return out
}

// SearchResult is SearchResultSQL for one result: lookup the values of
// LookupColumns, seen at now.
func SearchResult(lookup []any, now string) d1.Stmt {
	return d1.Stmt{SQL: SearchResultSQL(), Args: append(lookup, now)}
}

// AppScoresSQL writes apps' scores (AppScores; the text for the hot-query
// check): [track id, demand, competitiveness] each, at ?2, where either
// differs: an app enriched again with the same
// ratings writes nothing (competitiveness moves with its update's age, a
// tenth of a point every couple of days). No index of app_registry holds
// these columns: a written app is its row alone.
const AppScoresSQL = `UPDATE app_registry SET demand_score = j.value->>1, competitiveness_score = j.value->>2, analyzed_at = ?2
FROM json_each(?1) j
WHERE app_registry.track_id = j.value->>0
  AND (app_registry.demand_score IS NOT j.value->>1 OR app_registry.competitiveness_score IS NOT j.value->>2)`

// AppScores writes the markets' scores of apps: scores is a JSON array of
// [track id, demand, competitiveness], at the time.
func AppScores(scores, at string) d1.Stmt {
	return d1.Stmt{SQL: AppScoresSQL, Args: []any{scores, at}}
}
