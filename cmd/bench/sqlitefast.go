//go:build unix

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"unsafe"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"

	"storecrawl/worker/d1"
)

// fastD1 is a d1.Driver for the long benches: the same SQLite (modernc's,
// as worker/d1/d1test) with the project's migrations, its statements
// prepared once and kept, by SQL text. database/sql over modernc parses
// each statement (and codes its table's triggers) at every call, which a
// long bench's millions of statements would pay each time. Answers are d1test's:
// rows as a JSON array of objects, Result.Rows the rows a statement
// returned, a batch one transaction rolled back on any error.
type fastD1 struct {
	mu    sync.Mutex
	tls   *libc.TLS
	db    uintptr
	stmts map[string]uintptr
	// out receives SQLite's out-pointers (the database, a statement): on
	// the heap, where it stays put while SQLite writes it (a goroutine's
	// stack may move during the call).
	out *uintptr
}

// fastStatementCache bounds the kept statements (the product's SQL is a
// few hundred texts; lists of varying length add some).
const fastStatementCache = 8192

// openFastD1 opens an in-memory database with every migration applied.
func openFastD1() (*d1.DB, *fastD1, error) {
	f := &fastD1{tls: libc.NewTLS(), stmts: map[string]uintptr{}, out: new(uintptr)}
	name, err := libc.CString(":memory:")
	if err != nil {
		return nil, nil, err
	}
	defer libc.Xfree(f.tls, name)
	if rc := sqlite3.Xsqlite3_open_v2(f.tls, name, uintptr(unsafe.Pointer(f.out)), sqlite3.SQLITE_OPEN_READWRITE|sqlite3.SQLITE_OPEN_CREATE, 0); rc != sqlite3.SQLITE_OK {
		return nil, nil, fmt.Errorf("sqlite open: %d", rc)
	}
	f.db = *f.out
	if err := f.exec("PRAGMA foreign_keys = ON"); err != nil {
		return nil, nil, err
	}
	dir, err := repoRoot()
	if err != nil {
		return nil, nil, err
	}
	files, _ := filepath.Glob(filepath.Join(dir, "migrations", "[0-9]*.sql")) // as wrangler's migrations_pattern
	sort.Strings(files)
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, nil, err
		}
		if err := f.exec(string(b)); err != nil {
			return nil, nil, fmt.Errorf("migration %s: %w", filepath.Base(file), err)
		}
	}
	return &d1.DB{Driver: f}, f, nil
}

func (f *fastD1) errmsg() string { return libc.GoString(sqlite3.Xsqlite3_errmsg(f.tls, f.db)) }

// exec runs SQL text of any number of statements, no arguments.
func (f *fastD1) exec(q string) error {
	p, err := libc.CString(q)
	if err != nil {
		return err
	}
	defer libc.Xfree(f.tls, p)
	if rc := sqlite3.Xsqlite3_exec(f.tls, f.db, p, 0, 0, 0); rc != sqlite3.SQLITE_OK {
		return fmt.Errorf("%s", f.errmsg())
	}
	return nil
}

// prepared is q's statement, prepared at its first use.
func (f *fastD1) prepared(q string) (uintptr, bool, error) {
	if st, ok := f.stmts[q]; ok {
		return st, true, nil
	}
	p, err := libc.CString(q)
	if err != nil {
		return 0, false, err
	}
	defer libc.Xfree(f.tls, p)
	*f.out = 0
	if rc := sqlite3.Xsqlite3_prepare_v2(f.tls, f.db, p, -1, uintptr(unsafe.Pointer(f.out)), 0); rc != sqlite3.SQLITE_OK {
		return 0, false, fmt.Errorf("%s (in %s)", f.errmsg(), firstLineOf(q))
	}
	st := *f.out
	if st == 0 {
		return 0, false, fmt.Errorf("fastD1: no statement in %q", firstLineOf(q))
	}
	if len(f.stmts) < fastStatementCache {
		f.stmts[q] = st
		return st, true, nil
	}
	return st, false, nil
}

// run runs one statement with args and returns its rows.
func (f *fastD1) run(q string, args []any) ([]map[string]any, error) {
	st, kept, err := f.prepared(q)
	if err != nil {
		return nil, err
	}
	var allocs []uintptr
	defer func() {
		sqlite3.Xsqlite3_reset(f.tls, st)
		sqlite3.Xsqlite3_clear_bindings(f.tls, st)
		for _, p := range allocs {
			libc.Xfree(f.tls, p)
		}
		if !kept {
			sqlite3.Xsqlite3_finalize(f.tls, st)
		}
	}()
	for i, a := range args {
		idx := int32(i + 1)
		var rc int32
		switch v := a.(type) {
		case nil:
			rc = sqlite3.Xsqlite3_bind_null(f.tls, st, idx)
		case int:
			rc = sqlite3.Xsqlite3_bind_int64(f.tls, st, idx, int64(v))
		case int64:
			rc = sqlite3.Xsqlite3_bind_int64(f.tls, st, idx, v)
		case int32:
			rc = sqlite3.Xsqlite3_bind_int64(f.tls, st, idx, int64(v))
		case uint32:
			rc = sqlite3.Xsqlite3_bind_int64(f.tls, st, idx, int64(v))
		case bool:
			b := int64(0)
			if v {
				b = 1
			}
			rc = sqlite3.Xsqlite3_bind_int64(f.tls, st, idx, b)
		case float64:
			rc = sqlite3.Xsqlite3_bind_double(f.tls, st, idx, v)
		case float32:
			rc = sqlite3.Xsqlite3_bind_double(f.tls, st, idx, float64(v))
		case string:
			p, err := libc.CString(v)
			if err != nil {
				return nil, err
			}
			allocs = append(allocs, p)
			rc = sqlite3.Xsqlite3_bind_text(f.tls, st, idx, p, int32(len(v)), 0)
		case []byte:
			p, err := libc.CString(string(v))
			if err != nil {
				return nil, err
			}
			allocs = append(allocs, p)
			rc = sqlite3.Xsqlite3_bind_blob(f.tls, st, idx, p, int32(len(v)), 0)
		default:
			return nil, fmt.Errorf("fastD1: argument %d of type %T", i+1, a)
		}
		if rc != sqlite3.SQLITE_OK {
			return nil, fmt.Errorf("bind %d: %s", i+1, f.errmsg())
		}
	}
	var out []map[string]any
	n := int(sqlite3.Xsqlite3_column_count(f.tls, st))
	var cols []string
	for {
		rc := sqlite3.Xsqlite3_step(f.tls, st)
		if rc == sqlite3.SQLITE_DONE {
			return out, nil
		}
		if rc != sqlite3.SQLITE_ROW {
			return nil, fmt.Errorf("%s (in %s)", f.errmsg(), firstLineOf(q))
		}
		if cols == nil {
			cols = make([]string, n)
			for i := range cols {
				cols[i] = libc.GoString(sqlite3.Xsqlite3_column_name(f.tls, st, int32(i)))
			}
		}
		row := make(map[string]any, n)
		for i, c := range cols {
			ci := int32(i)
			switch sqlite3.Xsqlite3_column_type(f.tls, st, ci) {
			case sqlite3.SQLITE_INTEGER:
				row[c] = int64(sqlite3.Xsqlite3_column_int64(f.tls, st, ci))
			case sqlite3.SQLITE_FLOAT:
				row[c] = sqlite3.Xsqlite3_column_double(f.tls, st, ci)
			case sqlite3.SQLITE_NULL:
				row[c] = nil
			default: // text and blobs, as d1test renders them
				p := sqlite3.Xsqlite3_column_text(f.tls, st, ci)
				l := sqlite3.Xsqlite3_column_bytes(f.tls, st, ci)
				if p == 0 || l == 0 {
					row[c] = ""
				} else {
					row[c] = string(libc.GoBytes(p, int(l)))
				}
			}
		}
		out = append(out, row)
	}
}

func rowsOut(rows []map[string]any) ([]byte, error) {
	if rows == nil {
		return []byte("[]"), nil
	}
	return json.Marshal(rows)
}

// All implements d1.Driver.
func (f *fastD1) All(_ context.Context, q string, args []any) ([]byte, d1.Meta, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	rows, err := f.run(q, args)
	if err != nil {
		return nil, d1.Meta{}, err
	}
	b, err := rowsOut(rows)
	return b, d1.Meta{RowsRead: int64(len(rows))}, err
}

// Batch implements d1.Driver: one transaction, rolled back on any error.
func (f *fastD1) Batch(_ context.Context, stmts []d1.Stmt) ([]d1.Result, error) {
	if len(stmts) > d1.MaxBatch {
		return nil, fmt.Errorf("fastD1: %d statements in one batch (D1 allows %d)", len(stmts), d1.MaxBatch)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.exec("BEGIN"); err != nil {
		return nil, err
	}
	results := make([]d1.Result, 0, len(stmts))
	for _, s := range stmts {
		rows, err := f.run(s.SQL, s.Args)
		if err != nil {
			f.exec("ROLLBACK")
			return nil, err
		}
		results = append(results, d1.Result{Rows: int64(len(rows)), Meta: d1.Meta{RowsWritten: 1}})
	}
	return results, f.exec("COMMIT")
}

func firstLineOf(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}
