// Package d1 is the one way into D1 from Go: statements, the one timestamp
// layout of TEXT time columns, placeholders, and a DB that decodes reads
// into Go values, runs writes as batches and meters what every statement
// cost (D1's own rows_read / rows_written). Pure Go: the Driver is D1 itself
// under workerd (worker/cf) or SQLite in native tests (worker/d1/d1test).
package d1

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"storecrawl/worker/subreq"
	"strings"
	"time"
)

// Layout is the one layout of every TEXT timestamp column: UTC, millisecond
// precision, so lexical order is time order.
const Layout = "2006-01-02T15:04:05.000Z"

// Time formats t in Layout.
func Time(t time.Time) string { return t.UTC().Format(Layout) }

// ParseTime reads a Layout timestamp.
func ParseTime(s string) (time.Time, error) { return time.Parse(Layout, s) }

// MaxBatch is D1's limit of statements in one batch.
const MaxBatch = 100

// CompoundSelectMax is how many terms D1 allows in one compound SELECT
// (SQLITE_LIMIT_COMPOUND_SELECT): a sixth UNION ALL branch is "too many
// terms in compound SELECT". d1test holds its databases to it.
const CompoundSelectMax = 5

// Stmt is one parameterised statement.
type Stmt struct {
	SQL  string
	Args []any
}

// Placeholders is n bound parameters for an IN list: "?,?,?".
func Placeholders(n int) string {
	if n <= 0 {
		return ""
	}
	return "?" + strings.Repeat(",?", n-1)
}

// Args turns a slice into bound parameters.
func Args[T any](xs []T) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}

// Meta is what D1 reports of one statement.
type Meta struct {
	RowsRead    int64 `json:"rows_read"`
	RowsWritten int64 `json:"rows_written"`
}

// Result is one statement of a batch: the rows it returned (an INSERT ...
// RETURNING returns the rows it inserted) and its meta.
type Result struct {
	Rows int64
	Meta Meta
}

// Driver runs statements: D1 itself, or a test double.
type Driver interface {
	// All runs one statement and returns its rows as a JSON array of objects.
	All(ctx context.Context, sql string, args []any) (rows []byte, meta Meta, err error)
	// Batch runs statements as one batch (one implicit transaction).
	Batch(ctx context.Context, stmts []Stmt) ([]Result, error)
}

// DB is the one way into D1.
type DB struct {
	Driver Driver
}

// Query runs one read and decodes its rows into dest (a pointer to a slice
// of structs with json tags naming the columns; NULL decodes as the zero
// value). Its cost is counted against ctx's Cost.
func (db *DB) Query(ctx context.Context, dest any, sql string, args ...any) error {
	if err := subreq.SpendQuery(ctx); err != nil {
		return err
	}
	rows, meta, err := db.Driver.All(ctx, sql, args)
	if err != nil {
		return err
	}
	addCost(ctx, meta)
	if err := json.Unmarshal(rows, dest); err != nil {
		return fmt.Errorf("d1: decoding rows: %w", err)
	}
	return nil
}

// Exec runs statements in batches of at most MaxBatch (each batch one
// transaction) and returns how many rows the statements returned. Their
// cost is counted against ctx's Cost.
func (db *DB) Exec(ctx context.Context, stmts ...Stmt) (returned int64, err error) {
	for i := 0; i < len(stmts); i += MaxBatch {
		if err := subreq.SpendQuery(ctx); err != nil {
			return returned, err
		}
		results, err := db.Driver.Batch(ctx, stmts[i:min(i+MaxBatch, len(stmts))])
		if err != nil {
			return returned, err
		}
		for _, r := range results {
			addCost(ctx, r.Meta)
			returned += r.Rows
		}
	}
	return returned, nil
}

// ErrBatchTooLarge: an atomic write with more statements than one batch holds.
var ErrBatchTooLarge = errors.New("d1: more statements than one batch holds")

// ExecAtomic runs statements as exactly one batch, so they commit or fail
// together; more than MaxBatch is ErrBatchTooLarge, never a silent split
// into several transactions (that is what Exec does).
func (db *DB) ExecAtomic(ctx context.Context, stmts ...Stmt) (returned int64, err error) {
	if len(stmts) > MaxBatch {
		return 0, fmt.Errorf("%w: %d statements, at most %d", ErrBatchTooLarge, len(stmts), MaxBatch)
	}
	return db.Exec(ctx, stmts...)
}

// NamedQuery is a read of a hot path with sample arguments: every feature
// lists its own (HotQueries), and a test (worker/queryplan_test.go) checks
// each plan on a catalogue of 100,000 apps: no step walks a large table.
type NamedQuery struct {
	Name string
	SQL  string
	Args []any
	// Bounded, when set, says why walking a large table is bounded anyway
	// (a cursor and a LIMIT: each run reads a page past the cursor); the
	// plan test accepts it only on SQL with a LIMIT.
	Bounded string
	// Page marks a list route's page read: a range of an index in its
	// order, so the plan tests also refuse a temporary B-tree sorting it
	// (a sort reads every row it orders before the first is returned).
	Page bool
}

// UnionAll joins the SELECTs in parts with UNION ALL, grouped so that no
// compound has more than CompoundSelectMax terms: each group of five is
// wrapped in its own sub-select, which counts as one term of the next
// level (a sub-select's terms are counted apart).
func UnionAll(parts []string) string {
	for len(parts) > CompoundSelectMax {
		var next []string
		for i := 0; i < len(parts); i += CompoundSelectMax {
			group := parts[i:min(i+CompoundSelectMax, len(parts))]
			if len(group) == 1 {
				next = append(next, group[0])
				continue
			}
			next = append(next, "SELECT * FROM ("+strings.Join(group, "\nUNION ALL ")+")")
		}
		parts = next
	}
	return strings.Join(parts, "\nUNION ALL ")
}
