//go:build !js

package worker

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"storecrawl/worker/d1/d1test"
)

// writesIn finds the tables a trigger's body writes.
var writesIn = regexp.MustCompile(`(?i)\b(?:INSERT(?:\s+OR\s+\w+)?\s+INTO|REPLACE\s+INTO|UPDATE(?:\s+OR\s+\w+)?|DELETE\s+FROM)\s+"?(\w+)`)

// TestModulesDeclareTheSchema: every table and trigger the migrations make
// is declared by exactly one module, nothing declared is missing from the
// schema, and each trigger's declared table and writes are what its SQL
// says.
func TestModulesDeclareTheSchema(t *testing.T) {
	t.Parallel()
	_, drv := d1test.New(t)
	rows := drv.Rows(t, `SELECT type, name, tbl_name, sql FROM sqlite_master
		WHERE type IN ('table', 'trigger') AND name NOT LIKE 'sqlite_%'`)
	tables, triggers := map[string]bool{}, map[string]map[string]string{}
	for _, r := range rows {
		name := r["name"].(string)
		if r["type"] == "table" {
			tables[name] = true
		} else {
			triggers[name] = map[string]string{"on": r["tbl_name"].(string), "sql": r["sql"].(string)}
		}
	}
	declared := map[string]string{}
	for _, m := range Modules {
		for _, tb := range m.Tables {
			if prev, ok := declared["table "+tb.Name]; ok {
				t.Errorf("table %s: declared by %s and %s", tb.Name, prev, m.Name)
			}
			declared["table "+tb.Name] = m.Name
			if !tables[tb.Name] {
				t.Errorf("%s declares table %s, which no migration makes", m.Name, tb.Name)
			}
			if tb.Writer != "" {
				if _, err := os.Stat("../" + tb.Writer); err != nil {
					t.Errorf("%s: table %s's writer: %v", m.Name, tb.Name, err)
				}
			}
			if tb.Doc == "" {
				t.Errorf("%s: table %s has no doc", m.Name, tb.Name)
			}
		}
		for _, tr := range m.Triggers {
			if prev, ok := declared["trigger "+tr.Name]; ok {
				t.Errorf("trigger %s: declared by %s and %s", tr.Name, prev, m.Name)
			}
			declared["trigger "+tr.Name] = m.Name
			got, ok := triggers[tr.Name]
			if !ok {
				t.Errorf("%s declares trigger %s, which no migration makes", m.Name, tr.Name)
				continue
			}
			if got["on"] != tr.On {
				t.Errorf("trigger %s: declared on %s, fires on %s", tr.Name, tr.On, got["on"])
			}
			_, body, _ := strings.Cut(got["sql"], "BEGIN")
			var writes []string
			for _, w := range writesIn.FindAllStringSubmatch(body, -1) {
				// An upsert's DO UPDATE SET writes the table it inserts into.
				if !strings.EqualFold(w[1], "SET") && !slices.Contains(writes, w[1]) {
					writes = append(writes, w[1])
				}
			}
			slices.Sort(writes)
			want := slices.Sorted(slices.Values(tr.Writes))
			if !slices.Equal(writes, want) {
				t.Errorf("trigger %s: declared to write %v, its SQL writes %v", tr.Name, want, writes)
			}
			if tr.Doc == "" {
				t.Errorf("%s: trigger %s has no doc", m.Name, tr.Name)
			}
		}
	}
	for name := range tables {
		if _, ok := declared["table "+name]; !ok {
			t.Errorf("table %s: no module declares it (add it to its owner's Module)", name)
		}
	}
	for name := range triggers {
		if _, ok := declared["trigger "+name]; !ok {
			t.Errorf("trigger %s: no module declares it (add it to its owner's Module)", name)
		}
	}
}
