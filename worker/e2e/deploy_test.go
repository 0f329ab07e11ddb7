//go:build integration

package e2e

import (
	"path/filepath"
	"regexp"
	"testing"

	"storecrawl/internal/devstack"
)

// TestDeployDryRun bundles the Worker exactly as `wrangler deploy` would,
// offline, and checks every binding made it into the upload.
func TestDeployDryRun(t *testing.T) {
	t.Parallel()
	dir := outputDir(t)
	out, err := devstack.RunBounded(devstack.Wrangler(root), []string{"deploy", "--dry-run", "--outdir", filepath.Join(dir, "dist")}, root, toolEnv(), toolTimeout)
	if err != nil {
		t.Fatalf("wrangler deploy --dry-run: %v\n%s", err, out)
	}
	text := string(out)
	for _, binding := range []string{"env.DB", "env.HTML_CACHE", "env.CACHE", "env.EVENTS", "env.ENRICHMENT_CONTROLLER", "env.OMNI_LIMITER", "env.SCHEDULER", "UPSTREAM_API_BASE"} {
		if !regexp.MustCompile(regexp.QuoteMeta(binding)).MatchString(text) {
			t.Errorf("binding %s missing from the dry run:\n%s", binding, text)
		}
	}
	if m := regexp.MustCompile(`Total Upload: ([0-9.]+ KiB) / gzip: ([0-9.]+ KiB)`).FindStringSubmatch(text); m == nil {
		t.Errorf("no upload size in output:\n%s", text)
	} else {
		t.Logf("upload: %s, gzip %s", m[1], m[2])
	}
}
