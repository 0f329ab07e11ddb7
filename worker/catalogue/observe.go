// Package catalogue is the living catalogue's side of D1: what
// the crawl sees again updates what is stored (Observe), the catalogue
// sweep computes rating velocities and schedules refreshes by the policy
// of worker/refresh, apps not seen for long are marked stale, history is
// pruned by age, and an app's history is served to the API.
//
// History itself (rating snapshots, version and price changes) is written
// by the schema's triggers (migrations/0018) whenever any writer changes
// those values, so every path records it alike; keyword rank history is
// written here, chart positions per scan in chart_position_history (0003).
package catalogue

import (
	"encoding/json"
	"time"

	"storecrawl/worker/appstore"
	"storecrawl/worker/d1"
	"storecrawl/worker/refresh"
	"storecrawl/worker/registry"
)

// Sources of an observation.
const (
	SourceChart  = "chart"
	SourceSearch = "search"
)

// Seen is one app as a chart or a search showed it. A chart carries the
// name only; a search result (Lookup true) also the lookup-level fields.
type Seen struct {
	TrackID int64
	Name    string
	GenreID int
	Lookup  bool
	// Lookup-level fields (Lookup true).
	RatingCount   int64
	AverageRating float64
	Price         float64
	Currency      string
	Version       string
	VersionDate   string
	// ReleaseNotes are the version's notes when the source carries them.
	ReleaseNotes string
	// Own are a search result's other lookup fields
	// (registry.SearchOwnValues), which a new app is inserted with.
	Own []any
}

// SeenFromApp is a search result as an observation.
func SeenFromApp(a appstore.App) Seen {
	return Seen{TrackID: a.TrackID, Name: a.Name, GenreID: a.GenreID, Lookup: true,
		RatingCount: a.RatingCount, AverageRating: a.AverageRating, Price: a.Price, Currency: a.Currency,
		Version: a.Version, VersionDate: a.CurrentVersionReleaseDate, ReleaseNotes: a.ReleaseNotes,
		Own: registry.SearchOwnValues(a.StoredLookupArgs())}
}

// seenJSON is one observation as the upsert reads it with json_each;
// absent lookup-level fields are null, which keeps the stored values.
type seenJSON struct {
	ID      int64    `json:"id"`
	Name    string   `json:"name"`
	Genre   any      `json:"genre"`
	Count   *int64   `json:"n"`
	Rating  *float64 `json:"r"`
	Price   *float64 `json:"p"`
	Cur     *string  `json:"cur"`
	Version *string  `json:"v"`
	VDate   *string  `json:"vd"`
	Notes   *string  `json:"rn"`
	Own     []any    `json:"l,omitempty"`
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// SightingGranularity is how fine a known app's sighting times are kept:
// a sighting that changes no stored value moves last_seen_at (and
// observed_at) only when they are older than this, so an app seen again
// and again (in many searches of a cycle, cycle after cycle, and in a
// keyword's re-search a day later) is not rewritten each time; D1 bills
// every row and index entry written. A week, from what the readers need:
// the stale mark (catalogue-stale, DefaultStaleAfter 90 days, at least 7)
// compares last_seen_at to a cutoff, and a stored sighting is at most
// this much older than the real last one (a sighting more than this after
// the stored one is written), so MarkStale moves its cutoff back by this
// much: never early, at most a week late of its 90 days. The history
// API's last_seen_at reads "seen then, and maybe again within a week". The velocities
// read the snapshots, not the sighting. A hot keyword's results
// (HotKeywordResearch, a day) then write their sighting once a week, not
// at each daily re-search. An app with a refresh tier is looked up by
// its tier's sweep at least monthly, and an unchanged refresh keeps its
// sighting within refresh.SightingGranularity (45 days), under the stale
// age: a search's sighting of such an app moves last_seen_at only past
// that granularity too, so re-searches (each result a known, refreshed
// app) write nothing for what the refreshes already prove.
const SightingGranularity = 7 * 24 * time.Hour

// SightingBefore is the time a stored sighting older than which moves:
// now less SightingGranularity, as stored times compare.
func SightingBefore(now time.Time) string { return d1.Time(now.Add(-SightingGranularity)) }

// ObserveStmt records what one chart scan or search saw (one statement,
// whatever the number of apps; none for none: registry.Observe, which
// writes a known app only when something changes, a sighting older than
// SightingGranularity included). Each app once: a later
// sighting of the same id in the list is dropped.
func ObserveStmt(seen []Seen, now time.Time) []d1.Stmt {
	rows := make([]seenJSON, 0, len(seen))
	dup := map[int64]bool{}
	for _, s := range seen {
		if dup[s.TrackID] {
			continue
		}
		dup[s.TrackID] = true
		r := seenJSON{ID: s.TrackID, Name: appstore.Truncate(s.Name, appstore.MaxTextLen)}
		if s.GenreID > 0 {
			r.Genre = s.GenreID
		}
		if s.Lookup {
			n, avg, p := s.RatingCount, s.AverageRating, s.Price
			r.Count, r.Rating, r.Price = &n, &avg, &p
			r.Cur, r.Version, r.VDate = nonEmpty(s.Currency), nonEmpty(s.Version), nonEmpty(s.VersionDate)
			r.Notes = nonEmpty(appstore.Truncate(s.ReleaseNotes, appstore.MaxTextLen))
			r.Own = s.Own
		}
		rows = append(rows, r)
	}
	if len(rows) == 0 {
		return nil
	}
	b, _ := json.Marshal(rows)
	return []d1.Stmt{registry.Observe(string(b), d1.Time(now), SightingBefore(now), d1.Time(now.Add(-refresh.SightingGranularity)))}
}

// rankChangesSQL appends a keyword search's rank changes to
// keyword_rank_history (migrations/0026): a row for each result whose rank
// differs from the one crawl_rankings holds for it, and a NULL rank for
// each app crawl_rankings lists that the search no longer does (it left).
// It runs before the rankings are rewritten. A result holding its rank
// writes nothing: readers carry a row's rank forward to the keyword's
// next row for the app (AppHistory). An app's rank is its ranking row's
// until it changes (migrations/0034): an app entering the results writes
// no row (its ranking holds the rank and when it was taken, seen_at), and
// its first change writes that rank on seen_at's day before the new one
// (a row already there, from an earlier change, is not written again), so
// a series with rows holds every rank it had. One exception: an app that
// left earlier the same day has that day's row, which its return
// rewrites (the day's last). Two changes on one UTC day keep the day's
// last, crawl_rankings' (an unchanged one skips the update and writes
// nothing); a rank taken earlier the same day is not written first, the
// change replaces it. ?1 the keyword, ?2 the day (Day), ?3 a JSON array of
// [track id, rank] pairs. Each row is one table row (the table is WITHOUT
// ROWID, no other index). Rows are keyed by the keyword's id
// (migrations/0035), read once by its unique index (k): a keyword
// crawl_keywords does not hold writes no row.
const rankChangesSQL = `WITH s AS (SELECT json_extract(value, '$[0]') AS id, json_extract(value, '$[1]') AS rank FROM json_each(?3)),
k AS (SELECT id FROM crawl_keywords WHERE keyword = ?1)
INSERT INTO keyword_rank_history (track_id, keyword_id, day, rank)
SELECT r.track_id, k.id, CAST(julianday(substr(r.seen_at, 1, 10)) - 2440587.5 AS INTEGER), r.rank FROM k, crawl_rankings r LEFT JOIN s ON s.id = r.track_id
WHERE r.keyword = ?1 AND r.rank IS NOT s.rank AND CAST(julianday(substr(r.seen_at, 1, 10)) - 2440587.5 AS INTEGER) < ?2
UNION ALL
SELECT s.id, k.id, ?2, s.rank FROM k, s LEFT JOIN crawl_rankings r ON r.keyword = ?1 AND r.track_id = s.id
WHERE r.rank IS NOT s.rank
  AND (r.rank IS NOT NULL OR EXISTS (SELECT 1 FROM keyword_rank_history h WHERE h.track_id = s.id AND h.day = ?2 AND h.keyword_id = k.id))
UNION ALL
SELECT r.track_id, k.id, ?2, NULL FROM k, crawl_rankings r WHERE r.keyword = ?1 AND r.track_id NOT IN (SELECT id FROM s)
ON CONFLICT (track_id, day, keyword_id) DO UPDATE SET rank = excluded.rank
WHERE keyword_rank_history.rank IS NOT excluded.rank`

// RankPairs is a search's results as rankChangesSQL and the rankings
// upsert read them: [track id, rank] from 1 in list order, each app once
// at its first (best) rank.
func RankPairs(ids []int64) string {
	pairs := make([][2]int64, 0, len(ids))
	dup := map[int64]bool{}
	for i, id := range ids {
		if !dup[id] {
			dup[id] = true
			pairs = append(pairs, [2]int64{id, int64(i + 1)})
		}
	}
	b, _ := json.Marshal(pairs)
	return string(b)
}

// KeywordRankStmt records how a keyword's ranks changed with a search (ids
// in rank order; none: every app listed left), compared with the stored
// rankings: run it before they are rewritten.
func KeywordRankStmt(keyword string, ids []int64, now time.Time) []d1.Stmt {
	return []d1.Stmt{{SQL: rankChangesSQL, Args: []any{keyword, Day(now), RankPairs(ids)}}}
}
