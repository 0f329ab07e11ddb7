//go:build !js

package d1_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"storecrawl/worker/d1"
	"storecrawl/worker/d1/d1test"
)

func TestQueryDecodesRowsAndExecBatchesWithinD1sLimit(t *testing.T) {
	db, drv := d1test.New(t)
	ctx, cost := d1.WithCost(context.Background())
	stmts := make([]d1.Stmt, 0, 250)
	for i := 1; i <= 250; i++ {
		stmts = append(stmts, d1.Stmt{SQL: `INSERT INTO app_registry (track_id, name) VALUES (?, ?) RETURNING track_id`, Args: []any{int64(i), "app"}})
	}
	// 250 statements: three batches (D1 takes at most 100), every returned row counted.
	if n, err := db.Exec(ctx, stmts...); err != nil || n != 250 {
		t.Fatalf("exec: %d %v", n, err)
	}
	if got := drv.Calls.Load(); got != 3 {
		t.Fatalf("batches: %d, want 3", got)
	}
	var rows []struct {
		TrackID int64   `json:"track_id"`
		Name    string  `json:"name"`
		Rating  float64 `json:"average_rating"` // NULL → 0
	}
	if err := db.Query(ctx, &rows, `SELECT track_id, name, average_rating FROM app_registry WHERE track_id IN (`+d1.Placeholders(3)+`) ORDER BY track_id`, d1.Args([]int64{2, 3, 400})...); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].TrackID != 2 || rows[1].Name != "app" || rows[0].Rating != 0 {
		t.Fatalf("rows: %+v", rows)
	}
	if v := cost.View(); v.Queries != 251 || v.RowsRead != 2 {
		t.Fatalf("cost: %+v", v)
	}
}

func TestAFailedBatchWritesNothing(t *testing.T) {
	db, drv := d1test.New(t)
	_, err := db.Exec(context.Background(),
		d1.Stmt{SQL: `INSERT INTO app_registry (track_id) VALUES (1)`},
		d1.Stmt{SQL: `INSERT INTO no_such_table VALUES (1)`})
	if err == nil {
		t.Fatal("want an error")
	}
	if n := drv.Int(t, `SELECT COUNT(*) FROM app_registry`); n != 0 {
		t.Fatalf("a failed batch must roll back: %d rows", n)
	}
}

func TestTimeLayoutSortsAsTime(t *testing.T) {
	a := time.Date(2026, 1, 2, 3, 4, 5, 6_000_000, time.FixedZone("x", 3600))
	if got := d1.Time(a); got != "2026-01-02T02:04:05.006Z" {
		t.Fatalf("layout: %s", got)
	}
	if back, err := d1.ParseTime(d1.Time(a)); err != nil || !back.Equal(a) {
		t.Fatalf("round trip: %v %v", back, err)
	}
	if d1.Placeholders(0) != "" || d1.Placeholders(1) != "?" || d1.Placeholders(3) != "?,?,?" {
		t.Fatal("placeholders")
	}
}

// UnionAll never puts more than CompoundSelectMax SELECTs in one compound
// (D1 refuses a sixth), and keeps every part, in order.
func TestUnionAllKeepsCompoundsWithinD1sLimit(t *testing.T) {
	for _, n := range []int{1, 5, 6, 10, 26, 130} {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = fmt.Sprintf("SELECT %d AS n", i)
		}
		sql := d1.UnionAll(parts)
		depth, terms := 0, []int{1}
		for _, tok := range strings.Fields(strings.NewReplacer("(", " ( ", ")", " ) ").Replace(sql)) {
			switch tok {
			case "(":
				depth++
				terms = append(terms, 1)
			case ")":
				if terms[depth] > d1.CompoundSelectMax {
					t.Fatalf("%d parts: %d terms in one compound", n, terms[depth])
				}
				terms = terms[:depth]
				depth--
			case "UNION":
				terms[depth]++
			}
		}
		if terms[0] > d1.CompoundSelectMax {
			t.Fatalf("%d parts: %d terms at the top", n, terms[0])
		}
		for i := range parts {
			if !strings.Contains(sql, fmt.Sprintf("SELECT %d AS n", i)) {
				t.Fatalf("%d parts: part %d lost", n, i)
			}
		}
	}
}
