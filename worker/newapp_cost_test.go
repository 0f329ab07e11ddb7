//go:build !js

package worker

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"storecrawl/worker/appstore"
	living "storecrawl/worker/catalogue"
	"storecrawl/worker/crawl"
	"storecrawl/worker/d1"
	"storecrawl/worker/d1/d1test"
	"storecrawl/worker/enrichment"
	"storecrawl/worker/registry"
)

// The D1 rows a newly discovered app costs, from the search that finds it
// to its first enrichment, as D1 bills them: every row a statement (and
// its triggers) inserts, updates or deletes (total_changes()) plus every
// index entry it inserts. D1's rows_written is workerd's SQLite counter,
// which counts each table row inserted or updated and each index entry
// inserted (an entry deleted is not counted); SQLite inserts an entry in
// every index whose columns (key or partial WHERE) the write sets, when
// the row is in the index afterwards.
//
// The new app's path at the design's pace (182,400 a day):
//  1. a keyword search finds it (crawl.RankingStatements: the sighting
//     and lookup fields, its ranking and today's rank; the keyword's own
//     mark is the search's, not the app's, and is left out);
//  2. the controller enriches it with its stored, fresh lookup
//     (enrichment.SaveStatements: the record with its similar apps, and
//     its developer, new here: a quarter of new apps bring one at 1.1M
//     apps).
//
// The catalogue sweep's scheduling of the enriched app and the markets
// stage's scores are written by other stages and counted in their tests.

// appIndex is one index of app_registry: its key expressions and partial
// WHERE as the migrations wrote them.
type appIndex struct{ name, keys, where string }

var indexSQL = regexp.MustCompile(`(?is)^CREATE INDEX (?:IF NOT EXISTS )?(\w+)\s+ON app_registry\s*\((.*)\)\s*(?:WHERE (.*))?$`)

// appIndexes reads app_registry's indexes from the schema.
func appIndexes(t *testing.T, drv *d1test.Driver) []appIndex {
	var out []appIndex
	for _, r := range drv.Rows(t, `SELECT sql FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'app_registry' AND sql IS NOT NULL ORDER BY name`) {
		m := indexSQL.FindStringSubmatch(strings.TrimSpace(r["sql"].(string)))
		if m == nil {
			t.Fatalf("unreadable index: %s", r["sql"])
		}
		keys := regexp.MustCompile(`(?i)\s+(DESC|ASC)\b`).ReplaceAllString(m[2], "")
		where := m[3]
		if where == "" {
			where = "1"
		}
		out = append(out, appIndex{m[1], keys, where})
	}
	return out
}

// indexKeys is, for each index, the app's entry (its key as JSON), or ""
// when the app is not in it.
func indexKeys(t *testing.T, drv *d1test.Driver, idx []appIndex, id int64) map[string]string {
	out := map[string]string{}
	for _, ix := range idx {
		rows := drv.Rows(t, `SELECT CASE WHEN `+ix.where+` THEN json_array(`+ix.keys+`) END AS k FROM app_registry WHERE track_id = ?`, id)
		if len(rows) == 1 && rows[0]["k"] != nil {
			out[ix.name] = rows[0]["k"].(string)
		}
	}
	return out
}

// tableIndexes lists each table's indexes but app_registry's (those are
// counted entry by entry) by their WHERE ("1" for a full index): a row
// inserted there writes an entry in each index whose WHERE it meets.
func tableIndexes(t *testing.T, drv *d1test.Driver) map[string][]string {
	out := map[string][]string{}
	for _, r := range drv.Rows(t, `SELECT tbl_name, COALESCE(sql, '') AS sql FROM sqlite_schema WHERE type = 'index' AND tbl_name != 'app_registry'`) {
		where := "1"
		if m := indexWhere.FindStringSubmatch(r["sql"].(string)); m != nil {
			where = m[1]
		}
		out[r["tbl_name"].(string)] = append(out[r["tbl_name"].(string)], where)
	}
	return out
}

// indexWhere is a partial index's WHERE.
var indexWhere = regexp.MustCompile(`(?is)\bWHERE\s+(.+)$`)

// tableCount is a table's rows and the entries of its indexes.
type tableCount struct{ rows, entries int64 }

func tableRows(t *testing.T, drv *d1test.Driver, tables map[string][]string) map[string]tableCount {
	out := map[string]tableCount{}
	for tb, wheres := range tables {
		c := tableCount{rows: drv.Int(t, `SELECT count(*) FROM "`+tb+`"`)}
		for _, w := range wheres {
			c.entries += drv.Int(t, `SELECT count(*) FROM "`+tb+`" WHERE `+w)
		}
		out[tb] = c
	}
	return out
}

// stepCost is what one step of the app's path wrote.
type stepCost struct {
	Rows, Entries int64
	// EntriesIn names the indexes an entry was written in.
	EntriesIn []string
}

func (c stepCost) Total() int64 { return c.Rows + c.Entries }

// setColumn is a column an UPDATE or an upsert's DO UPDATE assigns.
var setColumn = regexp.MustCompile(`(?i)(?:\bSET|,)\s+(\w+)\s*=[^=]`)

// identifier is a word of an index's key or WHERE: its columns among them.
var identifier = regexp.MustCompile(`\w+`)

// updatedIndexes names the app_registry indexes an update of the app's
// row by s writes: SQLite rewrites an index entry when the statement
// sets any of its columns (key or partial WHERE), whatever the value (a
// SET of a column to its own value rewrites the entry too).
func updatedIndexes(idx []appIndex, s d1.Stmt) map[string]bool {
	set := map[string]bool{}
	for _, m := range setColumn.FindAllStringSubmatch(s.SQL, -1) {
		set[strings.ToLower(m[1])] = true
	}
	out := map[string]bool{}
	for _, ix := range idx {
		for _, w := range identifier.FindAllString(ix.keys+" "+ix.where, -1) {
			if set[strings.ToLower(w)] {
				out[ix.name] = true
			}
		}
	}
	return out
}

// runCounted runs each statement alone and counts its rows and index
// entries. An entry is counted for each app_registry index the app is in
// after the statement, when the statement inserted the app's row, or
// updated it setting one of the index's columns (updatedIndexes), or a
// trigger moved the app's key in it.
func runCounted(t *testing.T, db *d1.DB, drv *d1test.Driver, id int64, stmts []d1.Stmt) stepCost {
	t.Helper()
	idx, others := appIndexes(t, drv), tableIndexes(t, drv)
	var c stepCost
	for _, s := range stmts {
		var written map[string]bool
		if drv.Int(t, `SELECT count(*) FROM app_registry WHERE track_id = ?`, id) == 1 {
			written = updatedIndexes(idx, s)
		}
		keys, rows, changes := indexKeys(t, drv, idx, id), tableRows(t, drv, others), drv.TotalChanges(t)
		if _, err := db.ExecAtomic(context.Background(), s); err != nil {
			t.Fatalf("%v\n%s", err, s.SQL)
		}
		wrote := drv.TotalChanges(t) - changes
		c.Rows += wrote
		if wrote == 0 {
			written = nil // the update's WHERE left the row alone
		}
		for name, k := range indexKeys(t, drv, idx, id) {
			if k != "" && (written[name] || k != keys[name]) {
				c.Entries++
				c.EntriesIn = append(c.EntriesIn, name)
			}
		}
		for tb, n := range tableRows(t, drv, others) {
			if n.entries > rows[tb].entries {
				c.Entries += n.entries - rows[tb].entries
				c.EntriesIn = append(c.EntriesIn, fmt.Sprintf("%d×%s", n.entries-rows[tb].entries, tb))
			}
		}
	}
	return c
}

// newApp is a search result as the upstream answers it.
func newApp(id int64) appstore.App {
	return appstore.App{TrackID: id, Name: "Focus Timer Pro", BundleID: "com.example.focus", DeveloperID: 4242,
		DeveloperName: "Example Labs", Price: 0.99, Currency: "USD", Genre: "Productivity", GenreID: 6007,
		AverageRating: 4.6, RatingCount: 1234, Version: "2.1", ReleaseDate: "2024-01-02T00:00:00Z",
		CurrentVersionReleaseDate: "2026-01-10T00:00:00Z", Description: "Stay on task.", ContentRating: "4+",
		ArtworkURL: "https://example.invalid/a.png", FileSizeBytes: 12345678, Languages: []string{"EN"},
		ReleaseNotes: "Fixes."}
}

// NewAppRowsMax bounds the rows and index entries a new app costs from
// its discovering search to its first enrichment, as
// `go test -run TestNewAppRowsWritten -v ./worker/` prints them: 10 rows
// and 5 index entries, 15. Three of the rows are the explorer's search
// terms (app_search_terms, migrations/0043: the name's, the developer's
// and the subtitle's, each a row keyed by its range, no index entry):
// search by name, developer or subtitle costs 3 rows a new app, 3.3M over
// a 1.1M-app fill (docs/explorer.md). Before them: 7 rows
// and 5 index entries (9 and 4 before migrations/0034: its ranking's
// first rank is no history row, its ranking has an entry in
// idx_crawl_rankings_track, and the sighting inserts it with the search
// result's lookup fields, which the result's own statement wrote over
// the new row). Before migrations/0028 the same path counted 22
// (18 rows, 4 entries): the insert's three history rows and two counter
// rows (one of them n + 0), one counter row of the enrichment, and three
// app_similar rows (one an edge; the table has no reader).
const NewAppRowsMax = 15

// ChartAppRowsMax bounds the same for an app a chart found, from its
// sighting to its first enrichment (its developer known already): 8 rows
// and 5 index entries, three of the rows its search terms (as above; 5
// rows before them). One entry is idx_app_registry_unlooked
// (migrations/0049): an app known by id alone waits there for the crawl's
// batched discovery lookup, which gives 175 apps their lookup fields a
// request (docs/scale.md). Before migrations/0028: 18 (14 rows, 4
// entries: the enrichment wrote its first values' three history rows and
// three edge rows, and the counters three rows more).
const ChartAppRowsMax = 13

// TestNewAppRowsWritten counts a new app's rows and index entries, step by
// step, and bounds their sum.
func TestNewAppRowsWritten(t *testing.T) {
	db, drv := d1test.New(t)
	const id = 900000001
	app := newApp(id)
	found := time.Date(2026, 1, 15, 10, 0, 0, 0, time.UTC)

	search := crawl.RankingStatements("focus timer", []appstore.App{app}, found)
	search = search[:len(search)-1] // the keyword's mark: the search's, not the app's
	discovery := runCounted(t, db, drv, id, search)

	page := appstore.StorePage{Format: "current", Subtitle: "Pomodoro focus", SimilarAppIDs: []int64{900000002, 900000003, 900000004},
		InAppPurchases: []appstore.IAP{{Name: "Pro", Price: "$4.99"}}}
	// The shelf's apps are known: the save queues a similar app it does
	// not know (registry.Discovered), a new app's own discovery, counted
	// on its own below.
	for _, sim := range page.SimilarAppIDs {
		drv.Exec(t, `INSERT INTO app_registry (track_id) VALUES (?)`, sim)
	}
	rec := enrichment.Record{App: app, Page: page, HTMLKey: enrichment.HTMLKey("us", id), FetchedAt: found.Add(2 * time.Hour), LookupAt: found}
	enrich := runCounted(t, db, drv, id, enrichment.SaveStatements(rec))

	// An app a chart found (its name alone) gets its values from its
	// enrichment: they are its first too, and write no history either.
	const chartID = 900000011
	chartApp := newApp(chartID)
	charted := runCounted(t, db, drv, chartID, living.ObserveStmt([]living.Seen{{TrackID: chartID, Name: chartApp.Name, GenreID: chartApp.GenreID}}, found))
	chartRec := enrichment.Record{App: chartApp, Page: page, HTMLKey: enrichment.HTMLKey("us", chartID), FetchedAt: found.Add(2 * time.Hour)}
	chartEnrich := runCounted(t, db, drv, chartID, enrichment.SaveStatements(chartRec))
	t.Logf("found by a chart:   %d rows + %d index entries %v; enriched: %d rows + %d index entries %v",
		charted.Rows, charted.Entries, charted.EntriesIn, chartEnrich.Rows, chartEnrich.Entries, chartEnrich.EntriesIn)
	if n := charted.Total() + chartEnrich.Total(); n > ChartAppRowsMax {
		t.Errorf("an app a chart found wrote %d rows and index entries, want at most %d", n, ChartAppRowsMax)
	}
	// An app a page's shelf names, unknown: its insert costs no more than
	// a chart's sighting (its id alone; its enrichment is a chart app's).
	const shelfID = 900000021
	shelved := runCounted(t, db, drv, shelfID, []d1.Stmt{registry.Discovered(fmt.Sprintf("[%d]", shelfID), d1.Time(found))})
	t.Logf("found on a shelf:   %d rows + %d index entries %v", shelved.Rows, shelved.Entries, shelved.EntriesIn)
	if shelved.Total() > charted.Total() || shelved.Rows == 0 {
		t.Errorf("an app a shelf found wrote %d rows and index entries, a chart's %d", shelved.Total(), charted.Total())
	}

	total := discovery.Total() + enrich.Total()
	t.Logf("discovery (search): %d rows + %d index entries %v", discovery.Rows, discovery.Entries, discovery.EntriesIn)
	t.Logf("first enrichment:   %d rows + %d index entries %v", enrich.Rows, enrich.Entries, enrich.EntriesIn)
	t.Logf("a new app: %d rows + %d index entries = %d written", discovery.Rows+enrich.Rows, discovery.Entries+enrich.Entries, total)
	if total > NewAppRowsMax {
		t.Errorf("a new app wrote %d rows and index entries, want at most %d", total, NewAppRowsMax)
	}
	if n := drv.Int(t, `SELECT count(*) FROM app_registry WHERE track_id = ? AND enrichment_source = 'itunes+store' AND page_status = 'parsed'`, id); n != 1 {
		t.Fatalf("the app is not enriched")
	}

	// Scheduled by the catalogue sweep (not counted here), then refreshed.
	drv.Exec(t, `UPDATE app_registry SET refresh_tier = 'cold', next_refresh_at = ? WHERE track_id = ?`, d1.Time(found.Add(30*24*time.Hour)), id)
	at := found.Add(30 * 24 * time.Hour)
	unchanged := runCounted(t, db, drv, id, enrichment.UnchangedRefreshStatements(app, at))
	grown := app
	grown.RatingCount += 40
	rec.App, rec.FetchedAt, rec.LookupAt, rec.Refresh = grown, at.Add(time.Hour), time.Time{}, true
	changed := runCounted(t, db, drv, id, enrichment.SaveStatements(rec))
	t.Logf("unchanged refresh:  %d rows + %d index entries %v", unchanged.Rows, unchanged.Entries, unchanged.EntriesIn)
	t.Logf("changed refresh (same shelf): %d rows + %d index entries %v", changed.Rows, changed.Entries, changed.EntriesIn)
	// A refresh keeps the app's state: no counter moves, no entry of the
	// indexes on enrichment_source is rewritten, and the same shelf
	// writes no edge (the rows left are the record, its schedule, set by
	// the refresh policy's trigger, and the history of what changed).
	for _, c := range []stepCost{unchanged, changed} {
		for _, in := range c.EntriesIn {
			if in == "idx_app_registry_enriched" || in == "idx_app_registry_fill_due" || in == "idx_app_registry_unscheduled" {
				t.Errorf("a refresh rewrote its entry in %s", in)
			}
		}
	}
	if n := drv.Int(t, `SELECT n FROM pipeline_counters WHERE name = 'apps_enriched'`); n != 2 {
		t.Errorf("apps_enriched: %d", n)
	}
}
