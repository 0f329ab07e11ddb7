//go:build integration

package e2e

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"testing"
)

// TestDatasetSnapshotInLocalR2 runs the dataset-snapshot task on wrangler
// dev's local D1 and R2 over a seeded catalogue, then reads the snapshot
// back as a user does: GET /v1/datasets for the manifest, each part by its
// url, gunzipped, one JSON object a line, as many as the manifest says.
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
	for _, tm := range list.Items[0].Tables {
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
	if code := doJSON(t, "GET", w.base+"/v1/datasets/"+list.Items[0].Date+"/manifest.json", "", nil, nil); code != 200 {
		t.Errorf("manifest.json: %d", code)
	}
	var bad map[string]any
	if code := doJSON(t, "GET", w.base+"/v1/datasets/latest/manifest.json", "", nil, &bad); code != 400 || bad["field"] != "date" {
		t.Errorf("a bad date: %d %v", code, bad)
	}
}
