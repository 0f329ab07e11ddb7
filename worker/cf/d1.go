//go:build js && wasm

package cf

import (
	"context"
	"fmt"
	"syscall/js"

	"github.com/syumai/workers/cloudflare"

	"storecrawl/worker/d1"
)

// D1 is a d1.Driver over the D1 binding of that name.
type D1 string

func (b D1) binding() (js.Value, error) {
	db := cloudflare.GetBinding(string(b))
	if db.IsUndefined() {
		return js.Value{}, fmt.Errorf("D1 binding %s missing", string(b))
	}
	return db, nil
}

func (b D1) prepare(db js.Value, s d1.Stmt) (js.Value, error) {
	args := make([]any, len(s.Args))
	for i, a := range s.Args {
		args[i] = jsArg(a)
	}
	prepared, err := Call(db, "prepare", s.SQL)
	if err != nil {
		return js.Value{}, err
	}
	return Call(prepared, "bind", args...)
}

// All implements d1.Driver: the rows come back as one JSON string, a single
// crossing from JS to Go.
func (b D1) All(_ context.Context, sql string, args []any) ([]byte, d1.Meta, error) {
	db, err := b.binding()
	if err != nil {
		return nil, d1.Meta{}, err
	}
	bound, err := b.prepare(db, d1.Stmt{SQL: sql, Args: args})
	if err != nil {
		return nil, d1.Meta{}, err
	}
	p, err := Call(bound, "all")
	if err != nil {
		return nil, d1.Meta{}, err
	}
	res, err := Await(p)
	if err != nil {
		return nil, d1.Meta{}, err
	}
	rows := js.Global().Get("JSON").Call("stringify", res.Get("results")).String()
	return []byte(rows), metaOf(res.Get("meta")), nil
}

// Batch implements d1.Driver with D1's batch(): one implicit transaction.
func (b D1) Batch(_ context.Context, stmts []d1.Stmt) ([]d1.Result, error) {
	db, err := b.binding()
	if err != nil {
		return nil, err
	}
	arr := js.Global().Get("Array").New()
	for _, s := range stmts {
		bound, err := b.prepare(db, s)
		if err != nil {
			return nil, err
		}
		arr.Call("push", bound)
	}
	p, err := Call(db, "batch", arr)
	if err != nil {
		return nil, err
	}
	results, err := Await(p)
	if err != nil {
		return nil, err
	}
	out := make([]d1.Result, results.Length())
	for i := range out {
		r := results.Index(i)
		out[i].Meta = metaOf(r.Get("meta"))
		if rows := r.Get("results"); rows.Type() == js.TypeObject {
			out[i].Rows = int64(rows.Length())
		}
	}
	return out, nil
}

func metaOf(meta js.Value) d1.Meta {
	num := func(k string) int64 {
		if meta.Type() != js.TypeObject {
			return 0
		}
		if v := meta.Get(k); v.Type() == js.TypeNumber {
			return int64(v.Float())
		}
		return 0
	}
	return d1.Meta{RowsRead: num("rows_read"), RowsWritten: num("rows_written")}
}

// jsArg converts a statement argument to what D1's bind accepts.
func jsArg(a any) any {
	switch v := a.(type) {
	case nil:
		return js.Null()
	case int64:
		return float64(v) // D1 binds JS numbers; track ids fit in 2^53
	case int:
		return float64(v)
	case bool:
		if v {
			return 1
		}
		return 0
	default:
		return v
	}
}
