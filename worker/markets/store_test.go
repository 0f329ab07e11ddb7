//go:build !js

package markets

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"storecrawl/worker/d1"
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
	if n := drv.Int(t, `SELECT COUNT(*) FROM crawl_rankings r JOIN market_clusters c ON c.cluster_id = r.keyword AND c.member_sum IS NOT NULL`); n != 6 {
		t.Fatalf("members: %d", n)
	}
	rows := drv.Rows(t, `SELECT cluster_id, hhi, fragmentation FROM market_clusters ORDER BY cluster_id`)
	if len(rows) != 2 || rows[0]["hhi"] == nil || rows[0]["fragmentation"].(float64) <= rows[1]["fragmentation"].(float64) {
		t.Fatalf("budget must be more fragmented than chat: %v", rows)
	}
	list, _, err := m.List(ctx, true, 10, "")
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
	bySize, next, _ := m.List(ctx, false, 1, "")
	json.Unmarshal(bySize[0], &top)
	if top.ID != "chat" || next == "" {
		t.Fatalf("the biggest market is chat: %s, next %q", bySize[0], next)
	}
	// The next page starts after it, by its cursor; the one after is empty.
	bySize, next, _ = m.List(ctx, false, 1, next)
	json.Unmarshal(bySize[0], &top)
	if top.ID != "budget" || next == "" {
		t.Fatalf("the second market by size is budget: %s, next %q", bySize[0], next)
	}
	if rest, next, err := m.List(ctx, false, 1, next); len(rest) != 0 || next != "" || err != nil {
		t.Fatalf("past the last: %s %q %v", rest, next, err)
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
	// The same apps again, their ratings unchanged: no row written.
	rowsBefore := drv.TotalChanges(t)
	if err := HandleEvent(ctx, string(e), m, now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if w := drv.TotalChanges(t) - rowsBefore; w != 0 {
		t.Fatalf("unchanged scores wrote %d rows", w)
	}

	// D1 down: the message fails (and is retried by the queue).
	drv.FailNext.Store(1)
	if err := HandleEvent(ctx, string(e), m, now); err == nil {
		t.Fatal("a D1 failure must fail the message")
	}
}

// runChain handles bodies as the consumer does, following the events each
// sends, and returns the messages handled.
func runChain(t *testing.T, m *Markets, q *queue, now time.Time, bodies ...string) int {
	t.Helper()
	handled := 0
	for len(bodies) > 0 && handled < 20 {
		body := bodies[0]
		bodies = bodies[1:]
		if err := HandleEvent(context.Background(), body, m, now); err != nil {
			t.Fatalf("handle %s: %v", body, err)
		}
		handled++
		bodies = append(bodies, q.take()...)
	}
	return handled
}

func rankingsUpdated(now time.Time, kws ...string) string {
	b, _ := json.Marshal(events.NewKeyed(events.RankingsUpdated, kws, now)[0])
	return string(b)
}

// TestReclusteringWritesOnlyWhatChanged counts the rows a rankings-updated
// event writes through the whole chain (clustering, fragmentation,
// scores), triggers included: none when the keywords' rankings and
// ratings did not change; when one keyword gained an app, its cluster's
// row (its stats) and its score, two rows (and the index entries those
// touch: the row's idx_market_clusters_size, the score's
// idx_opportunity_scores_score and _computed): its membership is its
// ranking (migrations/0034), written by the search. Until then the
// membership was a row of its own (and its entry in
// idx_market_cluster_members_track); before, every re-clustering rewrote
// each cluster, all its members (a delete and an insert each), its
// fragmentation and its score: 1 + 2×members + 2 rows.
func TestReclusteringWritesOnlyWhatChanged(t *testing.T) {
	db, drv := d1test.New(t)
	seedMarkets(t, drv)
	q := &queue{}
	m := &Markets{DB: db, Events: q}
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

	before := drv.TotalChanges(t)
	if n := runChain(t, m, q, t0, rankingsUpdated(t0, "budget", "chat")); n != 3 {
		t.Fatalf("first clustering: %d messages", n)
	}
	// Two clusters (a row and the ledger counter's trigger each), two
	// scores (a row and the trigger each); until migrations/0034 the six
	// members were six rows more.
	if w := drv.TotalChanges(t) - before; w != 8 {
		t.Fatalf("first clustering wrote %d rows, want 8", w)
	}
	scoredAt := func(id string) string {
		return drv.Rows(t, `SELECT computed_at FROM opportunity_scores WHERE cluster_id = ?`, id)[0]["computed_at"].(string)
	}

	// The same rankings again: no row, no follow-up message.
	t1 := t0.Add(time.Hour)
	before = drv.TotalChanges(t)
	if n := runChain(t, m, q, t1, rankingsUpdated(t1, "budget", "chat")); n != 1 {
		t.Fatalf("unchanged rankings sent follow-ups: %d messages", n)
	}
	if w := drv.TotalChanges(t) - before; w != 0 {
		t.Fatalf("unchanged rankings wrote %d rows", w)
	}

	// budget gains an app: its cluster's stats, its score.
	drv.Exec(t, `INSERT INTO app_registry (track_id, name, rating_count, average_rating) VALUES (7, 'app', 2500, 3.5)`)
	drv.Exec(t, `INSERT INTO crawl_rankings (keyword, track_id, rank, seen_at) VALUES ('budget', 7, 4, '2026-11-23T13:00:00.000Z')`)
	t2 := t0.Add(2 * time.Hour)
	before = drv.TotalChanges(t)
	if n := runChain(t, m, q, t2, rankingsUpdated(t2, "budget", "chat")); n != 3 {
		t.Fatalf("a gained app: %d messages", n)
	}
	if w := drv.TotalChanges(t) - before; w != 2 {
		t.Fatalf("a gained app wrote %d rows, want 2 (cluster, score)", w)
	}
	if got := drv.Rows(t, `SELECT app_count, m.rank AS position FROM market_clusters c JOIN crawl_rankings m ON m.keyword = c.cluster_id AND m.track_id = 7`); len(got) != 1 || got[0]["app_count"] != 4.0 || got[0]["position"] != 4.0 {
		t.Fatalf("budget's new member: %v", got)
	}
	// The steering re-values the keywords of re-scored clusters: budget's
	// score moved, chat's did not (its computed_at stays).
	if scoredAt("budget") != d1.Time(t2) || scoredAt("chat") != d1.Time(t0) {
		t.Fatalf("computed_at: budget %s, chat %s", scoredAt("budget"), scoredAt("chat"))
	}
}

// TestScoreKeepsComputedAtUnlessTheScoreMoves: a score row whose other
// values changed is rewritten, but computed_at (the keyword steering's
// cursor) moves only with the score.
func TestScoreKeepsComputedAtUnlessTheScoreMoves(t *testing.T) {
	db, drv := d1test.New(t)
	ctx := context.Background()
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	c := Cluster{ID: "x", OpportunityScore: 0, Demand: 3.1, Fragmentation: 0, Quality: 0.2}
	if _, err := db.Exec(ctx, ScoreStatements([]Cluster{c}, t0)...); err != nil {
		t.Fatal(err)
	}
	c.Demand = 3.2 // a monopoly: more demand, still 0
	before := drv.TotalChanges(t)
	if _, err := db.Exec(ctx, ScoreStatements([]Cluster{c}, t0.Add(time.Hour))...); err != nil {
		t.Fatal(err)
	}
	row := drv.Rows(t, `SELECT demand, computed_at FROM opportunity_scores WHERE cluster_id = 'x'`)[0]
	if w := drv.TotalChanges(t) - before; w != 1 || row["demand"] != 3.2 || row["computed_at"] != d1.Time(t0) {
		t.Fatalf("%d rows, %v", w, row)
	}
	before = drv.TotalChanges(t)
	db.Exec(ctx, ScoreStatements([]Cluster{c}, t0.Add(2*time.Hour))...)
	if w := drv.TotalChanges(t) - before; w != 0 {
		t.Fatalf("the same score again wrote %d rows", w)
	}
}

// TestClusteringCronRepairsOnlyDrift: the cron checks every searched
// keyword and re-clusters only those whose stored market disagrees with
// their rankings (never clustered, a member replaced without its event, a
// score missing); a check that finds none writes its cursor alone. A rank
// that moved is no drift: the members are the rankings, the stats do not
// read ranks.
func TestClusteringCronRepairsOnlyDrift(t *testing.T) {
	db, drv := d1test.New(t)
	seedMarkets(t, drv)
	q := &queue{}
	m := &Markets{DB: db, Events: q}
	ctx := context.Background()
	t0 := time.Date(2026, 11, 23, 6, 0, 0, 0, time.UTC)
	cron := func(at time.Time, want string) (written int64, sent []string) {
		t.Helper()
		before := drv.TotalChanges(t)
		summary, err := m.Cluster(ctx, at)
		if err != nil || summary != want {
			t.Fatalf("cluster: %q %v, want %q", summary, err, want)
		}
		written = drv.TotalChanges(t) - before
		sent = q.take()
		runChain(t, m, q, at, sent...)
		return written, sent
	}
	// Never clustered: both, announced for analysis and scores.
	_, sent := cron(t0, `2 keywords checked from "", 2 re-clustered`)
	var ev events.Event
	if len(sent) != 1 || json.Unmarshal([]byte(sent[0]), &ev) != nil || ev.Type != events.ClustersReady || fmt.Sprint(ev.Clusters) != "[budget chat]" {
		t.Fatalf("clusters-ready: %v", sent)
	}
	if n := drv.Int(t, `SELECT count(*) FROM opportunity_scores`); n != 2 {
		t.Fatalf("scores: %d", n)
	}
	// Fewer than a run's keywords: the end, so the cursor wraps; from the
	// start back to the start is no move, so no cursor row is written.
	if n := drv.Int(t, `SELECT count(*) FROM sweep_cursors WHERE name = ? AND cursor != ''`, ClusterCursor); n != 0 {
		t.Fatalf("cursor: %v", drv.Rows(t, `SELECT * FROM sweep_cursors`))
	}
	// Nothing drifted: no row at all.
	if w, sent := cron(t0.Add(6*time.Hour), `2 keywords checked from "", 0 re-clustered`); w != 0 || len(sent) != 0 {
		t.Fatalf("a clean check wrote %d rows, sent %v", w, sent)
	}
	// chat's ranks moved: no drift.
	drv.Exec(t, `UPDATE crawl_rankings SET rank = 4 - rank WHERE keyword = 'chat' AND track_id IN (4, 6)`)
	if w, sent := cron(t0.Add(7*time.Hour), `2 keywords checked from "", 0 re-clustered`); w != 0 || len(sent) != 0 {
		t.Fatalf("moved ranks: %d rows, sent %v", w, sent)
	}
	// chat's app 6 replaced by app 7 (as many apps: the count holds) and
	// its event lost; budget's score is gone.
	drv.Exec(t, `INSERT INTO app_registry (track_id, name, rating_count, average_rating) VALUES (7, 'app', 700, 3.1)`)
	drv.Exec(t, `UPDATE crawl_rankings SET track_id = 7 WHERE keyword = 'chat' AND track_id = 6`)
	drv.Exec(t, `DELETE FROM opportunity_scores WHERE cluster_id = 'budget'`)
	if _, sent := cron(t0.Add(12*time.Hour), `2 keywords checked from "", 2 re-clustered`); len(sent) != 1 {
		t.Fatalf("repairs not announced: %v", sent)
	}
	if got := drv.Rows(t, `SELECT total_ratings, member_sum FROM market_clusters WHERE cluster_id = 'chat'`); fmt.Sprint(got) != "[map[member_sum:16 total_ratings:2.0017e+06]]" {
		t.Fatalf("chat's stats: %v", got)
	}
	if n := drv.Int(t, `SELECT count(*) FROM opportunity_scores`); n != 2 {
		t.Fatalf("budget's score not restored: %d scores", n)
	}
	if w, _ := cron(t0.Add(18*time.Hour), `2 keywords checked from "", 0 re-clustered`); w != 0 {
		t.Fatalf("after the repair: %d rows", w)
	}
}

// TestClusteringCronCoversItsBatchAndWraps: a run checks
// ClusterBatchKeywords keywords past its cursor and the next run goes on
// from there, wrapping at the end.
func TestClusteringCronCoversItsBatchAndWraps(t *testing.T) {
	db, drv := d1test.New(t)
	drv.Exec(t, `INSERT INTO crawl_keywords (keyword, source, created_at, searched_at)
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < ?)
SELECT printf('kw%06d', i), 'title', '2026-11-01T00:00:00.000Z', '2026-11-01T00:00:00.000Z' FROM n`, ClusterBatchKeywords+10)
	m := &Markets{DB: db, Events: &queue{}}
	ctx, cost := d1.WithCost(context.Background())
	now := time.Date(2026, 11, 23, 6, 0, 0, 0, time.UTC)
	summary, err := m.Cluster(ctx, now)
	if want := fmt.Sprintf(`%d keywords checked from "", 0 re-clustered`, ClusterBatchKeywords); err != nil || summary != want {
		t.Fatalf("first run: %q %v, want %q", summary, err, want)
	}
	// A read a chunk, the cursor and its write: far under D1's 1,000 queries.
	if q := cost.View().Queries; q != ClusterBatchKeywords/ClusterCheckChunk+2 {
		t.Fatalf("queries: %d", q)
	}
	last := fmt.Sprintf("kw%06d", ClusterBatchKeywords-1)
	if c := drv.Rows(t, `SELECT cursor FROM sweep_cursors WHERE name = ?`, ClusterCursor)[0]["cursor"]; c != last {
		t.Fatalf("cursor: %v, want %s", c, last)
	}
	if summary, err := m.Cluster(ctx, now.Add(6*time.Hour)); err != nil || summary != fmt.Sprintf(`10 keywords checked from %q, 0 re-clustered`, last) {
		t.Fatalf("second run: %q %v", summary, err)
	}
	if c := drv.Rows(t, `SELECT cursor FROM sweep_cursors WHERE name = ?`, ClusterCursor)[0]["cursor"]; c != "" {
		t.Fatalf("cursor: %v", c)
	}
}
