//go:build integration

package e2e

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	sc "storecrawl/worker"
)

// fullScan matches a plan step that reads a whole table (no index).
var fullScan = regexp.MustCompile(`^SCAN \w+( AS \w+)?$`)

// TestHotQueriesUseIndexes checks EXPLAIN QUERY PLAN of every cron and
// queue path read against the migrated local D1: no full-table scans.
func TestHotQueriesUseIndexes(t *testing.T) {
	dir := outputDir(t)
	persist := filepath.Join(dir, "state")
	prepareDB(t, persist, dir, 0)
	for _, q := range sc.HotQueries() {
		sql := q.SQL
		for _, a := range q.Args {
			lit := fmt.Sprint(a)
			if s, ok := a.(string); ok {
				lit = "'" + strings.ReplaceAll(s, "'", "''") + "'"
			}
			sql = strings.Replace(sql, "?", lit, 1)
		}
		out := wrangler(t, persist, "d1", "execute", "DB", "--local", "--json", "--command", "EXPLAIN QUERY PLAN "+strings.Join(strings.Fields(sql), " "))
		start := strings.Index(out, "[")
		var res []struct {
			Results []struct {
				Detail string `json:"detail"`
			} `json:"results"`
		}
		if start < 0 || json.Unmarshal([]byte(out[start:]), &res) != nil || len(res) == 0 {
			t.Fatalf("%s: unreadable plan output:\n%s", q.Name, out)
		}
		var steps []string
		for _, r := range res[0].Results {
			steps = append(steps, r.Detail)
			if fullScan.MatchString(r.Detail) {
				t.Errorf("%s scans a table: %q", q.Name, r.Detail)
			}
		}
		t.Logf("%s: %s", q.Name, strings.Join(steps, " | "))
	}
}
