//go:build !js

package catalogue

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"storecrawl/worker/d1"
)

// The readers as they were before migrations/0035 (commit 8200455): the
// history API's SQL, a search's rank changes, the catalogue sweep's read.
// TestCompactHistoryKeepsAnswers writes history through them (and the
// schema's triggers) on migrations up to 0034, applies 0035, and holds the
// new readers' answers to theirs, byte for byte.
const oldHistSQL = `SELECT json_object(
  'track_id', r.track_id, 'name', r.name,
  'current', json_object('rating_count', r.rating_count, 'average_rating', r.average_rating, 'version', r.version,
    'price', r.price, 'currency', r.currency, 'rating_velocity_7d', r.rating_velocity_7d,
    'rating_velocity_30d', r.rating_velocity_30d, 'refresh_tier', r.refresh_tier, 'next_refresh_at', NULL,
    'enriched_at', r.enriched_at, 'last_seen_at', r.last_seen_at, 'stale_at', r.stale_at),
  'ratings', (SELECT json_group_array(json_object('at', taken_at, 'rating_count', rating_count, 'average_rating', average_rating, 'source', COALESCE(source, 'sweep')))
    FROM (SELECT taken_at, rating_count, average_rating, source FROM app_snapshots WHERE track_id = ?1 AND taken_at >= ?2
      UNION ALL SELECT COALESCE(r.values_at, r.discovered_at), r.rating_count, r.average_rating, 'observed'
      WHERE r.rating_count IS NOT NULL AND COALESCE(r.values_at, r.discovered_at) >= ?2
        AND NOT EXISTS (SELECT 1 FROM app_snapshots WHERE track_id = ?1 AND source IS NOT NULL)
      ORDER BY taken_at DESC LIMIT ?4)),
  'versions', (SELECT json_group_array(json_object('at', seen_at, 'version', version, 'release_date', release_date, 'release_notes', release_notes))
    FROM (SELECT seen_at, version, release_date, release_notes FROM app_version_history WHERE track_id = ?1 AND seen_at >= ?2
      UNION ALL SELECT COALESCE(r.values_at, r.discovered_at), r.version, r.current_version_release_date, r.release_notes
      WHERE r.version IS NOT NULL AND r.version <> '' AND COALESCE(r.values_at, r.discovered_at) >= ?2
        AND NOT EXISTS (SELECT 1 FROM app_version_history WHERE track_id = ?1)
      ORDER BY seen_at DESC LIMIT ?4)),
  'prices', (SELECT json_group_array(json_object('at', seen_at, 'price', price, 'currency', currency))
    FROM (SELECT seen_at, price, currency FROM app_price_history WHERE track_id = ?1 AND seen_at >= ?2
      UNION ALL SELECT COALESCE(r.values_at, r.discovered_at), r.price, r.currency
      WHERE r.price IS NOT NULL AND COALESCE(r.values_at, r.discovered_at) >= ?2
        AND NOT EXISTS (SELECT 1 FROM app_price_history WHERE track_id = ?1)
      ORDER BY seen_at DESC LIMIT ?4)),
  'keyword_ranks', (SELECT json_group_array(json_object('day', day, 'keyword', keyword, 'rank', rank))
    FROM (SELECT day, keyword, rank FROM keyword_rank_history WHERE track_id = ?1 AND day >= ?3
      UNION ALL
      SELECT day, keyword, rank FROM (SELECT max(day) AS day, keyword, rank FROM keyword_rank_history
        WHERE track_id = ?1 AND day < ?3 GROUP BY keyword) WHERE rank IS NOT NULL
      UNION ALL
      SELECT substr(k.seen_at, 1, 10), k.keyword, k.rank FROM crawl_rankings k
        LEFT JOIN (SELECT keyword, max(day) AS day, rank FROM keyword_rank_history WHERE track_id = ?1 GROUP BY keyword) l
          ON l.keyword = k.keyword
        WHERE k.track_id = ?1 AND (l.keyword IS NULL OR (l.day < substr(k.seen_at, 1, 10) AND l.rank IS NOT k.rank))
      ORDER BY day DESC, keyword LIMIT ?4)),
  'chart_ranks', (SELECT json_group_array(json_object('at', seen_at, 'country', country, 'collection', collection, 'genre_id', genre_id, 'rank', rank))
    FROM (SELECT * FROM chart_position_history WHERE track_id = ?1 AND seen_at >= ?2 ORDER BY seen_at DESC LIMIT ?4))
) AS record, COALESCE(r.refresh_tier, '') AS tier, r.refresh_retry_at AS retry_at
FROM app_registry r WHERE r.track_id = ?1`
const oldRankSQL = `WITH s AS (SELECT json_extract(value, '$[0]') AS id, json_extract(value, '$[1]') AS rank FROM json_each(?3))
INSERT INTO keyword_rank_history (track_id, keyword, day, rank)
SELECT r.track_id, ?1, substr(r.seen_at, 1, 10), r.rank FROM crawl_rankings r LEFT JOIN s ON s.id = r.track_id
WHERE r.keyword = ?1 AND r.rank IS NOT s.rank AND substr(r.seen_at, 1, 10) < ?2
UNION ALL
SELECT s.id, ?1, ?2, s.rank FROM s LEFT JOIN crawl_rankings r ON r.keyword = ?1 AND r.track_id = s.id
WHERE r.rank IS NOT s.rank
  AND (r.rank IS NOT NULL OR EXISTS (SELECT 1 FROM keyword_rank_history h WHERE h.track_id = s.id AND h.day = ?2 AND h.keyword = ?1))
UNION ALL
SELECT r.track_id, ?1, ?2, NULL FROM crawl_rankings r WHERE r.keyword = ?1 AND r.track_id NOT IN (SELECT id FROM s)
ON CONFLICT (track_id, day, keyword) DO UPDATE SET rank = excluded.rank
WHERE keyword_rank_history.rank IS NOT excluded.rank`
const oldSweepSelect = `SELECT r.track_id AS track_id, COALESCE(r.rating_count, 0) AS ratings, r.enriched_at AS enriched_at,
  %[1]s AS observed_at, COALESCE(r.refresh_tier, '') AS tier, r.rating_velocity_7d AS v7, r.rating_velocity_30d AS v30,
  EXISTS (SELECT 1 FROM chart_positions c WHERE c.track_id = r.track_id) AS in_charts,
  COALESCE((SELECT max(o.score) FROM crawl_rankings m JOIN opportunity_scores o ON o.cluster_id = m.keyword
    WHERE m.track_id = r.track_id), 0) AS cluster_score,
  COALESCE((SELECT json_array(s.taken_at, s.rating_count) FROM app_snapshots s WHERE s.track_id = r.track_id AND s.source IS NOT NULL
    AND s.taken_at <= strftime('%%Y-%%m-%%dT%%H:%%M:%%fZ', %[1]s, ?1) ORDER BY s.taken_at DESC LIMIT 1),
    CASE WHEN COALESCE(r.values_at, r.discovered_at) <= strftime('%%Y-%%m-%%dT%%H:%%M:%%fZ', %[1]s, ?1) THEN %[3]s END) AS before_7d,
  COALESCE((SELECT json_array(s.taken_at, s.rating_count) FROM app_snapshots s WHERE s.track_id = r.track_id AND s.source IS NOT NULL
    AND s.taken_at <= strftime('%%Y-%%m-%%dT%%H:%%M:%%fZ', %[1]s, ?2) ORDER BY s.taken_at DESC LIMIT 1),
    CASE WHEN COALESCE(r.values_at, r.discovered_at) <= strftime('%%Y-%%m-%%dT%%H:%%M:%%fZ', %[1]s, ?2) THEN %[3]s END) AS before_30d,
  COALESCE((SELECT json_array(s.taken_at, s.rating_count) FROM app_snapshots s WHERE s.track_id = r.track_id AND s.source IS NOT NULL
    ORDER BY s.taken_at LIMIT 1), %[3]s) AS first_obs
FROM app_registry r %[2]s`
const oldObsAt = `max(COALESCE(r.observed_at, ''), COALESCE(r.updated_at, ''), COALESCE(r.enriched_at, ''))`
const oldFirstObs = `(SELECT json_array(COALESCE(r.values_at, r.discovered_at), r.rating_count) WHERE r.rating_count IS NOT NULL
    AND NOT EXISTS (SELECT 1 FROM app_snapshots s WHERE s.track_id = r.track_id AND s.source IS NOT NULL))`

func TestCompactHistoryKeepsAnswers(t *testing.T) {
	db, err := sql.Open("sqlite", "file:compacthistory?mode=memory&cache=shared")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	defer db.Close()
	files, _ := filepath.Glob("../../migrations/[0-9]*.sql")
	sort.Strings(files)
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := db.Exec(q, args...); err != nil {
			t.Fatalf("%v\n%.200s", err, q)
		}
	}
	var last string
	for _, f := range files {
		if filepath.Base(f) >= "0035" {
			last = f
			break
		}
		b, _ := os.ReadFile(f)
		exec(string(b))
	}
	t0 := time.Date(2026, 10, 1, 9, 30, 15, 123_000_000, time.UTC)
	for id := int64(1); id <= 3; id++ {
		at := d1.Time(t0.Add(time.Duration(id) * 1234567 * time.Millisecond))
		exec(`INSERT INTO app_registry (track_id, name, rating_count, average_rating, version, current_version_release_date, release_notes, price, currency,
  enrichment_source, enriched_at, updated_at, discovered_at, values_at, page_status) VALUES (?1, 'A', 100, 4.5123, '1.0', '2026-09-01T07:00:00Z', 'notes 1', 0, 'USD',
  'itunes+store', ?2, ?2, ?2, ?2, 'parsed')`, id, at)
	}
	// App 1 changes twice; app 2 once, to a release date not in the
	// upstream's ISO form; app 3 has a sweep's copy and a 'lookup' row.
	for i, at := range []time.Time{t0.Add(2*24*time.Hour + 7*time.Millisecond), t0.Add(5*24*time.Hour + 999*time.Millisecond)} {
		exec(`UPDATE app_registry SET rating_count = rating_count + 5, average_rating = 4.6789, version = ?2, current_version_release_date = ?3,
  release_notes = 'n', price = price + 1, observed_at = ?4 WHERE track_id = ?1`, 1, fmt.Sprintf("1.%d", i+1), "2026-10-0"+fmt.Sprint(i+2)+"T08:00:00Z", d1.Time(at))
	}
	exec(`UPDATE app_registry SET rating_count = 300, version = '2.0', current_version_release_date = '2026-10-03', observed_at = ? WHERE track_id = 2`, d1.Time(t0.Add(3*24*time.Hour)))
	exec(`INSERT INTO app_snapshots (track_id, taken_at, rating_count, average_rating, source) VALUES (3, ?, 100, 4.5, NULL), (3, ?, 101, 4.5, 'lookup')`,
		d1.Time(t0.Add(-24*time.Hour)), d1.Time(t0.Add(-48*time.Hour)))
	for _, kw := range []string{"budget", "chat"} {
		exec(`INSERT INTO crawl_keywords (keyword, source, created_at) VALUES (?, 'title', ?)`, kw, d1.Time(t0))
	}
	search := func(day int, kw string, ranks map[int64]int) {
		now := t0.Add(time.Duration(day) * 24 * time.Hour)
		pairs := "["
		for id, r := range ranks {
			if pairs != "[" {
				pairs += ","
			}
			pairs += fmt.Sprintf("[%d,%d]", id, r)
		}
		pairs += "]"
		exec(oldRankSQL, kw, now.UTC().Format("2006-01-02"), pairs)
		exec(`DELETE FROM crawl_rankings WHERE keyword = ? AND track_id NOT IN (SELECT value ->> 0 FROM json_each(?))`, kw, pairs)
		for id, r := range ranks {
			exec(`INSERT INTO crawl_rankings (keyword, track_id, rank, seen_at) VALUES (?, ?, ?, ?)
ON CONFLICT (keyword, track_id) DO UPDATE SET rank = excluded.rank, seen_at = excluded.seen_at WHERE crawl_rankings.rank IS NOT excluded.rank`, kw, id, r, d1.Time(now))
		}
	}
	search(-40, "budget", map[int64]int{1: 1, 2: 2})
	search(-40, "chat", map[int64]int{1: 3})
	search(-20, "budget", map[int64]int{1: 2, 2: 1})
	search(-10, "chat", map[int64]int{2: 1})
	now := t0.Add(6 * 24 * time.Hour)
	query := func(q string, args ...any) string {
		t.Helper()
		rows, err := db.Query(q, args...)
		if err != nil {
			t.Fatalf("%v", err)
		}
		defer rows.Close()
		cols, _ := rows.Columns()
		out := ""
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			rows.Scan(ptrs...)
			out += fmt.Sprintln(vals...)
		}
		return out
	}
	oldAnswers := map[string]string{}
	for _, days := range []int{3, 15, 30, 90} {
		since := now.Add(-time.Duration(days) * 24 * time.Hour)
		for id := int64(1); id <= 3; id++ {
			oldAnswers[fmt.Sprint(id, days)] = query(oldHistSQL, id, d1.Time(since), since.UTC().Format("2006-01-02"), 100)
		}
	}
	oldSweep := query(fmt.Sprintf(oldSweepSelect, oldObsAt, `WHERE r.track_id > ?3 ORDER BY r.track_id LIMIT ?4`, oldFirstObs), "-604800 seconds", "-2592000 seconds", 0, 10)
	b, _ := os.ReadFile(last)
	exec(string(b))
	for _, days := range []int{3, 15, 30, 90} {
		since := now.Add(-time.Duration(days) * 24 * time.Hour)
		for id := int64(1); id <= 3; id++ {
			got := query(appHistorySQL, id, Millis(since), Day(since), 100)
			if got != oldAnswers[fmt.Sprint(id, days)] {
				t.Errorf("app %d %d days:\nold %s\nnew %s", id, days, oldAnswers[fmt.Sprint(id, days)], got)
			}
		}
	}
	// The facts added since (a top segment's) are not the compaction's.
	newSweep := query(fmt.Sprintf(strings.Replace(sweepSelect, topSegmentFact, "", 1), obsAt, `WHERE r.track_id > ?3 ORDER BY r.track_id LIMIT ?4`, firstObs), "-604800 seconds", "-2592000 seconds", 0, 10)
	if newSweep != oldSweep {
		t.Errorf("sweep:\nold %s\nnew %s", oldSweep, newSweep)
	}
}
