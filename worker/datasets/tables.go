// Package datasets is the daily dataset snapshot: the catalogue's public
// tables (apps, keywords and their rankings, market segments and their
// daily snapshots, reviews) as gzipped NDJSON parts in R2 with a manifest,
// for reading straight into DuckDB or pandas (docs/explorer.md#datasets).
// A snapshot is written over several bounded runs, each reading its tables
// in key order with keyset cursors and keeping its progress in R2.
package datasets

import (
	"fmt"
	"strings"

	"storecrawl/worker/d1"
	"storecrawl/worker/module"
)

// Module is the datasets' declaration: it owns no D1 table (its progress
// and files are R2 objects) and only reads the tables below.
var Module = module.Module{
	Name: "datasets",
	Doc:  "the daily dataset snapshot: public tables as NDJSON.gz parts plus a manifest in R2",
}

// Column is one exported column: its name in the NDJSON and the manifest,
// its SQL expression (the column itself when empty) and its type as
// DuckDB names it.
type Column struct {
	Name string `json:"name"`
	Type string `json:"type"`
	SQL  string `json:"-"`
}

// The manifest's column types (DuckDB's names).
const (
	TypeInt    = "BIGINT"
	TypeFloat  = "DOUBLE"
	TypeString = "VARCHAR"
	TypeJSON   = "JSON"
)

// Table is one exported table: read from Source in Key order (one or two
// columns, Source's primary key or an index on them), Filter kept.
type Table struct {
	Name    string
	Source  string
	Key     []string
	Filter  string
	Doc     string
	Columns []Column
}

func col(name, typ string) Column { return Column{Name: name, Type: typ} }

// jsonCol is a column holding JSON text, exported as JSON (null when the
// text is not valid JSON).
func jsonCol(name string) Column {
	return Column{Name: name, Type: TypeJSON, SQL: fmt.Sprintf("CASE WHEN json_valid(%[1]s) THEN json(%[1]s) END", name)}
}

// Tables are the snapshot's tables, in the order a snapshot writes them.
// No secret, operator or crawl-internal column is exported (alert rules,
// tokens, URLs of webhooks, R2 keys, queue state, reviewers' hashes).
var Tables = []Table{
	{Name: "apps", Source: "app_registry", Key: []string{"track_id"}, Filter: "enrichment_source = 'itunes+store'",
		Doc: "every enriched app's current record",
		Columns: []Column{col("track_id", TypeInt), col("name", TypeString), col("bundle_id", TypeString), col("developer_id", TypeInt),
			col("developer_name", TypeString), col("genre", TypeString), col("genre_id", TypeInt), col("price", TypeFloat), col("currency", TypeString),
			col("average_rating", TypeFloat), col("rating_count", TypeInt), jsonCol("rating_histogram"), col("version", TypeString),
			col("release_date", TypeString), col("current_version_release_date", TypeString), col("content_rating", TypeString),
			col("file_size_bytes", TypeInt), jsonCol("languages"), col("subtitle", TypeString), col("iap_count", TypeInt),
			jsonCol("similar_app_ids"), col("rating_velocity_7d", TypeFloat), col("rating_velocity_30d", TypeFloat),
			col("competitiveness_score", TypeFloat), col("discovered_at", TypeString), col("enriched_at", TypeString), col("last_seen_at", TypeString)}},
	{Name: "keywords", Source: "crawl_keywords", Key: []string{"id"},
		Doc: "every keyword the crawl knows: its last search and popularity",
		Columns: []Column{col("id", TypeInt), col("keyword", TypeString), col("source", TypeString), col("created_at", TypeString),
			col("searched_at", TypeString), col("result_count", TypeInt), col("popularity", TypeInt), col("popularity_at", TypeString)}},
	{Name: "keyword_ranks", Source: "crawl_rankings", Key: []string{"keyword", "track_id"},
		Doc:     "each searched keyword's ranked apps at its last search",
		Columns: []Column{col("keyword", TypeString), col("track_id", TypeInt), col("rank", TypeInt), col("seen_at", TypeString)}},
	{Name: "segments", Source: "segments", Key: []string{"id"},
		Doc: "market segments (live and retired) with their scores, apps and relations",
		Columns: []Column{col("id", TypeInt), col("name", TypeString), col("keyword_count", TypeInt), col("app_count", TypeInt),
			col("total_ratings", TypeInt), col("avg_rating", TypeFloat), col("demand", TypeFloat), col("hhi", TypeFloat), col("fragmentation", TypeFloat),
			col("quality_gap", TypeFloat), col("competitiveness", TypeFloat), col("opportunity", TypeFloat), col("leaders_velocity_7d", TypeFloat),
			col("leaders_velocity_30d", TypeFloat), jsonCol("apps"), jsonCol("relations"), col("trend", TypeString), col("trend_score", TypeFloat),
			jsonCol("trend_figures"), col("created_at", TypeString), col("updated_at", TypeString), col("retired_at", TypeString)}},
	{Name: "segment_keywords", Source: "segment_keywords", Key: []string{"keyword"}, Filter: "segment_id IS NOT NULL",
		Doc:     "each partitioned keyword's segment",
		Columns: []Column{col("keyword", TypeString), col("segment_id", TypeInt)}},
	{Name: "segment_snapshots", Source: "segment_snapshots", Key: []string{"segment_id", "day"},
		Doc: "each segment's daily figures",
		Columns: []Column{col("segment_id", TypeInt), col("day", TypeString), col("keyword_count", TypeInt), col("total_ratings", TypeInt),
			col("demand", TypeFloat), col("opportunity", TypeFloat), col("leaders_velocity_7d", TypeFloat), jsonCol("apps")}},
	{Name: "reviews", Source: "app_reviews", Key: []string{"id"},
		Doc: "stored customer reviews with their sentiment",
		Columns: []Column{col("id", TypeString), col("app_id", TypeInt), col("country", TypeString), col("rating", TypeInt), col("title", TypeString),
			col("body", TypeString), col("truncated", TypeInt), col("version", TypeString), col("reviewed_at", TypeString), col("sentiment", TypeFloat)}},
}

// pageSQL reads the page of t after the cursor: each row as its NDJSON
// line (j) and its key (c0, c1). One key column: ?1 the last key, ?2 the
// page size; two: ?1, ?2 the last key, ?3 the page size. The first page
// passes the smallest key (firstKey).
func (t Table) pageSQL() string {
	parts := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		expr := c.SQL
		if expr == "" {
			expr = c.Name
		}
		parts[i] = fmt.Sprintf("'%s', %s", c.Name, expr)
	}
	keys := make([]string, len(t.Key))
	for i, k := range t.Key {
		keys[i] = fmt.Sprintf("%s AS c%d", k, i)
	}
	var where string
	if len(t.Key) == 1 {
		where = t.Key[0] + " > ?1"
	} else {
		// A row value: SQLite seeks the primary key to it.
		where = "(" + t.Key[0] + ", " + t.Key[1] + ") > (?1, ?2)"
	}
	if t.Filter != "" {
		where += " AND " + t.Filter
	}
	return fmt.Sprintf("SELECT json_object(%s) AS j, %s FROM %s WHERE %s ORDER BY %s LIMIT ?%d",
		strings.Join(parts, ", "), strings.Join(keys, ", "), t.Source, where, strings.Join(t.Key, ", "), len(t.Key)+1)
}

// firstKey is a key below every row's: integers start at -2^63, text at ”.
func (t Table) firstKey() []any {
	out := make([]any, len(t.Key))
	for i, k := range t.Key {
		out[i] = any(int64(-1 << 63))
		for _, c := range t.Columns {
			if c.Name == k && c.Type == TypeString {
				out[i] = ""
			}
		}
	}
	return out
}

// HotQueries are each table's page read, for the plan test.
func HotQueries() []d1.NamedQuery {
	out := make([]d1.NamedQuery, len(Tables))
	for i, t := range Tables {
		out[i] = d1.NamedQuery{Name: "dataset page of " + t.Name, SQL: t.pageSQL(), Args: append(t.firstKey(), PageRows)}
	}
	return out
}
