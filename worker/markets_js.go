//go:build js && wasm

package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"syscall/js"
	"time"

	"github.com/syumai/workers/cloudflare/queues"

	"storecrawl/worker/d1"
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
	ranked := rankedApps(rows)
	keywords := map[string]bool{}
	last := from
	for _, a := range ranked {
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
	stmts = append(stmts, d1.Stmt{
		SQL:  `INSERT INTO sweep_cursors (name, cursor, updated_at) VALUES (?,?,?) ON CONFLICT (name) DO UPDATE SET cursor = excluded.cursor, updated_at = excluded.updated_at`,
		Args: []any{clusterCursor, next, now.UTC().Format(time.RFC3339)},
	})
	if err := p.execCtx(ctx, stmts); err != nil {
		return "", err
	}
	if err := p.clustersReady(ctx, clusters, now); err != nil {
		return "", err
	}
	return fmt.Sprintf("%d keywords from %q, %d clusters", len(keywords), from, len(clusters)), nil
}

func rankedApps(rows []js.Value) []RankedApp {
	out := make([]RankedApp, 0, len(rows))
	for _, r := range rows {
		out = append(out, RankedApp{
			Keyword: r.Get("keyword").String(), TrackID: int64(r.Get("track_id").Float()), Rank: r.Get("rank").Int(),
			RatingCount: int64(r.Get("ratings").Float()), Rating: r.Get("rating").Float(),
		})
	}
	return out
}

// clustersReady announces written clusters so the consumer scores them.
func (p Platform) clustersReady(ctx context.Context, clusters []Cluster, now time.Time) error {
	for i := 0; i < len(clusters); i += MaxEventKeys {
		var ids []string
		for _, c := range clusters[i:min(i+MaxEventKeys, len(clusters))] {
			ids = append(ids, c.ID)
		}
		if err := p.Emit(ctx, QueueEvent{Type: EventClustersReady, Clusters: ids, At: now.UTC().Format(time.RFC3339)}); err != nil {
			return err
		}
	}
	return nil
}

// ClusterKeywords rebuilds the clusters of keywords from their rankings.
func (p Platform) ClusterKeywords(ctx context.Context, keywords []string, now time.Time) ([]string, error) {
	args := make([]any, len(keywords))
	for i, k := range keywords {
		args[i] = k
	}
	rows, err := queryAll(ctx, keywordRankingsSQL(len(keywords)), args...)
	if err != nil {
		return nil, err
	}
	clusters := BuildClusters(rankedApps(rows))
	if err := p.execCtx(ctx, ClusterStatements(clusters, now)); err != nil {
		return nil, err
	}
	ids := make([]string, len(clusters))
	for i, c := range clusters {
		ids[i] = c.ID
	}
	return ids, nil
}

// ScoreClusters recomputes opportunity scores from stored clusters.
func (p Platform) ScoreClusters(ctx context.Context, ids []string, now time.Time) error {
	args := make([]any, len(ids))
	for i, k := range ids {
		args[i] = k
	}
	rows, err := queryAll(ctx, clusterAggregatesSQL(len(ids)), args...)
	if err != nil {
		return err
	}
	cs := make([]Cluster, 0, len(rows))
	for _, r := range rows {
		c := Cluster{ID: r.Get("cluster_id").String(), Apps: r.Get("app_count").Int(),
			TotalRatings: int64(r.Get("total_ratings").Float()), AvgRating: r.Get("avg_rating").Float(), TopShare: r.Get("top_share").Float(),
			HHI: r.Get("hhi").Float(), Fragmentation: r.Get("fragmentation").Float()}
		c.Score()
		cs = append(cs, c)
	}
	return p.execCtx(ctx, ScoreStatements(cs, now))
}

// AnalyzeFragmentation measures and stores the fragmentation of the
// clusters that exist (with members) and returns their ids.
func (p Platform) AnalyzeFragmentation(ctx context.Context, ids []string, now time.Time) ([]string, error) {
	args := make([]any, len(ids))
	for i, k := range ids {
		args[i] = k
	}
	rows, err := queryAll(ctx, clusterMemberRatingsSQL(len(ids)), args...)
	if err != nil {
		return nil, err
	}
	members := map[string][]int64{}
	for _, r := range rows {
		id := r.Get("cluster_id").String()
		members[id] = append(members[id], int64(r.Get("ratings").Float()))
	}
	fs := AnalyzeFragmentation(members)
	if err := p.execCtx(ctx, FragmentationStatements(fs, now)); err != nil {
		return nil, err
	}
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.ClusterID
	}
	return out, nil
}

// Emit sends one event to the EVENTS queue.
func (Platform) Emit(_ context.Context, ev QueueEvent) error {
	q, err := queues.NewProducer(bindingEvents)
	if err != nil {
		return err
	}
	b, _ := json.Marshal(ev)
	return q.SendText(string(b))
}
