package crawl

import (
	"context"
	"time"

	"storecrawl/worker/appstore"
	"storecrawl/worker/d1"
	"storecrawl/worker/upstream"
)

// Ranking fill is the crawl cycle's third-priority task: it adds depth to
// apps already known. An enriched app's title and subtitle (the subtitle
// only exists after enrichment, so category scans never saw it) give its
// keywords; those never searched, or searched too long ago, are searched
// and their rankings recorded, so the app's markets are complete and fresh.

// Ranking fill bounds.
const (
	// RankingFillApps is how many apps one cycle fills: at most
	// appstore.MaxKeywordsPerApp keywords each, so the keyword check reads
	// a few dozen rows by primary key.
	RankingFillApps = 4
	// RankingFillSearches bounds one fill's upstream searches: four apps'
	// stale keywords (about three each). Keyword mapping beside it gets the
	// rest of KeywordSearchesPerCycle (both go through the global limiter).
	RankingFillSearches = 12
	// RankingRefreshAge: rankings older than this are stale and an app
	// filled this long ago is due again. Weekly, like the high tier's
	// category rescans: search ranks move on about that scale.
	RankingRefreshAge = 7 * 24 * time.Hour
)

// FillApp is an enriched app due for a ranking fill.
type FillApp struct {
	TrackID  int64
	Name     string
	Subtitle string
}

// FillPlan is what one ranking fill searches and which apps it completes.
type FillPlan struct {
	// Searches are the keywords to search this cycle, in app order.
	Searches []string
	// Waiting lists, per app the cycle can complete, the keywords it waits
	// on (searched this cycle); an app with none is complete already.
	Waiting map[int64][]string
	// Deferred apps have stale keywords beyond this cycle's budget: they
	// stay due (their searched keywords are fresh next time).
	Deferred []int64
	order    []int64
}

// PlanRankingFill chooses the searches of one fill: each app's derived
// keywords that are unknown or were searched RankingRefreshAge or more
// before now, deduplicated, at most budget in all. A pending keyword (known,
// never searched) is keyword mapping's work, which runs first: it does not
// hold the app back and is not searched twice.
func PlanRankingFill(apps []FillApp, searchedAt map[string]time.Time, now time.Time, budget int) FillPlan {
	p := FillPlan{Waiting: map[int64][]string{}}
	chosen := map[string]bool{}
	for _, a := range apps {
		var stale []string
		for _, kw := range appstore.DeriveKeywords(a.Name, a.Subtitle) {
			t, known := searchedAt[kw]
			if known && (t.IsZero() || now.Sub(t) < RankingRefreshAge) {
				continue
			}
			stale = append(stale, kw)
		}
		var need []string
		complete := true
		for _, kw := range stale {
			if !chosen[kw] {
				if len(p.Searches) >= budget {
					complete = false
					continue
				}
				chosen[kw] = true
				p.Searches = append(p.Searches, kw)
			}
			need = append(need, kw)
		}
		if !complete {
			p.Deferred = append(p.Deferred, a.TrackID)
			continue
		}
		p.Waiting[a.TrackID] = need
		p.order = append(p.order, a.TrackID)
	}
	return p
}

// Filled are the apps whose every waited-on search succeeded: they are
// marked filled. An app with a failed search stays due for a later cycle.
func (p FillPlan) Filled(failed map[string]bool) []int64 {
	var out []int64
	for _, id := range p.order {
		ok := true
		for _, kw := range p.Waiting[id] {
			if failed[kw] {
				ok = false
				break
			}
		}
		if ok {
			out = append(out, id)
		}
	}
	return out
}

// fillRankings runs one ranking fill: pick the most overdue apps, plan
// their searches, search in bounded parallel chunks, and mark the apps
// whose searches all succeeded.
func fillRankings(ctx context.Context, store Store, fetch func(ctx context.Context, url string) upstream.Response, apiBase, country string, sleep func(time.Duration), now time.Time) Result {
	res := Result{Action: "ranking_fill"}
	apps, err := store.FillCandidates(ctx, RankingFillApps, now)
	if err != nil {
		return Result{Action: "error", Error: "fill candidates: " + err.Error()}
	}
	seen := map[string]bool{}
	var kws []string
	for _, a := range apps {
		for _, kw := range appstore.DeriveKeywords(a.Name, a.Subtitle) {
			if !seen[kw] {
				seen[kw] = true
				kws = append(kws, kw)
			}
		}
	}
	searchedAt := map[string]time.Time{}
	if len(kws) > 0 {
		if searchedAt, err = store.KeywordsSearchedAt(ctx, kws); err != nil {
			return Result{Action: "error", Error: "keyword check: " + err.Error()}
		}
	}
	plan := PlanRankingFill(apps, searchedAt, now, RankingFillSearches)
	results, rep := searchKeywords(ctx, plan.Searches, FillConnections, fetch, apiBase, country, sleep, store.SaveFillRankings, now)
	res.Searches, res.Conns, res.RateLimited = rep.sent, rep.peak, rep.limited
	settleSearches(ctx, store, &res, results, now)
	failed := map[string]bool{}
	for _, r := range results {
		if r.err != nil {
			failed[r.kw] = true
		}
	}
	if filled := plan.Filled(failed); len(filled) > 0 {
		if err := store.MarkFilled(ctx, filled, now); err != nil {
			// The apps stay due: the next fill finds their keywords fresh.
			res.Error = joinErr(res.Error, "mark filled: "+err.Error())
		} else {
			res.Filled = len(filled)
		}
	}
	return res
}

func joinErr(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// FillRankingStatements records one ranking-fill search: the keyword
// (inserted if new, then marked searched) and where each app ranks.
func FillRankingStatements(keyword string, apps []appstore.App, now time.Time) []d1.Stmt {
	ts := d1.Time(now)
	return append([]d1.Stmt{{
		SQL:  `INSERT OR IGNORE INTO crawl_keywords (keyword, source, created_at) VALUES (?,?,?)`,
		Args: []any{keyword, KeywordSourceFill, ts},
	}}, RankingStatements(keyword, apps, now)...)
}

// KeywordSourceFill marks keywords first seen by ranking fill (from an
// enriched app's title or subtitle).
const KeywordSourceFill = "fill"

// MarkFilledStatements stamps the apps' rankings as filled at now.
func MarkFilledStatements(ids []int64, now time.Time) []d1.Stmt {
	ts := d1.Time(now)
	stmts := make([]d1.Stmt, 0, len(ids))
	for _, id := range ids {
		stmts = append(stmts, d1.Stmt{SQL: `UPDATE app_registry SET rankings_filled_at = ? WHERE track_id = ?`, Args: []any{ts, id}})
	}
	return stmts
}
