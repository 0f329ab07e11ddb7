package archtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "storecrawl"

// PlatformPackages are the Worker's platform: bindings, storage (app_registry's
// writes in worker/registry among them), the
// upstream and model clients and their limits, logging, budgets. They serve every
// feature and must never import one (any other storecrawl/worker package,
// the wiring in storecrawl/worker included).
var PlatformPackages = []string{
	"storecrawl/worker/cf",
	"storecrawl/worker/d1",
	"storecrawl/worker/d1/d1test",
	"storecrawl/worker/upstream",
	"storecrawl/worker/ratelimit",
	"storecrawl/worker/logx",
	"storecrawl/worker/subreq",
	"storecrawl/worker/bytebudget",
	"storecrawl/worker/llm",
	"storecrawl/worker/registry",
	"storecrawl/worker/module",
}

// Controllers are the Durable Objects' decision packages: the wiring and
// the features that drive an object import them, nothing else.
var Controllers = []string{
	"storecrawl/durable/controller",
	"storecrawl/durable/scheduler",
}

// ControllerFree never use a controller: the platform, the Worker's config
// (plain values the wiring hands to the objects' constructors) and the
// ledger's reader (the names it needs are in internal/objects).
var ControllerFree = append([]string{
	"storecrawl/worker/config",
	"storecrawl/worker/ledgerdb",
}, PlatformPackages...)

// builds are the environments the rules hold in: the native one (tests,
// tools) and the Worker's (js/wasm: cmd/worker, worker/cf, the wiring).
var builds = []struct {
	name string
	env  []string
}{{"native", nil}, {"js/wasm", []string{"GOOS=js", "GOARCH=wasm"}}}

// pkg is what the rules read of `go list -json`.
type pkg struct {
	ImportPath   string
	Deps         []string // transitive, without tests
	Imports      []string
	TestImports  []string
	XTestImports []string
}

// uses is every storecrawl package p depends on: transitively through its
// own code, directly through its tests.
func (p pkg) uses() []string {
	var out []string
	for _, list := range [][]string{p.Deps, p.Imports, p.TestImports, p.XTestImports} {
		for _, d := range list {
			if (d == module || strings.HasPrefix(d, module+"/")) && d != p.ImportPath && !slices.Contains(out, d) {
				out = append(out, d)
			}
		}
	}
	slices.Sort(out)
	return out
}

func isWorker(path string) bool {
	return path == module+"/worker" || strings.HasPrefix(path, module+"/worker/")
}

// Violations lists the imports the rules forbid among pkgs.
func Violations(pkgs []pkg) []string {
	var out []string
	for _, p := range pkgs {
		durable := strings.HasPrefix(p.ImportPath, module+"/durable/")
		platform := slices.Contains(PlatformPackages, p.ImportPath)
		controllerFree := slices.Contains(ControllerFree, p.ImportPath)
		for _, d := range p.uses() {
			switch {
			case controllerFree && slices.Contains(Controllers, d):
				out = append(out, fmt.Sprintf("%s uses %s: only the wiring and the features that drive an object import its controller", p.ImportPath, d))
			case durable && isWorker(d):
				out = append(out, fmt.Sprintf("%s uses %s: durable/* never imports worker/*", p.ImportPath, d))
			case platform && isWorker(d) && !slices.Contains(PlatformPackages, d):
				out = append(out, fmt.Sprintf("%s uses %s: a platform package never imports a feature", p.ImportPath, d))
			}
		}
	}
	return out
}

func list(t *testing.T, env []string) []pkg {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "list", "-e", "-json", "./...")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %v: %v\n%s", env, err, stderr.String())
	}
	var pkgs []pkg
	for dec := json.NewDecoder(bytes.NewReader(out)); dec.More(); {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("go list %v: %v", env, err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

func TestImportsRunOneWay(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	seen := map[string]bool{}
	for _, b := range builds {
		pkgs := list(t, b.env)
		for _, p := range pkgs {
			seen[p.ImportPath] = true
		}
		for _, v := range Violations(pkgs) {
			t.Errorf("%s: %s", b.name, v)
		}
	}
	// A platform package renamed or removed must be renamed here too, or
	// the rule would silently guard nothing.
	for _, p := range PlatformPackages {
		if !seen[p] {
			t.Errorf("platform package %s does not exist", p)
		}
	}
}

// TestViolationsFindsEachKind: the rule itself, on made-up packages.
func TestViolationsFindsEachKind(t *testing.T) {
	got := Violations([]pkg{
		{ImportPath: "storecrawl/durable/x", Deps: []string{"storecrawl/durable/object", "storecrawl/worker/logx"}},
		{ImportPath: "storecrawl/worker/upstream", Deps: []string{"storecrawl/worker/subreq"}, TestImports: []string{"storecrawl/worker/reviews"}},
		{ImportPath: "storecrawl/worker/d1", Deps: []string{"storecrawl/worker"}},
		{ImportPath: "storecrawl/worker/crawl", Deps: []string{"storecrawl/worker/enrichment", "storecrawl/durable/controller"}},
		{ImportPath: "storecrawl/worker/config", Deps: []string{"storecrawl/durable/scheduler"}},
	})
	want := []string{
		"storecrawl/durable/x uses storecrawl/worker/logx: durable/* never imports worker/*",
		"storecrawl/worker/upstream uses storecrawl/worker/reviews: a platform package never imports a feature",
		"storecrawl/worker/d1 uses storecrawl/worker: a platform package never imports a feature",
		"storecrawl/worker/config uses storecrawl/durable/scheduler: only the wiring and the features that drive an object import its controller",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("got %q\nwant %q", got, want)
	}
}
