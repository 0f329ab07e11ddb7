//go:build !js

package mcp

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"storecrawl/worker/api"
	"storecrawl/worker/catalogue"
	"storecrawl/worker/d1/d1test"
	"storecrawl/worker/enrichment"
	"storecrawl/worker/keywords"
	"storecrawl/worker/segments"
)

var testNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// seedCatalogue is a small crawled catalogue: five enriched apps ranking
// for three keywords of their names, two of them markets with scores.
func seedCatalogue(t *testing.T, drv *d1test.Driver) {
	t.Helper()
	apps := []struct {
		id      int64
		name    string
		ratings int
	}{{101, "Budget Planner", 5000}, {102, "Budget Tracker Pro", 3000}, {103, "Money Manager", 9000}, {104, "Chat Friends", 700}, {105, "Chatter Box", 400}}
	for _, a := range apps {
		drv.Exec(t, `INSERT INTO app_registry (track_id, name, developer_name, genre, price, average_rating, rating_count, enrichment_source, enriched_at, page_status, version)
VALUES (?, ?, 'Dev', 'Finance', 0, 4.1, ?, 'itunes+store', '2026-02-01T00:00:00.000Z', 'parsed', '1.0')`, a.id, a.name, a.ratings)
	}
	for i, kw := range []string{"budget", "budget planner", "chat"} {
		drv.Exec(t, `INSERT INTO crawl_keywords (id, keyword, source, created_at, searched_at, result_count) VALUES (?, ?, 'title', '2026-01-01T00:00:00.000Z', '2026-02-01T00:00:00.000Z', 3)`, i+1, kw)
	}
	for _, r := range []struct {
		kw   string
		id   int64
		rank int
	}{{"budget", 103, 1}, {"budget", 101, 2}, {"budget", 102, 3}, {"budget planner", 101, 1}, {"budget planner", 103, 2}, {"budget planner", 102, 3}, {"chat", 104, 1}, {"chat", 105, 2}, {"chat", 103, 3}} {
		drv.Exec(t, `INSERT INTO crawl_rankings (keyword, track_id, rank, seen_at) VALUES (?, ?, ?, '2026-02-01T00:00:00.000Z')`, r.kw, r.id, r.rank)
	}
	// Two live segments and a retired one, as segments-full writes them.
	for _, g := range []struct {
		id          int64
		name        string
		opportunity float64
		demand      float64
		trend       float64
		retired     any
	}{{1, "budget", 41.5, 4.2, 3, nil}, {2, "chat", 12.25, 5.1, 4.5, nil}, {3, "gone", 90, 9, 5, "2026-02-02T00:00:00.000Z"}} {
		drv.Exec(t, `INSERT INTO segments (id, name, keyword_count, app_count, total_ratings, avg_rating, demand, hhi, fragmentation, quality_gap,
  opportunity, trend_score, apps, relations, created_at, updated_at, retired_at) VALUES (?, ?, 2, 3, 17000, 4.1, ?, 0.4, 0.6, 0.1, ?, ?,
  '[{"track_id":103,"keywords":2,"ratings":9000,"share":0.53}]', '[]', '2026-02-01T00:00:00.000Z', '2026-02-01T00:00:00.000Z', ?)`,
			g.id, g.name, g.demand, g.opportunity, g.trend, g.retired)
	}
	for _, k := range []struct {
		kw  string
		seg int64
	}{{"budget", 1}, {"budget planner", 1}, {"chat", 2}} {
		drv.Exec(t, `INSERT INTO segment_keywords (keyword, segment_id, top_sum) VALUES (?, ?, 1)`, k.kw, k.seg)
	}
}

// catalogueServer is the MCP server over the real stores of a seeded d1test catalogue.
func catalogueServer(t *testing.T) (*Server, *d1test.Driver) {
	t.Helper()
	db, drv := d1test.New(t)
	seedCatalogue(t, drv)
	s := New(Deps{
		Apps: enrichment.D1Store{DB: db}, AppHistory: catalogue.D1Store{DB: db}, Segments: segments.Store{DB: db},
		Keywords: keywords.D1Store{DB: db}, Country: "us", Search: D1Search{DB: db},
	})
	s.Now = func() time.Time { return testNow }
	return s, drv
}

// post sends one message over HTTP as the official client does.
func post(t *testing.T, h http.Handler, body string, headers ...string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest("POST", "/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i+1] == "" {
			req.Header.Del(headers[i])
		} else {
			req.Header.Set(headers[i], headers[i+1])
		}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// reply is a JSON-RPC response as read by a test.
type reply struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   *struct {
		Code    int            `json:"code"`
		Message string         `json:"message"`
		Data    map[string]any `json:"data"`
	} `json:"error"`
}

func rpc(t *testing.T, h http.Handler, method string, params any) (int, reply) {
	t.Helper()
	p, _ := json.Marshal(params)
	rec := post(t, h, fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":%q,"params":%s}`, method, p))
	var r reply
	if err := json.Unmarshal(rec.Body.Bytes(), &r); err != nil {
		t.Fatalf("%s: %d %q: %v", method, rec.Code, rec.Body, err)
	}
	if rec.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("%s: Content-Type %q", method, rec.Header().Get("Content-Type"))
	}
	return rec.Code, r
}

// callResult is a tools/call result.
type callResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	Structured json.RawMessage `json:"structuredContent"`
	IsError    bool            `json:"isError"`
}

func callTool(t *testing.T, h http.Handler, name string, args map[string]any) callResult {
	t.Helper()
	code, r := rpc(t, h, "tools/call", map[string]any{"name": name, "arguments": args})
	if code != 200 || r.Error != nil {
		t.Fatalf("%s %v: %d %+v", name, args, code, r.Error)
	}
	var out callResult
	if err := json.Unmarshal(r.Result, &out); err != nil || len(out.Content) != 1 || out.Content[0].Type != "text" {
		t.Fatalf("%s: result %s", name, r.Result)
	}
	if !out.IsError && (string(out.Structured) == "" || out.Structured[0] != '{') {
		t.Fatalf("%s: structured content %s", name, out.Structured)
	}
	return out
}

func TestInitializeNegotiatesTheVersion(t *testing.T) {
	s, _ := catalogueServer(t)
	for _, c := range []struct{ asked, answered string }{
		{"2025-11-25", "2025-11-25"}, {"2025-06-18", "2025-06-18"}, {"2025-03-26", "2025-03-26"}, {"2024-11-05", LatestProtocolVersion}, {"1.0.0", LatestProtocolVersion},
	} {
		code, r := rpc(t, s, "initialize", map[string]any{"protocolVersion": c.asked, "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "t", "version": "1"}})
		var res struct {
			ProtocolVersion string `json:"protocolVersion"`
			Capabilities    struct {
				Tools *struct{} `json:"tools"`
			} `json:"capabilities"`
			ServerInfo struct {
				Name, Version string
			} `json:"serverInfo"`
			Instructions string `json:"instructions"`
		}
		json.Unmarshal(r.Result, &res)
		if code != 200 || r.Error != nil || string(r.ID) != "7" || r.JSONRPC != "2.0" || res.ProtocolVersion != c.answered ||
			res.Capabilities.Tools == nil || res.ServerInfo.Name != "storecrawl" || res.ServerInfo.Version == "" || res.Instructions == "" {
			t.Fatalf("asked %s: %d %s %+v", c.asked, code, r.Result, r.Error)
		}
	}
	if _, r := rpc(t, s, "initialize", map[string]any{"capabilities": map[string]any{}}); r.Error == nil || r.Error.Code != CodeInvalidParams || r.Error.Data["field"] != "protocolVersion" {
		t.Fatalf("no protocolVersion: %+v", r.Error)
	}
	if _, r := rpc(t, s, "ping", nil); r.Error != nil || string(r.Result) != "{}" {
		t.Fatalf("ping: %s %+v", r.Result, r.Error)
	}
}

// TestToolsListHasEverySchema: the seven tools by name, each with an
// object schema that names its properties, the required ones, and takes
// no other.
func TestToolsListHasEverySchema(t *testing.T) {
	s, _ := catalogueServer(t)
	_, r := rpc(t, s, "tools/list", map[string]any{})
	var res struct {
		Tools []struct {
			Name        string `json:"name"`
			Description string `json:"description"`
			InputSchema struct {
				Type                 string                    `json:"type"`
				Properties           map[string]map[string]any `json:"properties"`
				Required             []string                  `json:"required"`
				AdditionalProperties *bool                     `json:"additionalProperties"`
			} `json:"inputSchema"`
			Annotations struct {
				ReadOnly bool `json:"readOnlyHint"`
			} `json:"annotations"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(r.Result, &res); err != nil || r.Error != nil {
		t.Fatalf("%s %v %+v", r.Result, err, r.Error)
	}
	want := map[string][]string{ // tool → properties, required ones starred
		"search_apps":     {"*q", "limit"},
		"get_app":         {"*id"},
		"app_history":     {"*id", "days", "limit"},
		"list_segments":   {"sort", "limit", "cursor"},
		"get_segment":     {"*id"},
		"keyword_metrics": {"*term", "country"},
		"list_alerts":     {"cursor"},
	}
	if len(res.Tools) != len(want) {
		t.Fatalf("%d tools: %s", len(res.Tools), r.Result)
	}
	for _, tl := range res.Tools {
		props, ok := want[tl.Name]
		sc := tl.InputSchema
		if !ok || tl.Description == "" || sc.Type != "object" || sc.AdditionalProperties == nil || *sc.AdditionalProperties || !tl.Annotations.ReadOnly || len(sc.Properties) != len(props) || sc.Required == nil {
			t.Fatalf("tool %s: %+v", tl.Name, tl)
		}
		for _, p := range props {
			name := strings.TrimPrefix(p, "*")
			prop := sc.Properties[name]
			if prop == nil || prop["type"] == nil || prop["description"] == "" {
				t.Errorf("%s.%s: %v", tl.Name, name, prop)
			}
			if slices.Contains(sc.Required, name) != strings.HasPrefix(p, "*") {
				t.Errorf("%s.%s required: %v", tl.Name, name, sc.Required)
			}
		}
	}
	// Bounds are in the schema: what validate holds a call to.
	var lim map[string]any
	for _, tl := range res.Tools {
		if tl.Name == "search_apps" {
			lim = tl.InputSchema.Properties["limit"]
		}
	}
	if lim["minimum"] != 1.0 || lim["maximum"] != float64(MaxSearchLimit) || lim["default"] != float64(DefaultSearchLimit) {
		t.Fatalf("search_apps limit schema %v", lim)
	}
}

// TestEveryToolAnswersFromTheCatalogue calls each tool on the seeded
// catalogue through the real stores.
func TestEveryToolAnswersFromTheCatalogue(t *testing.T) {
	s, _ := catalogueServer(t)

	var found SearchResult
	json.Unmarshal(callTool(t, s, "search_apps", map[string]any{"q": " BUDGET "}).Structured, &found)
	ids := []int64{}
	for _, h := range found.Items {
		ids = append(ids, h.TrackID)
	}
	// Named "budget…" first (by keyword, then rank), then the money
	// manager ranking first for "budget"; each app once.
	if found.Query != "budget" || !slices.Equal(found.Keywords, []string{"budget", "budget planner"}) || !slices.Equal(ids, []int64{101, 102, 103}) ||
		!found.Items[0].NameMatch || found.Items[2].NameMatch || found.Items[0].Keyword != "budget" || found.Items[0].Rank != 2 || *found.Items[0].Name != "Budget Planner" {
		t.Fatalf("search: %+v", found)
	}
	json.Unmarshal(callTool(t, s, "search_apps", map[string]any{"q": "cha", "limit": 1}).Structured, &found)
	if len(found.Items) != 1 || found.Items[0].TrackID != 104 {
		t.Fatalf("search cha: %+v", found)
	}
	json.Unmarshal(callTool(t, s, "search_apps", map[string]any{"q": "zebra"}).Structured, &found)
	if len(found.Items) != 0 || found.Items == nil {
		t.Fatalf("search zebra: %+v", found)
	}

	var app map[string]any
	json.Unmarshal(callTool(t, s, "get_app", map[string]any{"id": 101}).Structured, &app)
	if app["name"] != "Budget Planner" {
		t.Fatalf("get_app: %v", app)
	}
	if r := callTool(t, s, "get_app", map[string]any{"id": 999}); !r.IsError || !strings.Contains(r.Content[0].Text, "no app") {
		t.Fatalf("get_app unknown: %+v", r)
	}

	var hist map[string]any
	json.Unmarshal(callTool(t, s, "app_history", map[string]any{"id": 101, "days": 30, "limit": 5}).Structured, &hist)
	if hist["track_id"] != 101.0 {
		t.Fatalf("app_history: %v", hist)
	}
	if r := callTool(t, s, "app_history", map[string]any{"id": 999}); !r.IsError {
		t.Fatalf("app_history unknown: %+v", r)
	}

	var page struct {
		Sort  string `json:"sort"`
		Limit int    `json:"limit"`
		Items []struct {
			ID     int64  `json:"id"`
			Name   string `json:"name"`
			Scores struct {
				Opportunity float64 `json:"opportunity"`
			} `json:"scores"`
		} `json:"items"`
		Next *string `json:"next_cursor"`
	}
	json.Unmarshal(callTool(t, s, "list_segments", map[string]any{"limit": 1}).Structured, &page)
	if page.Sort != "opportunity" || page.Limit != 1 || len(page.Items) != 1 || page.Items[0].ID != 1 || page.Items[0].Scores.Opportunity != 41.5 || page.Next == nil {
		t.Fatalf("list_segments: %+v", page)
	}
	json.Unmarshal(callTool(t, s, "list_segments", map[string]any{"limit": 1, "cursor": *page.Next}).Structured, &page)
	if len(page.Items) != 1 || page.Items[0].ID != 2 {
		t.Fatalf("list_segments page 2: %+v", page)
	}
	for sort, first := range map[string]int64{"demand": 2, "trend": 2, "opportunity": 1} {
		page.Next = nil
		json.Unmarshal(callTool(t, s, "list_segments", map[string]any{"sort": sort, "limit": 5}).Structured, &page)
		if page.Sort != sort || len(page.Items) != 2 || page.Items[0].ID != first || page.Next != nil {
			t.Fatalf("list_segments by %s (the retired segment left out): %+v", sort, page)
		}
	}

	var seg struct {
		ID     int64 `json:"id"`
		Scores struct {
			Opportunity float64 `json:"opportunity"`
		} `json:"scores"`
		Keywords []string `json:"keywords"`
		Apps     []struct {
			TrackID int64   `json:"track_id"`
			Share   float64 `json:"share"`
		} `json:"apps"`
		Snapshots []any `json:"snapshots"`
	}
	json.Unmarshal(callTool(t, s, "get_segment", map[string]any{"id": 1}).Structured, &seg)
	if seg.ID != 1 || seg.Scores.Opportunity != 41.5 || !slices.Equal(seg.Keywords, []string{"budget", "budget planner"}) ||
		len(seg.Apps) != 1 || seg.Apps[0].TrackID != 103 || seg.Apps[0].Share != 0.53 || seg.Snapshots == nil {
		t.Fatalf("get_segment: %+v", seg)
	}
	if r := callTool(t, s, "get_segment", map[string]any{"id": 99}); !r.IsError || !strings.Contains(r.Content[0].Text, "99") {
		t.Fatalf("get_segment of an unknown id: %+v", r)
	}

	var rep keywords.Report
	json.Unmarshal(callTool(t, s, "keyword_metrics", map[string]any{"term": "Budget  Planner"}).Structured, &rep)
	if rep.Term != "budget planner" || rep.Country != "us" || len(rep.TopApps) != 3 || rep.TopApps[0].TrackID != 101 {
		t.Fatalf("keyword_metrics: %+v", rep)
	}
	if r := callTool(t, s, "keyword_metrics", map[string]any{"term": "budget", "country": "gb"}); !r.IsError || !strings.Contains(r.Content[0].Text, "crawls us") {
		t.Fatalf("keyword_metrics gb: %+v", r)
	}

	var alerts struct {
		Items []any  `json:"items"`
		Note  string `json:"note"`
	}
	json.Unmarshal(callTool(t, s, "list_alerts", map[string]any{}).Structured, &alerts)
	if alerts.Items == nil || len(alerts.Items) != 0 || alerts.Note == "" {
		t.Fatalf("list_alerts: %+v", alerts)
	}
}

// TestBadArgumentsNameTheField: a bad argument is -32602 whose message and
// data name the field, and no tool runs.
func TestBadArgumentsNameTheField(t *testing.T) {
	s, drv := catalogueServer(t)
	calls := drv.Calls.Load()
	for _, c := range []struct {
		tool  string
		args  any
		field string
	}{
		{"search_apps", map[string]any{}, "q"},
		{"search_apps", map[string]any{"q": ""}, "q"},
		{"search_apps", map[string]any{"q": "   "}, "q"},
		{"search_apps", map[string]any{"q": strings.Repeat("a", MaxQueryLen+1)}, "q"},
		{"search_apps", map[string]any{"q": "a", "limit": 0}, "limit"},
		{"search_apps", map[string]any{"q": "a", "limit": MaxSearchLimit + 1}, "limit"},
		{"search_apps", map[string]any{"q": "a", "limit": 2.5}, "limit"},
		{"search_apps", map[string]any{"q": "a", "limit": "3"}, "limit"},
		{"search_apps", map[string]any{"q": 5}, "q"},
		{"search_apps", map[string]any{"q": "a", "page": 2}, "page"},
		{"get_app", map[string]any{"id": "101"}, "id"},
		{"get_app", map[string]any{"id": 0}, "id"},
		{"get_app", nil, "id"},
		{"app_history", map[string]any{"id": 101, "days": catalogue.MaxHistoryDays + 1}, "days"},
		{"app_history", map[string]any{"id": 101, "limit": 0}, "limit"},
		{"list_segments", map[string]any{"sort": "best"}, "sort"},
		{"list_segments", map[string]any{"limit": api.MaxPageSize + 1}, "limit"},
		{"list_segments", map[string]any{"sort": "size"}, "sort"},
		{"list_segments", map[string]any{"cursor": "!!"}, "cursor"},
		{"list_segments", map[string]any{"cursor": "eDox"}, "cursor"},
		{"list_segments", map[string]any{"cursor": strings.Repeat("a", MaxCursorLen+1)}, "cursor"},
		{"get_segment", map[string]any{"id": "1"}, "id"},
		{"get_segment", map[string]any{"id": 0}, "id"},
		{"get_segment", map[string]any{"id": 1.5}, "id"},
		{"get_segment", map[string]any{}, "id"},
		{"keyword_metrics", map[string]any{"country": "us"}, "term"},
		{"keyword_metrics", map[string]any{"term": "  "}, "term"},
		{"keyword_metrics", map[string]any{"term": "budget", "country": "USA"}, "country"},
		{"list_alerts", map[string]any{"cursor": 3}, "cursor"},
		{"get_app", "not an object", "arguments"},
		{"no_such_tool", map[string]any{}, "name"},
	} {
		code, r := rpc(t, s, "tools/call", map[string]any{"name": c.tool, "arguments": c.args})
		if code != 200 || r.Error == nil || r.Error.Code != CodeInvalidParams || r.Error.Data["field"] != c.field || !strings.Contains(r.Error.Message, c.field) || string(r.ID) != "7" {
			t.Errorf("%s %v: %d %s %+v; want -32602 naming %s", c.tool, c.args, code, r.Result, r.Error, c.field)
		}
	}
	if _, r := rpc(t, s, "tools/call", map[string]any{"arguments": map[string]any{}}); r.Error == nil || r.Error.Code != CodeInvalidParams || r.Error.Data["field"] != "name" {
		t.Errorf("no name: %+v", r.Error)
	}
	if n := drv.Calls.Load() - calls; n != 0 {
		t.Fatalf("bad arguments reached D1 %d times", n)
	}
}

func TestUnknownMethodIs32601(t *testing.T) {
	s, _ := catalogueServer(t)
	code, r := rpc(t, s, "resources/list", map[string]any{})
	if code != 200 || r.Error == nil || r.Error.Code != CodeMethodNotFound || !strings.Contains(r.Error.Message, "resources/list") || string(r.ID) != "7" {
		t.Fatalf("%d %+v", code, r.Error)
	}
}

// TestMalformedMessages: not JSON is -32700, not one JSON-RPC request is
// -32600, both with id null and a 400.
func TestMalformedMessages(t *testing.T) {
	s, _ := catalogueServer(t)
	for _, c := range []struct {
		body, field string
		code        int
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"ping"`, "body", CodeParseError},
		{`not json`, "body", CodeParseError},
		{``, "body", CodeParseError},
		{`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, "body", CodeInvalidRequest},
		{`"ping"`, "body", CodeInvalidRequest},
		{`{"jsonrpc":"1.0","id":1,"method":"ping"}`, "jsonrpc", CodeInvalidRequest},
		{`{"id":1,"method":"ping"}`, "jsonrpc", CodeInvalidRequest},
		{`{"jsonrpc":"2.0","id":null,"method":"ping"}`, "id", CodeInvalidRequest},
		{`{"jsonrpc":"2.0","id":{},"method":"ping"}`, "id", CodeInvalidRequest},
		{`{"jsonrpc":"2.0","id":1}`, "method", CodeInvalidRequest},
		{`{"jsonrpc":"2.0","id":1,"method":5}`, "method", CodeInvalidRequest},
	} {
		rec := post(t, s, c.body)
		var r reply
		json.Unmarshal(rec.Body.Bytes(), &r)
		if rec.Code != 400 || r.Error == nil || r.Error.Code != c.code || r.Error.Data["field"] != c.field {
			t.Errorf("%s: %d %s; want 400, %d naming %s", c.body, rec.Code, rec.Body, c.code, c.field)
		}
		if (c.field == "body" || c.field == "id") && string(r.ID) != "null" {
			t.Errorf("%s: id %s", c.body, r.ID)
		}
	}
}

// TestNotificationsAre202WithNoBody: a notification (and a response to
// the server) is accepted with no body.
func TestNotificationsAre202WithNoBody(t *testing.T) {
	s, _ := catalogueServer(t)
	for _, body := range []string{
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}`,
		`{"jsonrpc":"2.0","method":"notifications/whatever"}`,
		`{"jsonrpc":"2.0","id":3,"result":{}}`,
		`{"jsonrpc":"2.0","id":4,"error":{"code":-1,"message":"x"}}`,
	} {
		rec := post(t, s, body)
		if rec.Code != http.StatusAccepted || rec.Body.Len() != 0 {
			t.Errorf("%s: %d %q", body, rec.Code, rec.Body)
		}
	}
}

// TestTransportHeaders: the transport's header rules, each a refusal that
// names the header in a JSON-RPC error with no id.
func TestTransportHeaders(t *testing.T) {
	s, _ := catalogueServer(t)
	ping := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	for _, c := range []struct {
		headers []string
		status  int
		field   string
	}{
		{[]string{"Accept", "text/event-stream"}, 406, "Accept"},
		{[]string{"Accept", "text/html, application/json;q=0"}, 406, "Accept"},
		{[]string{"Content-Type", "text/plain"}, 415, "Content-Type"},
		{[]string{"Content-Type", ""}, 415, "Content-Type"},
		{[]string{"Mcp-Session-Id", "abc"}, 404, "Mcp-Session-Id"},
		{[]string{"MCP-Protocol-Version", "2024-11-05"}, 400, "Mcp-Protocol-Version"},
		{[]string{"MCP-Protocol-Version", "next"}, 400, "Mcp-Protocol-Version"},
		{[]string{"Origin", "http://evil.example"}, 403, "Origin"},
	} {
		rec := post(t, s, ping, c.headers...)
		var r reply
		json.Unmarshal(rec.Body.Bytes(), &r)
		if rec.Code != c.status || r.Error == nil || r.Error.Data["field"] != c.field || string(r.ID) != "null" {
			t.Errorf("%v: %d %s; want %d naming %s", c.headers, rec.Code, rec.Body, c.status, c.field)
		}
	}
	for _, h := range [][]string{
		{"Accept", ""}, {"Accept", "*/*"}, {"Accept", "application/json"}, {"Content-Type", "application/json; charset=utf-8"},
		{"MCP-Protocol-Version", "2025-06-18"}, {"MCP-Protocol-Version", "2025-03-26"}, {"MCP-Protocol-Version", LatestProtocolVersion},
		{"Origin", "http://example.com"},
	} {
		if rec := post(t, s, ping, h...); rec.Code != 200 {
			t.Errorf("%v: %d %s", h, rec.Code, rec.Body)
		}
	}
	rec := post(t, s, `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"`+strings.Repeat("x", MaxRequestBody)+`"}}`)
	if rec.Code != 413 || !strings.Contains(rec.Body.String(), `"field":"body"`) {
		t.Errorf("large body: %d %s", rec.Code, rec.Body)
	}
	if MaxRequestBody > api.MaxBody {
		t.Errorf("MaxRequestBody %d is past api.MaxBody %d: the shim would hand Go no body", MaxRequestBody, api.MaxBody)
	}
}

// TestRouterServesMCP: POST /mcp reaches the handler through the API's
// router; GET /mcp is a 405 (no SSE stream), with Allow.
func TestRouterServesMCP(t *testing.T) {
	s, _ := catalogueServer(t)
	srv := api.NewServer(&api.Server{MCP: s})
	rec := post(t, srv, `{"jsonrpc":"2.0","id":"a","method":"tools/list"}`)
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"search_apps"`) {
		t.Fatalf("POST /mcp: %d %s", rec.Code, rec.Body)
	}
	get := httptest.NewRequest("GET", "/mcp", nil)
	get.Header.Set("Accept", "text/event-stream")
	rec = httptest.NewRecorder()
	srv.ServeHTTP(rec, get)
	if rec.Code != 405 || rec.Header().Get("Allow") != "POST" {
		t.Fatalf("GET /mcp: %d %v %s", rec.Code, rec.Header(), rec.Body)
	}
	rec = post(t, api.NewServer(&api.Server{}), `{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	if rec.Code != 503 {
		t.Fatalf("no MCP server bound: %d", rec.Code)
	}
}

// TestSearchDoesNotGrowWithTheCatalogue counts search_apps' read in
// SQLite (d1test.Measure): no walk of any table, the same steps among
// 1,000 other keywords (50,000 rankings, 10,000 apps) as among 2,000, and
// the rows read bounded by MaxSearchRowsRead (go test -run
// TestSearchDoesNotGrowWithTheCatalogue -v ./worker/mcp/ prints them).
func TestSearchDoesNotGrowWithTheCatalogue(t *testing.T) {
	_, drv := d1test.New(t)
	seedCatalogue(t, drv)
	drv.Exec(t, `INSERT INTO app_registry (track_id, name, rating_count) WITH RECURSIVE n(i) AS (SELECT 1000 UNION ALL SELECT i + 1 FROM n WHERE i < 10999) SELECT i, 'app ' || i, i FROM n`)
	grow := func(from int) d1test.Work {
		drv.Exec(t, `INSERT INTO crawl_keywords (keyword, source, created_at, searched_at, result_count) WITH RECURSIVE n(i) AS (SELECT ? UNION ALL SELECT i + 1 FROM n WHERE i < ? + 999) SELECT 'kw' || i, 'title', 'x', 'x', 50 FROM n`, from, from)
		drv.Exec(t, `INSERT INTO crawl_rankings (keyword, track_id, rank, seen_at) WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 49999) SELECT 'kw' || (? + i / 50), 1000 + (? + i) % 10000, 1 + i % 50, 'x' FROM n`, from, from)
		return drv.Measure(t, searchSQL, "budget", prefixEnd("budget"), MaxSearchKeywords, MaxSearchLimit)
	}
	first, second := grow(1), grow(1001)
	// A prefix matching many keywords reads MaxSearchKeywords of them, each
	// with its whole search (KeywordSearchSize rankings).
	wide := drv.Measure(t, searchSQL, "kw", prefixEnd("kw"), MaxSearchKeywords, MaxSearchLimit)
	t.Logf("search: %d rows among 1,000 keywords (VM steps %d), %d among 2,000 (%d); a wide prefix %d rows (VM steps %d); bound %d rows read",
		first.Rows, first.VMSteps, second.Rows, second.VMSteps, wide.Rows, wide.VMSteps, MaxSearchRowsRead)
	if first.Walked != 0 || second.Walked != 0 || wide.Walked != 0 || first.VMSteps != second.VMSteps || first.Rows != 6 {
		t.Fatalf("the search grew: %+v, %+v, %+v", first, second, wide)
	}
	if wide.Rows != MaxSearchKeywords*50 || wide.Rows > MaxSearchRowsRead {
		t.Fatalf("wide prefix: %+v", wide)
	}
	if !drv.ReadOnly(t, searchSQL) {
		t.Fatal("searchSQL writes")
	}
}
