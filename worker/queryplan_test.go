//go:build !js

package worker

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"storecrawl/worker/d1"
	"storecrawl/worker/d1/d1test"
)

// The test catalogue: production's shape at 1.1M apps scaled down to
// CatalogueApps. Each table's rows are a multiple of the apps, as there.
const (
	CatalogueApps = 100_000
	// LargeTableRows: a table with more rows than this in the catalogue
	// grows with it; walking it (a SCAN, through an index or not) is a
	// read that grows with the table. The catalogue's smallest growing
	// tables (the clusters, 8 % of the apps) are well above it; the fixed
	// ones (category_scans, pipeline_counters, fact_totals) well below.
	LargeTableRows = 1_000
)

// catalogueFill builds the catalogue with a few INSERT ... SELECT over a
// counting CTE, not row by row. {apps} is CatalogueApps.
var catalogueFill = []string{
	// apps: track ids from 100000001; i % 100 picks the state.
	`INSERT INTO app_registry (track_id, name, subtitle, description, developer_id, developer_name, genre_id, price, currency,
  average_rating, rating_count, version, enrichment_source, enriched_at, page_status, rankings_filled_at,
  next_refresh_at, enrich_priority, discovered_at, updated_at, last_seen_at, page_version, page_rating_count,
  refresh_tier, refresh_retry_at)
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < {apps})
SELECT 100000001 + i, 'app ' || i, 'subtitle ' || i, 'description ' || i, 1 + i % ({apps} / 4), 'dev ' || (i % ({apps} / 4)),
  6000 + i % 25, CASE WHEN i % 100 < 85 THEN (i % 5) * 0.99 END, CASE WHEN i % 100 < 85 THEN 'USD' END,
  CASE WHEN i % 100 < 85 THEN 1 + (i % 40) / 10.0 END, CASE WHEN i % 100 < 85 THEN i * 7 % 100000 END,
  CASE WHEN i % 100 < 85 THEN '1.' || (i % 9) END,
  CASE WHEN i % 100 < 85 THEN 'itunes+store' WHEN i % 100 < 96 THEN NULL WHEN i % 2 = 0 THEN 'not_found' ELSE 'failed' END,
  CASE WHEN i % 100 < 85 OR i % 100 >= 96 THEN strftime('%Y-%m-%dT%H:%M:%fZ', '2026-01-01', '-' || (i % 60) || ' days') END,
  CASE WHEN i % 100 < 85 THEN 'parsed' END,
  CASE WHEN i % 100 < 85 AND i % 3 > 0 THEN strftime('%Y-%m-%dT%H:%M:%fZ', '2026-01-01', '-' || (i % 30) || ' days') END,
  CASE WHEN i % 100 < 85 AND i % 10 > 0 THEN strftime('%Y-%m-%dT%H:%M:%fZ', '2026-01-01', '+' || (i % 30 - 15) || ' days') END,
  CASE WHEN i % 100 BETWEEN 85 AND 95 AND i % 7 = 0 THEN 1 ELSE 0 END,
  '2025-10-01T00:00:00.000Z', strftime('%Y-%m-%dT%H:%M:%fZ', '2026-01-01', '-' || (i % 60) || ' days'),
  CASE WHEN i % 100 < 85 THEN strftime('%Y-%m-%dT%H:%M:%fZ', '2026-01-01', '-' || (i % 60) || ' days') END,
  CASE WHEN i % 100 < 85 THEN '1.' || (i % 9) END, CASE WHEN i % 100 < 85 THEN i * 7 % 100000 END,
  CASE WHEN i % 100 < 85 THEN CASE WHEN i % 10 = 0 THEN 'hot' WHEN i % 10 < 4 THEN 'warm' ELSE 'cold' END END,
  CASE WHEN i % 100 < 85 AND i % 1000 = 7 THEN strftime('%Y-%m-%dT%H:%M:%fZ', '2026-01-01', '+' || (i % 30 - 15) || ' days') END
FROM n`,
	// history as the update triggers (dropped for the fill) leave it
	// after a change: each enriched app's snapshot, version and price.
	// (compact rows, migrations/0035: times in ms, source 1 observed).
	`INSERT INTO app_snapshots (track_id, taken_at, rating_count, average_rating, source)
SELECT track_id, CAST(round((julianday(updated_at) - 2440587.5) * 86400000) AS INTEGER), rating_count, average_rating, 1 FROM app_registry WHERE rating_count IS NOT NULL`,
	`INSERT INTO app_version_history (track_id, seen_at, version, release_date, release_notes)
SELECT track_id, CAST(round((julianday(updated_at) - 2440587.5) * 86400000) AS INTEGER), version, current_version_release_date, release_notes FROM app_registry WHERE version IS NOT NULL`,
	`INSERT INTO app_price_history (track_id, seen_at, price, currency)
SELECT track_id, CAST(round((julianday(updated_at) - 2440587.5) * 86400000) AS INTEGER), price, currency FROM app_registry WHERE price IS NOT NULL`,
	// and what the counters' triggers keep.
	`UPDATE pipeline_counters SET n = CASE name
  WHEN 'apps_known' THEN (SELECT count(*) FROM app_registry)
  WHEN 'apps_unavailable' THEN (SELECT count(*) FROM app_registry WHERE enriched_at IS NOT NULL AND enrichment_source IS NOT 'itunes+store')
  WHEN 'apps_enriched' THEN (SELECT count(*) FROM app_registry WHERE enriched_at IS NOT NULL AND enrichment_source = 'itunes+store')
  ELSE n END`,
	// developers: a quarter of the apps.
	`INSERT INTO developers (developer_id, name, first_seen_at, updated_at)
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i + 1 <= {apps} / 4)
SELECT i, 'dev ' || i, '2025-10-01T00:00:00.000Z', '2025-10-01T00:00:00.000Z' FROM n`,
	// keywords: 9 % of the apps; a third pending, the rest searched (half due).
	`INSERT INTO crawl_keywords (keyword, source, created_at, searched_at, result_count, value, research_interval_s, next_search_at, due_value)
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < {apps} * 9 / 100)
SELECT 'kw' || i, 'title', '2025-10-01T00:00:00.000Z',
  CASE WHEN i % 3 > 0 THEN '2025-12-01T00:00:00.000Z' END, CASE WHEN i % 3 > 0 THEN 20 END,
  i % 97, CASE WHEN i % 3 > 0 THEN 2592000 END,
  CASE WHEN i % 3 > 0 THEN strftime('%Y-%m-%dT%H:%M:%fZ', '2026-01-01', '+' || (i % 20 - 10) || ' days') END,
  CASE WHEN i % 3 = 1 THEN i % 89 END
FROM n`,
	// rankings: 1.6 per app, 18 apps a keyword (in key order: a fast
	// build). 7919 is prime to the apps: i * 7919 % apps visits each app.
	`INSERT INTO crawl_rankings (keyword, track_id, rank, seen_at)
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < {apps} * 16 / 10)
SELECT 'kw' || (i / 18), 100000001 + (i * 7919) % {apps}, 1 + i % 18, '2025-12-01T00:00:00.000Z' FROM n`,
	// clusters: 8 % of the apps (the first keywords); their members are
	// their keywords' rankings (migrations/0034).
	`INSERT INTO market_clusters (cluster_id, app_count, total_ratings, avg_rating, top_share, computed_at, hhi, fragmentation, fragmented_at, member_sum)
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < {apps} * 8 / 100)
SELECT 'kw' || i, 18, i * 13 % 500000, 3.5, 0.3, '2025-12-01T00:00:00.000Z', 0.2, 0.8, '2025-12-01T00:00:00.000Z',
  (SELECT sum(track_id) FROM crawl_rankings WHERE keyword = 'kw' || i) FROM n`,
	`INSERT INTO opportunity_scores (cluster_id, score, demand, fragmentation, quality_gap, computed_at)
SELECT cluster_id, (total_ratings % 1000) / 10.0, 0.5, 0.8, 0.3, computed_at FROM market_clusters`,
	// history: a second snapshot of a sixth of the apps brings the
	// history rows to 2.7 an app.
	`INSERT OR IGNORE INTO app_snapshots (track_id, taken_at, rating_count, average_rating, source)
SELECT track_id, 1761955200000, rating_count, average_rating, NULL FROM app_registry WHERE rating_count IS NOT NULL AND track_id % 6 = 0`,
	`INSERT INTO keyword_rank_history (track_id, keyword_id, day, rank)
SELECT r.track_id, k.id, 20423, r.rank FROM crawl_rankings r JOIN crawl_keywords k ON k.keyword = r.keyword ORDER BY r.track_id, k.id`,
	`INSERT OR IGNORE INTO chart_positions (country, collection, genre_id, rank, track_id, seen_at)
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < 25 * 200)
SELECT 'us', 'topfree', 6000 + i / 200, 1 + i % 200, 100000001 + (i * 13) % {apps}, '2025-12-01T00:00:00.000Z' FROM n`,
	// two days of chart history.
	`INSERT INTO chart_position_history (country, collection, genre_id, track_id, seen_at, rank)
SELECT country, collection, genre_id, track_id, day, rank FROM chart_positions,
  (SELECT '2025-11-30T00:00:00.000Z' AS day UNION ALL SELECT '2025-12-01T00:00:00.000Z')`,
	// reviews of the top clusters' members; their fetches.
	`INSERT OR IGNORE INTO app_reviews (id, app_id, country, rating, title, body, version, author_hash, reviewed_at, sentiment, fetched_at)
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < {apps} / 5)
SELECT 'r' || i, 100000001 + (i * 7919) % {apps}, 'us', 1 + i % 5, 'title', 'body', '1.0', 'h', '2025-12-01T00:00:00.000Z', 0, '2025-12-01T00:00:00.000Z' FROM n`,
	`INSERT OR IGNORE INTO review_fetches (app_id, country, fetched_at, reviews)
SELECT DISTINCT app_id, 'us', '2025-12-01T00:00:00.000Z', 1 FROM app_reviews`,
	`INSERT INTO dead_letters (message_id, queue, event_type, body, received_at, replayed_at)
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < {apps} / 50)
SELECT 'm' || i, 'events', 'app-enriched', '{}', strftime('%Y-%m-%dT%H:%M:%fZ', '2026-01-01', '-' || i || ' minutes'),
  CASE WHEN i % 2 = 0 THEN '2026-01-01T00:00:00.000Z' END FROM n`,
	// the analyst: briefs and their calls.
	`INSERT INTO analyst_briefs (brief_id, cluster_id, state, trigger, created_at, updated_at)
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < {apps} / 50)
SELECT 'b' || i, 'kw' || (i % 100), CASE WHEN i % 10 = 0 THEN 'queued' ELSE 'done' END, 'schedule',
  strftime('%Y-%m-%dT%H:%M:%fZ', '2026-01-01', '-' || i || ' hours'), '2026-01-01T00:00:00.000Z' FROM n`,
	`INSERT INTO llm_spend (call_id, day, cluster_id, brief_id, state, est_tokens, reserved_micro_usd, created_at)
SELECT brief_id || '/1', substr(created_at, 1, 10), cluster_id, brief_id, 'settled', 1000, 100, created_at FROM analyst_briefs`,
	`UPDATE pipeline_counters SET n = CASE name
  WHEN 'clusters' THEN (SELECT count(*) FROM market_clusters)
  WHEN 'opportunities' THEN (SELECT count(*) FROM opportunity_scores)
  ELSE n END`,
}

// catalogueFillTriggered is filled once the triggers are back: the
// ledger's facts, whose triggers keep their minutes and writers' totals.
var catalogueFillTriggered = []string{
	`INSERT INTO facts (id, source, kind, at, counters, data, received_at)
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < {apps} / 20)
SELECT 'f' || i, CASE WHEN i % 2 = 0 THEN 'controller:main' ELSE 'limiter:client:a' END,
  CASE WHEN i % 2 = 0 THEN 'controller.tick' ELSE 'limiter.minute' END,
  1767225600000 + i * 30000, '{"ticks":1,"allowed":2}', '{}', 1767225600000 + i * 30000 FROM n`,
}

// sampleKeywords renames the first two keywords, everywhere a keyword is
// kept, to the ones the hot queries' sample arguments name, so those
// reads find rows.
func sampleKeywords() []string {
	var out []string
	for _, tc := range [][2]string{{"crawl_keywords", "keyword"}, {"crawl_rankings", "keyword"},
		{"market_clusters", "cluster_id"}, {"opportunity_scores", "cluster_id"},
		{"analyst_briefs", "cluster_id"}, {"llm_spend", "cluster_id"}} {
		out = append(out, fmt.Sprintf(`UPDATE %[1]s SET %[2]s = CASE %[2]s WHEN 'kw0' THEN 'budget' ELSE 'chat' END WHERE %[2]s IN ('kw0', 'kw1')`, tc[0], tc[1]))
	}
	return out
}

var catalogue struct {
	once  sync.Once
	db    *d1.DB
	drv   *d1test.Driver
	rows  map[string]int64 // each table's rows
	built time.Duration
}

// testCatalogue builds the catalogue once per test binary (no ANALYZE: the
// planner sees no statistics, as on a D1 never analyzed).
func testCatalogue(t *testing.T) (*d1.DB, *d1test.Driver, map[string]int64) {
	t.Helper()
	catalogue.once.Do(func() {
		start := time.Now()
		db, drv, _, err := d1test.Open()
		if err != nil {
			t.Fatal(err)
		}
		// The migrations' indexes and triggers are dropped for the fill and
		// made again from sqlite_schema's own text: an index sorted once
		// is built faster than by 100,000s of inserts in key order of
		// another. The fill writes what the triggers would.
		const schemaSQL = `SELECT type, name, tbl_name, COALESCE(sql, '') AS sql FROM sqlite_schema ORDER BY type, name`
		schema := drv.Rows(t, schemaSQL)
		derived := drv.Rows(t, `SELECT type, name, sql FROM sqlite_schema WHERE type IN ('index', 'trigger') AND sql IS NOT NULL`)
		for _, r := range derived {
			drv.Exec(t, fmt.Sprintf(`DROP %s "%s"`, strings.ToUpper(r["type"].(string)), r["name"]))
		}
		for _, q := range append(catalogueFill, sampleKeywords()...) {
			drv.Exec(t, strings.ReplaceAll(q, "{apps}", strconv.Itoa(CatalogueApps)))
		}
		for _, r := range derived {
			drv.Exec(t, r["sql"].(string))
		}
		for _, q := range catalogueFillTriggered {
			drv.Exec(t, strings.ReplaceAll(q, "{apps}", strconv.Itoa(CatalogueApps)))
		}
		if after := drv.Rows(t, schemaSQL); fmt.Sprint(after) != fmt.Sprint(schema) {
			t.Fatalf("the schema after the fill is not the migrations':\n%v\n%v", after, schema)
		}
		if drv.Int(t, `SELECT count(*) FROM sqlite_schema WHERE name LIKE 'sqlite_stat%'`) != 0 {
			t.Fatal("the catalogue has ANALYZE statistics: plans here would not be D1's")
		}
		rows := map[string]int64{}
		for _, r := range drv.Rows(t, `SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`) {
			name := r["name"].(string)
			rows[name] = drv.Int(t, `SELECT COUNT(*) FROM "`+name+`"`)
		}
		catalogue.db, catalogue.drv, catalogue.rows, catalogue.built = db, drv, rows, time.Since(start)
	})
	if catalogue.db == nil {
		t.Fatal("the test catalogue failed to build (see the first test's failure)")
	}
	return catalogue.db, catalogue.drv, catalogue.rows
}

// TestCatalogueShape: the catalogue is production's shape at 1.1M apps
// (90k clusters, 1.8M rankings) scaled down: each figure a share of the
// apps, within 2 %. A cluster's members are its keyword's rankings
// (migrations/0034): 18 each, 1.44 an app.
func TestCatalogueShape(t *testing.T) {
	_, drv, rows := testCatalogue(t)
	t.Logf("built in %v: %v", catalogue.built, rows)
	share := func(q string) float64 { return float64(drv.Int(t, q)) / CatalogueApps }
	for _, c := range []struct {
		what      string
		got, want float64
	}{
		{"enriched", share(`SELECT count(*) FROM app_registry WHERE enrichment_source = 'itunes+store'`), 0.85},
		{"queued", share(`SELECT count(*) FROM app_registry WHERE enriched_at IS NULL`), 0.11},
		{"not found or failed", share(`SELECT count(*) FROM app_registry WHERE enrichment_source IN ('not_found', 'failed')`), 0.04},
		{"developers", share(`SELECT count(*) FROM developers`), 0.25},
		{"keywords", share(`SELECT count(*) FROM crawl_keywords`), 0.09},
		{"rankings", share(`SELECT count(*) FROM crawl_rankings`), 1.6},
		{"clusters", share(`SELECT count(*) FROM market_clusters`), 0.08},
		{"memberships", share(`SELECT count(*) FROM crawl_rankings r JOIN market_clusters c ON c.cluster_id = r.keyword`), 1.44},
		{"history", share(`SELECT (SELECT count(*) FROM app_snapshots) + (SELECT count(*) FROM app_version_history) + (SELECT count(*) FROM app_price_history)`), 2.7},
	} {
		if c.got < c.want*0.98 || c.got > c.want*1.02 {
			t.Errorf("%s: %.3f an app, want %.3f", c.what, c.got, c.want)
		}
	}
	if rows["app_registry"] != CatalogueApps {
		t.Errorf("apps: %d", rows["app_registry"])
	}
}

// walkStep is a plan step that walks a table: a bare SCAN, or a SCAN
// through an index (every entry of the index, a row each).
var walkStep = regexp.MustCompile(`^SCAN (\w+)(?: USING (?:COVERING )?INDEX (\w+))?`)

// tableRef is a table named after FROM or JOIN, with its alias if any.
var tableRef = regexp.MustCompile(`(?i)\b(?:FROM|JOIN|UPDATE|INTO)\s+(\w+)(?:\s+(?:AS\s+)?(\w+))?`)

var notAlias = map[string]bool{"WHERE": true, "JOIN": true, "LEFT": true, "INNER": true, "CROSS": true, "ON": true,
	"GROUP": true, "ORDER": true, "LIMIT": true, "SET": true, "USING": true, "INDEXED": true, "NOT": true, "RETURNING": true,
	"UNION": true, "VALUES": true, "SELECT": true, "WITH": true, "FROM": true}

var hasLimit = regexp.MustCompile(`(?i)\bLIMIT\b`)

// tempSort is a plan step that sorts rows in a temporary B-tree for an
// ORDER BY (all of it, or its last terms).
var tempSort = regexp.MustCompile(`^USE TEMP B-TREE FOR .*ORDER BY`)

// walkedTable names the table a plan step walks ("" for none: a
// subquery, a CTE, json_each), resolving the query's aliases.
func walkedTable(step, sql string, indexTable map[string]string) string {
	m := walkStep.FindStringSubmatch(step)
	if m == nil {
		return ""
	}
	if m[2] != "" {
		return indexTable[m[2]]
	}
	for _, ref := range tableRef.FindAllStringSubmatch(sql, -1) {
		if ref[1] == m[1] || (ref[2] == m[1] && !notAlias[strings.ToUpper(ref[2])]) {
			return ref[1]
		}
	}
	return ""
}

// planCheck is what the plan test knows of the catalogue.
type planCheck struct {
	drv        *d1test.Driver
	rows       map[string]int64  // each table's rows
	indexTable map[string]string // each index's table
}

func newPlanCheck(t *testing.T) planCheck {
	_, drv, rows := testCatalogue(t)
	pc := planCheck{drv: drv, rows: rows, indexTable: map[string]string{}}
	for _, r := range drv.Rows(t, `SELECT name, tbl_name FROM sqlite_schema WHERE type = 'index'`) {
		pc.indexTable[r["name"].(string)] = r["tbl_name"].(string)
	}
	return pc
}

// defects explains q's plan on the catalogue and lists what in it grows
// with a table: a walk of a large table (unless q is marked Bounded, which
// takes a LIMIT), a page (q.Page) sorted in a temporary B-tree, json_each scanned inside a correlated subquery (the
// whole batch read once per row: the square of the batch), or, for a read
// (run at its sample arguments), LargeTableRows rows walked or more.
func (pc planCheck) defects(t *testing.T, q d1.NamedQuery) (plan string, defects []string) {
	type step struct {
		detail string
		parent float64
	}
	byID := map[float64]step{}
	var steps, walks []string
	for _, r := range pc.drv.Rows(t, "EXPLAIN QUERY PLAN "+q.SQL, q.Args...) {
		d := fmt.Sprint(r["detail"])
		id, _ := r["id"].(float64) // JSON numbers
		parent, _ := r["parent"].(float64)
		byID[id] = step{d, parent}
		steps = append(steps, d)
		if tb := walkedTable(d, q.SQL, pc.indexTable); tb != "" && pc.rows[tb] > LargeTableRows {
			walks = append(walks, fmt.Sprintf("%q walks %s (%d rows)", d, tb, pc.rows[tb]))
		}
		if strings.HasPrefix(d, "SCAN json_each") {
			for p := parent; p != 0; p = byID[p].parent {
				if strings.HasPrefix(byID[p].detail, "CORRELATED") {
					defects = append(defects, fmt.Sprintf("%q under %q: the batch is read once per outer row", d, byID[p].detail))
					break
				}
			}
		}
	}
	plan = strings.Join(steps, " | ")
	if q.Page {
		for _, d := range steps {
			if tempSort.MatchString(d) {
				defects = append(defects, fmt.Sprintf("%q: a page sorted in a temporary B-tree reads every row it sorts", d))
			}
		}
	}
	if pc.drv.ReadOnly(t, q.SQL) {
		// A read runs too: a mark says a walk stops early; the run shows
		// whether it does, at the sample arguments.
		w := pc.drv.Measure(t, q.SQL, q.Args...)
		if w.Walked >= LargeTableRows {
			defects = append(defects, fmt.Sprintf("walked %d rows at the sample arguments (returned %d)", w.Walked, w.Rows))
		}
		plan = fmt.Sprintf("walked %d, %d VM steps, %d rows: %s", w.Walked, w.VMSteps, w.Rows, plan)
	}
	switch {
	case q.Bounded != "" && !hasLimit.MatchString(q.SQL):
		defects = append(defects, fmt.Sprintf("marked bounded (%s) but has no LIMIT", q.Bounded))
	case q.Bounded != "" && len(walks) == 0:
		defects = append(defects, fmt.Sprintf("marked bounded (%s) but walks no large table: drop the mark", q.Bounded))
	case q.Bounded == "":
		defects = append(defects, walks...)
	}
	return plan, defects
}

// TestHotQueriesDoNotGrowWithTheCatalogue: EXPLAIN QUERY PLAN of every hot
// query on the catalogue (no statistics) walks no large table, unless the
// query is marked Bounded (a cursor or a queue's head, and a LIMIT: a page
// a run); reads run too, and walk fewer than LargeTableRows rows. A query
// whose reads grow with its table is a defect: at 1.1M apps it is what
// the bill is made of.
func TestHotQueriesDoNotGrowWithTheCatalogue(t *testing.T) {
	start := time.Now()
	pc := newPlanCheck(t)
	var large []string
	for name, n := range pc.rows {
		if n > LargeTableRows {
			large = append(large, fmt.Sprintf("%s %d", name, n))
		}
	}
	sort.Strings(large)
	t.Logf("large tables (> %d rows): %s", LargeTableRows, strings.Join(large, ", "))
	for _, q := range HotQueries() {
		plan, defects := pc.defects(t, q)
		if len(defects) > 0 {
			t.Errorf("%s grows with its table: %s\n\tplan: %s", q.Name, strings.Join(defects, "; "), plan)
		}
		t.Logf("%s: %s", q.Name, plan)
	}
	t.Logf("%d queries in %v (catalogue built in %v)", len(HotQueries()), time.Since(start), catalogue.built)
}

// TestPlanCheckCatchesKnownDefects: the check flags the two statements
// that grew with their tables in production, as they were, an offset
// page, and a page sorted in a temporary B-tree.
func TestPlanCheckCatchesKnownDefects(t *testing.T) {
	pc := newPlanCheck(t)
	oldDueApps := `SELECT m.track_id FROM (SELECT cluster_id FROM opportunity_scores ORDER BY score DESC LIMIT ?) o
JOIN crawl_rankings m ON m.keyword = o.cluster_id
LEFT JOIN review_fetches f ON f.app_id = m.track_id AND f.country = ?
WHERE f.fetched_at IS NULL OR f.fetched_at < ?
GROUP BY m.track_id ORDER BY MIN(m.rank), m.track_id LIMIT ?`
	for _, q := range []d1.NamedQuery{{
		// reviews-refresh's pick before CROSS JOIN: at 1.1M apps it read
		// 1.83M rows a run, walking every membership.
		Name: "reviews due apps, joined freely",
		SQL:  oldDueApps,
		Args: []any{10, "us", "2026-01-01T00:00:00.000Z", 5},
	}, {
		Name:    "reviews due apps, joined freely, marked bounded",
		SQL:     oldDueApps,
		Args:    []any{10, "us", "2026-01-01T00:00:00.000Z", 5},
		Bounded: "marked as the fixed one is: the mark does not cover a walk of the members",
	}, {
		// rating-sweep's velocities before UPDATE ... FROM: 20,900 rows
		// read for 200 apps.
		Name: "sweep velocities, correlated",
		SQL: `UPDATE app_registry SET rating_velocity_7d = (
  SELECT json_extract(value, '$.v') FROM json_each(?1) WHERE json_extract(value, '$.id') = app_registry.track_id)
WHERE track_id IN (SELECT json_extract(value, '$.id') FROM json_each(?1))`,
		Args: []any{`[{"id":100000001,"v":1.5}]`},
	}, {
		// The list pages as they were, by OFFSET: a page 10,000 deep
		// walked the 10,000 entries of the index before it.
		Name: "opportunities page by offset",
		SQL:  `SELECT cluster_id FROM opportunity_scores ORDER BY score DESC LIMIT ? OFFSET ?`,
		Args: []any{50, 5000},
		Page: true,
	}, {
		// A page whose order no index gives: each page sorts its range.
		Name: "a page sorted in a temporary B-tree",
		SQL:  `SELECT track_id FROM crawl_rankings WHERE keyword = ? ORDER BY seen_at, track_id LIMIT ?`,
		Args: []any{"budget", 5},
		Page: true,
	}} {
		plan, defects := pc.defects(t, q)
		if len(defects) == 0 {
			t.Errorf("%s: not flagged: %s", q.Name, plan)
		}
		t.Logf("%s: %s\n\tplan: %s", q.Name, strings.Join(defects, "; "), plan)
	}
}
