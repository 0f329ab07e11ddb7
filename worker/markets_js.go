//go:build js && wasm

package worker

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"storecrawl/worker/enrich"
)

const clusterCursor = "clustering"

// Markets lists market clusters by opportunity score or by size.
func (p Platform) Markets(ctx context.Context, byScore bool, limit, offset int) ([]json.RawMessage, error) {
	db, err := p.db()
	if err != nil {
		return nil, err
	}
	q := clustersSQL
	if byScore {
		q = opportunitiesSQL
	}
	rows, err := db.QueryContext(ctx, q, limit, offset)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []json.RawMessage
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, json.RawMessage(s))
	}
	return out, rows.Err()
}

// Cluster runs one clustering batch: the next ClusterBatchKeywords searched
// keywords past the cursor, scored and written; the cursor wraps at the end.
func (p Platform) Cluster(ctx context.Context) (string, error) {
	db, err := p.db()
	if err != nil {
		return "", err
	}
	var cur sql.NullString
	err = db.QueryRowContext(ctx, `SELECT CAST(cursor AS TEXT) FROM sweep_cursors WHERE name = ?`, clusterCursor).Scan(&cur)
	if err != nil && err != sql.ErrNoRows {
		return "", err
	}
	from := cur.String
	if from == "0" {
		from = ""
	}
	rows, err := db.QueryContext(ctx, clusterBatchSQL, from, ClusterBatchKeywords)
	if err != nil {
		return "", err
	}
	var ranked []RankedApp
	last := from
	for rows.Next() {
		var r RankedApp
		var id, rank, count float64
		if err := rows.Scan(&r.Keyword, &id, &rank, &count, &r.Rating); err != nil {
			rows.Close()
			return "", err
		}
		r.TrackID, r.Rank, r.RatingCount = int64(id), int(rank), int64(count)
		ranked = append(ranked, r)
		if r.Keyword > last {
			last = r.Keyword
		}
	}
	rows.Close()
	clusters := BuildClusters(ranked)
	keywords := map[string]bool{}
	for _, r := range ranked {
		keywords[r.Keyword] = true
	}
	next := last
	if len(keywords) < ClusterBatchKeywords {
		next = "" // the end: start over next time
	}
	now := time.Now()
	stmts := ClusterStatements(clusters, now)
	stmts = append(stmts, enrich.Stmt{
		SQL:  `INSERT INTO sweep_cursors (name, cursor, updated_at) VALUES (?,?,?) ON CONFLICT (name) DO UPDATE SET cursor = excluded.cursor, updated_at = excluded.updated_at`,
		Args: []any{clusterCursor, next, now.UTC().Format(time.RFC3339)},
	})
	if err := p.exec(stmts); err != nil {
		return "", err
	}
	return fmt.Sprintf("%d keywords from %q, %d clusters", len(keywords), from, len(clusters)), nil
}
