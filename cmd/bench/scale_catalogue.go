//go:build unix

package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	_ "modernc.org/sqlite"

	"storecrawl/internal/simserve"
	"storecrawl/worker/appstore"
	"storecrawl/worker/catalogue"
	"storecrawl/worker/crawl"
	"storecrawl/worker/d1"
	"storecrawl/worker/d1/d1test"
	"storecrawl/worker/markets"
	"storecrawl/worker/refresh"
	"storecrawl/worker/registry"
	"storecrawl/worker/segments"
)

// The design's catalogue at 1.1M apps (docs/scale.md), the shape the scale
// bench fills a local D1 to; every count scales with the app count.
const (
	designApps        = 1_100_000
	enrichedPct       = 85 // looked up and parsed
	queuedPct         = 11 // waiting for their first enrichment
	notFoundPct       = 2  // the rest: half not found, half given up
	designKeywords    = 100_000
	rankingsPerKW     = 18 // a cluster keyword's; the others rank 2: 1.64M rankings over 100k keywords
	designClusters    = 90_000
	membersPerCluster = 18 // its keyword's rankings (rankingsPerKW), which are its members: 1.62M memberships
	similarPerApp     = 3  // the simulator's shelves average 3 similar apps
	// Opportunity scores of the clusters (and so their keywords' re-search
	// intervals): a few hot markets, a quarter warm, the long tail cold.
	hotClusterPct  = 5
	warmClusterPct = 25
	// catalogueFetchBatch is the simulator's /__catalogue bound (maxCatalogueIDs).
	catalogueFetchBatch = 1000
	// simLookupIDs is the simulator's lookup bound (maxLookupIDs).
	simLookupIDs   = 200
	descriptionCap = 2000 // appstore.MaxTextLen: descriptions are cut to it
)

// ScaleShape is the catalogue's make-up at Apps apps.
type ScaleShape struct {
	Apps, Enriched, Queued, NotFound, Failed int
	Developers, Keywords, Rankings           int
	Clusters, Members                        int
}

// ShapeOf is the design's catalogue scaled to n apps. An app's state is
// its offset's remainder by 100 (appState), so the shares are exact for
// multiples of 100.
func ShapeOf(n int) ScaleShape {
	s := ScaleShape{Apps: n}
	for off := 1; off <= n; off++ {
		switch appState(off) {
		case stateEnriched:
			s.Enriched++
		case stateQueued:
			s.Queued++
		case stateNotFound:
			s.NotFound++
		default:
			s.Failed++
		}
	}
	s.Developers = max(1, n/4) // the simulator's apps per developer
	s.Keywords = max(1, int(int64(n)*designKeywords/designApps))
	s.Clusters = max(1, int(int64(n)*designClusters/designApps))
	// A keyword without a cluster ranks fewer apps than make a market.
	s.Rankings = s.Clusters*rankingsPerKW + (s.Keywords-s.Clusters)*(markets.MinClusterApps-1)
	s.Members = s.Clusters * membersPerCluster
	return s
}

type appStateKind int

const (
	stateEnriched appStateKind = iota
	stateQueued
	stateNotFound
	stateFailed
)

func appState(off int) appStateKind {
	switch r := off % 100; {
	case r < enrichedPct:
		return stateEnriched
	case r < enrichedPct+queuedPct:
		return stateQueued
	case r < enrichedPct+queuedPct+notFoundPct:
		return stateNotFound
	}
	return stateFailed
}

// simApp is what the simulator's /__catalogue says of one app.
type simApp = simserve.CatalogueApp

const simBaseTrackID = 100_000_000

// fetchSimApps reads the simulator's apps [from, from+n) by offset.
func fetchSimApps(sim string, from, n int) ([]simApp, error) {
	ids := make([]string, n)
	for i := range n {
		ids[i] = strconv.Itoa(simBaseTrackID + from + i)
	}
	resp, err := http.Get(sim + "/__catalogue?id=" + strings.Join(ids, ","))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var st struct {
		Apps []simApp `json:"apps"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil || len(st.Apps) != n {
		return nil, fmt.Errorf("catalogue %d+%d: %d apps, %v", from, n, len(st.Apps), err)
	}
	return st.Apps, nil
}

// lookupCols is how many columns registry.LookupColumns names.
var lookupCols = strings.Count(registry.LookupColumns, ",") + 1

// fetchQueuedLookups looks up the queued apps among the simulator's apps
// [from, from+n) by offset (appState), as the search that found them
// answered: the lookup's own fields.
func fetchQueuedLookups(sim string, from, n int) (map[int64]appstore.App, error) {
	var ids []string
	for off := from; off < from+n; off++ {
		if appState(off) == stateQueued {
			ids = append(ids, strconv.Itoa(simBaseTrackID+off))
		}
	}
	out := make(map[int64]appstore.App, len(ids))
	for len(ids) > 0 {
		part := ids[:min(len(ids), simLookupIDs)]
		ids = ids[len(part):]
		resp, err := http.Get(sim + "/lookup?id=" + strings.Join(part, ",") + "&country=us")
		if err != nil {
			return nil, err
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("lookup %d ids: %d %v", len(part), resp.StatusCode, err)
		}
		apps, err := appstore.ParseSearch(body)
		if err != nil {
			return nil, fmt.Errorf("lookup %d ids: %w", len(part), err)
		}
		for _, a := range apps {
			out[a.TrackID] = a
		}
	}
	return out, nil
}

// BuildCatalogue fills the local D1 at dbPath (migrations applied, no
// Worker running) to the shape of n apps, with the simulator's values for
// every enriched app so a refresh finds what the upstream says: the
// steady state. Scheduling columns are spread so work comes due at its
// steady pace from now on; dueKeywords re-searches are due now (the
// cycles the bench fires). Returns the shape.
func BuildCatalogue(dbPath, sim string, n int, now time.Time, dueKeywords int) (ScaleShape, error) {
	shape := ShapeOf(n)
	db, err := sql.Open("sqlite", dbPath)
	if err != nil {
		return shape, err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	ctx := context.Background()
	for _, p := range []string{"PRAGMA synchronous=OFF", "PRAGMA cache_size=-200000"} {
		if _, err := db.ExecContext(ctx, p); err != nil {
			return shape, fmt.Errorf("%s: %w", p, err)
		}
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return shape, err
	}
	defer tx.Rollback()
	if err := insertApps(ctx, tx, sim, n, now); err != nil {
		return shape, err
	}
	if err := fillTables(ctx, tx, shape, now, dueKeywords); err != nil {
		return shape, err
	}
	if err := seedDueRankings(ctx, tx, sim, now); err != nil {
		return shape, err
	}
	if err := tx.Commit(); err != nil {
		return shape, err
	}
	return shape, seedSegments(ctx, d1test.Over(db), now)
}

// seedSegments runs the product's own segments passes over the seeded
// rankings as a running deployment last ran them: the full pass a day
// ago (its segments, keywords' partition and that day's snapshots) and
// the focus pass a focus period ago. The measured day's segments tasks
// then find what a steady day finds (the day's snapshots to add, what
// changed to rewrite), not a first build of every segment.
func seedSegments(ctx context.Context, db *d1.DB, now time.Time) error {
	s := segments.Store{DB: db}
	if _, err := s.Full(ctx, now.Add(-segments.FullEvery)); err != nil {
		return fmt.Errorf("segments full pass: %w", err)
	}
	if _, err := s.Focus(ctx, now.Add(-segments.FocusEvery)); err != nil {
		return fmt.Errorf("segments focus pass: %w", err)
	}
	return nil
}

const appColumns = `track_id, name, bundle_id, developer_id, developer_name, genre, genre_id, price, currency,
 average_rating, rating_count, version, release_date, current_version_release_date, description, content_rating,
 artwork_url, file_size_bytes, languages, subtitle, rating_histogram, iap_count, in_app_purchases, similar_app_ids,
 html_r2_key, enrichment_source, enriched_at, discovered_at, updated_at, rankings_filled_at, page_status, page_format,
 page_parser_version, lookup_at, next_refresh_at, refresh_tier, last_seen_at, observed_at,
 enrich_attempts, enrich_error, rating_velocity_7d, rating_velocity_30d, release_notes`

// insertApps writes every app row, fetching the simulator's values a
// batch ahead.
func insertApps(ctx context.Context, tx *sql.Tx, sim string, n int, now time.Time) error {
	cols := strings.Count(appColumns, ",") + 1
	enriched, err := tx.PrepareContext(ctx, "INSERT INTO app_registry ("+appColumns+") VALUES (?"+strings.Repeat(",?", cols-1)+")")
	if err != nil {
		return err
	}
	// A given-up app is due again at its give-up's time (its first
	// give-up: registry.GiveUp's retry time).
	other, err := tx.PrepareContext(ctx, `INSERT INTO app_registry (track_id, discovered_at, enrichment_source, enriched_at, enrich_attempts, enrich_error, stale_at, enrich_retry_at, enrich_give_ups)
		VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, CASE WHEN ?3 = 'failed' THEN ?4 END, CASE WHEN ?3 = 'failed' THEN 1 ELSE 0 END)`)
	if err != nil {
		return err
	}
	queued, err := tx.PrepareContext(ctx, "INSERT INTO app_registry ("+registry.LookupColumns+
		", lookup_at, discovered_at, values_at, last_seen_at, stale_at) VALUES (?"+strings.Repeat(",?", lookupCols+4)+")")
	if err != nil {
		return err
	}
	type batch struct {
		from    int
		apps    []simApp
		lookups map[int64]appstore.App // the queued apps'
		err     error
	}
	batches := make(chan batch, 4)
	go func() {
		defer close(batches)
		var wg sync.WaitGroup
		sem := make(chan struct{}, 2)
		results := make([]chan batch, 0)
		for from := 1; from <= n; from += catalogueFetchBatch {
			ch := make(chan batch, 1)
			results = append(results, ch)
			wg.Add(1)
			sem <- struct{}{}
			go func(from int) {
				defer wg.Done()
				defer func() { <-sem }()
				apps, err := fetchSimApps(sim, from, min(catalogueFetchBatch, n-from+1))
				var lookups map[int64]appstore.App
				if err == nil {
					lookups, err = fetchQueuedLookups(sim, from, len(apps))
				}
				ch <- batch{from, apps, lookups, err}
			}(from)
			if len(results) > 4 {
				batches <- <-results[0]
				results = results[1:]
			}
		}
		for _, ch := range results {
			batches <- <-ch
		}
		wg.Wait()
	}()
	r := rand.New(rand.NewPCG(11, 13))
	ts := func(t time.Time) string { return t.UTC().Format(d1.Layout) }
	scores := memberScores(ShapeOf(n))
	// A queued app was found within the time the design's pace takes to
	// drain the queue (16 hours at 1.1M apps): its lookup is fresh
	// (LOOKUP_FRESH_H), its sighting recent.
	queuedAge := time.Duration(float64(ShapeOf(n).Queued) / designAppsPerHour * float64(time.Hour))
	// Ranking fill is incremental (an app is filled once): every app is
	// filled, so the crawl cycles measure the re-searches; the bench
	// measures what a new app's keywords cost apart (scale.go).
	const unfilled = 0.0
	for b := range batches {
		if b.err != nil {
			return b.err
		}
		for i, a := range b.apps {
			off := b.from + i
			id := int64(simBaseTrackID + off)
			discovered := now.Add(-time.Duration(r.Int64N(int64(180 * 24 * time.Hour))))
			// An app unseen past the stale age is already marked, as the
			// hourly catalogue-stale task left it (steady state: no catch-up).
			var stale any
			if discovered.Add(time.Hour).Before(now.Add(-catalogue.DefaultStaleAfter - catalogue.SightingGranularity)) {
				stale = ts(discovered.Add(catalogue.DefaultStaleAfter + catalogue.SightingGranularity + 2*time.Hour))
			}
			switch appState(off) {
			case stateQueued:
				// Found by a search, which stored its lookup fields (the
				// search answers the lookup's shape) when it saw the app
				// (lookup_at, values_at, the sighting): a re-search finds
				// them unchanged.
				l, ok := b.lookups[id]
				if !ok {
					return fmt.Errorf("queued app %d: no lookup", id)
				}
				seen := ts(now.Add(-time.Duration(float64(queuedAge) * float64(off*2654435761%1000003) / 1000003)))
				_, err = queued.ExecContext(ctx, append(l.StoredLookupArgs(), seen, seen, seen, seen, nil)...)
			case stateNotFound:
				_, err = other.ExecContext(ctx, id, ts(discovered), "not_found", ts(discovered.Add(time.Hour)), 0, nil, stale)
			case stateFailed:
				_, err = other.ExecContext(ctx, id, ts(discovered), "failed", ts(discovered.Add(time.Hour)), 3, "page: parse error", stale)
			default:
				f := refresh.Facts{TrackID: id, RatingCount: a.RatingCount, Velocity7d: math.NaN(), ClusterScore: scores[off]}
				tier := refresh.Tier(f)
				// Enriched at a uniform point of its tier's interval; the
				// tiers' rounds start on time at now (their cursors at the
				// clock's target, seeded with the tables): refreshes come at
				// their steady pace from now on.
				f.LastEnriched = now.Add(-time.Duration(r.Int64N(int64(refresh.Interval(tier)))))
				// Rankings filled at a uniform point of their refresh age,
				// or not yet (unfilled).
				var filled any = ts(now.Add(-time.Duration(r.Int64N(int64(crawl.RankingRefreshAge)))))
				if r.Float64() < unfilled {
					filled = nil
				}
				_, err = enriched.ExecContext(ctx, id, a.Name, fmt.Sprintf("com.dev%d.app%d", a.DeveloperID, off), a.DeveloperID, a.DeveloperName,
					a.Genre, a.GenreID, a.Price, "USD", a.AverageRating, a.RatingCount, a.Version, "2015-01-01T07:00:00Z", a.UpdatedDate,
					description(a.DescriptionLen), "4+", fmt.Sprintf("https://is1-ssl.mzstatic.com/image/thumb/Purple/v4/%d/AppIcon-512x512bb.jpg", id),
					50<<20, `["EN"]`, "Your daily companion", histogramJSON(a.RatingCount), 1, `[{"name":"Pro Monthly","price":4.99}]`,
					similarJSON(off, n), fmt.Sprintf("pages/us/%d.html", id), "itunes+store", ts(f.LastEnriched), ts(discovered), ts(f.LastEnriched),
					filled, "parsed", "legacy", 1, ts(f.LastEnriched), nil, tier, ts(f.LastEnriched),
					ts(f.LastEnriched), 0, nil,
					// Velocities as the catalogue sweep left them: the
					// simulator's catalogue holds still, so 0 a day.
					0.0, 0.0, a.ReleaseNotes)
			}
			if err != nil {
				return fmt.Errorf("app %d: %w", id, err)
			}
		}
	}
	return nil
}

// clusterScore is cluster k's opportunity score: a few hot markets, a
// quarter warm, the long tail cold (the SQL of fillTables says the same).
func clusterScore(k int) float64 {
	switch {
	case k%100 < hotClusterPct:
		return 70
	case k%100 < hotClusterPct+warmClusterPct:
		return 40
	}
	return 10
}

// memberOffset is the j-th member of cluster k (enrichedApp in fillTables).
func memberOffset(n, k, j int) int {
	x := k*7919 + j*104729
	return 100 + x%((n/100-1)*enrichedPct)/enrichedPct*100 + x%enrichedPct
}

// memberScores is each app's best cluster score (by offset), so the
// refresh tiers the catalogue starts with are the policy's.
func memberScores(s ScaleShape) []float64 {
	out := make([]float64, s.Apps+1)
	for k := range s.Clusters {
		for j := range membersPerCluster {
			off := memberOffset(s.Apps, k, j)
			out[off] = max(out[off], clusterScore(k))
		}
	}
	return out
}

func description(n int) string {
	const s = "Designed for speed and simplicity. Works offline, wherever you are. "
	n = min(n, descriptionCap)
	return strings.Repeat(s, n/len(s)+1)[:n]
}

func histogramJSON(total int64) string {
	return fmt.Sprintf("[%d,%d,%d,%d,%d]", total-total/2-total/4-total/8-total/16, total/4, total/8, total/16, total/2)
}

// similarJSON names similarPerApp other apps, spread over the catalogue.
func similarJSON(off, n int) string {
	var ids []string
	for k := 1; k <= similarPerApp; k++ {
		ids = append(ids, strconv.Itoa(simBaseTrackID+1+(off*7919+k*104729)%n))
	}
	return "[" + strings.Join(ids, ",") + "]"
}

// fillTables writes developers, similar-app edges, keywords, rankings,
// clusters and category scans with SQL over recursive sequences.
func fillTables(ctx context.Context, tx *sql.Tx, s ScaleShape, now time.Time, dueKeywords int) error {
	nowS := now.UTC().Format(d1.Layout)
	day := int64(24 * time.Hour / time.Second)
	hot, warm, cold := int64(crawl.HotKeywordResearch.Seconds()), int64(crawl.WarmKeywordResearch.Seconds()), int64(crawl.ColdKeywordResearch.Seconds())
	// A keyword k's cluster score bucket: k%100 below hotClusterPct hot, then warm, then cold.
	interval := fmt.Sprintf(`CASE WHEN k %% 100 < %d THEN %d WHEN k %% 100 < %d THEN %d ELSE %d END`, hotClusterPct, hot, hotClusterPct+warmClusterPct, warm, cold)
	score := fmt.Sprintf(`CASE WHEN k %% 100 < %d THEN 70.0 WHEN k %% 100 < %d THEN 40.0 ELSE 10.0 END`, hotClusterPct, hotClusterPct+warmClusterPct)
	// Pseudo-random enriched app for (a, b): offsets whose remainder by 100
	// is below enrichedPct are enriched.
	// (The first block of 100 is skipped so no offset is 0.)
	enrichedApp := func(expr string) string {
		return fmt.Sprintf(`(%d + 100 + ((%s) %% %d) / %d * 100 + ((%s) %% %d))`, simBaseTrackID, expr, (s.Apps/100-1)*enrichedPct, enrichedPct, expr, enrichedPct)
	}
	seq := func(n int) string {
		return fmt.Sprintf(`WITH RECURSIVE seq(k) AS (SELECT 0 UNION ALL SELECT k + 1 FROM seq WHERE k + 1 < %d) `, n)
	}
	// Seconds ago a keyword was last searched: a uniform point of its
	// interval, except the first dueKeywords of the keywords with results
	// (the apps' names), which are due now.
	ago := fmt.Sprintf(`(((k * 2654435761) %% 1000003) * (%s) / 1000003)`, interval)
	stmts := []string{
		// Developers: those the enriched apps name, then the rest of the simulator's.
		`INSERT INTO developers (developer_id, name, first_seen_at, updated_at)
		 SELECT developer_id, min(developer_name), '` + nowS + `', '` + nowS + `' FROM app_registry WHERE developer_id IS NOT NULL GROUP BY developer_id`,
		seq(s.Developers) + fmt.Sprintf(`INSERT OR IGNORE INTO developers (developer_id, name, first_seen_at, updated_at)
		 SELECT 300000001 + k, 'Developer ' || k, '%s', '%s' FROM seq`, nowS, nowS),
		// Keywords: the apps' names (the simulator's search finds them), then numbered terms.
		`CREATE TEMP TABLE kw AS SELECT row_number() OVER (ORDER BY name) - 1 AS k, name AS keyword FROM
		 (SELECT DISTINCT lower(name) AS name FROM app_registry WHERE name IS NOT NULL)`,
		seq(s.Keywords) + `INSERT OR IGNORE INTO kw (k, keyword) SELECT k, 'term ' || k FROM seq WHERE k >= (SELECT count(*) FROM kw)`,
		`DELETE FROM kw WHERE k >= ` + strconv.Itoa(s.Keywords),
		fmt.Sprintf(`INSERT INTO crawl_keywords (keyword, source, created_at, searched_at, result_count, value, research_interval_s, next_search_at, due_value)
		 SELECT keyword, 'title', strftime('%%Y-%%m-%%dT%%H:%%M:%%fZ', '%[1]s', '-60 days'),
		   strftime('%%Y-%%m-%%dT%%H:%%M:%%fZ', '%[1]s', '-' || (CASE WHEN k < %[2]d THEN (%[3]s) + 60 ELSE %[4]s END) || ' seconds'),
		   CASE WHEN k < %[7]d THEN %[5]d ELSE %[8]d END, (%[6]s) + 30.0, %[3]s,
		   strftime('%%Y-%%m-%%dT%%H:%%M:%%fZ', '%[1]s', '-' || (CASE WHEN k < %[2]d THEN (%[3]s) + 60 ELSE %[4]s END) || ' seconds', '+' || (%[3]s) || ' seconds'),
		   NULL FROM kw`, nowS, dueKeywords, interval, ago, rankingsPerKW, score, s.Clusters, markets.MinClusterApps-1),
		// The keywords past the clusters rank fewer apps than make a
		// market (markets.MinClusterApps), which is why they have none.
		seq(rankingsPerKW) + fmt.Sprintf(`INSERT OR IGNORE INTO crawl_rankings (keyword, track_id, rank, seen_at)
		 SELECT kw.keyword, %s, seq.k + 1, '%s' FROM kw, seq WHERE kw.k < %d OR seq.k < %d`,
			enrichedApp("kw.k * 7919 + seq.k * 104729"), nowS, s.Clusters, markets.MinClusterApps-1),
		// A market's members are its keyword's rankings (migrations/0034).
		fmt.Sprintf(`INSERT INTO market_clusters (cluster_id, app_count, total_ratings, avg_rating, top_share, computed_at, hhi, fragmentation, fragmented_at, member_sum)
		 SELECT keyword, (SELECT count(*) FROM crawl_rankings r WHERE r.keyword = kw.keyword), 1000 + k * 37 %% 500000, 4.1, 0.3, '%s', 0.12, 0.7, '%s',
		   (SELECT sum(track_id) FROM crawl_rankings r WHERE r.keyword = kw.keyword) FROM kw WHERE k < %d`, nowS, nowS, s.Clusters),
		fmt.Sprintf(`INSERT INTO opportunity_scores (cluster_id, score, demand, fragmentation, quality_gap, computed_at)
		 SELECT keyword, %s, 0.5, 0.7, 0.2, '%s' FROM kw WHERE k < %d`, score, nowS, s.Clusters),
		// The keyword steering's revalue step has read every score so far
		// (its cursor, crawl's steerCursorName, at the newest): the bench's
		// cycles revalue what their own searches re-score, as in the steady
		// state, not the whole catalogue's scores stamped now (a
		// KeywordRevalueBatch of keywords a cycle, ~9k rows read, for 450
		// cycles at 1.1M apps).
		// The refresh tiers' rounds, on time at now (refresh.StartCursor).
		refreshCursorsSQL(now),
		`INSERT INTO sweep_cursors (name, cursor, updated_at) SELECT 'keyword-steering', json_array(computed_at, cluster_id), '` + nowS + `'
		 FROM opportunity_scores ORDER BY computed_at DESC, cluster_id DESC LIMIT 1`,
		// Category scans: each at a uniform point of its tier's interval.
		fmt.Sprintf(`UPDATE category_scans SET scans = 10, apps_found = 200, last_scanned_at = strftime('%%Y-%%m-%%dT%%H:%%M:%%fZ', '%s', '-' ||
		 (((genre_id * 2654435761) %% 1000003) * (CASE tier WHEN 'high' THEN 7 WHEN 'medium' THEN 14 ELSE 30 END) * %d / 1000003) || ' seconds')`, nowS, day),
		`DROP TABLE kw`,
	}
	for _, q := range stmts {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("%.80s…: %w", strings.Join(strings.Fields(q), " "), err)
		}
	}
	return nil
}

// seedDueRankings stores, as each due keyword's rankings, what the
// simulator's search answers for it now, so the bench's re-search finds
// the ranks it left (the steady state) and writes what a real re-search
// does: each result's sighting and today's rank, the keyword's mark; its
// cluster's members are those rankings (migrations/0034) and its stats
// were measured over them (app_count, member_sum), so re-clustering
// writes what changed since (its stats), not a new market. fillTables' rankings are spread over the catalogue and match no search:
// a re-search over them deleted all 18 and inserted the results.
func seedDueRankings(ctx context.Context, tx *sql.Tx, sim string, now time.Time) error {
	rows, err := tx.QueryContext(ctx, `SELECT keyword FROM crawl_keywords WHERE next_search_at <= ?`, now.UTC().Format(d1.Layout))
	if err != nil {
		return err
	}
	var kws []string
	for rows.Next() {
		var kw string
		if err := rows.Scan(&kw); err != nil {
			rows.Close()
			return err
		}
		kws = append(kws, kw)
	}
	rows.Close()
	ts := now.UTC().Format(d1.Layout)
	for _, kw := range kws {
		q := url.Values{"term": {kw}, "country": {"us"}, "entity": {crawl.SearchEntity}, "limit": {strconv.Itoa(crawl.KeywordSearchSize)}}
		resp, err := http.Get(sim + "/search?" + q.Encode())
		if err != nil {
			return err
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			return fmt.Errorf("search %q: %d %v", kw, resp.StatusCode, err)
		}
		apps, err := appstore.ParseSearch(body)
		if err != nil {
			return fmt.Errorf("search %q: %w", kw, err)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM crawl_rankings WHERE keyword = ?`, kw); err != nil {
			return err
		}
		for i, a := range apps {
			if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO crawl_rankings (keyword, track_id, rank, seen_at) VALUES (?,?,?,?)`,
				kw, a.TrackID, i+1, ts); err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, `UPDATE crawl_keywords SET result_count = ? WHERE keyword = ?`, len(apps), kw); err != nil {
			return err
		}
		// Its market as the markets stage stored it after that search:
		// measured over those rankings (its members).
		for _, q := range []string{
			`UPDATE market_clusters SET app_count = (SELECT count(*) FROM crawl_rankings WHERE keyword = ?1),
			   member_sum = (SELECT sum(track_id) FROM crawl_rankings WHERE keyword = ?1) WHERE cluster_id = ?1`,
		} {
			if _, err := tx.ExecContext(ctx, q, kw); err != nil {
				return err
			}
		}
	}
	return nil
}

// tableCounts reads the row count of each named table (after the build:
// no Worker is running).
func tableCounts(dbPath string, tables ...string) (map[string]int64, error) {
	db, err := sql.Open("sqlite", dbPath)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	out := map[string]int64{}
	for _, t := range tables {
		var n int64
		if err := db.QueryRow("SELECT count(*) FROM " + t).Scan(&n); err != nil {
			return nil, err
		}
		out[t] = n
	}
	return out, nil
}

// tierQuery counts enriched apps by refresh tier.
func tierQuery(dbPath string) (map[string]int64, error) {
	db, err := sql.Open("sqlite", dbPath)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	rows, err := db.Query("SELECT COALESCE(refresh_tier, ''), count(*) FROM app_registry WHERE enrichment_source = 'itunes+store' GROUP BY 1")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var t string
		var n int64
		if err := rows.Scan(&t, &n); err != nil {
			return nil, err
		}
		out[t] = n
	}
	return out, rows.Err()
}

// usedBytes is page_count less freelist_count, times page_size.
func usedBytes(dbPath string) (int64, error) {
	db, err := sql.Open("sqlite", "file:"+dbPath+"?mode=ro")
	if err != nil {
		return 0, err
	}
	defer db.Close()
	var pages, free, size int64
	for q, v := range map[string]*int64{"PRAGMA page_count": &pages, "PRAGMA freelist_count": &free, "PRAGMA page_size": &size} {
		if err := db.QueryRow(q).Scan(v); err != nil {
			return 0, err
		}
	}
	return (pages - free) * size, nil
}

// refreshCursorsSQL seeds each refresh tier's cursor at its clock's target
// at now (the names and JSON of worker/enrichment's cursors).
func refreshCursorsSQL(now time.Time) string {
	var vals []string
	for _, tier := range refresh.Tiers {
		b, _ := json.Marshal(refresh.StartCursor(tier, now))
		vals = append(vals, fmt.Sprintf("('refresh-%s', '%s', '%s')", tier, b, now.UTC().Format(d1.Layout)))
	}
	return "INSERT INTO sweep_cursors (name, cursor, updated_at) VALUES " + strings.Join(vals, ", ")
}
