//go:build !js

package datasets

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"storecrawl/worker/d1"
	"storecrawl/worker/d1/d1test"
)

// memBucket is an R2 bucket in memory.
type memBucket struct {
	mu   sync.Mutex
	objs map[string][]byte
	puts int
}

func (b *memBucket) Put(_ context.Context, key string, body []byte, _ string, _ map[string]string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.objs == nil {
		b.objs = map[string][]byte{}
	}
	b.objs[key] = bytes.Clone(body)
	b.puts++
	return nil
}

func (b *memBucket) Get(_ context.Context, key string) ([]byte, bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	v, ok := b.objs[key]
	return v, ok, nil
}

// Catalogue sizes: more apps than a part holds, more rows than a run reads.
const (
	seedApps     = 2*PartRows + 4_321
	seedKeywords = 3_000
	seedRanks    = 10 // per keyword
	seedSegments = 40
	seedDays     = 35
	seedReviews  = 5_000
)

func seed(t *testing.T, drv *d1test.Driver, from int) {
	t.Helper()
	drv.Exec(t, `WITH RECURSIVE n(i) AS (SELECT ?1 UNION ALL SELECT i + 1 FROM n WHERE i < ?1 + ?2 - 1)
INSERT INTO app_registry (track_id, name, developer_name, genre, price, average_rating, rating_count, rating_histogram, languages, enrichment_source, enriched_at, html_r2_key)
SELECT i, 'App ' || i, 'Dev ' || (i % 97), 'Games', 0.99 * (i % 3), 3 + (i % 20) / 10.0, i * 7, '[5,4,3,2,1]', '["EN"]',
  CASE WHEN i % 10 = 0 THEN 'failed' ELSE 'itunes+store' END, '2026-11-01T00:00:00.000Z', 'store-pages/secret-' || i FROM n`, from, seedApps)
}

func fixture(t *testing.T) (*d1.DB, *d1test.Driver) {
	db, drv := d1test.New(t)
	seed(t, drv, 1)
	drv.Exec(t, `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?1)
INSERT INTO crawl_keywords (id, keyword, source, created_at, searched_at, result_count, popularity) SELECT i, 'kw ' || i, 'title', '2026-10-01T00:00:00.000Z', '2026-11-01T00:00:00.000Z', 50, i % 100 FROM n`, seedKeywords)
	drv.Exec(t, `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?1 * ?2)
INSERT INTO crawl_rankings (keyword, track_id, rank, seen_at) SELECT 'kw ' || (1 + (i - 1) / ?2), 1 + (i * 7919) % ?3, 1 + (i - 1) % ?2, '2026-11-01T00:00:00.000Z' FROM n`, seedKeywords, seedRanks, seedApps)
	drv.Exec(t, `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?1)
INSERT INTO segments (id, name, keyword_count, app_count, total_ratings, avg_rating, demand, hhi, fragmentation, quality_gap, opportunity, apps, created_at, updated_at)
SELECT i, 'kw ' || i, 3, 5, 1000, 4.1, 3.2, 0.3, 0.7, 0.1, i, '[{"track_id":1,"share":0.5}]', '2026-11-01T00:00:00.000Z', '2026-11-01T00:00:00.000Z' FROM n`, seedSegments)
	drv.Exec(t, `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?1)
INSERT INTO segment_keywords (keyword, segment_id, top_sum) SELECT 'kw ' || i, CASE WHEN i % 5 = 0 THEN NULL ELSE 1 + i % ?2 END, i FROM n`, seedKeywords, seedSegments)
	drv.Exec(t, `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ?1 * ?2 - 1)
INSERT INTO segment_snapshots (segment_id, day, keyword_count, total_ratings, demand, opportunity, apps)
SELECT 1 + i / ?2, date('2026-10-01', '+' || (i % ?2) || ' days'), 3, 1000 + i, 3.2, 40, '[1,2]' FROM n`, seedSegments, seedDays)
	drv.Exec(t, `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?1)
INSERT INTO app_reviews (id, app_id, country, rating, title, body, version, author_hash, reviewed_at, sentiment, fetched_at)
SELECT 'r' || i, 1 + i % 50, 'us', 1 + i % 5, 'Title ' || i, 'Body "quoted" ' || i || char(10) || 'line two', '1.0', 'hash' || i, '2026-11-01T00:00:00.000Z', (i % 3 - 1) / 2.0, '2026-11-02T00:00:00.000Z' FROM n`, seedReviews)
	return db, drv
}

// TestSnapshotRoundTripsAndIsBounded: the snapshot runs in bounded runs
// (at most MaxQueriesPerRun page reads, one row read per row exported, no
// D1 row written), its parts gunzip to one JSON object a line with the
// manifest's columns, their counts match the manifest and the tables, the
// keys run in order across parts, and a second run the same day reads
// nothing.
func TestSnapshotRoundTripsAndIsBounded(t *testing.T) {
	db, drv := fixture(t)
	b := &memBucket{}
	s := Snapshotter{DB: db, Bucket: b}
	now := time.Date(2026, 11, 29, 4, 0, 0, 0, time.UTC)
	before := drv.TotalChanges(t)
	var runs int
	var exported, read int64
	for {
		runs++
		if runs > 20 {
			t.Fatal("the snapshot did not finish in 20 runs")
		}
		ctx, cost := d1.WithCost(context.Background())
		r, err := s.Run(ctx, now.Add(time.Duration(runs)*SnapshotEvery))
		if err != nil {
			t.Fatalf("run %d: %v", runs, err)
		}
		c := cost.View()
		t.Logf("run %d: %+v; %d queries, %d rows read", runs, r, c.Queries, c.RowsRead)
		if r.Queries > MaxQueriesPerRun || int(c.Queries) != r.Queries {
			t.Fatalf("run %d: %d page reads, %d D1 queries; bound %d", runs, r.Queries, c.Queries, MaxQueriesPerRun)
		}
		if c.RowsRead != r.Rows {
			t.Fatalf("run %d: %d rows read for %d rows exported", runs, c.RowsRead, r.Rows)
		}
		exported += r.Rows
		read += c.RowsRead
		if r.Finished {
			break
		}
	}
	if w := drv.TotalChanges(t) - before; w != 0 {
		t.Fatalf("the snapshot wrote %d D1 rows", w)
	}

	raw, found, err := s.File(context.Background(), "2026-11-29", "manifest.json")
	if err != nil || !found {
		t.Fatalf("manifest: %v %v", found, err)
	}
	var m Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	names := []string{}
	var total int64
	for _, tm := range m.Tables {
		names = append(names, tm.Name)
		total += tm.Rows
		tbl := Tables[slices.IndexFunc(Tables, func(x Table) bool { return x.Name == tm.Name })]
		where := ""
		if tbl.Filter != "" {
			where = " WHERE " + tbl.Filter
		}
		if want := drv.Int(t, "SELECT COUNT(*) FROM "+tbl.Source+where); tm.Rows != want || want == 0 {
			t.Errorf("%s: manifest %d rows, the table %d", tm.Name, tm.Rows, want)
		}
		cols := make([]string, len(tm.Schema))
		for i, c := range tm.Schema {
			cols[i] = c.Name
			if c.Type == "" {
				t.Errorf("%s.%s has no type", tm.Name, c.Name)
			}
		}
		var sum int64
		var lastKey any
		for i, f := range tm.Files {
			if want := fmt.Sprintf("%s-%04d.ndjson.gz", tm.Name, i+1); f.Name != want || f.Path != "datasets/2026-11-29/"+want || f.URL != "/v1/datasets/2026-11-29/"+want {
				t.Errorf("%s part %d: %+v", tm.Name, i, f)
			}
			body, found, _ := s.File(context.Background(), "2026-11-29", f.Name)
			if !found || int64(len(body)) != f.Bytes {
				t.Fatalf("%s: %d bytes stored, manifest %d", f.Name, len(body), f.Bytes)
			}
			zr, err := gzip.NewReader(bytes.NewReader(body))
			if err != nil {
				t.Fatalf("%s: %v", f.Name, err)
			}
			sc := bufio.NewScanner(zr)
			sc.Buffer(nil, 1<<20)
			var n int64
			for sc.Scan() {
				n++
				dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
				dec.UseNumber()
				var row map[string]any
				if err := dec.Decode(&row); err != nil {
					t.Fatalf("%s line %d: %v: %s", f.Name, n, err, sc.Bytes())
				}
				keys := make([]string, 0, len(row))
				for k := range row {
					keys = append(keys, k)
				}
				if !sameSet(keys, cols) {
					t.Fatalf("%s line %d: columns %v, manifest %v", f.Name, n, keys, cols)
				}
				if len(tbl.Key) == 1 {
					k := row[tbl.Key[0]]
					if lastKey != nil && !less(lastKey, k) {
						t.Fatalf("%s line %d: key %v after %v", f.Name, n, k, lastKey)
					}
					lastKey = k
				}
			}
			if err := sc.Err(); err != nil {
				t.Fatal(err)
			}
			if n != f.Rows || n > PartRows {
				t.Fatalf("%s: %d lines, manifest %d", f.Name, n, f.Rows)
			}
			sum += n
		}
		if sum != tm.Rows {
			t.Errorf("%s: parts hold %d rows, manifest %d", tm.Name, sum, tm.Rows)
		}
	}
	if !slices.Equal(names, []string{"apps", "keywords", "keyword_ranks", "segments", "segment_keywords", "segment_snapshots", "reviews"}) || total != exported || read != exported {
		t.Fatalf("tables %v: %d rows in the manifest, %d exported, %d read", names, total, exported, read)
	}
	if apps := m.Tables[0]; len(apps.Files) != 3 || apps.Rows != seedApps-seedApps/10 {
		t.Fatalf("apps: %d parts, %d rows", len(apps.Files), apps.Rows)
	}
	for _, secret := range []string{"html_r2_key", "store-pages/", "author_hash", "hash1"} {
		for k, v := range b.objs {
			if strings.HasSuffix(k, ".gz") {
				zr, _ := gzip.NewReader(bytes.NewReader(v))
				var out bytes.Buffer
				out.ReadFrom(zr)
				if strings.Contains(out.String(), secret) {
					t.Fatalf("%s holds %q", k, secret)
				}
			}
		}
	}
	t.Logf("%d runs: %d rows exported, %d rows read, 0 written; %d R2 puts", runs, exported, read, b.puts)

	// Listed; the same day again reads nothing; the next day starts anew.
	list, _ := s.Manifests(context.Background())
	if len(list) != 1 || !bytes.Equal(list[0], raw) {
		t.Fatalf("index: %s", list)
	}
	ctx, cost := d1.WithCost(context.Background())
	if r, err := s.Run(ctx, now.Add(10*time.Hour)); err != nil || !r.Idle || cost.View().Queries != 0 {
		t.Fatalf("the same day again: %+v %v, %d queries", r, err, cost.View().Queries)
	}
	if r, _ := s.Run(context.Background(), now.Add(24*time.Hour)); r.Date != "2026-11-30" || r.Rows == 0 {
		t.Fatalf("the next day: %+v", r)
	}
	if _, _, err := s.File(context.Background(), "2026-11-29", "../progress.json"); err != ErrBadName {
		t.Fatalf("a path out of the snapshot: %v", err)
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func less(a, b any) bool {
	if x, ok := a.(json.Number); ok {
		y := b.(json.Number)
		xi, _ := x.Int64()
		yi, _ := y.Int64()
		return xi < yi
	}
	return a.(string) < b.(string)
}

// TestPagesDoNotGrowWithTheirTables: each table's page read seeks its key
// (no walk) and costs the same work when the table is ten times larger.
func TestPagesDoNotGrowWithTheirTables(t *testing.T) {
	db, drv := d1test.New(t)
	_ = db
	for _, tbl := range Tables {
		if len(tbl.pageSQL()) == 0 {
			t.Fatal(tbl.Name)
		}
	}
	seed(t, drv, 1)
	const page = 500
	mid := append(Tables[0].firstKey()[:0], any(int64(1000)), any(int64(page)))
	small := drv.Measure(t, Tables[0].pageSQL(), mid...)
	seed(t, drv, 10*seedApps)
	seed(t, drv, 20*seedApps)
	large := drv.Measure(t, Tables[0].pageSQL(), mid...)
	t.Logf("apps page of %d after track id 1000: %+v at %d apps, %+v at %d", page, small, seedApps, large, 3*seedApps)
	if small.Walked != 0 || large.Walked != 0 || small.Rows != page || large.VMSteps != small.VMSteps {
		t.Fatalf("the apps page grew with the table: %+v then %+v", small, large)
	}
	for _, tbl := range Tables {
		args := append(tbl.firstKey(), page)
		w := drv.Measure(t, tbl.pageSQL(), args...)
		if w.Walked != 0 {
			t.Errorf("%s: the page walks its table: %+v\n%s", tbl.Name, w, tbl.pageSQL())
		}
	}
}
