//go:build unix

package main

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"time"

	"storecrawl/worker/catalogue"
	"storecrawl/worker/d1"
)

// TableSize is one table's pages in use (its b-tree, its indexes' and
// overflow pages, from SQLite's dbstat) in bytes, and its rows; Tree and
// Payload are its own b-tree's pages and the payload they hold (what a
// byte more in a row costs: TextSizing).
type TableSize struct{ Bytes, Rows, Tree, Payload float64 }

// Sizes is every table's TableSize.
type Sizes map[string]TableSize

// minus is s less o, table by table.
func (s Sizes) minus(o Sizes) Sizes {
	out := Sizes{}
	for k, v := range s {
		out[k] = TableSize{v.Bytes - o[k].Bytes, v.Rows - o[k].Rows, v.Tree - o[k].Tree, v.Payload - o[k].Payload}
	}
	return out
}

// tableSizesSQL: each b-tree's pages are charged to its table (an index's
// to the table it indexes); a table's rows are its own b-tree's cells: a
// rowid table's leaf cells (its interior cells only divide), a WITHOUT
// ROWID table's every cell (an index b-tree's interior cells are rows too).
const tableSizesSQL = `SELECT s.tbl_name, sum(d.pgsize),
  sum(CASE WHEN d.name = s.tbl_name AND (d.pagetype = 'leaf'
    OR (d.pagetype = 'internal' AND s.sql LIKE '%WITHOUT ROWID%')) THEN d.ncell ELSE 0 END),
  sum(CASE WHEN d.name = s.tbl_name THEN d.pgsize ELSE 0 END), sum(CASE WHEN d.name = s.tbl_name THEN d.payload ELSE 0 END)
FROM dbstat d JOIN sqlite_schema s ON s.name = d.name GROUP BY s.tbl_name`

type querier interface {
	QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error)
}

func readSizes(ctx context.Context, q querier) (Sizes, error) {
	rows, err := q.QueryContext(ctx, tableSizesSQL)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := Sizes{}
	for rows.Next() {
		var name string
		var b, n, tree, payload float64
		if err := rows.Scan(&name, &b, &n, &tree, &payload); err != nil {
			return nil, err
		}
		out[name] = TableSize{b, n, tree, payload}
	}
	return out, rows.Err()
}

// tableSizes reads the local D1's tables as committed (a reader sees the
// write-ahead log's commits; the Worker may be running).
func tableSizes(dbPath string) Sizes {
	db, err := sql.Open("sqlite", "file:"+dbPath+"?mode=ro")
	if err != nil {
		fail("sizes of %s: %v", dbPath, err)
	}
	defer db.Close()
	s, err := readSizes(context.Background(), db)
	if err != nil {
		fail("sizes of %s: %v", dbPath, err)
	}
	return s
}

// historySampleShare of the enriched apps change once in the history
// sample (at least historySampleMin): enough rows that the tables' pages
// fill as they do under random inserts.
const (
	historySampleShare = 0.10
	historySampleMin   = 1000
)

// historyRowBytes measures what a row of each history table takes, on
// the built catalogue with no Worker running, then rolls it all back: a
// sample of enriched apps, in random order, each changes its ratings, its
// version and its price once, through the schema's own triggers (each
// series' first value and the new one: two rows a table); a sample of
// rankings each writes a keyword rank change; as many chart sightings.
// Returns each table's growth and rows, and the simulated texts the rows
// hold (simText).
func historyRowBytes(dbPath string, sample int, now time.Time) (Sizes, SimText, error) {
	ctx := context.Background()
	db, err := sql.Open("sqlite", dbPath)
	if err != nil {
		return nil, SimText{}, err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return nil, SimText{}, err
	}
	defer tx.Rollback()
	before, err := readSizes(ctx, tx)
	if err != nil {
		return nil, SimText{}, err
	}
	var sim SimText
	if err := tx.QueryRowContext(ctx, simRegistryTextSQL).Scan(&sim.Text.Apps, &sim.Text.Description, &sim.Text.ReleaseNotes, &sim.Text.Languages); err != nil {
		return nil, SimText{}, fmt.Errorf("simulated texts: %w", err)
	}
	var v0 [3]float64
	if err := tx.QueryRowContext(ctx, versionNotesSQL).Scan(&v0[0], &v0[1], &v0[2]); err != nil {
		return nil, SimText{}, fmt.Errorf("version notes: %w", err)
	}
	rows, err := tx.QueryContext(ctx, `SELECT track_id FROM app_registry WHERE enrichment_source = 'itunes+store'`)
	if err != nil {
		return nil, SimText{}, err
	}
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, SimText{}, err
		}
		ids = append(ids, id)
	}
	rows.Close()
	r := rand.New(rand.NewPCG(17, 19))
	r.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	ids = ids[:min(len(ids), sample)]
	upd, err := tx.PrepareContext(ctx, `UPDATE app_registry SET rating_count = rating_count + 1, version = version || '.1',
  price = price + 1, observed_at = ?2 WHERE track_id = ?1`)
	if err != nil {
		return nil, SimText{}, err
	}
	at := d1.Time(now.Add(time.Second))
	for _, id := range ids {
		if _, err := upd.ExecContext(ctx, id, at); err != nil {
			return nil, SimText{}, fmt.Errorf("sample change %d: %w", id, err)
		}
	}
	day := catalogue.Day(now)
	for _, q := range []string{
		fmt.Sprintf(`INSERT OR IGNORE INTO keyword_rank_history (track_id, keyword_id, day, rank)
  SELECT r.track_id, k.id, %d, r.rank FROM crawl_rankings r JOIN crawl_keywords k ON k.keyword = r.keyword
  ORDER BY random() LIMIT %d`, day, 2*len(ids)),
		fmt.Sprintf(`INSERT OR IGNORE INTO chart_position_history (country, collection, genre_id, track_id, seen_at, rank)
  SELECT 'us', 'topfreeapplications', COALESCE(genre_id, 6014), track_id, '%s', 1 + abs(random()) %% 200
  FROM app_registry WHERE enrichment_source = 'itunes+store' ORDER BY random() LIMIT %d`, at, 2*len(ids)),
	} {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return nil, SimText{}, fmt.Errorf("%.60s: %w", q, err)
		}
	}
	after, err := readSizes(ctx, tx)
	if err != nil {
		return nil, SimText{}, err
	}
	var v1 [3]float64
	if err := tx.QueryRowContext(ctx, versionNotesSQL).Scan(&v1[0], &v1[1], &v1[2]); err != nil {
		return nil, SimText{}, fmt.Errorf("version notes: %w", err)
	}
	sim.VersionNotesShare = PerRow(v1[1]-v0[1], v1[0]-v0[0])
	sim.Text.VersionNotes = PerRow(v1[2]-v0[2], v1[1]-v0[1])
	return after.minus(before), sim, nil
}

// SimText is the simulated catalogue's texts: the enriched apps' means
// (an app without a text counts 0) and the history sample's version rows'
// notes (VersionNotes over the rows that keep notes, VersionNotesShare of
// the rows: the product's trigger decides which do).
type SimText struct {
	Text              TextSizes
	VersionNotesShare float64
}

// simRegistryTextSQL: the enriched apps' stored bytes of each text.
const simRegistryTextSQL = `SELECT count(*), COALESCE(avg(COALESCE(length(CAST(description AS BLOB)), 0)), 0),
  COALESCE(avg(COALESCE(length(CAST(release_notes AS BLOB)), 0)), 0), COALESCE(avg(COALESCE(length(CAST(languages AS BLOB)), 0)), 0)
FROM app_registry WHERE enrichment_source = 'itunes+store'`

// versionNotesSQL: the version rows, those with notes, their notes' bytes.
const versionNotesSQL = `SELECT count(*), count(release_notes), COALESCE(sum(length(CAST(release_notes AS BLOB))), 0) FROM app_version_history`
