//go:build integration

package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"storecrawl/internal/devstack"
)

// agentTimeout bounds the MCP client script: a connect, a ping, a list
// and nine calls take seconds.
const agentTimeout = time.Minute

// mcpCatalogueSQL is a small crawled catalogue: enriched apps ranking for
// keywords of their names, in two market segments.
func mcpCatalogueSQL() string {
	var b strings.Builder
	for _, a := range []struct {
		id      int
		name    string
		ratings int
	}{{101, "Budget Planner", 5000}, {102, "Budget Tracker Pro", 3000}, {103, "Money Manager", 9000}, {104, "Chat Friends", 700}} {
		fmt.Fprintf(&b, `INSERT INTO app_registry (track_id, name, developer_name, genre, price, average_rating, rating_count, enrichment_source, enriched_at, page_status, version)
VALUES (%d, '%s', 'Dev', 'Finance', 0, 4.1, %d, 'itunes+store', '2026-02-01T00:00:00.000Z', 'parsed', '1.0');
`, a.id, a.name, a.ratings)
	}
	for i, kw := range []string{"budget", "budget planner", "chat"} {
		fmt.Fprintf(&b, "INSERT INTO crawl_keywords (id, keyword, source, created_at, searched_at, result_count) VALUES (%d, '%s', 'title', '2026-01-01T00:00:00.000Z', '2026-02-01T00:00:00.000Z', 3);\n", i+1, kw)
	}
	for _, r := range []struct {
		kw       string
		id, rank int
	}{{"budget", 103, 1}, {"budget", 101, 2}, {"budget", 102, 3}, {"budget planner", 101, 1}, {"budget planner", 103, 2}, {"chat", 104, 1}, {"chat", 103, 2}, {"chat", 102, 3}} {
		fmt.Fprintf(&b, "INSERT INTO crawl_rankings (keyword, track_id, rank, seen_at) VALUES ('%s', %d, %d, '2026-02-01T00:00:00.000Z');\n", r.kw, r.id, r.rank)
	}
	// Two live market segments and a snapshot day, as segments-full writes them.
	for _, g := range []struct {
		id          int
		name        string
		opportunity float64
		apps        string
	}{{1, "budget", 41.5, `[{"track_id":103,"keywords":2,"ratings":9000,"share":0.53},{"track_id":101,"keywords":2,"ratings":5000,"share":0.29}]`},
		{2, "chat", 12.25, `[{"track_id":104,"keywords":1,"ratings":700,"share":1}]`}} {
		fmt.Fprintf(&b, `INSERT INTO segments (id, name, keyword_count, app_count, total_ratings, avg_rating, demand, hhi, fragmentation, quality_gap, opportunity, apps, relations, created_at, updated_at)
VALUES (%d, '%s', 2, 3, 17000, 4.1, 4.2, 0.4, 0.6, 0.1, %g, '%s', '[]', '2026-02-01T00:00:00.000Z', '2026-02-01T00:00:00.000Z');
INSERT INTO segment_snapshots (segment_id, day, keyword_count, total_ratings, demand, opportunity, apps) VALUES (%d, '2026-02-01', 2, 17000, 4.2, %g, '[]');
`, g.id, g.name, g.opportunity, g.apps, g.id, g.opportunity)
	}
	for _, k := range []struct {
		kw  string
		seg int
	}{{"budget", 1}, {"budget planner", 1}, {"chat", 2}} {
		fmt.Fprintf(&b, "INSERT INTO segment_keywords (keyword, segment_id, top_sum) VALUES ('%s', %d, 1);\n", k.kw, k.seg)
	}
	return b.String()
}

// TestMCPAgentOverStreamableHTTP runs worker/e2e/mcp/agent.mjs, the
// official MCP client (@modelcontextprotocol/sdk) over Streamable HTTP,
// against wrangler dev on a seeded catalogue: it negotiates the protocol,
// lists the seven tools and calls each, and a bad argument comes back as
// -32602 naming the field.
func TestMCPAgentOverStreamableHTTP(t *testing.T) {
	t.Parallel()
	node := filepath.Join(root, "node_modules", ".bin", "node")
	if _, err := os.Stat(filepath.Join(root, "node_modules", "@modelcontextprotocol", "sdk")); err != nil {
		t.Fatalf("@modelcontextprotocol/sdk missing: run `make install` (npm ci): %v", err)
	}
	dir := outputDir(t)
	s := startSim(t, dir)
	persist := filepath.Join(dir, "state")
	prepareDB(t, persist, dir, 0)
	seedSQL(t, persist, mcpCatalogueSQL())
	w := startWorker(t, dir, persist, s.base)

	started := time.Now()
	raw, err := devstack.RunBounded(node, []string{filepath.Join(root, "worker", "e2e", "mcp", "agent.mjs"), "--base", w.base}, root, toolEnv(), agentTimeout)
	os.WriteFile(filepath.Join(dir, "agent.log"), raw, 0o644)
	if err != nil {
		t.Fatalf("the MCP client failed (%v) after %s:\n%s\nwrangler log:\n%s", err, time.Since(started).Round(time.Second), raw, tail(w.log.String(), 3000))
	}
	i := strings.LastIndex(string(raw), "RESULT ")
	if i < 0 {
		t.Fatalf("no RESULT line:\n%s", raw)
	}
	var out struct {
		ProtocolVersion string `json:"protocolVersion"`
		Server          struct {
			Name string `json:"name"`
		} `json:"server"`
		SessionID *string `json:"sessionId"`
		Tools     map[string]struct {
			Properties []string `json:"properties"`
			Required   []string `json:"required"`
		} `json:"tools"`
		Calls struct {
			Search struct {
				Items []struct {
					TrackID int64 `json:"track_id"`
				} `json:"items"`
			} `json:"search_apps"`
			App struct {
				Name string `json:"name"`
			} `json:"get_app"`
			History struct {
				TrackID int64 `json:"track_id"`
			} `json:"app_history"`
			Segments json.RawMessage `json:"list_segments"`
			Page2    json.RawMessage `json:"list_segments_page2"`
			Segment  json.RawMessage `json:"get_segment"`
			Keyword  struct {
				Term    string `json:"term"`
				TopApps []struct {
					TrackID int64 `json:"track_id"`
				} `json:"top_apps"`
			} `json:"keyword_metrics"`
			Alerts struct {
				Items []any  `json:"items"`
				Note  string `json:"note"`
			} `json:"list_alerts"`
		} `json:"calls"`
		BadCall struct {
			Code    int            `json:"code"`
			Message string         `json:"message"`
			Data    map[string]any `json:"data"`
		} `json:"badCall"`
	}
	line := strings.TrimSpace(strings.SplitN(string(raw[i+len("RESULT "):]), "\n", 2)[0])
	if err := json.Unmarshal([]byte(line), &out); err != nil {
		t.Fatalf("RESULT: %v\n%s", err, line)
	}
	t.Logf("the MCP client connected, listed and called every tool in %s (protocol %s)", time.Since(started).Round(time.Millisecond), out.ProtocolVersion)

	if out.ProtocolVersion != "2025-11-25" || out.Server.Name != "storecrawl" || out.SessionID != nil {
		t.Fatalf("handshake: %s", line)
	}
	wantTools := map[string][]string{
		"search_apps": {"limit", "q"}, "get_app": {"id"}, "app_history": {"days", "id", "limit"},
		"list_segments": {"cursor", "limit", "sort"}, "get_segment": {"id"}, "keyword_metrics": {"country", "term"}, "list_alerts": {"cursor"},
	}
	if len(out.Tools) != len(wantTools) {
		t.Fatalf("tools: %s", jsonString(out.Tools))
	}
	for name, props := range wantTools {
		if got, ok := out.Tools[name]; !ok || !slices.Equal(got.Properties, props) {
			t.Errorf("tool %s: %+v, want properties %v", name, got, props)
		}
	}
	c := out.Calls
	if len(c.Search.Items) != 3 || c.Search.Items[0].TrackID != 101 {
		t.Errorf("search_apps: %s", jsonString(c.Search))
	}
	if c.App.Name != "Budget Planner" || c.History.TrackID != 101 {
		t.Errorf("get_app %s, app_history %s", jsonString(c.App), jsonString(c.History))
	}
	// list_segments and get_segment answer what GET /v1/segments and
	// GET /v1/segments/{id} answer.
	var page1 struct {
		Items []struct {
			ID int64 `json:"id"`
		} `json:"items"`
		Next *string `json:"next_cursor"`
	}
	json.Unmarshal(c.Segments, &page1)
	if len(page1.Items) != 1 || page1.Items[0].ID != 1 || page1.Next == nil {
		t.Fatalf("list_segments: %s", c.Segments)
	}
	for _, cmp := range []struct {
		tool json.RawMessage
		path string
	}{{c.Segments, "/v1/segments?sort=opportunity&limit=1"}, {c.Page2, "/v1/segments?sort=opportunity&limit=1&cursor=" + *page1.Next}, {c.Segment, "/v1/segments/1"}} {
		var fromTool, fromAPI any
		json.Unmarshal(cmp.tool, &fromTool)
		if code := doJSON(t, "GET", w.base+cmp.path, "", nil, &fromAPI); code != 200 || jsonString(fromTool) != jsonString(fromAPI) {
			t.Errorf("MCP answered %s\nGET %s answered %d %s", cmp.tool, cmp.path, code, jsonString(fromAPI))
		}
	}
	var seg struct {
		Keywords []string `json:"keywords"`
		Apps     []struct {
			TrackID int64 `json:"track_id"`
		} `json:"apps"`
	}
	json.Unmarshal(c.Segment, &seg)
	if !slices.Equal(seg.Keywords, []string{"budget", "budget planner"}) || len(seg.Apps) != 2 || seg.Apps[0].TrackID != 103 {
		t.Errorf("get_segment: %s", c.Segment)
	}
	if !strings.Contains(string(c.Page2), `"id":2`) {
		t.Errorf("list_segments page 2: %s", c.Page2)
	}
	if c.Keyword.Term != "budget planner" || len(c.Keyword.TopApps) != 2 || c.Keyword.TopApps[0].TrackID != 101 {
		t.Errorf("keyword_metrics: %s", jsonString(c.Keyword))
	}
	if c.Alerts.Items == nil || len(c.Alerts.Items) != 0 || c.Alerts.Note == "" {
		t.Errorf("list_alerts: %s", jsonString(c.Alerts))
	}
	if out.BadCall.Code != -32602 || out.BadCall.Data["field"] != "id" || !strings.Contains(out.BadCall.Message, "id") {
		t.Errorf("bad id: %s", jsonString(out.BadCall))
	}

	// The transport's refusals, as a plain HTTP client meets them.
	var refusal struct {
		Error struct {
			Code int            `json:"code"`
			Data map[string]any `json:"data"`
		} `json:"error"`
	}
	if code := doJSON(t, "GET", w.base+"/mcp", "", nil, nil); code != 405 {
		t.Errorf("GET /mcp: %d, want 405 (no SSE stream)", code)
	}
	req, _ := http.NewRequest("POST", w.base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	json.NewDecoder(resp.Body).Decode(&refusal)
	if resp.StatusCode != 400 || refusal.Error.Code != -32700 || refusal.Error.Data["field"] != "body" {
		t.Errorf("malformed JSON: %d %s", resp.StatusCode, jsonString(refusal))
	}
}
