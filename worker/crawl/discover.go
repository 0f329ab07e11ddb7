package crawl

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"storecrawl/durable/controller"
	"storecrawl/internal/objects"
	"storecrawl/worker/appstore"
	"storecrawl/worker/catalogue"
	"storecrawl/worker/d1"
	"storecrawl/worker/enrichment"
	"storecrawl/worker/logx"
	"storecrawl/worker/ratelimit"
	"storecrawl/worker/registry"
	"storecrawl/worker/upstream"
)

// Discovery inputs besides the scans and searches: an operator's seeds
// (POST /v1/crawl/seeds), developers' portfolios, and (worker/enrichment)
// the similar apps of every fetched page.

// Operator seeds.
const (
	// KeywordSourceSeed marks keywords an operator seeded.
	KeywordSourceSeed = "seed"
	// SeedKeywordValue is a seeded keyword's value: above any the steering
	// computes (MaxOpportunityScore + the carriers' cap + FirstSearchValue
	// is 140), so the next cycle's pick searches it first.
	SeedKeywordValue = 1000.0
	// SeedAppPriority is a seeded app's enrich_priority: above the default
	// 0, so the EnrichmentController's pick (by priority, then ratings)
	// takes it next; its enrichment resets it.
	SeedAppPriority = 100
	// MaxSeedKeywords and MaxSeedApps bound one request: each keyword is a
	// statement of one batch (d1.MaxBatch), the apps two statements; a
	// request's body is at most the API's control bound (4 KiB) anyway.
	MaxSeedKeywords = 50
	MaxSeedApps     = 200
	// MaxSeedKeywordLen bounds a seeded keyword (a search term).
	MaxSeedKeywordLen = 100
)

// seedKeywordSQL queues a seeded keyword (?1) at ?2 with value ?3: a new
// one pending, a pending one raised, a searched one made due at once
// (due_value, the pick's other arm). Written only when that raises it.
const seedKeywordSQL = `INSERT INTO crawl_keywords (keyword, source, created_at, value) VALUES (?1, '` + KeywordSourceSeed + `', ?2, ?3)
ON CONFLICT (keyword) DO UPDATE SET
  value = CASE WHEN crawl_keywords.searched_at IS NULL THEN excluded.value ELSE crawl_keywords.value END,
  due_value = CASE WHEN crawl_keywords.searched_at IS NOT NULL THEN excluded.value ELSE crawl_keywords.due_value END
WHERE (crawl_keywords.searched_at IS NULL AND crawl_keywords.value < excluded.value)
  OR (crawl_keywords.searched_at IS NOT NULL AND COALESCE(crawl_keywords.due_value, -1) < excluded.value)`

// SeedResult is what a seed request queued.
type SeedResult struct {
	Keywords int `json:"keywords"` // keywords queued or raised
	// Apps is the app ids seeded; NewApps those not known before (inserted).
	Apps    int `json:"apps"`
	NewApps int `json:"new_apps"`
}

// SeedStatements queue keywords for search first (SeedKeywordValue) and
// apps for enrichment first (registry.SeedApps at SeedAppPriority), in one
// atomic batch: the batch returns a row for each new app.
func SeedStatements(keywords []string, appIDs []int64, now time.Time) []d1.Stmt {
	ts := d1.Time(now)
	var stmts []d1.Stmt
	for _, kw := range keywords {
		stmts = append(stmts, d1.Stmt{SQL: seedKeywordSQL, Args: []any{kw, ts, SeedKeywordValue}})
	}
	if len(appIDs) > 0 {
		b, _ := json.Marshal(appIDs)
		stmts = append(stmts, registry.SeedApps(string(b), SeedAppPriority, ts)...)
	}
	return stmts
}

// NormalizeSeedKeyword is a seeded keyword as the steering keeps it
// (lower case, spaces collapsed); "" when nothing is left.
func NormalizeSeedKeyword(s string) string {
	return strings.Join(strings.Fields(strings.ToLower(s)), " ")
}

// Seed queues an operator's keywords and app ids (already validated).
func (s D1Store) Seed(ctx context.Context, keywords []string, appIDs []int64, now time.Time) (SeedResult, error) {
	n, err := s.DB.ExecAtomic(ctx, SeedStatements(keywords, appIDs, now)...)
	if err != nil {
		return SeedResult{}, err
	}
	return SeedResult{Keywords: len(keywords), Apps: len(appIDs), NewApps: int(n)}, nil
}

// Developer portfolios: lookup?id=ARTIST&entity=software answers the
// developer's wrapper, then their apps. A developer is due once the
// ranking fill meets an enriched app of theirs (FillStatements), and is
// looked up once, in a cycle that has other work (CrawlCycle).
const (
	// PortfolioLookupsPerCycle bounds a cycle's portfolio lookups: 10 a
	// cycle, 2,880 a day, a tenth of the keyword searches' share beside
	// them (KeywordSearchesPerCycle), sent one after another.
	PortfolioLookupsPerCycle = 10
	// PortfolioLimit is how many apps one lookup asks for: a search's
	// size (KeywordSearchSize), so its save is one batch like a search's.
	PortfolioLimit = KeywordSearchSize
)

// PortfolioURL is the lookup of a developer's apps.
func PortfolioURL(apiBase, country string, developerID int64) string {
	q := url.Values{"id": {strconv.FormatInt(developerID, 10)}, "entity": {SearchEntity},
		"country": {country}, "limit": {strconv.Itoa(PortfolioLimit)}}
	return strings.TrimRight(apiBase, "/") + "/lookup?" + q.Encode()
}

// PortfolioStatements save one developer's portfolio: the apps as a
// search's results are saved (queued if new, with their lookup fields;
// a known one's sighting and values), and the developer marked looked up,
// last, so a failed batch leaves it due.
func PortfolioStatements(developerID int64, apps []appstore.App, now time.Time) []d1.Stmt {
	return append(appStatements(apps, now), enrichment.DeveloperPortfolioDoneStmt(developerID, d1.Time(now)))
}

// knownCountSQL counts the apps of ?1 (a JSON array of ids) already
// known, by primary key: a portfolio's new apps are the rest.
const knownCountSQL = `SELECT count(*) AS n FROM app_registry WHERE track_id IN (SELECT value FROM json_each(?1))`

// SavePortfolio implements Store: it returns the apps that were new.
func (s D1Store) SavePortfolio(ctx context.Context, developerID int64, apps []appstore.App, now time.Time) (int, error) {
	known := 0
	if len(apps) > 0 {
		ids := make([]int64, len(apps))
		for i, a := range apps {
			ids[i] = a.TrackID
		}
		b, _ := json.Marshal(ids)
		var rows []struct {
			N int `json:"n"`
		}
		if err := s.DB.Query(ctx, &rows, knownCountSQL, string(b)); err != nil {
			return 0, err
		}
		if len(rows) > 0 {
			known = rows[0].N
		}
	}
	if _, err := s.DB.ExecAtomic(ctx, PortfolioStatements(developerID, apps, now)...); err != nil {
		return 0, err
	}
	return len(apps) - known, nil
}

// portfolios runs the cycle's portfolio lookups: nil when no developer
// is due.
func portfolios(ctx context.Context, store Store, fetch func(ctx context.Context, url string) upstream.Response, apiBase, country string, now time.Time) *Result {
	devs, err := store.DuePortfolios(ctx, PortfolioLookupsPerCycle)
	if err != nil {
		return &Result{Action: "error", Error: "due developers: " + err.Error()}
	}
	if len(devs) == 0 {
		return nil
	}
	p := lookupPortfolios(ctx, store, fetch, apiBase, country, devs, now)
	return &p
}

// lookupPortfolios looks up the developers' apps, one after another, and
// saves each; a refusal stops them (the rest stay due).
func lookupPortfolios(ctx context.Context, store Store, fetch func(ctx context.Context, url string) upstream.Response, apiBase, country string, developers []int64, now time.Time) Result {
	res := Result{Action: "developer_portfolios"}
	ctx = ratelimit.Reserved(ctx, len(developers)) // the lookups, one acquire
	for _, dev := range developers {
		resp := fetch(ctx, PortfolioURL(apiBase, country, dev))
		res.Searches++
		if resp.Class == objects.ClassRateLimit {
			res.RateLimited, res.Refused = true, res.Refused+1
			logx.Event("crawl.portfolios_rate_limited", map[string]any{"level": logx.Warn, "sent": res.Searches, "left": len(developers) - res.Searches})
			break
		}
		if resp.Class != objects.ClassOK {
			res.Error = joinErr(res.Error, fmt.Sprintf("developer %d: %v", dev, resp.Err))
			continue // stays due
		}
		apps, err := appstore.ParsePortfolio(resp.Body, dev)
		if err != nil {
			res.Error = joinErr(res.Error, fmt.Sprintf("developer %d: %v", dev, err))
			continue
		}
		apps = apps[:min(len(apps), PortfolioLimit)]
		n, err := store.SavePortfolio(ctx, dev, apps, now)
		if err != nil {
			res.Error = joinErr(res.Error, fmt.Sprintf("developer %d: save: %v", dev, err))
			continue
		}
		res.Found++
		res.Apps += len(apps)
		res.NewApps += n
	}
	return res
}

// Discovery lookups: an app met by id alone (a page's similar apps, a
// chart's entries, an operator's seeds) has no lookup fields until its
// enrichment looks it up beside its page, at the page host's pace. The
// crawl cycle looks such apps up ahead of their pages, many ids a call
// (lookup?id=a,b,c…), so the catalogue knows every app it met with its
// lookup fields long before the page host reaches it; a lookup is also
// the search API's cheapest discovery request by far (up to
// DiscoveryLookupIDs apps a call, against a search's few new ones), so
// the cycle sends it first. The enrichment then needs only the page
// while the lookup is fresh (LOOKUP_FRESH_H), and looks a stale one up
// again in its own batches.
const (
	// DiscoveryLookupsPerCycle is the discovery lookups' base share: 5 of
	// the Search API's ~100 calls in a cycle (about 20 a minute), 1,440 a
	// day, up to 288,000 apps a day. A cycle sends this many at most while
	// the apps waiting fit them.
	DiscoveryLookupsPerCycle = 5
	// BacklogCallsPerCycle is what a cycle's discovery lookups and keyword
	// searches share while more apps wait without lookup fields than the
	// base share reaches (a fill): 16 of the API's ~100 a cycle, the
	// enrichment's own lookups (one a tick) and the portfolios
	// (PortfolioLookupsPerCycle) keeping the rest. The lookups take it
	// from the searches first: a search finds a few apps a call, a lookup
	// gives up to DiscoveryLookupIDs their lookup fields; once the backlog
	// is gone the searches have KeywordSearchesPerCycle again.
	BacklogCallsPerCycle = 16
	// BacklogKeywordSearches is what the searches keep during a fill: the
	// markets' due keywords go on, slower.
	BacklogKeywordSearches = 2
	// MaxDiscoveryLookupsPerCycle bounds a cycle's discovery lookups: 14
	// calls, 2,800 apps a cycle, 806,400 a day.
	MaxDiscoveryLookupsPerCycle = BacklogCallsPerCycle - BacklogKeywordSearches
	// DiscoveryLookupIDs is the ids one lookup asks for: the most the
	// real endpoint answers in one call (controller.MaxLookupBatch).
	DiscoveryLookupIDs  = controller.MaxLookupBatch
	discoveryCursorName = "discovery-lookups"
)

// DiscoveryShare splits a cycle's Search API calls between its discovery
// lookups and its keyword searches, given waiting, the apps without lookup
// fields the cycle read (at most MaxDiscoveryLookupsPerCycle ×
// DiscoveryLookupIDs): a lookup for every DiscoveryLookupIDs of them; up
// to DiscoveryLookupsPerCycle the searches keep KeywordSearchesPerCycle,
// beyond it the lookups grow to MaxDiscoveryLookupsPerCycle and the
// searches get the rest of BacklogCallsPerCycle, at least
// BacklogKeywordSearches.
func DiscoveryShare(waiting int) (lookups, searches int) {
	calls := (max(waiting, 0) + DiscoveryLookupIDs - 1) / DiscoveryLookupIDs
	if calls <= DiscoveryLookupsPerCycle {
		return calls, KeywordSearchesPerCycle
	}
	lookups = min(calls, MaxDiscoveryLookupsPerCycle)
	return lookups, max(BacklogKeywordSearches, BacklogCallsPerCycle-lookups)
}

// unlookedSQL is the apps queued without lookup fields after the cursor
// (?1), in track id order, at most ?2: the head of the partial index
// idx_app_registry_unlooked (migrations/0049), which holds only them.
const unlookedSQL = `SELECT track_id FROM app_registry
WHERE enriched_at IS NULL AND lookup_at IS NULL AND track_id > ?1
ORDER BY track_id LIMIT ?2`

// LookupURL is one lookup of several apps by id.
func LookupURL(apiBase, country string, ids []int64) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.FormatInt(id, 10)
	}
	return strings.TrimRight(apiBase, "/") + "/lookup?id=" + strings.Join(parts, ",") + "&country=" + url.QueryEscape(country)
}

// LookupStatements keep a lookup's apps as a search's results are kept
// (a known app's sighting and values with history, and, not yet
// enriched, its lookup fields and lookup_at), and move the discovery
// lookups' cursor to the last id asked (cursor: its stored position).
func LookupStatements(cursor d1.Cursor, lastAsked int64, apps []appstore.App, now time.Time) []d1.Stmt {
	return append(appStatements(apps, now), cursor.Write(lastAsked, now)...)
}

// appStatements keep apps met with their lookup fields (a search's, a
// portfolio's or a lookup's): catalogue.ObserveStmt's sighting and values,
// then the lookup fields of each (searchResultStmt).
func appStatements(apps []appstore.App, now time.Time) []d1.Stmt {
	seen := make([]catalogue.Seen, len(apps))
	for i, a := range apps {
		seen[i] = catalogue.SeenFromApp(a)
	}
	stmts := catalogue.ObserveStmt(seen, now)
	for _, a := range apps {
		stmts = append(stmts, searchResultStmt(a, now))
	}
	return stmts
}

// Unlooked implements Store: up to n apps queued without lookup fields,
// after the cursor, then from the start when the pass reached the end.
func (s D1Store) Unlooked(ctx context.Context, n int) ([]int64, d1.Cursor, error) {
	cur, err := d1.ReadCursor(ctx, s.DB, discoveryCursorName)
	if err != nil {
		return nil, cur, err
	}
	var rows []struct {
		ID int64 `json:"track_id"`
	}
	if err := s.DB.Query(ctx, &rows, unlookedSQL, cur.Int(), n); err != nil {
		return nil, cur, err
	}
	if len(rows) < n && cur.Int() > 0 { // the pass ended: on from the start
		var more []struct {
			ID int64 `json:"track_id"`
		}
		if err := s.DB.Query(ctx, &more, unlookedSQL, 0, n-len(rows)); err != nil {
			return nil, cur, err
		}
		rows = append(rows, more...)
	}
	ids := make([]int64, 0, len(rows))
	seen := map[int64]bool{}
	for _, r := range rows {
		if !seen[r.ID] {
			seen[r.ID] = true
			ids = append(ids, r.ID)
		}
	}
	return ids, cur, nil
}

// SaveLookups implements Store.
func (s D1Store) SaveLookups(ctx context.Context, cursor d1.Cursor, lastAsked int64, apps []appstore.App, now time.Time) error {
	_, err := s.DB.Exec(ctx, LookupStatements(cursor, lastAsked, apps, now)...)
	return err
}

// discoveryLookups looks up the apps queued without lookup fields, in
// DiscoveryShare's calls of DiscoveryLookupIDs ids, one after another; a
// refusal stops them (the rest stay for the next cycle). It returns nil
// when no app waits (or the read failed: an error result), and the
// keyword searches the cycle may send beside them.
func discoveryLookups(ctx context.Context, store Store, fetch func(ctx context.Context, url string) upstream.Response, apiBase, country string, now time.Time) (*Result, int) {
	ids, cur, err := store.Unlooked(ctx, MaxDiscoveryLookupsPerCycle*DiscoveryLookupIDs)
	if err != nil {
		return &Result{Action: "error", Error: "unlooked apps: " + err.Error()}, KeywordSearchesPerCycle
	}
	calls, searches := DiscoveryShare(len(ids))
	if calls == 0 {
		return nil, searches
	}
	ids = ids[:min(len(ids), calls*DiscoveryLookupIDs)]
	res := Result{Action: "discovery_lookups"}
	ctx = ratelimit.Reserved(ctx, calls) // the lookups, one acquire
	for i := 0; i < len(ids); i += DiscoveryLookupIDs {
		batch := ids[i:min(i+DiscoveryLookupIDs, len(ids))]
		resp := fetch(ctx, LookupURL(apiBase, country, batch))
		res.Searches++
		if resp.Class == objects.ClassRateLimit {
			res.RateLimited, res.Refused = true, res.Refused+1
			logx.Event("crawl.lookups_rate_limited", map[string]any{"level": logx.Warn, "sent": res.Searches, "left": calls - res.Searches})
			break
		}
		if resp.Class != objects.ClassOK {
			res.Error = joinErr(res.Error, fmt.Sprintf("lookup of %d apps: %v", len(batch), resp.Err))
			break // the apps stay unlooked, the cursor where it was
		}
		found, err := appstore.ParseLookupBatch(resp.Body, batch)
		if err != nil {
			res.Error = joinErr(res.Error, fmt.Sprintf("lookup of %d apps: %v", len(batch), err))
			break
		}
		apps := make([]appstore.App, 0, len(found.Found))
		for _, id := range batch {
			if a, ok := found.Found[id]; ok {
				apps = append(apps, a)
			}
		}
		// An id the answer lacks stays queued for its enrichment, whose
		// lookup settles it (missing, after its attempts); the cursor
		// passes it.
		if err := store.SaveLookups(ctx, cur, batch[len(batch)-1], apps, now); err != nil {
			res.Error = joinErr(res.Error, "save lookups: "+err.Error())
			break
		}
		cur = cur.Moved(batch[len(batch)-1])
		res.Found += len(batch)
		res.Apps += len(apps)
	}
	return &res, searches
}
