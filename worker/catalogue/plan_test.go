//go:build !js

package catalogue

import (
	"regexp"
	"strings"
	"testing"

	"storecrawl/worker/d1/d1test"
)

var fullScan = regexp.MustCompile(`^SCAN \w+( AS \w+)?$`)

// TestHotQueriesReadTheRowsTheyReturn: no full scans, and the picks use
// the indexes the migration made for them.
func TestHotQueriesReadTheRowsTheyReturn(t *testing.T) {
	_, drv := d1test.New(t)
	plans := map[string]string{}
	for _, q := range HotQueries() {
		var steps []string
		for _, r := range drv.Rows(t, "EXPLAIN QUERY PLAN "+q.SQL, q.Args...) {
			d := r["detail"].(string)
			steps = append(steps, d)
			if fullScan.MatchString(d) && !strings.Contains(d, "json_each") {
				t.Errorf("%s scans a table: %q", q.Name, d)
			}
		}
		plans[q.Name] = strings.Join(steps, " | ")
	}
	for name, want := range map[string]string{
		"catalogue sweep":          "idx_app_registry_enriched",
		"catalogue sweep untiered": "idx_app_registry_untiered",
		"app history":              "SEARCH keyword_rank_history USING PRIMARY KEY (track_id=? AND day>?)",
	} {
		if !strings.Contains(plans[name], want) {
			t.Errorf("%s: plan %q, want %q", name, plans[name], want)
		}
	}
	t.Log(plans["catalogue sweep"])
}
