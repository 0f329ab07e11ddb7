//go:build !js

// Package d1test is a d1.Driver over an in-memory SQLite database (D1 is
// SQLite) with the project's migrations applied, so feature packages test
// their real SQL natively: their read→compute→write sequences against the
// real schema, its indexes and triggers. For tests, and for cmd/bench (Open).
package d1test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"storecrawl/worker/d1"
)

// Driver runs statements on one SQLite database.
type Driver struct {
	db *sql.DB
	mu sync.Mutex
	// FailNext, when above zero, makes that many next calls fail (a D1 outage).
	FailNext atomic.Int64
	// Calls counts the calls made (reads and batches).
	Calls atomic.Int64
}

var dbSeq atomic.Int64

// New opens a fresh in-memory database with every migration applied and
// returns a DB over it.
func New(t testing.TB) (*d1.DB, *Driver) {
	t.Helper()
	db, drv, closeDB, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeDB)
	return db, drv
}

// Open is New outside a test (cmd/bench): the database lives until close
// is called. The migrations are found from the working directory up.
func Open() (_ *d1.DB, _ *Driver, closeDB func(), err error) {
	name := fmt.Sprintf("file:d1test%d?mode=memory&cache=shared", dbSeq.Add(1))
	db, err := sql.Open("sqlite", name)
	if err != nil {
		return nil, nil, nil, err
	}
	db.SetMaxOpenConns(1) // one connection: the in-memory database lives while it does
	defer func() {
		if err != nil {
			db.Close()
		}
	}()
	if _, err := db.Exec("PRAGMA foreign_keys = ON"); err != nil {
		return nil, nil, nil, err
	}
	if err := limitLikeD1(db); err != nil {
		return nil, nil, nil, err
	}
	dir, err := migrationsDir()
	if err != nil {
		return nil, nil, nil, err
	}
	files, _ := filepath.Glob(filepath.Join(dir, migrationGlob))
	sort.Strings(files)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, nil, nil, err
		}
		if _, err := db.Exec(string(b)); err != nil {
			return nil, nil, nil, fmt.Errorf("migration %s: %w", filepath.Base(f), err)
		}
	}
	drv := &Driver{db: db}
	return &d1.DB{Driver: drv}, drv, func() { db.Close() }, nil
}

// Over is a DB over an open SQLite database (cmd/bench: the scale
// catalogue's file, after its rows are written), so the product's own
// code runs on it natively. The caller keeps db open while it is used.
func Over(db *sql.DB) *d1.DB { return &d1.DB{Driver: &Driver{db: db}} }

// limitLikeD1 sets D1's limits on the database's one connection, so a
// query D1 refuses fails natively too.
func limitLikeD1(db *sql.DB) error {
	c, err := db.Conn(context.Background())
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = sqlite.Limit(c, sqlite3.SQLITE_LIMIT_COMPOUND_SELECT, d1.CompoundSelectMax)
	return err
}

// migrationGlob matches the numbered migrations, as wrangler.jsonc's
// migrations_pattern does: migrations/schema.sql is for reading only.
const migrationGlob = "[0-9]*.sql"

func migrationsDir() (string, error) {
	dir, _ := os.Getwd()
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "migrations"), nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("d1test: no go.mod above %s", dir)
		}
		dir = parent
	}
}

func (d *Driver) fail() error {
	d.Calls.Add(1)
	if d.FailNext.Load() > 0 && d.FailNext.Add(-1) >= 0 {
		return fmt.Errorf("d1test: injected D1 failure")
	}
	return nil
}

// All implements d1.Driver.
func (d *Driver) All(ctx context.Context, q string, args []any) ([]byte, d1.Meta, error) {
	if err := d.fail(); err != nil {
		return nil, d1.Meta{}, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	rows, err := d.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, d1.Meta{}, err
	}
	out, n, err := rowsJSON(rows)
	return out, d1.Meta{RowsRead: n}, err
}

// Batch implements d1.Driver: one transaction, rolled back on any error.
func (d *Driver) Batch(ctx context.Context, stmts []d1.Stmt) ([]d1.Result, error) {
	if err := d.fail(); err != nil {
		return nil, err
	}
	if len(stmts) > d1.MaxBatch {
		return nil, fmt.Errorf("d1test: %d statements in one batch (D1 allows %d)", len(stmts), d1.MaxBatch)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	results := make([]d1.Result, 0, len(stmts))
	for _, s := range stmts {
		rows, err := tx.QueryContext(ctx, s.SQL, s.Args...)
		if err != nil {
			tx.Rollback()
			return nil, fmt.Errorf("%w (in %s)", err, firstLine(s.SQL))
		}
		_, n, err := rowsJSON(rows)
		if err != nil {
			tx.Rollback()
			return nil, err
		}
		results = append(results, d1.Result{Rows: n, Meta: d1.Meta{RowsWritten: 1}})
	}
	return results, tx.Commit()
}

// Exec runs raw SQL outside the DB (test setup).
func (d *Driver) Exec(t testing.TB, q string, args ...any) {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, err := d.db.Exec(q, args...); err != nil {
		t.Fatalf("d1test exec: %v\n%s", err, q)
	}
}

// Rows reads raw rows as maps (test assertions).
func (d *Driver) Rows(t testing.TB, q string, args ...any) []map[string]any {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	rows, err := d.db.Query(q, args...)
	if err != nil {
		t.Fatalf("d1test query: %v\n%s", err, q)
	}
	b, _, err := rowsJSON(rows)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	json.Unmarshal(b, &out)
	return out
}

// Int reads one integer (test assertions): the first column of the first row.
func (d *Driver) Int(t testing.TB, q string, args ...any) int64 {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	var n sql.NullInt64
	if err := d.db.QueryRow(q, args...).Scan(&n); err != nil {
		t.Fatalf("d1test int: %v\n%s", err, q)
	}
	return n.Int64
}

// TotalChanges is SQLite's total_changes() on the database's one
// connection: the rows inserted, updated or deleted so far, triggers'
// included (index entries are not counted; D1 counts them as well). A
// no-op UPDATE (the same values) counts: tests of write-only-what-changed
// take the difference around the writes they pin.
func (d *Driver) TotalChanges(t testing.TB) int64 {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	var n int64
	if err := d.db.QueryRow(`SELECT total_changes()`).Scan(&n); err != nil {
		t.Fatalf("d1test total_changes: %v", err)
	}
	return n
}

// rowsJSON renders rows as D1 does: a JSON array of objects, integers and
// reals as numbers, text as strings, NULL as null.
func rowsJSON(rows *sql.Rows) ([]byte, int64, error) {
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, 0, err
	}
	var out []map[string]any
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, 0, err
		}
		m := make(map[string]any, len(cols))
		for i, c := range cols {
			if b, ok := vals[i].([]byte); ok {
				vals[i] = string(b)
			}
			m[c] = vals[i]
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, err
	}
	if out == nil {
		return []byte("[]"), 0, nil
	}
	b, err := json.Marshal(out)
	return b, int64(len(out)), err
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}
