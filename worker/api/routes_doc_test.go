package api

import (
	"os"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// apiDoc is the HTTP API reference, which lists every route.
const apiDoc = "../../docs/api.md"

// docRoutes reads the routes table of docs/api.md as "METHOD /path": a
// row's first cell opens with `METHOD /path?query` (the query is left
// out), and each further bare word in backticks there is a sibling route,
// the path's last segment replaced: `POST /v1/enrichment/start` `stop`.
func docRoutes(doc string) []string {
	first := regexp.MustCompile(`^(GET|HEAD|POST|PUT|PATCH|DELETE) (/[^?\s]*)`)
	var out []string
	for _, line := range strings.Split(doc, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 3 || strings.TrimSpace(cells[0]) != "" {
			continue
		}
		ticks := regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(cells[1], -1)
		if len(ticks) == 0 {
			continue
		}
		m := first.FindStringSubmatch(ticks[0][1])
		if m == nil {
			continue
		}
		method, p := m[1], m[2]
		out = append(out, method+" "+p)
		for _, t := range ticks[1:] {
			if w := t[1]; regexp.MustCompile(`^[a-z][a-z0-9-]*$`).MatchString(w) {
				out = append(out, method+" "+path.Join(path.Dir(p), w))
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Every route the router serves is in docs/api.md's table, and every route
// there is served: a route added without its reference, or documented and
// gone, fails here.
func TestAPIDocListsEveryRoute(t *testing.T) {
	raw, err := os.ReadFile(apiDoc)
	if err != nil {
		t.Fatal(err)
	}
	documented := docRoutes(string(raw))
	// Every optional route mounted: the test-only ones are documented too.
	s, _, _, _ := allRoutesServer()
	served := s.Routes()
	slices.Sort(served)
	if len(documented) < 10 || len(served) < 10 {
		t.Fatalf("read %d documented and %d served routes", len(documented), len(served))
	}
	for _, r := range served {
		if !slices.Contains(documented, r) {
			t.Errorf("served but not in %s: %s", apiDoc, r)
		}
	}
	for _, r := range documented {
		if !slices.Contains(served, r) {
			t.Errorf("in %s but not served: %s", apiDoc, r)
		}
	}
}

// The table reader expands sibling routes and drops queries.
func TestDocRoutesReadsTheTable(t *testing.T) {
	doc := "| route | auth | what |\n|---|---|---|\n" +
		"| `POST /v1/scheduler/pause` `resume` `run` (alias `run-now`) | Bearer | `{\"task\": \"x\"}` |\n" +
		"| `GET /v1/charts?country=us` | — | a chart |\n" +
		"| `GET /v1/limiter/status?key=K` | — | a key |\n| `GET /v1/limiter/status?namespace=internal&key=K` | — | the same |\n" +
		"- `GET /v1/not-a-row`\n"
	want := []string{"GET /v1/charts", "GET /v1/limiter/status", "POST /v1/scheduler/pause", "POST /v1/scheduler/resume", "POST /v1/scheduler/run", "POST /v1/scheduler/run-now"}
	if got := docRoutes(doc); !slices.Equal(got, want) {
		t.Errorf("got %q", got)
	}
}
