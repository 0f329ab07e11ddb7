//go:build !js

package d1test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSchemaFileMatchesMigrations(t *testing.T) {
	t.Parallel()
	want, err := Schema()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := migrationsDir()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(filepath.Dir(dir), SchemaFile))
	if err != nil {
		t.Fatalf("%v: run `make schema`", err)
	}
	if string(got) != want {
		gl, wl := strings.Split(string(got), "\n"), strings.Split(want, "\n")
		for i := 0; i < len(gl) || i < len(wl); i++ {
			var g, w string
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				t.Fatalf("%s differs from the replayed migrations at line %d:\n file:       %q\n migrations: %q\nrun `make schema`", SchemaFile, i+1, g, w)
			}
		}
	}
}

func TestSchemaFileIsNotAMigration(t *testing.T) {
	t.Parallel()
	// wrangler.jsonc's migrations_pattern and Open's glob both take only
	// numbered files, so the schema file is never applied.
	if matched, _ := filepath.Match(migrationGlob, filepath.Base(SchemaFile)); matched {
		t.Fatalf("%s matches the migration glob %q", SchemaFile, migrationGlob)
	}
}
