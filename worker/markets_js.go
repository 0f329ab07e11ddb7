//go:build js && wasm

package worker

import (
	"context"
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
	curRows, err := queryAll(ctx, `SELECT CAST(cursor AS TEXT) AS cursor FROM sweep_cursors WHERE name = ?`, clusterCursor)
	if err != nil {
		return "", err
	}
	from := ""
	if len(curRows) > 0 && curRows[0].Get("cursor").String() != "0" {
		from = curRows[0].Get("cursor").String()
	}
	rows, err := queryAll(ctx, clusterBatchSQL, from, ClusterBatchKeywords)
	if err != nil {
		return "", err
	}
	ranked := make([]RankedApp, 0, len(rows))
	keywords := map[string]bool{}
	last := from
	for _, r := range rows {
		a := RankedApp{
			Keyword: r.Get("keyword").String(), TrackID: int64(r.Get("track_id").Float()), Rank: r.Get("rank").Int(),
			RatingCount: int64(r.Get("ratings").Float()), Rating: r.Get("rating").Float(),
		}
		ranked = append(ranked, a)
		keywords[a.Keyword] = true
		if a.Keyword > last {
			last = a.Keyword
		}
	}
	clusters := BuildClusters(ranked)
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
	if err := p.execCtx(ctx, stmts); err != nil {
		return "", err
	}
	return fmt.Sprintf("%d keywords from %q, %d clusters", len(keywords), from, len(clusters)), nil
}
