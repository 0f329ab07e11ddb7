package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"

	"storecrawl/worker/api"
	"storecrawl/worker/catalogue"
	"storecrawl/worker/d1"
	"storecrawl/worker/keywords"
	"storecrawl/worker/logx"
	"storecrawl/worker/segments"
)

// tool is one MCP tool: its name, what it does, its arguments and its run
// over validated arguments.
type tool struct {
	Name        string
	Title       string
	Description string
	Params      []param
	Run         func(s *Server, ctx context.Context, a args) toolResult
}

// toolResult is what a run answers: a JSON object, or an error the model
// reads (isError: not found, not available, read failed).
type toolResult struct {
	Value   any
	ErrText string
	// Invalid is an argument the schema admits but the tool does not
	// (-32602 naming it).
	Invalid *rpcError
}

func fail(msg string) toolResult { return toolResult{ErrText: msg} }

// readFailed logs a store's failure and answers it as a tool error.
func readFailed(event string, err error, fields map[string]any) toolResult {
	logx.Err(event, err, fields)
	return fail("read failed; try again later")
}

// Bounds of the list tools' arguments (the API's, for the same reads).
const (
	// MaxCursorLen bounds a cursor: a listing's opaque cursor, as the
	// routes bound it.
	MaxCursorLen = d1.MaxCursorLen
	// MaxQueryLen bounds search_apps' q: a name's start, as long as a
	// keyword can be.
	MaxQueryLen = keywords.MaxTermLen
)

var (
	countryPattern = regexp.MustCompile(`^[a-z]{2}$`)
	idParam        = param{Name: "id", Type: "integer", Description: "the app's App Store track id", Required: true, Min: 1, Max: 1<<53 - 1}
	cursorParam    = param{Name: "cursor", Type: "string", Description: "next_cursor of the previous page; absent for the first page", MaxLen: MaxCursorLen}
	pageLimit      = param{Name: "limit", Type: "integer", Description: "items on the page", Min: 1, Max: api.MaxPageSize, Default: int64(api.DefaultPageSize)}
)

// tools are every tool, in the order tools/list answers them.
var tools = []tool{
	{
		Name: "search_apps", Title: "Search apps by name",
		Description: "Find apps whose name starts with q (a word, a word pair or a short title of an app's name, as the crawl's keyword index holds them): " +
			"the apps the App Store ranks for the first keywords that start with q, apps whose name starts with q first.",
		Params: []param{
			{Name: "q", Type: "string", Description: "the start of an app's name (matched lower case, spaces collapsed)", Required: true, MinLen: 1, MaxLen: MaxQueryLen},
			{Name: "limit", Type: "integer", Description: "apps answered", Min: 1, Max: MaxSearchLimit, Default: int64(DefaultSearchLimit)},
		},
		Run: (*Server).searchApps,
	},
	{
		Name: "get_app", Title: "Get an app",
		Description: "One app's enriched record (GET /v1/apps/{id}): name, developer, genre, price, rating and its histogram, version, the description's opening (400 characters), in-app purchases, scores.",
		Params:      []param{idParam},
		Run:         (*Server).getApp,
	},
	{
		Name: "app_history", Title: "App history",
		Description: "An app's history (GET /v1/apps/{id}/history): current values and velocities, rating observations, version and price changes, keyword and chart ranks, newest first.",
		Params: []param{
			idParam,
			{Name: "days", Type: "integer", Description: "the window in days", Min: 1, Max: catalogue.MaxHistoryDays, Default: int64(catalogue.DefaultHistoryDays)},
			{Name: "limit", Type: "integer", Description: "rows of each series", Min: 1, Max: catalogue.MaxHistoryLimit, Default: int64(catalogue.DefaultHistoryLimit)},
		},
		Run: (*Server).appHistory,
	},
	{
		Name: "list_segments", Title: "List market segments",
		Description: "Live market segments (communities of keywords whose top apps overlap) by opportunity (demand × fragmentation × quality gap, 0–100), " +
			"trend (heating first) or demand, with their scores and trend (GET /v1/segments). Page with cursor.",
		Params: []param{
			{Name: "sort", Type: "string", Description: "opportunity: best opportunity first; trend: heating first; demand: most demand first", Enum: api.SegmentSorts, Default: api.SegmentSorts[0]},
			pageLimit,
			cursorParam,
		},
		Run: (*Server).listSegments,
	},
	{
		Name: "get_segment", Title: "Get a market segment",
		Description: "One market segment in full (GET /v1/segments/{id}; id: an id of list_segments): its scores, keywords, apps with their share of its ratings, " +
			"neighbouring segments by shared apps, daily snapshots (newest first) and lineage.",
		Params: []param{
			{Name: "id", Type: "integer", Description: "the segment's id (an id of list_segments)", Required: true, Min: 1, Max: 1<<53 - 1},
		},
		Run: (*Server).getSegment,
	},
	{
		Name: "keyword_metrics", Title: "Keyword metrics",
		Description: "A search term's metrics (GET /v1/keywords/{term}): popularity 0–100, difficulty 0–100, the latest search's result count, the top apps with their rank history.",
		Params: []param{
			{Name: "term", Type: "string", Description: "the search term (matched lower case, spaces collapsed)", Required: true, MinLen: 1, MaxLen: keywords.MaxTermLen},
			{Name: "country", Type: "string", Description: "the storefront's two-letter code; the deployment's storefront when absent", Pattern: countryPattern},
		},
		Run: (*Server).keywordMetrics,
	},
	{
		Name: "list_alerts", Title: "List alerts",
		Description: "Alerts raised on watched apps and markets, newest first. Page with cursor.",
		Params:      []param{cursorParam},
		Run:         (*Server).listAlerts,
	},
}

// toolList is tools/list's answer.
func toolList() []map[string]any {
	out := make([]map[string]any, len(tools))
	for i, t := range tools {
		out[i] = map[string]any{"name": t.Name, "title": t.Title, "description": t.Description, "inputSchema": schema(t.Params),
			"annotations": map[string]any{"readOnlyHint": true, "openWorldHint": false}}
	}
	return out
}

// callTool runs tools/call: the tool named, its arguments validated
// (-32602 naming the field), its answer as text (the JSON) and as
// structured content; a tool's own failure is a result with isError.
func (s *Server) callTool(ctx context.Context, params json.RawMessage) (any, *rpcError) {
	var p struct {
		Name      *string         `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if params == nil || json.Unmarshal(params, &p) != nil {
		return nil, invalidParams("params", "params must be an object with name and arguments")
	}
	if p.Name == nil {
		return nil, invalidParams("name", "name is required: the tool's name")
	}
	var t *tool
	for i := range tools {
		if tools[i].Name == *p.Name {
			t = &tools[i]
		}
	}
	if t == nil {
		return nil, invalidParams("name", "name must be a tool of tools/list: no tool "+strconv.Quote(*p.Name))
	}
	a, rerr := validate(t.Params, p.Arguments)
	if rerr != nil {
		return nil, rerr
	}
	res := t.Run(s, ctx, a)
	if res.Invalid != nil {
		return nil, res.Invalid
	}
	if res.ErrText != "" {
		return map[string]any{"content": []map[string]any{{"type": "text", "text": res.ErrText}}, "isError": true}, nil
	}
	text, err := json.Marshal(res.Value)
	if err != nil {
		return nil, &rpcError{Code: CodeInternalError, Message: "internal error"}
	}
	return map[string]any{"content": []map[string]any{{"type": "text", "text": string(text)}},
		"structuredContent": json.RawMessage(text), "isError": false}, nil
}

func (s *Server) searchApps(ctx context.Context, a args) toolResult {
	q := keywords.Normalize(a.str("q"))
	if q == "" {
		return toolResult{Invalid: invalidParams("q", "q must hold more than spaces")}
	}
	if s.Deps.Search == nil {
		return fail("search is not available")
	}
	res, err := s.Deps.Search.SearchApps(ctx, q, int(a.int("limit")))
	if err != nil {
		return readFailed("mcp.search_failed", err, map[string]any{"q": q})
	}
	return toolResult{Value: res}
}

func (s *Server) getApp(ctx context.Context, a args) toolResult {
	if s.Deps.Apps == nil {
		return fail("apps are not available")
	}
	id := a.int("id")
	rec, found, err := s.Deps.Apps.App(ctx, id)
	switch {
	case err != nil:
		return readFailed("apps.read_failed", err, map[string]any{"track_id": id})
	case !found:
		return fail(fmt.Sprintf("no app with id %d", id))
	}
	return toolResult{Value: rec}
}

func (s *Server) appHistory(ctx context.Context, a args) toolResult {
	if s.Deps.AppHistory == nil {
		return fail("history is not available")
	}
	q := catalogue.HistoryQuery{TrackID: a.int("id"), Days: int(a.int("days")), Limit: int(a.int("limit"))}
	rec, found, err := s.Deps.AppHistory.AppHistory(ctx, q, s.now())
	switch {
	case err != nil:
		return readFailed("apps.history_read_failed", err, map[string]any{"track_id": q.TrackID})
	case !found:
		return fail(fmt.Sprintf("no app with id %d", q.TrackID))
	}
	return toolResult{Value: rec}
}

func (s *Server) listSegments(ctx context.Context, a args) toolResult {
	if s.Deps.Segments == nil {
		return fail("segments are not available")
	}
	sort, limit := a.str("sort"), int(a.int("limit"))
	items, next, err := s.Deps.Segments.List(ctx, sort, limit, a.str("cursor"))
	switch {
	case errors.Is(err, segments.ErrBadCursor):
		return toolResult{Invalid: invalidParams("cursor", "cursor is not one list_segments answered: start again without it")}
	case err != nil:
		return readFailed("segments.read_failed", err, nil)
	}
	// The answer is GET /v1/segments' body for the same arguments.
	body := map[string]any{"items": items, "sort": sort, "limit": limit, "next_cursor": nil}
	if items == nil {
		body["items"] = []json.RawMessage{}
	}
	if next != "" {
		body["next_cursor"] = next
	}
	return toolResult{Value: body}
}

func (s *Server) getSegment(ctx context.Context, a args) toolResult {
	if s.Deps.Segments == nil {
		return fail("segments are not available")
	}
	id := a.int("id")
	seg, found, err := s.Deps.Segments.Get(ctx, id)
	switch {
	case err != nil:
		return readFailed("segments.read_failed", err, map[string]any{"segment_id": id})
	case !found:
		return fail(fmt.Sprintf("no segment with id %d (list_segments lists them)", id))
	}
	return toolResult{Value: seg}
}

func (s *Server) keywordMetrics(ctx context.Context, a args) toolResult {
	term := keywords.Normalize(a.str("term"))
	if term == "" {
		return toolResult{Invalid: invalidParams("term", "term must hold more than spaces")}
	}
	country := a.str("country")
	if country == "" {
		country = s.Deps.Country
	}
	if s.Deps.Keywords == nil {
		return fail("keyword metrics are not available")
	}
	if country != s.Deps.Country {
		return fail(fmt.Sprintf("no keywords stored for storefront %s: this deployment crawls %s", country, s.Deps.Country))
	}
	rep, found, err := s.Deps.Keywords.Keyword(ctx, term, country, s.now())
	switch {
	case err != nil:
		return readFailed("keywords.read_failed", err, map[string]any{"term": term})
	case !found:
		return fail("no keyword " + strconv.Quote(term) + " in storefront " + country)
	}
	return toolResult{Value: rep}
}

// AlertsNote is list_alerts' answer while the deployment has no alerts.
const AlertsNote = "alerts are not part of this deployment yet: the list is empty until watchlists and alerts are (docs/mcp.md)"

func (s *Server) listAlerts(ctx context.Context, a args) toolResult {
	return toolResult{Value: map[string]any{"items": []any{}, "next_cursor": nil, "note": AlertsNote}}
}
