//go:build !js

package markets

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"storecrawl/worker/d1/d1test"
	"storecrawl/worker/events"
)

type queue struct {
	mu     sync.Mutex
	bodies []string
}

func (q *queue) Send(_ context.Context, body string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.bodies = append(q.bodies, body)
	return nil
}

// take returns the queued messages and empties the queue.
func (q *queue) take() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := q.bodies
	q.bodies = nil
	return out
}

// seedMarkets writes two searched keywords and their rankings: "budget"
// (three fragmented, mediocre apps) and "chat" (one giant and two small).
func seedMarkets(t *testing.T, drv *d1test.Driver) {
	apps := []struct {
		id      int64
		ratings int64
		rating  float64
	}{{1, 5000, 3.9}, {2, 4000, 3.8}, {3, 3000, 4.0}, {4, 2_000_000, 4.8}, {5, 1000, 4.1}, {6, 500, 3.0}}
	for _, a := range apps {
		drv.Exec(t, `INSERT INTO app_registry (track_id, name, rating_count, average_rating, current_version_release_date) VALUES (?, 'app', ?, ?, '2026-11-01T00:00:00Z')`, a.id, a.ratings, a.rating)
	}
	for _, kw := range []string{"budget", "chat"} {
		drv.Exec(t, `INSERT INTO crawl_keywords (keyword, source, created_at, searched_at) VALUES (?, 'title', '2026-11-01T00:00:00.000Z', '2026-11-01T00:00:00.000Z')`, kw)
	}
	for i, id := range []int64{1, 2, 3} {
		drv.Exec(t, `INSERT INTO crawl_rankings (keyword, track_id, rank, seen_at) VALUES ('budget', ?, ?, '2026-11-01T00:00:00.000Z')`, id, i+1)
	}
	for i, id := range []int64{4, 5, 6} {
		drv.Exec(t, `INSERT INTO crawl_rankings (keyword, track_id, rank, seen_at) VALUES ('chat', ?, ?, '2026-11-01T00:00:00.000Z')`, id, i+1)
	}
}

// TestEventChainAgainstD1 follows the stage through the queue, each message
// handled as the consumer does: rankings-updated → clusters written and
// clusters-ready → fragmentation stored and fragmentation-done →
// opportunity scores; app-enriched → per-app scores. A redelivery changes
// nothing.
func TestEventChainAgainstD1(t *testing.T) {
	db, drv := d1test.New(t)
	seedMarkets(t, drv)
	q := &queue{}
	m := &Markets{DB: db, Events: q}
	ctx := context.Background()
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

	first := events.NewKeyed(events.RankingsUpdated, []string{"budget", "chat"}, now)[0]
	b, _ := json.Marshal(first)
	pending := []string{string(b)}
	handled := 0
	for len(pending) > 0 && handled < 10 {
		body := pending[0]
		pending = pending[1:]
		if err := HandleEvent(ctx, body, m, now); err != nil {
			t.Fatalf("handle %s: %v", body, err)
		}
		handled++
		pending = append(pending, q.take()...)
	}
	if handled != 3 {
		t.Fatalf("rankings-updated → clusters-ready → fragmentation-done: %d messages", handled)
	}
	if n := drv.Int(t, `SELECT COUNT(*) FROM market_cluster_members`); n != 6 {
		t.Fatalf("members: %d", n)
	}
	rows := drv.Rows(t, `SELECT cluster_id, hhi, fragmentation FROM market_clusters ORDER BY cluster_id`)
	if len(rows) != 2 || rows[0]["hhi"] == nil || rows[0]["fragmentation"].(float64) <= rows[1]["fragmentation"].(float64) {
		t.Fatalf("budget must be more fragmented than chat: %v", rows)
	}
	list, err := m.List(ctx, true, 10, 0)
	if err != nil || len(list) != 2 {
		t.Fatalf("opportunities: %v %v", list, err)
	}
	var top struct {
		ID      string `json:"cluster_id"`
		Members []struct {
			TrackID int64 `json:"track_id"`
		} `json:"members"`
	}
	json.Unmarshal(list[0], &top)
	if top.ID != "budget" || len(top.Members) != 3 {
		t.Fatalf("the best opportunity is budget with its members: %s", list[0])
	}
	bySize, _ := m.List(ctx, false, 1, 0)
	json.Unmarshal(bySize[0], &top)
	if top.ID != "chat" {
		t.Fatalf("the biggest market is chat: %s", bySize[0])
	}

	// Redelivering the first message rewrites the same clusters.
	before := drv.Rows(t, `SELECT cluster_id, app_count, total_ratings FROM market_clusters ORDER BY cluster_id`)
	if err := HandleEvent(ctx, string(b), m, now); err != nil {
		t.Fatal(err)
	}
	after := drv.Rows(t, `SELECT cluster_id, app_count, total_ratings FROM market_clusters ORDER BY cluster_id`)
	if len(before) != len(after) || before[0]["total_ratings"] != after[0]["total_ratings"] {
		t.Fatalf("redelivery changed the clusters: %v → %v", before, after)
	}

	// app-enriched scores the apps.
	e, _ := json.Marshal(events.NewAppEnriched([]int64{4, 6}, now)[0])
	if err := HandleEvent(ctx, string(e), m, now); err != nil {
		t.Fatal(err)
	}
	scored := drv.Rows(t, `SELECT track_id, demand_score, competitiveness_score FROM app_registry WHERE analyzed_at IS NOT NULL ORDER BY track_id`)
	if len(scored) != 2 || scored[0]["competitiveness_score"].(float64) <= scored[1]["competitiveness_score"].(float64) {
		t.Fatalf("the giant must be more competitive: %v", scored)
	}

	// D1 down: the message fails (and is retried by the queue).
	drv.FailNext.Store(1)
	if err := HandleEvent(ctx, string(e), m, now); err == nil {
		t.Fatal("a D1 failure must fail the message")
	}
}

func TestClusterBatchAdvancesAndWraps(t *testing.T) {
	db, drv := d1test.New(t)
	seedMarkets(t, drv)
	q := &queue{}
	m := &Markets{DB: db, Events: q}
	now := time.Date(2026, 11, 23, 6, 0, 0, 0, time.UTC)
	summary, err := m.Cluster(context.Background(), now)
	if err != nil || summary != `2 keywords from "", 2 clusters` {
		t.Fatalf("cluster: %q %v", summary, err)
	}
	// Fewer than a batch: the end, so the cursor wraps: from the start
	// back to the start is no move, and no cursor row is written.
	if n := drv.Int(t, `SELECT COUNT(*) FROM sweep_cursors WHERE name = ?`, ClusterCursor); n != 0 {
		t.Fatalf("a wrap from the start wrote the cursor: %v", drv.Rows(t, `SELECT * FROM sweep_cursors`))
	}
	bodies := q.take()
	var ev events.Event
	if len(bodies) != 1 || json.Unmarshal([]byte(bodies[0]), &ev) != nil || ev.Type != events.ClustersReady || len(ev.Clusters) != 2 {
		t.Fatalf("clusters-ready: %v", bodies)
	}
}
