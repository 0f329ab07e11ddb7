//go:build !js

package d1test

import (
	"context"
	"fmt"
	"strings"
)

// SchemaFile is the schema after every migration, relative to the module
// root: what a reader opens instead of replaying the migrations. `make
// schema` writes it; TestSchemaFileMatchesMigrations fails when it drifts.
const SchemaFile = "migrations/schema.sql"

// Schema replays every migration on a fresh database and renders what it
// made: each table (by name) followed by its indexes and then its triggers
// (each by name), then views, as SQLite stores their statements.
func Schema() (string, error) {
	db, _, closeDB, err := Open()
	if err != nil {
		return "", err
	}
	defer closeDB()
	var objs []struct {
		Type  string `json:"type"`
		Name  string `json:"name"`
		Table string `json:"tbl_name"`
		SQL   string `json:"sql"`
	}
	// sqlite_master holds the statements; internal objects (sqlite_*,
	// the migration bookkeeping wrangler adds) and implicit indexes (NULL
	// sql) are not part of the schema a reader needs.
	err = db.Query(context.Background(), &objs, `
		SELECT type, name, tbl_name, sql FROM sqlite_master
		WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%'
		ORDER BY tbl_name, CASE type WHEN 'table' THEN 0 WHEN 'index' THEN 1 WHEN 'trigger' THEN 2 ELSE 3 END, name`)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("-- The D1 schema after every migration in migrations/[0-9]*.sql, for reading.\n")
	b.WriteString("-- Written by `make schema`; a test fails when it differs from the migrations.\n")
	b.WriteString("-- Not applied by anything: change the schema with a new numbered migration.\n")
	tables, indexes, triggers := 0, 0, 0
	for _, o := range objs {
		switch o.Type {
		case "table":
			tables++
			fmt.Fprintf(&b, "\n-- %s\n", o.Name)
		case "index":
			indexes++
		case "trigger":
			triggers++
		}
		b.WriteString(strings.TrimSpace(o.SQL))
		b.WriteString(";\n")
	}
	fmt.Fprintf(&b, "\n-- %d tables, %d indexes, %d triggers.\n", tables, indexes, triggers)
	return b.String(), nil
}
