//go:build !js

package markets

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"storecrawl/worker/d1"
	"storecrawl/worker/d1/d1test"
	"storecrawl/worker/events"
)

// Shape of a crawl cycle that searched (the scale bench at 1.1M apps,
// docs/scale.md): 88 keywords, ~3,900 results, 44 a keyword.
const (
	cycleKeywords       = 88
	resultsPerKeyword   = 44
	catalogueAppsInTest = 5000
)

// TestRowsPerRankingsUpdated counts what one rankings-updated event costs
// through its whole chain (clustering, fragmentation, scores) at a crawl
// cycle's shape: statements (D1 queries) and rows written, triggers
// included (go test ./worker/markets -run TestRowsPerRankingsUpdated -v
// prints them). The same 88 keywords in the code before this design
// cost 4,227 statements and 8,008 rows whether or not anything changed
// (each cluster's row, a delete and an insert a member, fragmentation and
// score); the scale bench logged 4,400–6,100 queries and 10,000–16,000
// rows a batch (D1 adds the index entries).
func TestRowsPerRankingsUpdated(t *testing.T) {
	db, drv := d1test.New(t)
	drv.Exec(t, `INSERT INTO app_registry (track_id, name, rating_count, average_rating)
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
SELECT i, 'app', i * 37 % 10000, 3 + (i % 20) / 10.0 FROM n`, catalogueAppsInTest)
	var kws []string
	for k := range cycleKeywords {
		kw := fmt.Sprintf("kw%03d", k)
		kws = append(kws, kw)
		drv.Exec(t, `INSERT INTO crawl_keywords (keyword, source, created_at, searched_at) VALUES (?, 'title', '2026-11-01T00:00:00.000Z', '2026-11-01T00:00:00.000Z')`, kw)
		drv.Exec(t, `INSERT INTO crawl_rankings (keyword, track_id, rank, seen_at)
WITH RECURSIVE n(j) AS (SELECT 0 UNION ALL SELECT j + 1 FROM n WHERE j + 1 < ?)
SELECT ?, 1 + (? * 131 + j * 17) % ?, j + 1, '2026-11-01T00:00:00.000Z' FROM n`, resultsPerKeyword, kw, k, catalogueAppsInTest)
	}
	q := &queue{}
	m := &Markets{DB: db, Events: q}
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	ev, _ := json.Marshal(events.NewKeyed(events.RankingsUpdated, kws, now)[0])
	run := func(what string, maxStatements, rows int64) {
		t.Helper()
		now = now.Add(5 * time.Minute)
		ctx, cost := d1.WithCost(context.Background())
		before := drv.TotalChanges(t)
		bodies, msgs := []string{string(ev)}, 0
		for len(bodies) > 0 {
			if err := HandleEvent(ctx, bodies[0], m, now); err != nil {
				t.Fatal(err)
			}
			msgs++
			bodies = append(bodies[1:], q.take()...)
		}
		c := cost.View()
		written := drv.TotalChanges(t) - before
		t.Logf("%s: %d messages, %d statements, %d rows written, %d rows returned", what, msgs, c.Queries, written, c.RowsRead)
		if c.Queries > maxStatements || written != rows {
			t.Errorf("%s: %d statements (at most %d), %d rows written (want %d)", what, c.Queries, maxStatements, written, rows)
		}
	}
	// New: each cluster's row and counter, its score and counter; its
	// members are its rankings (migrations/0034: until then a row each,
	// 4,224 rows here).
	run("first clustering", 8, cycleKeywords*(2+2))
	run("the same rankings again", 2, 0)
	drv.Exec(t, `INSERT INTO crawl_rankings (keyword, track_id, rank, seen_at) VALUES ('kw000', ?, ?, '2026-11-01T00:00:00.000Z')`, catalogueAppsInTest, resultsPerKeyword+1)
	run("one keyword gained an app", 8, 2)
	// Every app's rating moved: every cluster's stats, the scores whose
	// 3-decimal value moved (nine here); no membership.
	drv.Exec(t, `UPDATE app_registry SET rating_count = rating_count + 1`)
	run("every app's rating count +1", 8, cycleKeywords+9)

	// The clustering cron's check of those keywords, current: no row (its
	// cursor wraps from the start back to the start, which is no move; before: every keyword re-clustered, 4,052 statements and 7,835
	// rows for these 88; the bench's 200-keyword runs wrote 21,336).
	ctx, cost := d1.WithCost(context.Background())
	before := drv.TotalChanges(t)
	summary, err := m.Cluster(ctx, now)
	written := drv.TotalChanges(t) - before
	t.Logf("clustering cron: %s: %d statements, %d rows written", summary, cost.View().Queries, written)
	if err != nil || written != 0 || cost.View().Queries != 2 {
		t.Errorf("clustering cron: %v, %d statements, %d rows written (want 2 and 0)", err, cost.View().Queries, written)
	}
}
