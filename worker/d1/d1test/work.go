//go:build !js

package d1test

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"unsafe"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// Work is what one statement cost SQLite, from its own counters
// (sqlite3_stmt_status): how a read grows with its table, natively.
type Work struct {
	// Walked is the steps forward of walks: table scans and index scans
	// with no constraint (SQLITE_STMTSTATUS_FULLSCAN_STEP; a walk of n
	// rows is n-1 steps, its first row is where it starts). A walk of a
	// growing table is the read that grows with it.
	Walked int64
	// VMSteps is the bytecode instructions run (SQLITE_STMTSTATUS_VM_STEP):
	// all the statement's work, seeks and virtual tables (json_each)
	// included, so a read nested in a loop shows here as the product.
	VMSteps int64
	// Rows is the rows the statement returned.
	Rows int64
	// Changes is the rows it inserted, updated or deleted, triggers'
	// included (the difference of total_changes()).
	Changes int64
}

// Measure runs one statement (args bound in order: ?, or ?N as the N-th)
// and returns its Work. The statement runs for real: writes stay.
func (d *Driver) Measure(t testing.TB, q string, args ...any) Work {
	t.Helper()
	w, err := d.measure(q, args)
	if err != nil {
		t.Fatalf("d1test measure: %v\n%s", err, q)
	}
	return w
}

// ReadOnly reports whether a statement only reads (sqlite3_stmt_readonly):
// a WITH ... UPDATE is a write.
func (d *Driver) ReadOnly(t testing.TB, q string) bool {
	t.Helper()
	var ro bool
	err := d.withStmt(q, func(tls *libc.TLS, db, stmt uintptr) error {
		ro = sqlite3.Xsqlite3_stmt_readonly(tls, stmt) != 0
		return nil
	})
	if err != nil {
		t.Fatalf("d1test read-only: %v\n%s", err, q)
	}
	return ro
}

// withStmt prepares q on the database's connection, hands it to fn and
// finalizes it.
func (d *Driver) withStmt(q string, fn func(tls *libc.TLS, db, stmt uintptr) error) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	c, err := d.db.Conn(context.Background())
	if err != nil {
		return err
	}
	defer c.Close()
	return c.Raw(func(dc any) error {
		tls, db, err := rawConn(dc)
		if err != nil {
			return err
		}
		zSQL, err := libc.CString(q)
		if err != nil {
			return err
		}
		defer libc.Xfree(tls, zSQL)
		pp := tls.Alloc(8)
		defer tls.Free(8)
		if rc := sqlite3.Xsqlite3_prepare_v2(tls, db, zSQL, -1, pp, 0); rc != sqlite3.SQLITE_OK {
			return fmt.Errorf("prepare: %s", libc.GoString(sqlite3.Xsqlite3_errmsg(tls, db)))
		}
		// pp is C memory (tls.Alloc), not Go's: read the pointer SQLite wrote there.
		stmt := *(*uintptr)(unsafe.Add(nil, pp))
		defer sqlite3.Xsqlite3_finalize(tls, stmt)
		return fn(tls, db, stmt)
	})
}

func (d *Driver) measure(q string, args []any) (w Work, err error) {
	err = d.withStmt(q, func(tls *libc.TLS, db, stmt uintptr) error {
		for i, a := range args {
			n := int32(i + 1)
			var rc int32
			switch v := a.(type) {
			case nil:
				rc = sqlite3.Xsqlite3_bind_null(tls, stmt, n)
			case int:
				rc = sqlite3.Xsqlite3_bind_int64(tls, stmt, n, int64(v))
			case int64:
				rc = sqlite3.Xsqlite3_bind_int64(tls, stmt, n, v)
			case float64:
				rc = sqlite3.Xsqlite3_bind_double(tls, stmt, n, v)
			case string:
				z, err := libc.CString(v)
				if err != nil {
					return err
				}
				// SQLITE_TRANSIENT (-1): SQLite copies the text before we free it.
				rc = sqlite3.Xsqlite3_bind_text(tls, stmt, n, z, int32(len(v)), ^uintptr(0))
				libc.Xfree(tls, z)
			default:
				return fmt.Errorf("argument %d: %T not supported", n, a)
			}
			if rc != sqlite3.SQLITE_OK {
				return fmt.Errorf("bind %d: %s", n, libc.GoString(sqlite3.Xsqlite3_errmsg(tls, db)))
			}
		}
		before := sqlite3.Xsqlite3_total_changes(tls, db)
		for {
			rc := sqlite3.Xsqlite3_step(tls, stmt)
			if rc == sqlite3.SQLITE_ROW {
				w.Rows++
				continue
			}
			if rc != sqlite3.SQLITE_DONE {
				return fmt.Errorf("step: %s", libc.GoString(sqlite3.Xsqlite3_errmsg(tls, db)))
			}
			break
		}
		w.Changes = int64(sqlite3.Xsqlite3_total_changes(tls, db) - before)
		w.Walked = int64(sqlite3.Xsqlite3_stmt_status(tls, stmt, sqlite3.SQLITE_STMTSTATUS_FULLSCAN_STEP, 0))
		w.VMSteps = int64(sqlite3.Xsqlite3_stmt_status(tls, stmt, sqlite3.SQLITE_STMTSTATUS_VM_STEP, 0))
		return nil
	})
	return w, err
}

// rawConn reads the SQLite handle and its thread state out of the
// driver's connection (modernc.org/sqlite keeps them unexported: db and
// tls), so Measure can read a statement's counters, which database/sql
// does not expose.
func rawConn(dc any) (*libc.TLS, uintptr, error) {
	v := reflect.ValueOf(dc)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return nil, 0, fmt.Errorf("driver connection %T", dc)
	}
	db, tls := v.Elem().FieldByName("db"), v.Elem().FieldByName("tls")
	if db.Kind() != reflect.Uintptr || tls.Kind() != reflect.Pointer {
		return nil, 0, fmt.Errorf("driver connection %T: no db/tls fields", dc)
	}
	return (*libc.TLS)(unsafe.Pointer(tls.Pointer())), uintptr(db.Uint()), nil
}
