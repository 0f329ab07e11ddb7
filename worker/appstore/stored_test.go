package appstore

import (
	"strings"
	"testing"

	"storecrawl/worker/registry"
)

// TestStoredLookupArgsFillTheColumns: one value for each of the registry's
// lookup columns, track_id first.
func TestStoredLookupArgsFillTheColumns(t *testing.T) {
	args := App{TrackID: 7}.StoredLookupArgs()
	cols := strings.Split(registry.LookupColumns, ",")
	if len(args) != len(cols) || strings.TrimSpace(cols[0]) != "track_id" || args[0] != int64(7) {
		t.Fatalf("%d values for %d columns (first %v)", len(args), len(cols), args[0])
	}
}
