// Package mcp serves storecrawl's data to AI agents over the Model Context
// Protocol: POST /mcp, the Streamable HTTP transport, JSON-RPC 2.0, one
// JSON response a request (never an SSE stream). It is stateless and
// read-only: no session is kept (none is issued; a request naming one is
// a 404), every tool reads what an API route reads (Deps) and writes
// nothing. docs/mcp.md is the reference.
package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"storecrawl/worker/logx"
)

// Protocol versions.
const (
	// LatestProtocolVersion is answered to a client asking for a version
	// this server does not speak.
	LatestProtocolVersion = "2025-11-25"
	// DefaultProtocolVersion is assumed for a request without the
	// MCP-Protocol-Version header (the transport's rule).
	DefaultProtocolVersion = "2025-03-26"
)

// SupportedProtocolVersions are the versions with the Streamable HTTP
// transport, newest first.
var SupportedProtocolVersions = []string{LatestProtocolVersion, "2025-06-18", DefaultProtocolVersion}

// MaxRequestBody bounds a message: a tool call's arguments are a few
// small values. It is at most api.MaxBody (a test holds it), the largest
// body the shim hands to Go.
const MaxRequestBody = 4 << 10

// JSON-RPC 2.0 error codes.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603
)

// Headers of the transport.
const (
	HeaderSessionID       = "Mcp-Session-Id"
	HeaderProtocolVersion = "Mcp-Protocol-Version"
)

// ServerName and ServerVersion are the serverInfo answered to initialize.
const (
	ServerName    = "storecrawl"
	ServerVersion = "1.0.0"
)

// Server answers MCP messages with the tools over Deps.
type Server struct {
	Deps Deps
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// New makes a server over d.
func New(d Deps) *Server { return &Server{Deps: d} }

func (s *Server) now() time.Time {
	if s.Now == nil {
		return time.Now()
	}
	return s.Now()
}

// rpcError is a JSON-RPC error object; Data names the field at fault.
type rpcError struct {
	Code    int            `json:"code"`
	Message string         `json:"message"`
	Data    map[string]any `json:"data,omitempty"`
}

// invalidParams is the -32602 naming field.
func invalidParams(field, msg string) *rpcError {
	return &rpcError{Code: CodeInvalidParams, Message: "invalid params: " + msg, Data: map[string]any{"field": field}}
}

// response is one JSON-RPC response: Result or Error, never both.
type response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

// message is what a POST carries: a request (method and id), a
// notification (method, no id) or a response to the server (id, result or
// error). A raw member absent stays nil; null is "null".
type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  *string         `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`
}

// ServeHTTP is the transport: POST only (a GET is a 405 from the router:
// no SSE stream is offered), the headers checked as the transport says,
// then the body handled (Handle).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeHTTPError(w, http.StatusMethodNotAllowed, CodeInvalidRequest, "method", "only POST is served: no SSE stream is offered")
		return
	}
	if status, field, msg := checkHeaders(r); status != 0 {
		writeHTTPError(w, status, CodeInvalidRequest, field, msg)
		return
	}
	if r.ContentLength > MaxRequestBody {
		writeHTTPError(w, http.StatusRequestEntityTooLarge, CodeInvalidRequest, "body", fmt.Sprintf("body is at most %d bytes", MaxRequestBody))
		return
	}
	var body []byte
	if r.Body != nil {
		b, err := io.ReadAll(io.LimitReader(r.Body, MaxRequestBody+1))
		switch {
		case len(b) > MaxRequestBody:
			writeHTTPError(w, http.StatusRequestEntityTooLarge, CodeInvalidRequest, "body", fmt.Sprintf("body is at most %d bytes", MaxRequestBody))
			return
		case err != nil:
			writeHTTPError(w, http.StatusBadRequest, CodeParseError, "body", "body: unreadable")
			return
		}
		body = b
	}
	status, out := s.Handle(r.Context(), body)
	if out == nil {
		w.WriteHeader(status)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(out)
}

// checkHeaders holds a POST to the transport's rules: an Origin other than
// the endpoint's own is a 403 (DNS rebinding); a session id is a 404 (no
// session is ever issued); an MCP-Protocol-Version not supported is a
// 400; a body not declared application/json is a 415; an Accept that
// admits no application/json is a 406 (no Accept admits anything). It
// names the header at fault; status 0 when all hold.
func checkHeaders(r *http.Request) (status int, field, msg string) {
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || u.Host == "" || !strings.EqualFold(u.Host, r.Host) {
			return http.StatusForbidden, "Origin", "origin " + o + " is not allowed: only same-origin requests are served"
		}
	}
	if id := r.Header.Get(HeaderSessionID); id != "" {
		return http.StatusNotFound, HeaderSessionID, "no such session: this server is stateless and issues none; initialize without " + HeaderSessionID
	}
	if v := r.Header.Get(HeaderProtocolVersion); v != "" && !slices.Contains(SupportedProtocolVersions, v) {
		return http.StatusBadRequest, HeaderProtocolVersion, fmt.Sprintf("unsupported protocol version %q (supported: %s)", v, strings.Join(SupportedProtocolVersions, ", "))
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return http.StatusUnsupportedMediaType, "Content-Type", "Content-Type must be application/json"
	}
	if a := r.Header.Values("Accept"); len(a) > 0 && !acceptsJSON(strings.Join(a, ",")) {
		return http.StatusNotAcceptable, "Accept", "Accept must admit application/json (the answer is one JSON object)"
	}
	return 0, "", ""
}

// acceptsJSON reports whether an Accept header admits application/json.
func acceptsJSON(accept string) bool {
	for _, part := range strings.Split(accept, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil || params["q"] == "0" || params["q"] == "0.0" || params["q"] == "0.00" || params["q"] == "0.000" {
			continue
		}
		if mt == "application/json" || mt == "application/*" || mt == "*/*" {
			return true
		}
	}
	return false
}

// writeHTTPError answers a message the transport refuses: an HTTP error
// with a JSON-RPC error that has no id, naming the field.
func writeHTTPError(w http.ResponseWriter, status, code int, field, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(response{JSONRPC: "2.0", ID: json.RawMessage("null"),
		Error: &rpcError{Code: code, Message: msg, Data: map[string]any{"field": field}}})
}

// Handle answers one POSTed body: the HTTP status and the JSON to send
// (nil: none, a 202 for a notification or a response). A request gets
// 200 with its result or JSON-RPC error; a body that is not JSON (-32700)
// or not one JSON-RPC message (-32600: batches are not part of the
// protocol since 2025-06-18) gets 400.
func (s *Server) Handle(ctx context.Context, body []byte) (int, []byte) {
	trimmed := bytes.TrimSpace(body)
	if !json.Valid(trimmed) {
		return errorAnswer(http.StatusBadRequest, nil, &rpcError{Code: CodeParseError, Message: "parse error: the body is not valid JSON",
			Data: map[string]any{"field": "body"}})
	}
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return errorAnswer(http.StatusBadRequest, nil, &rpcError{Code: CodeInvalidRequest,
			Message: "invalid request: the body must be one JSON-RPC message object (batches are not supported)", Data: map[string]any{"field": "body"}})
	}
	var m message
	if err := json.Unmarshal(trimmed, &m); err != nil {
		return errorAnswer(http.StatusBadRequest, nil, &rpcError{Code: CodeInvalidRequest, Message: "invalid request: " + typeError(err),
			Data: map[string]any{"field": jsonField(err)}})
	}
	if m.JSONRPC != "2.0" {
		return errorAnswer(http.StatusBadRequest, validID(m.ID), &rpcError{Code: CodeInvalidRequest, Message: `invalid request: jsonrpc must be "2.0"`,
			Data: map[string]any{"field": "jsonrpc"}})
	}
	switch {
	case m.Method != nil && m.ID == nil:
		// A notification (notifications/initialized, cancelled, ...):
		// accepted, nothing to do for a stateless server.
		return http.StatusAccepted, nil
	case m.Method == nil && m.ID != nil && (m.Result != nil || m.Error != nil):
		// A response to a request this server never sends.
		return http.StatusAccepted, nil
	case m.Method == nil:
		return errorAnswer(http.StatusBadRequest, validID(m.ID), &rpcError{Code: CodeInvalidRequest, Message: "invalid request: method is missing",
			Data: map[string]any{"field": "method"}})
	case validID(m.ID) == nil:
		return errorAnswer(http.StatusBadRequest, nil, &rpcError{Code: CodeInvalidRequest, Message: "invalid request: id must be a string or a number",
			Data: map[string]any{"field": "id"}})
	}
	result, rerr := s.call(ctx, *m.Method, m.Params)
	if rerr != nil {
		return errorAnswer(http.StatusOK, m.ID, rerr)
	}
	out, err := json.Marshal(response{JSONRPC: "2.0", ID: m.ID, Result: result})
	if err != nil {
		logx.Err("mcp.encode_failed", err, map[string]any{"method": *m.Method})
		return errorAnswer(http.StatusOK, m.ID, &rpcError{Code: CodeInternalError, Message: "internal error"})
	}
	return http.StatusOK, out
}

// validID is id when it is a string or a number, else nil.
func validID(id json.RawMessage) json.RawMessage {
	if len(id) == 0 {
		return nil
	}
	switch c := id[0]; {
	case c == '"', c == '-', c >= '0' && c <= '9':
		return id
	}
	return nil
}

// errorAnswer is a JSON-RPC error response (id null when unknown).
func errorAnswer(status int, id json.RawMessage, e *rpcError) (int, []byte) {
	if id == nil {
		id = json.RawMessage("null")
	}
	out, _ := json.Marshal(response{JSONRPC: "2.0", ID: id, Error: e})
	return status, out
}

// typeError words a decoding error of a message member.
func typeError(err error) string {
	if te, ok := err.(*json.UnmarshalTypeError); ok && te.Field != "" {
		return fmt.Sprintf("%s must not be a JSON %s", te.Field, te.Value)
	}
	return err.Error()
}

// jsonField is the member a decoding error names ("body" when none).
func jsonField(err error) string {
	if te, ok := err.(*json.UnmarshalTypeError); ok && te.Field != "" {
		return te.Field
	}
	return "body"
}

// call runs one request's method; a panic is an internal error, logged.
func (s *Server) call(ctx context.Context, method string, params json.RawMessage) (result any, rerr *rpcError) {
	defer func() {
		if p := recover(); p != nil {
			_ = logx.Recovered(p, "mcp "+method)
			result, rerr = nil, &rpcError{Code: CodeInternalError, Message: "internal error"}
		}
	}()
	switch method {
	case "initialize":
		return initialize(params)
	case "ping":
		return struct{}{}, nil
	case "tools/list":
		return map[string]any{"tools": toolList()}, nil
	case "tools/call":
		return s.callTool(ctx, params)
	}
	return nil, &rpcError{Code: CodeMethodNotFound, Message: "method not found: " + method, Data: map[string]any{"method": method}}
}

// initialize negotiates the version: the client's when this server speaks
// it, else the latest this server speaks (the client then disconnects if
// it does not speak that).
func initialize(params json.RawMessage) (any, *rpcError) {
	var p struct {
		ProtocolVersion *string `json:"protocolVersion"`
	}
	if params == nil || json.Unmarshal(params, &p) != nil {
		return nil, invalidParams("params", "params must be an object with protocolVersion, capabilities and clientInfo")
	}
	if p.ProtocolVersion == nil || *p.ProtocolVersion == "" {
		return nil, invalidParams("protocolVersion", "protocolVersion must be a protocol version string")
	}
	version := LatestProtocolVersion
	if slices.Contains(SupportedProtocolVersions, *p.ProtocolVersion) {
		version = *p.ProtocolVersion
	}
	return map[string]any{
		"protocolVersion": version,
		"capabilities":    map[string]any{"tools": map[string]any{"listChanged": false}},
		"serverInfo":      map[string]any{"name": ServerName, "title": "storecrawl App Store data", "version": ServerVersion},
		"instructions":    instructions,
	}, nil
}

// instructions is what the client may hand its model about the tools.
const instructions = "Read-only App Store market data crawled by storecrawl. search_apps finds apps by the start of their name; " +
	"get_app and app_history read one app (id: its App Store track id); list_segments and get_segment read markets " +
	"(the apps ranking for one keyword, with an opportunity score); keyword_metrics reads a search term's popularity, " +
	"difficulty and top apps; list_alerts lists alerts. Lists page with cursor / next_cursor."
