//go:build integration

package e2e

import (
	"os"
	"path/filepath"
	"testing"
)

// maxModuleBytes bounds build/app.wasm, raw. Cloudflare's limit is 64 MiB
// uncompressed; a quarter of it leaves the module (10,296,849 bytes, 9.8
// MiB, printed by `make bench`) room to grow by half before this fails,
// and it fails long before the platform would refuse the upload. Size also
// costs every cold start: V8 compiles the whole module before the Go
// program starts.
const maxModuleBytes = 16 << 20

// TestModuleSize fails when the module `make build` wrote is missing or
// larger than maxModuleBytes.
func TestModuleSize(t *testing.T) {
	t.Parallel()
	path := filepath.Join(root, "build", "app.wasm")
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatalf("%v (run make build first)", err)
	}
	if fi.Size() > maxModuleBytes {
		t.Fatalf("%s is %d bytes (%.2f MiB), over the %d MiB bound: find what grew with `go list -deps` (GOOS=js GOARCH=wasm ./cmd/worker)",
			path, fi.Size(), float64(fi.Size())/(1<<20), maxModuleBytes>>20)
	}
	t.Logf("%s: %d bytes (%.2f MiB) of at most %d MiB", path, fi.Size(), float64(fi.Size())/(1<<20), maxModuleBytes>>20)
}
