package archtest

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"storecrawl/worker"
)

// TableOwners name the one package whose source may write each table
// (INSERT, UPDATE, DELETE, REPLACE), as the modules declare it
// (module.Table.Writer; "" for a table only triggers write): every other
// package puts the owner's statements in its own batches. One owner keeps
// a table's writes in one place, where each is checked to write only on
// change (D1 bills every row and index entry written).
var TableOwners = func() map[string]string {
	owners := map[string]string{}
	for _, m := range worker.Modules {
		for _, t := range m.Tables {
			owners[t.Name] = t.Writer
		}
	}
	return owners
}()

// fixtureWriters seed local databases for tools (the scale bench, the
// seed command's SQL), not the Worker's: their writes are fixtures.
var fixtureWriters = []string{"cmd/bench/", "cmd/seed/"}

// skipDirs hold no module source.
var skipDirs = []string{".git", "node_modules", "build"}

// writeOf matches a statement that writes table.
func writeOf(table string) *regexp.Regexp {
	return regexp.MustCompile(`(?i)\b(?:INSERT(?:\s+OR\s+\w+)?\s+INTO|REPLACE\s+INTO|UPDATE(?:\s+OR\s+\w+)?|DELETE\s+FROM)\s+` +
		regexp.QuoteMeta(table) + `\b`)
}

// TableWriters lists the non-test Go files under root (slash paths) that
// write a table outside its owner, as "path: table".
func TableWriters(root string, owners map[string]string) ([]string, error) {
	res := map[string]*regexp.Regexp{}
	for table := range owners {
		res[table] = writeOf(table)
	}
	var out []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if slices.Contains(skipDirs, d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		for _, f := range fixtureWriters {
			if strings.HasPrefix(rel, f) {
				return nil
			}
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for table, re := range res {
			if re.Match(src) && filepath.ToSlash(filepath.Dir(rel)) != owners[table] {
				out = append(out, rel+": "+table)
			}
		}
		return nil
	})
	slices.Sort(out)
	return out, err
}

// TestTablesHaveOneWriter: no package but a table's owner writes it.
func TestTablesHaveOneWriter(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	got, err := TableWriters(root, TableOwners)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range got {
		owner := TableOwners[w[strings.LastIndex(w, " ")+1:]]
		if owner == "" {
			owner = "its triggers"
		}
		t.Errorf("%s: only %s writes this table (put the statement there and call it)", w, owner)
	}
	// An owner renamed or removed must be renamed here too, or the rule
	// would hold for a package that is not there.
	if len(TableOwners) < 25 {
		t.Errorf("%d tables declared: the modules declare every table (worker.Modules)", len(TableOwners))
	}
	for table, owner := range TableOwners {
		if owner == "" {
			continue
		}
		if _, err := os.Stat(filepath.Join(root, owner)); err != nil {
			t.Errorf("%s's owner %s: %v", table, owner, err)
		}
	}
}

// TestWriteOfMatchesEachStatement: the pattern itself.
func TestWriteOfMatchesEachStatement(t *testing.T) {
	re := writeOf("app_registry")
	for _, s := range []string{
		"INSERT INTO app_registry (track_id)",
		"insert or ignore into app_registry",
		"UPDATE app_registry SET x = 1",
		"UPDATE OR IGNORE\n  app_registry SET x = 1",
		"DELETE FROM app_registry WHERE",
		"REPLACE INTO app_registry",
		"`UPDATE app_registry SET %s`",
	} {
		if !re.MatchString(s) {
			t.Errorf("%q: not matched", s)
		}
	}
	for _, s := range []string{
		"SELECT track_id FROM app_registry",
		"ON CONFLICT (track_id) DO UPDATE SET name = excluded.name",
		"UPDATE app_registry_other SET x = 1",
		"INSERT INTO crawl_keywords SELECT id FROM app_registry",
		"idx_app_registry_enriched",
	} {
		if re.MatchString(s) {
			t.Errorf("%q: matched", s)
		}
	}
}
