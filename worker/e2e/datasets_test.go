//go:build integration

package e2e

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"storecrawl/internal/devstack"
)

// TestDatasetSnapshotInLocalR2 runs the dataset-snapshot task on wrangler
// dev's local D1 and R2 over a seeded catalogue, then reads the snapshot
// back as a user does: GET /v1/datasets for the manifest, each part by its
// url, gunzipped, one JSON object a line, as many as the manifest says;
// then DuckDB runs docs/explorer.md's queries over the downloaded parts.
func TestDatasetSnapshotInLocalR2(t *testing.T) {
	t.Parallel()
	dir := outputDir(t)
	s := startSim(t, dir)
	persist := filepath.Join(dir, "state")
	prepareDB(t, persist, dir, 0)
	seedSQL(t, persist, mcpCatalogueSQL())
	w := startWorker(t, dir, persist, s.base)

	var run map[string]any
	if code := doJSON(t, "POST", w.base+"/v1/scheduler/run", adminToken, map[string]any{"task": "dataset-snapshot", "wait": true}, &run); code != 200 || run["ok"] != true {
		t.Fatalf("dataset-snapshot: %d %v", code, run)
	}
	t.Logf("dataset-snapshot: %v (%v D1 rows read, %v written)", run["summary"], run["d1_rows_read"], run["d1_rows_written"])
	var list struct {
		Items []struct {
			Date   string `json:"date"`
			Tables []struct {
				Name  string `json:"name"`
				Rows  int64  `json:"rows"`
				Files []struct {
					URL   string `json:"url"`
					Rows  int64  `json:"rows"`
					Bytes int    `json:"bytes"`
				} `json:"files"`
			} `json:"tables"`
		} `json:"items"`
	}
	if code := doJSON(t, "GET", w.base+"/v1/datasets", "", nil, &list); code != 200 || len(list.Items) != 1 {
		t.Fatalf("GET /v1/datasets: %d %s", code, jsonString(list))
	}
	// The seeded rows (the crawl may add apps and keywords meanwhile, never segments).
	atLeast := map[string]int64{"apps": 4, "keywords": 3, "keyword_ranks": 8, "segments": 2, "segment_keywords": 3, "segment_snapshots": 2}
	rows := map[string]int64{}
	parts := filepath.Join(dir, "snapshot", list.Items[0].Date)
	if err := os.MkdirAll(parts, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tm := range list.Items[0].Tables {
		rows[tm.Name] = tm.Rows
		var lines int64
		for _, f := range tm.Files {
			resp, err := client.Get(w.base + f.URL)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/gzip" {
				t.Fatalf("GET %s: %d %s", f.URL, resp.StatusCode, resp.Header.Get("Content-Type"))
			}
			if err := os.WriteFile(filepath.Join(parts, path.Base(f.URL)), body, 0o644); err != nil {
				t.Fatal(err)
			}
			zr, err := gzip.NewReader(bytes.NewReader(body))
			if err != nil {
				t.Fatalf("%s: %v; %d bytes, manifest %d, headers %v, start %q", f.URL, err, len(body), f.Bytes, resp.Header, body[:min(len(body), 40)])
			}
			sc := bufio.NewScanner(zr)
			var n int64
			for sc.Scan() {
				var row map[string]any
				if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
					t.Fatalf("%s line %d: %v", f.URL, n+1, err)
				}
				n++
			}
			if n != f.Rows {
				t.Fatalf("%s: %d lines, manifest %d", f.URL, n, f.Rows)
			}
			lines += n
		}
		if lines != tm.Rows || tm.Rows < atLeast[tm.Name] || tm.Name == "segments" && tm.Rows != 2 {
			t.Errorf("%s: %d lines, manifest %d, want at least %d", tm.Name, lines, tm.Rows, atLeast[tm.Name])
		}
		delete(atLeast, tm.Name)
	}
	if len(atLeast) != 0 {
		t.Errorf("tables missing from the manifest: %v", atLeast)
	}
	duckDBReadsTheParts(t, parts, rows)
	if code := doJSON(t, "GET", w.base+"/v1/datasets/"+list.Items[0].Date+"/manifest.json", "", nil, nil); code != 200 {
		t.Errorf("manifest.json: %d", code)
	}
	var bad map[string]any
	if code := doJSON(t, "GET", w.base+"/v1/datasets/latest/manifest.json", "", nil, &bad); code != 400 || bad["field"] != "date" {
		t.Errorf("a bad date: %d %v", code, bad)
	}
}

// duckDBReadsTheParts runs docs/explorer.md's DuckDB queries
// (worker/e2e/duckdb/query.mjs, DuckDB's own JSON reader) over the parts
// in dir: the apps by genre add up to the manifest's apps, and the live
// segments' keywords to its segment keywords.
func duckDBReadsTheParts(t *testing.T, dir string, rows map[string]int64) {
	t.Helper()
	node := filepath.Join(root, "node_modules", ".bin", "node")
	raw, err := devstack.RunBounded(node, []string{filepath.Join(root, "worker", "e2e", "duckdb", "query.mjs"), dir}, root, toolEnv(), agentTimeout)
	if err != nil {
		t.Fatalf("duckdb: %v\n%s", err, raw)
	}
	sums := map[string]map[string]int64{}
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var out struct {
			Query string           `json:"query"`
			Rows  []map[string]any `json:"rows"`
		}
		if json.Unmarshal([]byte(line), &out) != nil || out.Query == "" {
			continue
		}
		sums[out.Query] = map[string]int64{"rows": int64(len(out.Rows))}
		for _, r := range out.Rows {
			for _, k := range []string{"apps", "keywords"} {
				if v, ok := r[k]; ok {
					sums[out.Query][k] += jsonInt(v)
				}
			}
		}
	}
	t.Logf("duckdb over %s: %v", dir, sums)
	if g := sums["genres"]; g == nil || g["rows"] >= 10 || g["apps"] != rows["apps"] {
		t.Errorf("duckdb genres: %v, want the %d apps of the manifest\n%s", g, rows["apps"], raw)
	}
	if sg := sums["segments"]; sg == nil || sg["rows"] != rows["segments"] || sg["keywords"] != rows["segment_keywords"] {
		t.Errorf("duckdb segments: %v, want %d segments and %d keywords\n%s", sg, rows["segments"], rows["segment_keywords"], raw)
	}
}

// jsonInt reads a DuckDB count or sum as JSON gives it: a number or,
// for a 64-bit or wider integer, a string.
func jsonInt(v any) int64 {
	switch x := v.(type) {
	case float64:
		return int64(x)
	case string:
		var n int64
		json.Unmarshal([]byte(x), &n)
		return n
	}
	return 0
}
