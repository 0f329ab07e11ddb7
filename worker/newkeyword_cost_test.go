//go:build !js

package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"storecrawl/internal/objects"
	"storecrawl/worker/appstore"
	"storecrawl/worker/crawl"
	"storecrawl/worker/d1"
	"storecrawl/worker/d1/d1test"
	"storecrawl/worker/events"
	"storecrawl/worker/markets"
	"storecrawl/worker/upstream"
)

// The D1 rows a new keyword costs: its first search (a search-hints term,
// queued by keyword sourcing) and its first clustering (the
// rankings-updated event's chain in the queue consumer), as D1 bills
// them: every row a statement and its triggers write (total_changes())
// plus every index entry it writes (billedWrites). At the design's 0.091
// new keywords a new app these are the fill month's biggest writer
// (docs/scale.md, "a new keyword").

// anyIndex is one index of any table: its key and partial WHERE, and the
// table's row identity appended to the key (an entry is a key and a row).
type anyIndex struct{ name, table, keys, where, id string }

var anyIndexSQL = regexp.MustCompile(`(?is)^CREATE (?:UNIQUE )?INDEX (?:IF NOT EXISTS )?\w+\s+ON (\w+)\s*\((.*?)\)\s*(?:WHERE (.*))?$`)

// allIndexes reads every index of the schema, the primary keys' own
// (sqlite_autoindex_*, of a rowid table with a non-integer key) included.
func allIndexes(t *testing.T, drv *d1test.Driver) []anyIndex {
	var out []anyIndex
	for _, r := range drv.Rows(t, `SELECT name, tbl_name, sql FROM sqlite_schema WHERE type = 'index' ORDER BY name`) {
		name, table := r["name"].(string), r["tbl_name"].(string)
		var pk []string
		for _, c := range drv.Rows(t, `SELECT name FROM pragma_table_info(?) WHERE pk > 0 ORDER BY pk`, table) {
			pk = append(pk, c["name"].(string))
		}
		id := "rowid"
		if drv.Int(t, `SELECT "wr" FROM pragma_table_list(?)`, table) == 1 { // WITHOUT ROWID: its key is the row
			id = strings.Join(pk, ", ")
		}
		ix := anyIndex{name: name, table: table, id: id, where: "1"}
		if r["sql"] == nil {
			var cols []string
			for _, c := range drv.Rows(t, `SELECT name FROM pragma_index_info(?) ORDER BY seqno`, name) {
				cols = append(cols, c["name"].(string))
			}
			ix.keys = strings.Join(cols, ", ")
		} else {
			m := anyIndexSQL.FindStringSubmatch(strings.TrimSpace(r["sql"].(string)))
			if m == nil {
				t.Fatalf("unreadable index: %s", r["sql"])
			}
			ix.keys = regexp.MustCompile(`(?i)\s+(DESC|ASC)\b`).ReplaceAllString(m[2], "")
			if m[3] != "" {
				ix.where = m[3]
			}
		}
		out = append(out, ix)
	}
	return out
}

// entries is each index's entries (key and row).
func entries(t *testing.T, drv *d1test.Driver, idx []anyIndex) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for _, ix := range idx {
		set := map[string]bool{}
		for _, r := range drv.Rows(t, `SELECT json_array(`+ix.keys+`, `+ix.id+`) AS k FROM "`+ix.table+`" WHERE `+ix.where) {
			set[r["k"].(string)] = true
		}
		out[ix.name] = set
	}
	return out
}

// billed counts, around one batch, what D1 bills as rows written: the
// rows total_changes() counts and each index entry the batch inserted (an
// entry gone is not billed). An entry an UPDATE rewrote in place (a SET
// of a key column to its own value) is not seen here: the statements
// measured compare before they write.
type billed struct {
	Rows, Entries int64
	In            map[string]int64
}

func (b billed) Total() int64 { return b.Rows + b.Entries }

func (b billed) String() string {
	names := make([]string, 0, len(b.In))
	for n := range b.In {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s %d", n, b.In[n])
	}
	return fmt.Sprintf("%d rows + %d index entries = %d [%s]", b.Rows, b.Entries, b.Total(), strings.Join(parts, ", "))
}

// countingDriver is d1test's driver counting what each batch is billed.
type countingDriver struct {
	*d1test.Driver
	t   *testing.T
	idx []anyIndex
	sum billed
}

func (c *countingDriver) Batch(ctx context.Context, stmts []d1.Stmt) ([]d1.Result, error) {
	before, changes := entries(c.t, c.Driver, c.idx), c.Driver.TotalChanges(c.t)
	res, err := c.Driver.Batch(ctx, stmts)
	c.sum.Rows += c.Driver.TotalChanges(c.t) - changes
	for name, set := range entries(c.t, c.Driver, c.idx) {
		for k := range set {
			if !before[name][k] {
				c.sum.Entries++
				c.sum.In[name]++
			}
		}
	}
	return res, err
}

// take returns what was counted since the last take.
func (c *countingDriver) take() billed {
	b := c.sum
	c.sum = billed{In: map[string]int64{}}
	return b
}

// keywordQueue is the EVENTS queue of the test: it keeps what was sent.
type keywordQueue struct{ bodies []string }

func (q *keywordQueue) Send(_ context.Context, body string) error {
	q.bodies = append(q.bodies, body)
	return nil
}

// The shape of a new keyword's first search: a full answer of 50
// results, new apps among known ones (queued and enriched, seen within
// the sighting granularity), as a new app's title keyword finds.
const (
	newKeywordResults  = 50
	newKeywordNewApps  = 10
	newKeywordQueued   = 10
	newKeywordEnriched = newKeywordResults - newKeywordNewApps - newKeywordQueued
)

// NewKeywordSearchRowsMax and NewKeywordClusteringRowsMax bound a new
// keyword's rows and index entries, as
// `go test -run TestNewKeywordRowsWritten -v ./worker/` prints them.
//
// The first search: 91 rows and 61 entries, 152: each result's ranking
// (a row and its idx_crawl_rankings_track entry), each new app's insert,
// its counter (a trigger), its idx_app_registry_queue_value entry and its
// two search terms (name and developer: app_search_terms, migrations/0043,
// 20 rows for the 10 new apps; 132 before them), the keyword's mark and
// its idx_crawl_keywords_waiting entry. Before
// migrations/0034, 142 (131 rows, 11 entries): each result's first rank
// was a keyword_rank_history row too (now its ranking's, until it
// changes), each new app's lookup fields an update of the row just
// inserted, and the ranking had no track-id entry.
//
// The first clustering: 4 rows and 5 entries, 9: the cluster's row, its
// primary key's and idx_market_clusters_size entries, the clusters
// counter; the score's row, its three entries, the opportunities counter.
// Before migrations/0034, 109 (54 rows, 55 entries): a member row and its
// idx_market_cluster_members_track entry for each of the 50 results (the
// members are now the keyword's rankings).
//
// Per (keyword, app) pair: 4 written before (the ranking, its first rank,
// the member and its entry), 2 now (the ranking and its entry, which the
// readers by app need: the history API's first ranks, the catalogue
// sweep's cluster score, the keyword values).
const (
	NewKeywordSearchRowsMax     = 152
	NewKeywordClusteringRowsMax = 9
)

// TestNewKeywordRowsWritten counts one new keyword's first search and its
// first clustering (the rankings-updated chain: clustering,
// fragmentation, scores), rows and index entries.
func TestNewKeywordRowsWritten(t *testing.T) {
	_, drv := d1test.New(t)
	cd := &countingDriver{Driver: drv, t: t}
	cd.idx = allIndexes(t, drv)
	cd.take()
	db := &d1.DB{Driver: cd}
	ctx := context.Background()
	found := time.Date(2026, 1, 15, 10, 0, 0, 0, time.UTC)
	seen := d1.Time(found.Add(-72 * time.Hour))

	apps := make([]appstore.App, newKeywordResults)
	for i := range apps {
		id := int64(800000001 + i)
		a := newApp(id)
		a.Name, a.BundleID = fmt.Sprint("Focus Timer ", i), fmt.Sprint("com.example.focus", i)
		a.RatingCount, a.AverageRating = int64(100+37*i), 3.5+float64(i%10)/10
		apps[i] = a
		if i < newKeywordNewApps {
			continue
		}
		// Known: stored with these values, seen three days ago.
		source := "NULL"
		if i >= newKeywordNewApps+newKeywordQueued {
			source = "'itunes+store'"
		}
		for _, s := range crawl.RankingStatements("older", []appstore.App{a}, found.Add(-72*time.Hour))[:2] {
			drv.Exec(t, s.SQL, s.Args...)
		}
		drv.Exec(t, `UPDATE app_registry SET enrichment_source = `+source+`, enriched_at = CASE WHEN `+source+` IS NULL THEN NULL ELSE ? END, last_seen_at = ? WHERE track_id = ?`, seen, seen, id)
	}
	drv.Exec(t, `DELETE FROM crawl_rankings`)
	drv.Exec(t, `DELETE FROM keyword_rank_history`)
	const kw = "focus timer"
	drv.Exec(t, `INSERT INTO crawl_keywords (keyword, source, created_at, value) VALUES (?, 'fill', ?, 20)`, kw, seen)
	cd.take()

	if _, err := db.Exec(ctx, crawl.RankingStatements(kw, apps, found)...); err != nil {
		t.Fatal(err)
	}
	search := cd.take()

	q := &keywordQueue{}
	m := &markets.Markets{DB: db, Events: q}
	ev, _ := json.Marshal(events.NewKeyed(events.RankingsUpdated, []string{kw}, found)[0])
	bodies := []string{string(ev)}
	for len(bodies) > 0 {
		if err := markets.HandleEvent(ctx, bodies[0], m, found.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		bodies = append(bodies[1:], q.bodies...)
		q.bodies = nil
	}
	cluster := cd.take()
	t.Logf("first search (%d results: %d new, %d queued, %d enriched): %s", newKeywordResults, newKeywordNewApps, newKeywordQueued, newKeywordEnriched, search)
	t.Logf("first clustering: %s", cluster)
	if drv.Int(t, `SELECT count(*) FROM opportunity_scores WHERE cluster_id = ?`, kw) != 1 {
		t.Fatal("the keyword's market is not scored")
	}
	// A new app holds the search result's lookup fields, as the result's
	// own statement would have written them, and its lookup time.
	a := apps[0]
	want := fmt.Sprint(a.BundleID, a.DeveloperID, a.DeveloperName, a.Genre, a.Description, a.ArtworkURL, a.FileSizeBytes, `["EN"]`, d1.Time(found))
	r := drv.Rows(t, `SELECT bundle_id, developer_id, developer_name, genre, description, artwork_url, file_size_bytes, languages, lookup_at FROM app_registry WHERE track_id = ?`, a.TrackID)[0]
	if got := fmt.Sprint(r["bundle_id"], int64(r["developer_id"].(float64)), r["developer_name"], r["genre"], r["description"], r["artwork_url"],
		int64(r["file_size_bytes"].(float64)), r["languages"], r["lookup_at"]); got != want {
		t.Errorf("a new app's lookup fields: %s, want %s", got, want)
	}
	// Its market's members are its rankings, each app's first rank its
	// ranking's.
	if n := drv.Int(t, `SELECT count(*) FROM crawl_rankings WHERE keyword = ? AND seen_at = ?`, kw, d1.Time(found)); n != newKeywordResults {
		t.Errorf("rankings: %d", n)
	}
	if n := search.Total(); n > NewKeywordSearchRowsMax {
		t.Errorf("a new keyword's first search wrote %d rows and index entries, want at most %d", n, NewKeywordSearchRowsMax)
	}
	if n := cluster.Total(); n > NewKeywordClusteringRowsMax {
		t.Errorf("a new keyword's first clustering wrote %d rows and index entries, want at most %d", n, NewKeywordClusteringRowsMax)
	}
}

// HintKeywordRowsMax bounds what the sourcing writes for one new keyword,
// rows and index entries, as `go test -run TestHintKeywordRowsWritten -v
// ./worker/` prints them: the keyword's row, its unique-key and
// idx_crawl_keywords_pending_value entries (3), and its share of the
// run's asked prefixes (a row and its primary-key entry each, a waiting
// prefix's idx_keyword_hint_prefixes_pending entry too) and the cursor.
// Before the hints, a scan's and a fill's guessed keyword cost its row and
// two entries, with no prefix rows; the first search and clustering
// (TestNewKeywordRowsWritten) are the same either way.
const HintKeywordRowsMax = 5

// TestHintKeywordRowsWritten counts one sourcing run on D1, billed (rows
// and index entries), per new keyword.
func TestHintKeywordRowsWritten(t *testing.T) {
	_, drv := d1test.New(t)
	cd := &countingDriver{Driver: drv, t: t}
	cd.idx = allIndexes(t, drv)
	db := &d1.DB{Driver: cd}
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	drv.Exec(t, `DELETE FROM category_scans`)
	drv.Exec(t, `INSERT INTO category_scans (genre_id, name, tier) VALUES (6015, 'Finance', 'high')`)
	for i, name := range []string{"Budget Planner", "Money Manager", "Crypto Wallet", "Expense Tracker"} {
		drv.Exec(t, `INSERT INTO app_registry (track_id, name) VALUES (?, ?)`, 500+i, name)
		drv.Exec(t, `INSERT INTO chart_positions (country, collection, genre_id, rank, track_id, seen_at) VALUES ('us', ?, 6015, ?, ?, ?)`,
			appstore.ChartCollections[0], i+1, 500+i, d1.Time(now))
	}
	// Ten completions a prefix, as the App Store answers, half of them
	// known already.
	get := func(_ context.Context, u string) upstream.Response {
		q := u[strings.Index(u, "q=")+2:]
		var b strings.Builder
		b.WriteString(`<plist version="1.0"><dict><key>title</key><string>Suggestions</string><key>hints</key><array>`)
		for i := range 10 {
			fmt.Fprintf(&b, `<dict><key>term</key><string>%s %d</string><key>url</key><string>u</string></dict>`, q, i)
		}
		b.WriteString(`</array></dict></plist>`)
		return upstream.Response{Class: objects.ClassOK, Body: []byte(b.String()), Remaining: -1}
	}
	for _, w := range []string{"finance", "budget", "money", "crypto", "wallet", "expense", "tracker", "planner", "manager"} {
		for i := range 5 {
			drv.Exec(t, `INSERT INTO crawl_keywords (keyword, source, created_at, searched_at, value) VALUES (?, 'hints', ?1, ?1, 10)`, fmt.Sprintf("%s %d", w, i), d1.Time(now))
		}
	}
	cd.take()
	r := crawl.SourceHints(context.Background(), crawl.D1Store{DB: db}, get, "http://hints", "us", now)
	run := cd.take()
	if r.Error != "" || r.NewKeywords == 0 || r.NewKeywords > crawl.HintNewKeywordsPerRun {
		t.Fatalf("%+v", r)
	}
	per := float64(run.Total()) / float64(r.NewKeywords)
	t.Logf("a sourcing run: %d prefixes asked, %d terms, %d new keywords: %s, %.2f a new keyword", r.Asked, r.Terms, r.NewKeywords, run, per)
	if per > HintKeywordRowsMax {
		t.Errorf("a new keyword cost %.2f rows and index entries, want at most %d", per, HintKeywordRowsMax)
	}
}
