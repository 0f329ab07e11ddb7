//go:build integration

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	sc "storecrawl/worker"
)

// numbered matches SQLite's numbered parameters (?1, ?2, ...).
var numbered = regexp.MustCompile(`\?\d+`)

// fullScan matches a plan step that reads a whole table (no index); its
// group is the table or alias.
var fullScan = regexp.MustCompile(`^SCAN (\w+)( AS \w+)?$`)

// subquery matches the step that names a subquery's rows (a co-routine or a
// materialized view), which a later "SCAN name" reads.
var subquery = regexp.MustCompile(`^(?:CO-ROUTINE|MATERIALIZE) (\w+)$`)

// tempSort is a plan step sorting rows in a temporary B-tree for an ORDER BY.
var tempSort = regexp.MustCompile(`^USE TEMP B-TREE FOR .*ORDER BY`)

// TestHotQueriesUseIndexes checks EXPLAIN QUERY PLAN of every cron and
// queue path read against the migrated local D1: no full-table scans, and
// no list page (Page) sorted in a temporary B-tree.
func TestHotQueriesUseIndexes(t *testing.T) {
	t.Parallel()
	dir := outputDir(t)
	persist := filepath.Join(dir, "state")
	prepareDB(t, persist, dir, 0)
	queries := sc.HotQueries()
	var script strings.Builder
	for _, q := range queries {
		literal := func(a any) string {
			if s, ok := a.(string); ok {
				return "'" + strings.ReplaceAll(s, "'", "''") + "'"
			}
			if a == nil {
				return "NULL"
			}
			return fmt.Sprint(a)
		}
		sql := q.SQL
		if numbered.MatchString(sql) {
			// ?N names the N-th argument, wherever and however often it appears.
			sql = numbered.ReplaceAllStringFunc(sql, func(m string) string {
				n, _ := strconv.Atoi(m[1:])
				if n < 1 || n > len(q.Args) {
					t.Fatalf("%s: %s with %d arguments", q.Name, m, len(q.Args))
				}
				return literal(q.Args[n-1])
			})
		} else {
			for _, a := range q.Args {
				sql = strings.Replace(sql, "?", literal(a), 1)
			}
		}
		script.WriteString("EXPLAIN QUERY PLAN " + strings.Join(strings.Fields(sql), " ") + ";\n")
	}
	// One wrangler run plans every query (a run per query cost ~1.5 s of
	// CPU each): D1's own SQLite answers a result per statement, in order.
	f := filepath.Join(dir, "plans.sql")
	if err := os.WriteFile(f, []byte(script.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out := wrangler(t, persist, "d1", "execute", "DB", "--local", "--json", "--file", f)
	start := strings.Index(out, "[")
	var res []struct {
		Results []struct {
			Detail string `json:"detail"`
		} `json:"results"`
	}
	if start < 0 || json.Unmarshal([]byte(out[start:]), &res) != nil || len(res) != len(queries) {
		t.Fatalf("want %d plans, unreadable plan output:\n%s", len(queries), out)
	}
	for i, q := range queries {
		var steps []string
		// A subquery's rows (CO-ROUTINE x / MATERIALIZE x) are read by
		// "SCAN x": that walks the subquery's own bounded output, not a table.
		subqueries := map[string]bool{}
		for _, r := range res[i].Results {
			if m := subquery.FindStringSubmatch(r.Detail); m != nil {
				subqueries[m[1]] = true
			}
		}
		for _, r := range res[i].Results {
			steps = append(steps, r.Detail)
			if m := fullScan.FindStringSubmatch(r.Detail); m != nil && !subqueries[m[1]] {
				t.Errorf("%s scans a table: %q", q.Name, r.Detail)
			}
			if q.Page && tempSort.MatchString(r.Detail) {
				t.Errorf("%s, a list page, is sorted in a temporary B-tree: %q", q.Name, r.Detail)
			}
		}
		t.Logf("%s: %s", q.Name, strings.Join(steps, " | "))
	}
}
