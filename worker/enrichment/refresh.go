package enrichment

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"storecrawl/worker/appstore"
	"storecrawl/worker/d1"
	"storecrawl/worker/refresh"
	"storecrawl/worker/registry"
)

// Refreshes: what the controller's pick calls to serve due refreshes next
// to never-enriched apps. Each tier's apps are looked at in rounds, one
// per interval, behind a cursor (worker/refresh: Due, Window.After); the
// catalogue sweep sets the tiers. A refresh writes no schedule: an
// unchanged app writes nothing unless a lookup field moved, the cursors
// one row per tier per run, and only failures write a row (the retry list,
// refresh_retry_at).

// RefreshStore is the catalogue side of refreshes. Runner.Refreshes nil
// means the run serves the discovery queue alone.
type RefreshStore interface {
	// DueRefreshes reads up to n apps of each tier's due window and of the
	// retry list, with the windows they were read from.
	DueRefreshes(ctx context.Context, n int, now time.Time) (RefreshPick, error)
	// SaveUnchangedRefresh records a refresh whose lookup showed nothing a
	// page is needed for (UnchangedRefreshStatements).
	SaveUnchangedRefresh(ctx context.Context, app appstore.App, at time.Time) error
	// SaveDeferredRefresh records a changed refresh whose page waited for
	// the new apps (DeferredRefreshStatements): its lookup, and the app on
	// the retry list at until, its page still owed.
	SaveDeferredRefresh(ctx context.Context, app appstore.App, at, until time.Time) error
	// PostponeRefresh puts an app on the retry list, due at until.
	PostponeRefresh(ctx context.Context, id int64, until time.Time) error
	// AdvanceRefreshes writes the tiers' cursors and puts apps on the retry
	// list, as one atomic batch.
	AdvanceRefreshes(ctx context.Context, cursors map[string]refresh.Cursor, retries []RefreshRetry, at time.Time) error
}

// RefreshOutageDelay puts back a refresh that met an upstream-level
// failure (5xx, timeout, connection error) behind apps that were done:
// short, like the queue's first deferral. An outage that ends a tier's
// batch stops its cursor instead (nothing written). A failure about the
// app itself (not found, a lookup or page that does not parse, a D1 error
// on its row) puts it on the retry list for refresh.RetryInterval: hours,
// not its tier's month. Neither counts as an attempt; the app stays
// enriched as it was.
const RefreshOutageDelay = 5 * time.Minute

// DueRefresh is an enriched app whose refresh is due, with what its page
// was fetched for and where it was picked from.
type DueRefresh struct {
	TrackID int64
	// Page is the version and rating count its store page was fetched for
	// (Version "" when unknown: the page is fetched).
	Page refresh.Fingerprint
	// Tier is the sweep it was picked from ("": the retry list); Slot its
	// place in the round.
	Tier string
	Slot int64
}

// RefreshPick is one run's due refreshes: the retry list's first, then the
// tiers' in the order of how far behind they are, each in round order.
type RefreshPick struct {
	Items []DueRefresh
	// Windows are the tiers' due windows at the pick; Read how many apps
	// each tier's read returned, of Limit asked.
	Windows map[string]refresh.Window
	Read    map[string]int
	Limit   int
	// Started: tiers without a stored cursor (refresh.StartCursor): the
	// first advance writes it, so the round goes on from there.
	Started map[string]bool
}

// RefreshRetry is an app put on the retry list.
type RefreshRetry struct {
	TrackID int64  `json:"id"`
	At      string `json:"at"`
}

// SplitTick shares the seq-th tick's n apps between never-enriched ones
// (pending of them waiting) and due refreshes (due of them): refresh.Split.
func SplitTick(n, pending, due int, share float64, seq int64) (refreshes, discovery int) {
	return refresh.Split(n, pending, due, share, seq)
}

// ShareTick sizes a tick's share of never-enriched apps (pending of them
// waiting) and due refreshes (due of them) in the seq-th tick (the
// refreshes' share of the pages is spread over ticks): pages is the store host's
// pace (the plan's BatchSize), items the most the tick's lookups and
// budgets carry (the plan's TickItems). New apps keep their share of the
// pages (SplitTick: every new app fetches its page); the refreshes take
// the rest of items, as a refresh whose lookup shows no change needs no
// page. A refresh that does need one takes a page slot the new apps left
// (pageSlots in Run); past them its page is deferred while new apps wait
// (refresh.DeferPage), else it is left in its tier's window.
func ShareTick(pages, items, pending, due int, share float64, seq int64) (refreshes, discovery int) {
	_, discovery = SplitTick(pages, pending, due, share, seq)
	refreshes = min(max(due, 0), max(items, pages)-discovery)
	return max(refreshes, 0), discovery
}

// NoRefreshPageCap is RefreshPageCap when no new app waits: refreshes
// take any page slot left.
const NoRefreshPageCap = -1

// RefreshPageCap is how many of a tick's pages changed refreshes may take
// while new apps wait (backlog): the slots the share left them, pages −
// discovery (SplitTick), even when the new apps then leave some unused (a
// lookup not found, a failed batch). The pacing pays for the pages a tick
// sent, so an unused slot starts the next tick sooner, where a new app
// takes it: a refresh page past the cap is a new app's page whatever the
// tick. With no backlog there is no cap (NoRefreshPageCap).
func RefreshPageCap(pages, discovery int, backlog bool) int {
	if !backlog {
		return NoRefreshPageCap
	}
	return max(pages-discovery, 0)
}

// refreshCursorName names a tier's cursor in sweep_cursors.
func refreshCursorName(tier string) string { return "refresh-" + tier }

const refreshCursorsSQL = `SELECT name, CAST(cursor AS TEXT) AS cursor FROM sweep_cursors WHERE name IN ('refresh-hot', 'refresh-warm', 'refresh-cold')`

// RefreshCursors reads the tiers' cursors; a tier without one starts at
// its clock's target (refresh.StartCursor), and started says so.
func (s D1Store) RefreshCursors(ctx context.Context, now time.Time) (cursors map[string]refresh.Cursor, started map[string]bool, err error) {
	var rows []struct {
		Name   string `json:"name"`
		Cursor string `json:"cursor"`
	}
	if err := s.DB.Query(ctx, &rows, refreshCursorsSQL); err != nil {
		return nil, nil, err
	}
	cursors, started = make(map[string]refresh.Cursor, len(refresh.Tiers)), map[string]bool{}
	for _, tier := range refresh.Tiers {
		cursors[tier], started[tier] = refresh.StartCursor(tier, now), true
	}
	for _, r := range rows {
		var c refresh.Cursor
		if json.Unmarshal([]byte(r.Cursor), &c) == nil && c.Round > 0 {
			tier := r.Name[len("refresh-"):]
			cursors[tier], started[tier] = c, false
		}
	}
	return cursors, started, nil
}

// DueRefreshes implements RefreshStore: the cursors, then one read of the
// tiers' windows and the retry list (DueRefreshSQL).
func (s D1Store) DueRefreshes(ctx context.Context, n int, now time.Time) (RefreshPick, error) {
	cursors, started, err := s.RefreshCursors(ctx, now)
	if err != nil {
		return RefreshPick{}, err
	}
	pick := RefreshPick{Windows: map[string]refresh.Window{}, Read: map[string]int{}, Limit: n, Started: started}
	args := make([]any, 0, 11)
	for _, tier := range refresh.Tiers {
		w := refresh.Due(tier, cursors[tier], now)
		pick.Windows[tier] = w
		args = append(args, w.From.Slot, w.From.TrackID, w.UpTo)
	}
	args = append(args, n, ts(now))
	var rows []struct {
		Tier            string `json:"tier"`
		Slot            int64  `json:"slot"`
		TrackID         int64  `json:"track_id"`
		PageVersion     string `json:"page_version"`
		PageRatingCount int64  `json:"page_rating_count"`
	}
	if err := s.DB.Query(ctx, &rows, DueRefreshSQL, args...); err != nil {
		return RefreshPick{}, err
	}
	byTier := map[string][]DueRefresh{}
	inTier := map[int64]bool{}
	for _, r := range rows {
		d := DueRefresh{TrackID: r.TrackID, Page: refresh.Fingerprint{Version: r.PageVersion, RatingCount: r.PageRatingCount}, Tier: r.Tier, Slot: r.Slot}
		if r.Tier != "" {
			pick.Read[r.Tier]++
			inTier[r.TrackID] = true
		}
		byTier[r.Tier] = append(byTier[r.Tier], d)
	}
	for _, d := range byTier[""] {
		if !inTier[d.TrackID] { // its round has come too: picked once, from the round
			pick.Items = append(pick.Items, d)
		}
	}
	for _, tier := range pick.TiersBehindFirst() {
		pick.Items = append(pick.Items, byTier[tier]...)
	}
	return pick, nil
}

// TiersBehindFirst is the refresh tiers, the one furthest behind its
// clock first (a stable order otherwise): a pick serves them in it.
func (p RefreshPick) TiersBehindFirst() []string {
	tiers := slices.Clone(refresh.Tiers)
	slices.SortStableFunc(tiers, func(a, b string) int {
		ba, bb := p.Windows[a].Behind(), p.Windows[b].Behind()
		switch {
		case ba > bb:
			return -1
		case ba < bb:
			return 1
		}
		return 0
	})
	return tiers
}

// DueRefreshSQL is the refresh pick: for each tier (?1–?3 hot, ?4–?6
// warm, ?7–?9 cold: the cursor's slot and track id, the window's end
// slot) its next apps in round order from idx_app_registry_refresh_sweep,
// a range of one tier's slots; then the retry list's due apps from
// idx_app_registry_refresh_retry (?11 now). Each part stops at ?10 apps.
var DueRefreshSQL = fmt.Sprintf(`SELECT * FROM (%[1]s WHERE refresh_tier = 'hot' AND %[2]s >= ?1 AND %[2]s < ?3 AND (%[2]s > ?1 OR track_id > ?2)
  ORDER BY %[2]s, track_id LIMIT ?10)
UNION ALL SELECT * FROM (%[1]s WHERE refresh_tier = 'warm' AND %[2]s >= ?4 AND %[2]s < ?6 AND (%[2]s > ?4 OR track_id > ?5)
  ORDER BY %[2]s, track_id LIMIT ?10)
UNION ALL SELECT * FROM (%[1]s WHERE refresh_tier = 'cold' AND %[2]s >= ?7 AND %[2]s < ?9 AND (%[2]s > ?7 OR track_id > ?8)
  ORDER BY %[2]s, track_id LIMIT ?10)
UNION ALL SELECT * FROM (%[3]s WHERE refresh_retry_at IS NOT NULL AND refresh_retry_at <= ?11 ORDER BY refresh_retry_at LIMIT ?10)`,
	`SELECT refresh_tier AS tier, `+refresh.SlotSQL+` AS slot, track_id, COALESCE(page_version, '') AS page_version,
  COALESCE(page_rating_count, -1) AS page_rating_count FROM app_registry`,
	refresh.SlotSQL,
	`SELECT '' AS tier, `+refresh.SlotSQL+` AS slot, track_id, COALESCE(page_version, '') AS page_version,
  COALESCE(page_rating_count, -1) AS page_rating_count FROM app_registry`)

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

// SaveDeferredRefresh implements RefreshStore.
func (s D1Store) SaveDeferredRefresh(ctx context.Context, app appstore.App, at, until time.Time) error {
	_, err := s.DB.Exec(ctx, DeferredRefreshStatement(app, at, until))
	return err
}

// DeferredRefreshStatement records a changed refresh whose page was
// deferred (refresh.DeferPage): registry.DeferredRefresh, written only
// when a lookup value moved or the app is not on the retry list for later.
func DeferredRefreshStatement(a appstore.App, at, until time.Time) d1.Stmt {
	return registry.DeferredRefresh(a.StoredLookupArgs(), ts(at), ts(until))
}

// PostponeRefresh implements RefreshStore: only an enriched app is put on
// the retry list.
func (s D1Store) PostponeRefresh(ctx context.Context, id int64, until time.Time) error {
	_, err := s.DB.Exec(ctx, registry.PostponeRefresh(id, ts(until)))
	return err
}

// AdvanceRefreshes implements RefreshStore: one row per cursor, one per
// app put back (only in an outage), in one batch, so a cursor never moves
// past an app that was neither done nor put back.
func (s D1Store) AdvanceRefreshes(ctx context.Context, cursors map[string]refresh.Cursor, retries []RefreshRetry, at time.Time) error {
	stmts := AdvanceRefreshStatements(cursors, retries, at)
	if len(stmts) == 0 {
		return nil
	}
	_, err := s.DB.ExecAtomic(ctx, stmts...)
	return err
}

// AdvanceRefreshStatements write the cursors (each a JSON cursor in
// sweep_cursors, through d1.Cursor, whose upsert skips a row already at
// the position; RefreshAdvance names a tier's only when it moves) and put
// the retries on the retry list (registry.RetryRefreshes: an app already
// due at that time is not written).
func AdvanceRefreshStatements(cursors map[string]refresh.Cursor, retries []RefreshRetry, at time.Time) []d1.Stmt {
	var stmts []d1.Stmt
	if len(retries) > 0 {
		b, _ := json.Marshal(retries)
		stmts = append(stmts, registry.RetryRefreshes(string(b)))
	}
	for _, tier := range refresh.Tiers {
		c, ok := cursors[tier]
		if !ok {
			continue
		}
		b, _ := json.Marshal(c)
		stmts = append(stmts, d1.Cursor{Name: refreshCursorName(tier)}.Write(string(b), at)...)
	}
	return stmts
}

// UnchangedRefreshStatements record a refresh whose lookup showed nothing
// that needs a page (registry.UnchangedRefresh: written only when
// something moved, a sighting older than refresh.SightingGranularity
// included).
func UnchangedRefreshStatements(a appstore.App, at time.Time) []d1.Stmt {
	return []d1.Stmt{registry.UnchangedRefresh(a.TrackID, a.AverageRating, a.Price, a.Currency, ts(at), ts(at.Add(-refresh.SightingGranularity)))}
}
