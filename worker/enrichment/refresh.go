package enrichment

import (
	"context"
	"time"

	"storecrawl/worker/appstore"
	"storecrawl/worker/catalogue"
	"storecrawl/worker/d1"
	"storecrawl/worker/refresh"
)

// Refreshes: what the controller's pick calls to serve due
// refreshes next to never-enriched apps. Scheduling is the schema's and
// the catalogue sweep's (migrations/0018, worker/catalogue): a stored
// record (SaveStatements) or an unchanged refresh
// (UnchangedRefreshStatements) sets enriched_at, and the next refresh is
// scheduled from it.

// RefreshStore is the catalogue side of refreshes: which are due, and how
// a refresh that stored no new record is settled. Runner.Refreshes nil
// means the run serves the discovery queue alone.
type RefreshStore interface {
	// DueRefreshes reads up to n refreshes due at now, most overdue first.
	DueRefreshes(ctx context.Context, n int, now time.Time) ([]DueRefresh, error)
	// SaveUnchangedRefresh records a refresh whose lookup showed nothing a
	// page is needed for (UnchangedRefreshStatements).
	SaveUnchangedRefresh(ctx context.Context, app appstore.App, at time.Time) error
	// PostponeRefresh makes a refresh that got no record due again at
	// until, so a failing app does not take every tick's slots.
	PostponeRefresh(ctx context.Context, id int64, until time.Time) error
}

// RefreshOutageDelay postpones a refresh that met an upstream-level
// failure (5xx, timeout, connection error): short, like the queue's first
// deferral, without a counter (the pacing slows the whole run in an
// outage). A failure about the app itself (not found, a lookup or page
// that does not parse, a D1 error on its row) postpones it by the policy's
// refresh.RetryInterval: hours, not its tier's month. Neither counts as an
// attempt; the app stays enriched as it was.
const RefreshOutageDelay = 5 * time.Minute

// DueRefresh is an enriched app whose refresh is due, with what its page
// was fetched for.
type DueRefresh struct {
	TrackID int64
	// Page is the version and rating count its store page was fetched for
	// (Version "" when unknown: the page is fetched).
	Page refresh.Fingerprint
}

// SplitTick shares a tick's n apps between never-enriched ones (pending of
// them waiting) and due refreshes (due of them): refresh.Split.
func SplitTick(n, pending, due int, share float64) (refreshes, discovery int) {
	return refresh.Split(n, pending, due, share)
}

// DueRefreshes reads up to n refreshes due at now, most overdue first (hot
// apps come due sooner: the policy's priority is in their due time).
func (s D1Store) DueRefreshes(ctx context.Context, n int, now time.Time) ([]DueRefresh, error) {
	var rows []struct {
		TrackID         int64  `json:"track_id"`
		PageVersion     string `json:"page_version"`
		PageRatingCount int64  `json:"page_rating_count"`
	}
	if err := s.DB.Query(ctx, &rows, catalogue.DueRefreshSQL, ts(now), n); err != nil {
		return nil, err
	}
	out := make([]DueRefresh, len(rows))
	for i, r := range rows {
		out[i] = DueRefresh{TrackID: r.TrackID, Page: refresh.Fingerprint{Version: r.PageVersion, RatingCount: r.PageRatingCount}}
	}
	return out, nil
}

// NeedsPage reports whether a refresh's lookup shows a change its page
// must be fetched for (refresh.Unchanged: the same version and rating
// count need no page).
func (d DueRefresh) NeedsPage(looked appstore.App) bool {
	return !refresh.Unchanged(d.Page, refresh.Fingerprint{Version: looked.Version, RatingCount: looked.RatingCount})
}

// SaveUnchangedRefresh implements RefreshStore.
func (s D1Store) SaveUnchangedRefresh(ctx context.Context, app appstore.App, at time.Time) error {
	_, err := s.DB.ExecAtomic(ctx, UnchangedRefreshStatements(app, at)...)
	return err
}

// PostponeRefresh implements RefreshStore: only a scheduled app (still
// enriched) is moved.
func (s D1Store) PostponeRefresh(ctx context.Context, id int64, until time.Time) error {
	_, err := s.DB.Exec(ctx, d1.Stmt{SQL: `UPDATE app_registry SET next_refresh_at = ? WHERE track_id = ? AND next_refresh_at IS NOT NULL`,
		Args: []any{ts(until), id}})
	return err
}

// UnchangedRefreshStatements record a refresh whose lookup showed nothing
// that needs a page: the lookup's other fields (average rating, price),
// the sighting, and enriched_at, from which the next refresh is scheduled.
// Only a still-enriched record is touched. The history triggers record
// what changed.
func UnchangedRefreshStatements(a appstore.App, at time.Time) []d1.Stmt {
	now := ts(at)
	return []d1.Stmt{{
		SQL: `UPDATE app_registry SET average_rating = ?, price = ?, currency = ?, observed_at = ?, last_seen_at = ?,
  stale_at = NULL, enriched_at = ?, updated_at = ?
WHERE track_id = ? AND enrichment_source = '` + SourceEnriched + `'`,
		Args: []any{a.AverageRating, a.Price, a.Currency, now, now, now, now, a.TrackID},
	}}
}
