package api

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"storecrawl/worker/logx"
	"storecrawl/worker/search"
)

// MarketDetailReader reads one market (worker/markets.Markets).
type MarketDetailReader interface {
	Market(ctx context.Context, id string) (json.RawMessage, bool, error)
}

// SearchReader reads one page of a search (worker/search.Store).
type SearchReader interface {
	Search(ctx context.Context, q search.Query) (items []json.RawMessage, next string, err error)
}

// ReadCookie is the cookie the explorer's pages set once the reader has
// given READ_TOKEN: the pages' own requests (and the page loads) carry it.
const ReadCookie = "storecrawl_read"

// readAllowed says whether r may read: READ_TOKEN unset, or given as a
// bearer token (the admin token too) or the ReadCookie.
func (s *Server) readAllowed(r *http.Request) bool {
	want := ""
	if s.ReadToken != nil {
		want = s.ReadToken()
	}
	if want == "" {
		return true
	}
	auth := r.Header.Get("Authorization")
	if bearerOK(auth, want) || (s.AdminToken != nil && bearerOK(auth, s.AdminToken())) {
		return true
	}
	c, err := r.Cookie(ReadCookie)
	return err == nil && subtle.ConstantTimeCompare([]byte(c.Value), []byte(want)) == 1
}

// requireRead guards a read route with READ_TOKEN when it is set: a 401
// naming authorization otherwise.
func (s *Server) requireRead(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !s.readAllowed(r) {
			logx.Event("http.unauthorized", map[string]any{"level": logx.Warn, "path": r.URL.Path})
			w.Header().Set("WWW-Authenticate", bearerRealm)
			writeError(w, http.StatusUnauthorized, "authorization", "this deployment needs READ_TOKEN: Authorization: Bearer <token> or the explorer's cookie")
			return
		}
		next(w, r)
	}
}

// market serves GET /v1/clusters/{id}: one market's scores, members with
// their share of its ratings, and neighbouring markets.
func (s *Server) market(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if id == "" || len(id) > MaxClusterIDLen {
		writeError(w, http.StatusBadRequest, "id", fmt.Sprintf("id must be a cluster id (its keyword) of 1–%d characters", MaxClusterIDLen))
		return
	}
	if s.MarketDetail == nil {
		writeError(w, http.StatusServiceUnavailable, "", "markets are not available")
		return
	}
	m, found, err := s.MarketDetail.Market(r.Context(), id)
	switch {
	case err != nil:
		logx.Err("markets.read_failed", err, map[string]any{"cluster_id": id})
		writeError(w, http.StatusInternalServerError, "", "read failed")
	case !found:
		writeError(w, http.StatusNotFound, "id", "no market with that id")
	default:
		w.Header().Set("Content-Type", "application/json")
		w.Write(m)
	}
}

// search serves GET /v1/search?q=&kind=apps|keywords&limit=&cursor=: one
// page of apps whose name, developer or subtitle starts with q, or of
// keywords starting with it (worker/search), as JSON {items, next_cursor},
// or exported from the cursor on (?format=csv|ndjson).
func (s *Server) search(w http.ResponseWriter, r *http.Request) {
	format, ok := exportFormat(w, r)
	if !ok {
		return
	}
	q, field, msg := search.Parse(r.URL.Query().Get)
	if field != "" {
		writeError(w, http.StatusBadRequest, field, msg)
		return
	}
	if s.Search == nil {
		writeError(w, http.StatusServiceUnavailable, "", "search is not available")
		return
	}
	read := func(ctx context.Context, cursor string, limit int) ([]json.RawMessage, string, error) {
		qq := q
		qq.After, _ = search.DecodeCursor(cursor)
		qq.Limit = min(limit, search.MaxLimit)
		return s.Search.Search(ctx, qq)
	}
	if format != formatJSON {
		limit := q.Limit
		if r.URL.Query().Get("limit") == "" {
			limit = search.MaxLimit
		}
		exportPages(w, r, "search-"+q.Kind, format, read, q.After.Encode(), limit)
		return
	}
	items, next, err := read(r.Context(), q.After.Encode(), q.Limit)
	if err != nil {
		logx.Err("search.read_failed", err, nil)
		writeError(w, http.StatusInternalServerError, "", "read failed")
		return
	}
	if items == nil {
		items = []json.RawMessage{}
	}
	nextCursor := any(nil)
	if next != "" {
		nextCursor = next
	}
	writeJSON(w, http.StatusOK, map[string]any{"q": q.Q, "kind": q.Kind, "limit": q.Limit, "items": items, "next_cursor": nextCursor})
}

// pagePath reports whether p is one of the explorer's page paths (served
// the page shell), not one of its files.
func pagePath(p string) bool {
	rest := strings.TrimPrefix(p, "/app/")
	return rest == "" || rest == "markets" || rest == "search" || rest == "alerts" ||
		strings.HasPrefix(rest, "markets/") || strings.HasPrefix(rest, "apps/") || strings.HasPrefix(rest, "keywords/")
}
