//go:build unix

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"storecrawl/worker/appstore"
)

// The measurement reads each captured app once, as the product stores it
// (texts cut to their bounds), leaves built files out, and averages a
// version's notes over the apps that carry notes.
func TestRealTextSizesOfAnswers(t *testing.T) {
	dir := t.TempDir()
	td := filepath.Join(dir, "worker", "appstore", "testdata")
	if err := os.MkdirAll(td, 0o755); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("é", appstore.MaxTextLen+50)
	write := func(name string, results ...map[string]any) {
		b, _ := json.Marshal(map[string]any{"resultCount": len(results), "results": results})
		if err := os.WriteFile(filepath.Join(td, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	app := func(id int64, desc, notes string, langs ...string) map[string]any {
		return map[string]any{"wrapperType": "software", "trackId": id, "trackName": "x", "description": desc,
			"releaseNotes": notes, "languageCodesISO2A": langs}
	}
	write("lookup_a.json", app(1, long, "fixed bugs", "EN", "FR"))
	write("search_b.json", app(1, "again", "again"), app(2, "short", ""))
	write("lookup_c_BUILT.json", app(3, "built", "built notes"))
	got, err := RealTextSizes(dir)
	if err != nil {
		t.Fatal(err)
	}
	stored := float64(len(appstore.Truncate(long, appstore.MaxDescriptionLen)))
	want := TextSizes{Apps: 2, Description: (stored + 5) / 2, DescriptionMax: stored, ReleaseNotes: 10.0 / 2, VersionNotes: 10,
		Languages: float64(len(`["EN","FR"]`)+len(`[]`)) / 2}
	if got != want {
		t.Fatalf("sizes %+v, want %+v", got, want)
	}
	if _, err := RealTextSizes(t.TempDir()); err == nil {
		t.Fatal("no answers: want an error")
	}
}

// The repository's captured answers: every app the non-built files hold,
// once (the bench bills them; `go test -run TestRealTextSizes -v ./cmd/bench/`
// prints the means).
func TestRealTextSizes(t *testing.T) {
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	ids := map[float64]bool{}
	for _, g := range realTextGlobs {
		files, _ := filepath.Glob(filepath.Join(root, g))
		for _, f := range files {
			if isBuilt(f) {
				continue
			}
			var env struct{ Results []map[string]any }
			b, _ := os.ReadFile(f)
			if err := json.Unmarshal(b, &env); err != nil {
				t.Fatal(f, err)
			}
			for _, r := range env.Results {
				if w, _ := r["wrapperType"].(string); w == "" || w == "software" {
					ids[r["trackId"].(float64)] = true
				}
			}
		}
	}
	got := realTextSizes()
	t.Logf("real stored text bytes (%s): %+v", realTextSource, got)
	if got.Apps != len(ids) || got.Apps == 0 {
		t.Fatalf("apps %d, want %d", got.Apps, len(ids))
	}
	if got.Description <= 0 || got.DescriptionMax > 4*appstore.MaxDescriptionLen || got.VersionNotes < got.ReleaseNotes {
		t.Fatalf("sizes %+v", got)
	}
	// ½× and 2×: the description no longer than the product keeps.
	if d := got.Scaled(2); d.Description != min(2*got.Description, got.DescriptionMax) || d.ReleaseNotes != 2*got.ReleaseNotes {
		t.Fatalf("2x %+v", d)
	}
}
