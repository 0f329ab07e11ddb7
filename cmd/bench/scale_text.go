//go:build unix

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"storecrawl/worker/appstore"
	"storecrawl/worker/registry"
)

// The simulator's apps carry short texts (a description of a few hundred
// bytes, release notes of a line) where the store's run to the bounds the
// product keeps: the storage projection bills app_registry and
// app_version_history rows at the texts of real captured answers instead.

// realTextGlobs are the real captured iTunes lookup and search answers
// (worker/appstore/testdata/README.md names each one's source); a file
// whose name says it was built, not captured, is left out.
var realTextGlobs = []string{"worker/appstore/testdata/lookup_*.json", "worker/appstore/testdata/search_*.json"}

// realTextSource names the measurement in the assumptions.
const realTextSource = "worker/appstore/testdata/{lookup,search}_*.json, the captured ones"

// TextSizes are the mean stored bytes of the large text columns a lookup
// fills: description, release_notes and languages an app (an app
// without notes counts 0), and VersionNotes a version's notes (over the
// apps that carry notes: a new version comes with its notes).
// DescriptionMax is the longest description stored (the product's bound,
// when a capture reaches it).
type TextSizes struct {
	Apps           int     `json:"apps"`
	Description    float64 `json:"description"`
	DescriptionMax float64 `json:"description_max"`
	ReleaseNotes   float64 `json:"release_notes"`
	VersionNotes   float64 `json:"version_notes"`
	Languages      float64 `json:"languages"`
}

// Scaled is t with every mean times f (the sensitivity's ½× and 2×), the
// description's no longer than the longest stored (DescriptionMax: the
// product keeps no more).
func (t TextSizes) Scaled(f float64) TextSizes {
	t.Description, t.ReleaseNotes, t.VersionNotes, t.Languages = min(f*t.Description, t.DescriptionMax), f*t.ReleaseNotes, f*t.VersionNotes, f*t.Languages
	return t
}

// isBuilt is a testdata file written by hand, not captured.
func isBuilt(path string) bool {
	return strings.Contains(strings.ToLower(filepath.Base(path)), "built")
}

// RealTextSizes measures the real captured answers under root (the
// repository) as the product stores them: each app once, parsed by the
// product's parser (appstore.ParseSearch, which bounds the texts) and
// taken from appstore.App.StoredLookupArgs, the values every lookup and
// search writes to registry.LookupColumns.
func RealTextSizes(root string) (TextSizes, error) {
	col := map[string]int{}
	for i, c := range strings.Split(registry.LookupColumns, ",") {
		col[strings.TrimSpace(c)] = i
	}
	var t TextSizes
	var withNotes int
	seen := map[int64]bool{}
	for _, g := range realTextGlobs {
		files, err := filepath.Glob(filepath.Join(root, g))
		if err != nil {
			return TextSizes{}, err
		}
		for _, f := range files {
			if isBuilt(f) {
				continue
			}
			body, err := os.ReadFile(f)
			if err != nil {
				return TextSizes{}, err
			}
			apps, err := appstore.ParseSearch(body)
			if err != nil {
				return TextSizes{}, fmt.Errorf("%s: %w", f, err)
			}
			for _, a := range apps {
				if seen[a.TrackID] {
					continue
				}
				seen[a.TrackID] = true
				args := a.StoredLookupArgs()
				text := func(c string) float64 { return float64(len(args[col[c]].(string))) }
				t.Apps++
				t.Description += text("description")
				t.DescriptionMax = max(t.DescriptionMax, text("description"))
				t.Languages += text("languages")
				if n := text("release_notes"); n > 0 {
					t.ReleaseNotes += n
					withNotes++
				}
			}
		}
	}
	if t.Apps == 0 {
		return TextSizes{}, fmt.Errorf("real text sizes: no captured answer under %s", root)
	}
	if withNotes > 0 {
		t.VersionNotes = t.ReleaseNotes / float64(withNotes)
	}
	n := float64(t.Apps)
	t.Description, t.ReleaseNotes, t.Languages = t.Description/n, t.ReleaseNotes/n, t.Languages/n
	return t, nil
}

// realTextSizes is RealTextSizes of the repository the bench runs in.
var realTextSizes = sync.OnceValue(func() TextSizes {
	root, err := repoRoot()
	if err != nil {
		panic(err)
	}
	t, err := RealTextSizes(root)
	if err != nil {
		panic(err)
	}
	return t
})

// repoRoot is the directory at or above the working directory holding
// go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		if filepath.Dir(dir) == dir {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		dir = filepath.Dir(dir)
	}
}

// TextSizing is what the projection needs to bill rows at real text
// sizes: the real means, the simulated rows' own, and what a payload byte
// costs in each table's pages (its b-tree's bytes over its payload, so
// cell headers and page fill are billed as measured). A row whose payload
// passes a page's local maximum (4,061 bytes at 4 KB pages) spills to
// overflow pages, which this does not model.
type TextSizing struct {
	Real, Sim TextSizes
	// RegistryPerByte: app_registry's pages a payload byte on the built
	// catalogue; HistoryPerByte: app_version_history's in the history
	// sample.
	RegistryPerByte, HistoryPerByte float64
	// VersionNotesShare is the share of the sample's version rows that
	// keep notes (the product's own trigger decides); Sim.VersionNotes is
	// their mean.
	VersionNotesShare float64
}

// RegistryRowDelta is the bytes an enriched app_registry row gains at
// real text sizes.
func (t TextSizing) RegistryRowDelta() float64 {
	return (t.Real.Description - t.Sim.Description + t.Real.ReleaseNotes - t.Sim.ReleaseNotes +
		t.Real.Languages - t.Sim.Languages) * t.RegistryPerByte
}

// VersionRowDelta is the bytes an app_version_history row gains at real
// text sizes: only the rows that keep notes hold them.
func (t TextSizing) VersionRowDelta() float64 {
	return t.VersionNotesShare * (t.Real.VersionNotes - t.Sim.VersionNotes) * t.HistoryPerByte
}

// AsSimulated bills the simulator's texts (no delta).
func (t TextSizing) AsSimulated() TextSizing {
	t.Real = t.Sim
	return t
}

// ScaledReal is t with the real sizes times f.
func (t TextSizing) ScaledReal(f float64) TextSizing {
	t.Real = t.Real.Scaled(f)
	return t
}
