//go:build !js

package search

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"storecrawl/worker/d1/d1test"
)

// TestFTS5WriteCostAtScale measures what an FTS5 index over the apps'
// name, subtitle and developer would cost in rows written, on a catalogue
// of STORECRAWL_FTS_APPS apps (docs/explorer.md's figures come from 1.1M):
//
//	STORECRAWL_FTS_APPS=1100000 go test -run TestFTS5WriteCostAtScale -v -timeout 30m ./worker/search/
//
// It counts total_changes() (what d1test bills) and, since FTS5 writes its
// shadow tables under the virtual table, the shadow rows added, deleted or
// rewritten, for the catalogue's writes: new apps in batches, renames, and
// an unrelated update (ratings), against the same writes with the terms
// table search uses instead (app_search_terms, migrations/0043) and with
// neither. total_changes() does not count index entries: a plain index on
// the three columns would add one a column to every save naming them.
func TestFTS5WriteCostAtScale(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("STORECRAWL_FTS_APPS"))
	if n <= 0 {
		t.Skip("set STORECRAWL_FTS_APPS (e.g. 1100000) to measure")
	}
	_, drv := d1test.New(t)
	start := time.Now()
	drv.Exec(t, `CREATE TEMP TABLE words (i INTEGER PRIMARY KEY, w TEXT)`)
	drv.Exec(t, `WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i+1 FROM s WHERE i < 4999)
INSERT INTO words SELECT i, printf('%s%s%d', char(97 + i % 26), char(97 + (i / 26) % 26), i) FROM s`)
	drv.Exec(t, `WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM s WHERE i < ?)
INSERT INTO app_registry (track_id, name, subtitle, developer_name, enrichment_source, enriched_at, rating_count)
SELECT i,
  (SELECT w FROM words WHERE i = (s.i * 7919) % 5000) || ' ' || (SELECT w FROM words WHERE i = (s.i * 104729) % 5000),
  (SELECT w FROM words WHERE i = (s.i * 31) % 5000) || ' ' || (SELECT w FROM words WHERE i = (s.i * 131) % 5000) || ' ' || (SELECT w FROM words WHERE i = (s.i * 1031) % 5000),
  (SELECT w FROM words WHERE i = (s.i / 7) % 5000) || ' Inc',
  'itunes+store', '2026-01-01T00:00:00.000Z', s.i % 1000
FROM s`, n)
	t.Logf("%d apps inserted in %s", n, time.Since(start).Round(time.Second))

	type op struct {
		name string
		sql  string
		apps int
	}
	base := int64(n) + 1
	ops := func(round int) []op {
		first := base + int64(round)*1000
		return []op{
			{"insert 50 new apps (one batch)", fmt.Sprintf(`WITH RECURSIVE s(i) AS (SELECT %d UNION ALL SELECT i+1 FROM s WHERE i < %d)
INSERT INTO app_registry (track_id, name, subtitle, developer_name) SELECT i, 'new' || i || ' photo', 'edit your photos ' || i, 'Dev ' || i FROM s`, first, first+49), 50},
			{"rename 1 app", fmt.Sprintf(`UPDATE app_registry SET name = name || ' x%d' WHERE track_id = %d`, round, 1+(round*997)%n), 1},
			{"update 1 app's ratings", fmt.Sprintf(`UPDATE app_registry SET rating_count = rating_count + 1 WHERE track_id = %d`, 2+(round*991)%n), 1},
		}
	}
	const rounds = 20
	measure := func(label string, shadow []string) {
		for k, o := range ops(0) {
			var changes, shadowRows int64
			for r := 0; r < rounds; r++ {
				o := ops(r + map[string]int{"fts": 100, "terms": 200, "none": 300}[label])[k]
				for _, s := range shadow {
					drv.Exec(t, `DROP TABLE IF EXISTS temp.snap_`+s)
					drv.Exec(t, `CREATE TEMP TABLE snap_`+s+` AS SELECT * FROM `+s)
				}
				var docs int64
				if len(shadow) > 0 {
					docs = drv.Int(t, `SELECT count(*) FROM apps_fts_docsize`)
				}
				before := drv.TotalChanges(t)
				drv.Exec(t, o.sql)
				changes += drv.TotalChanges(t) - before
				if len(shadow) > 0 {
					// docsize: one row a document, keyed by its id.
					shadowRows += drv.Int(t, `SELECT count(*) FROM apps_fts_docsize`) - docs
				}
				for _, s := range shadow {
					shadowRows += drv.Int(t, `SELECT (SELECT count(*) FROM (SELECT * FROM `+s+` EXCEPT SELECT * FROM temp.snap_`+s+`))
  + (SELECT count(*) FROM (SELECT * FROM temp.snap_`+s+` EXCEPT SELECT * FROM `+s+`))`)
				}
			}
			t.Logf("%-6s %-32s total_changes %.2f/app, shadow rows changed %.2f/app (%d rounds)", label, o.name,
				float64(changes)/float64(rounds*o.apps), float64(shadowRows)/float64(rounds*o.apps), rounds)
		}
	}

	// As migrated: app_search_terms and its triggers (migrations/0043).
	t.Logf("%d search terms", drv.Int(t, `SELECT count(*) FROM app_search_terms`))
	measure("terms", nil)
	for _, tr := range []string{"insert", "name", "developer", "subtitle", "delete"} {
		drv.Exec(t, `DROP TRIGGER app_search_`+tr)
	}
	measure("none", nil)

	start = time.Now()
	drv.Exec(t, `CREATE VIRTUAL TABLE apps_fts USING fts5(name, subtitle, developer_name, content='app_registry', content_rowid='track_id', prefix='2 3')`)
	drv.Exec(t, `INSERT INTO apps_fts (apps_fts) VALUES ('rebuild')`)
	drv.Exec(t, `CREATE TRIGGER apps_fts_ai AFTER INSERT ON app_registry BEGIN
  INSERT INTO apps_fts (rowid, name, subtitle, developer_name) VALUES (NEW.track_id, NEW.name, NEW.subtitle, NEW.developer_name); END`)
	drv.Exec(t, `CREATE TRIGGER apps_fts_au AFTER UPDATE OF name, subtitle, developer_name ON app_registry BEGIN
  INSERT INTO apps_fts (apps_fts, rowid, name, subtitle, developer_name) VALUES ('delete', OLD.track_id, OLD.name, OLD.subtitle, OLD.developer_name);
  INSERT INTO apps_fts (rowid, name, subtitle, developer_name) VALUES (NEW.track_id, NEW.name, NEW.subtitle, NEW.developer_name); END`)
	t.Logf("FTS5 index built in %s: %d data rows, %d idx rows, %d docsize rows", time.Since(start).Round(time.Second),
		drv.Int(t, `SELECT count(*) FROM apps_fts_data`), drv.Int(t, `SELECT count(*) FROM apps_fts_idx`), drv.Int(t, `SELECT count(*) FROM apps_fts_docsize`))
	measure("fts", []string{"apps_fts_data", "apps_fts_idx"})
}
