package worker

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"storecrawl/durable/pacing"
	"storecrawl/worker/enrichment"
	"storecrawl/worker/module"
)

// docRow is one row of docs/operations.md's settings table.
type docRow struct{ module, def, bounds string }

// settingsTable parses docs/operations.md's settings table (the one under
// "## Configuration") by var name.
func settingsTable(t *testing.T) map[string]docRow {
	t.Helper()
	raw, err := os.ReadFile("../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	start := strings.Index(text, "## Configuration")
	if start < 0 {
		t.Fatal("docs/operations.md has no Configuration section")
	}
	text = text[start+1:]
	if end := strings.Index(text, "\n## "); end >= 0 {
		text = text[:end]
	}
	name := regexp.MustCompile("^`([A-Z0-9_]+)`( \\(secret\\))?$")
	rows := map[string]docRow{}
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		// Cells split on "|" but not on an escaped "\|".
		cells := strings.Split(strings.ReplaceAll(line, `\|`, "\x00"), "|")
		if len(cells) != 7 {
			t.Fatalf("want | var | module | default | bounds | meaning |, got %q", line)
		}
		for i := range cells {
			cells[i] = strings.TrimSpace(strings.ReplaceAll(cells[i], "\x00", "|"))
		}
		m := name.FindStringSubmatch(cells[1])
		if m == nil {
			t.Fatalf("var cell %q: want `NAME` or `NAME` (secret)", cells[1])
		}
		if _, dup := rows[m[1]]; dup {
			t.Fatalf("%s is listed twice", m[1])
		}
		rows[m[1]] = docRow{module: cells[2], def: cells[3], bounds: cells[4]}
	}
	return rows
}

// TestDocsListEverySetting: docs/operations.md's settings table and the
// declared settings agree both ways, on names, modules, defaults and
// bounds, so the docs cannot drift from the loader.
func TestDocsListEverySetting(t *testing.T) {
	rows := settingsTable(t)
	for _, s := range Settings {
		r, ok := rows[s.Name]
		if !ok {
			t.Errorf("%s is declared but not in docs/operations.md's settings table", s.Name)
			continue
		}
		delete(rows, s.Name)
		def := "unset"
		if s.Default != "" {
			def = "`" + s.Default + "`"
		}
		bounds := s.Limits()
		if bounds == "" {
			bounds = "—"
		}
		if want := (docRow{module: s.Module, def: def, bounds: bounds}); r != want {
			t.Errorf("%s: docs say %+v, declared %+v", s.Name, r, want)
		}
	}
	for name := range rows {
		t.Errorf("%s is in docs/operations.md's settings table but no setting declares it", name)
	}
}

// TestSettingsAreWellDeclared: each setting names its module and says
// what it sets; its default is one it accepts; numbers have bounds.
func TestSettingsAreWellDeclared(t *testing.T) {
	module.Load(Settings, func(string) string { return "" }) // panics on a name declared twice
	for _, s := range Settings {
		if s.Module == "" || s.Doc == "" {
			t.Errorf("%s: module %q, doc %q", s.Name, s.Module, s.Doc)
		}
		if s.Default != "" {
			if err := s.Accept(s.Default); err != nil {
				t.Errorf("%s refuses its default %q: %v", s.Name, s.Default, err)
			}
		}
		if (s.Kind == module.Int || s.Kind == module.Number) && !s.Bounds.Set {
			t.Errorf("%s: a number without bounds", s.Name)
		}
	}
}

// TestDeployedVarsAreTheDefaults: every var wrangler.jsonc sets is a
// declared setting, set to its default (the docs' default is what deploys).
func TestDeployedVarsAreTheDefaults(t *testing.T) {
	vars := wranglerVars(t)
	for name, value := range vars {
		i := slices.IndexFunc(Settings, func(s module.Setting) bool { return s.Name == name })
		if i < 0 {
			t.Errorf("wrangler.jsonc sets %s, which no setting declares", name)
			continue
		}
		if value != Settings[i].Default {
			t.Errorf("wrangler.jsonc sets %s=%q, its default is %q", name, value, Settings[i].Default)
		}
	}
}

// TestPacingChoicesAreTheRegistry: ENRICHMENT_PACING takes exactly the
// product's pacing algorithms.
func TestPacingChoicesAreTheRegistry(t *testing.T) {
	got := slices.Sorted(slices.Values(enrichment.PacingChoices))
	if !slices.Equal(got, pacing.Names()) {
		t.Fatalf("choices %v, registry %v", got, pacing.Names())
	}
}

// TestShownSettingsHideSecrets: the operator's view has every setting,
// and a secret only as set or unset.
func TestShownSettingsHideSecrets(t *testing.T) {
	c, _ := loadSettings(env(map[string]string{"ADMIN_TOKEN": "hunter2", "LOOKUP_BATCH": "150", "LOOKUP_FRESH_H": "x"}))
	shown := c.Values.Shown()
	if len(shown) != len(Settings) {
		t.Fatalf("shown %d of %d settings", len(shown), len(Settings))
	}
	if shown["ADMIN_TOKEN"] != "set" || shown["READ_TOKEN"] != "unset" || shown["LOOKUP_BATCH"] != "150" || shown["LOOKUP_FRESH_H"] != "24" {
		t.Fatalf("shown: %v", shown)
	}
	for _, v := range shown {
		if v == "hunter2" {
			t.Fatal("a secret's value is shown")
		}
	}
}

// wranglerVars are the vars wrangler.jsonc deploys.
func wranglerVars(t *testing.T) map[string]string {
	t.Helper()
	raw, err := os.ReadFile("../wrangler.jsonc")
	if err != nil {
		t.Fatal(err)
	}
	// JSONC: drop // comments and trailing commas (as config.TestBindingsAndCronsMatchWrangler does).
	text := regexp.MustCompile(`(?m)^\s*//.*$|\s//\s.*$`).ReplaceAllString(string(raw), "")
	text = regexp.MustCompile(`,(\s*[}\]])`).ReplaceAllString(text, "$1")
	var w struct{ Vars map[string]string }
	if err := json.Unmarshal([]byte(text), &w); err != nil || len(w.Vars) == 0 {
		t.Fatalf("wrangler.jsonc vars: %v", err)
	}
	return w.Vars
}
