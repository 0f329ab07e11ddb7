// Package search finds apps by the start of their name, developer or
// subtitle, and keywords by prefix (GET /v1/search): each page one range of
// a primary key from a cursor, so a page reads what it returns whatever
// the catalogue holds (docs/explorer.md#search).
package search

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"storecrawl/worker/d1"
	"storecrawl/worker/module"
)

// Module declares the search terms: written by migration 0043's triggers
// on app_registry, never by a statement of the code.
var Module = module.Module{
	Name: "search",
	Doc:  "apps by the start of their name, developer or subtitle (GET /v1/search)",
	Tables: []module.Table{
		{Name: "app_search_terms", Doc: "an app's lowercased name, developer or subtitle: the search's range"},
	},
	Triggers: []module.Trigger{
		{Name: "app_search_insert", On: "app_registry", Writes: []string{"app_search_terms"},
			Doc: "a new app's name, developer and subtitle become its terms"},
		{Name: "app_search_name", On: "app_registry", Writes: []string{"app_search_terms"},
			Doc: "a changed name replaces its term (an unchanged one written again writes nothing)"},
		{Name: "app_search_developer", On: "app_registry", Writes: []string{"app_search_terms"},
			Doc: "a changed developer name replaces its term"},
		{Name: "app_search_subtitle", On: "app_registry", Writes: []string{"app_search_terms"},
			Doc: "a changed subtitle replaces its term"},
		{Name: "app_search_delete", On: "app_registry", Writes: []string{"app_search_terms"},
			Doc: "a deleted app's terms go with it"},
	},
}

// Bounds of a search request.
const (
	// MaxQueryLen is the longest query (characters); a term keeps its
	// first 100 (migrations/0043), so a longer one could never match.
	MaxQueryLen = 100
	// DefaultLimit and MaxLimit bound a page.
	DefaultLimit = 20
	MaxLimit     = 50
	// maxCursorLen bounds an encoded cursor.
	maxCursorLen = 400
)

// Kinds a search looks for.
const (
	KindApps     = "apps"
	KindKeywords = "keywords"
)

// Fields of a term, as stored.
var fieldNames = map[int]string{1: "name", 2: "developer", 3: "subtitle"}

// Query is one validated search page.
type Query struct {
	Q     string // lowercased, trimmed
	Kind  string
	Limit int
	// After is the cursor: the last row of the previous page (zero: the first page).
	After Cursor
}

// Cursor is where a page starts after: an apps page's last term, app and
// field, or a keywords page's last keyword.
type Cursor struct {
	Term    string `json:"t"`
	TrackID int64  `json:"a,omitempty"`
	Field   int    `json:"f,omitempty"`
}

// Encode renders the cursor for a URL ("" for the zero cursor).
func (c Cursor) Encode() string {
	if c == (Cursor{}) {
		return ""
	}
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

// DecodeCursor reads an Encode'd cursor.
func DecodeCursor(s string) (Cursor, bool) {
	var c Cursor
	if s == "" {
		return c, true
	}
	if len(s) > maxCursorLen {
		return c, false
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || json.Unmarshal(b, &c) != nil || c.Term == "" || c.TrackID < 0 || c.Field < 0 || c.Field > 3 {
		return Cursor{}, false
	}
	return c, true
}

// Parse validates a request's parameters (get reads one); field names the
// bad one. A query is lowercased as the terms are (ASCII letters: SQLite's
// lower()).
func Parse(get func(string) string) (q Query, field, msg string) {
	q.Q = strings.ToLower(strings.TrimSpace(get("q")))
	if q.Q == "" || utf8.RuneCountInString(q.Q) > MaxQueryLen {
		return Query{}, "q", fmt.Sprintf("q must be 1–%d characters", MaxQueryLen)
	}
	switch q.Kind = get("kind"); q.Kind {
	case "":
		q.Kind = KindApps
	case KindApps, KindKeywords:
	default:
		return Query{}, "kind", "kind must be apps or keywords"
	}
	q.Limit = DefaultLimit
	if v := get("limit"); v != "" {
		n, err := fmt.Sscan(v, &q.Limit)
		if err != nil || n != 1 || q.Limit < 1 || q.Limit > MaxLimit || fmt.Sprint(q.Limit) != v {
			return Query{}, "limit", fmt.Sprintf("limit must be an integer 1–%d", MaxLimit)
		}
	}
	c, ok := DecodeCursor(get("cursor"))
	if !ok || (q.Kind == KindKeywords && (c.TrackID != 0 || c.Field != 0)) || (q.Kind == KindApps && c.Term != "" && (c.TrackID == 0 || c.Field == 0)) {
		return Query{}, "cursor", "cursor must be a next_cursor this search returned"
	}
	q.After = c
	return q, "", ""
}

// prefixEnd is the upper bound of a prefix range: U+10FFFF sorts after every
// character SQLite's BINARY collation can meet after the prefix.
const prefixEnd = `?1 || char(1114111)`

// AppsSQL is one page of apps whose term starts with ?1, after the cursor
// (?2, ?3, ?4), in term order: a range of app_search_terms' primary key, then
// each app by its own (CROSS JOIN keeps that order). Rows read: the page's
// terms and their apps.
const AppsSQL = `SELECT t.term AS term, t.track_id AS track_id, t.field AS field, a.name AS name,
  a.developer_name AS developer_name, a.subtitle AS subtitle, a.genre AS genre, a.average_rating AS average_rating,
  a.rating_count AS rating_count, a.price AS price, a.artwork_url AS artwork_url
FROM app_search_terms t CROSS JOIN app_registry a ON a.track_id = t.track_id
WHERE t.term >= ?1 AND t.term < ` + prefixEnd + ` AND (t.term, t.track_id, t.field) > (?2, ?3, ?4)
ORDER BY t.term, t.track_id, t.field LIMIT ?5`

// KeywordsSQL is one page of keywords starting with ?1 after ?2, in order:
// a range of crawl_keywords' unique index, each keyword's score by primary key.
const KeywordsSQL = `SELECT k.keyword AS keyword, k.result_count AS result_count, k.searched_at AS searched_at,
  (SELECT o.score FROM opportunity_scores o WHERE o.cluster_id = k.keyword) AS opportunity_score,
  EXISTS (SELECT 1 FROM market_clusters c WHERE c.cluster_id = k.keyword) AS is_market
FROM crawl_keywords k
WHERE k.keyword >= ?1 AND k.keyword < ` + prefixEnd + ` AND k.keyword > ?2
ORDER BY k.keyword LIMIT ?3`

// HotQueries are the search's reads with sample arguments (plan-checked
// on a large catalogue by worker/queryplan_test.go).
func HotQueries() []d1.NamedQuery {
	return []d1.NamedQuery{
		{Name: "search apps", SQL: AppsSQL, Args: []any{"photo", "", 0, 0, 20}, Page: true},
		{Name: "search keywords", SQL: KeywordsSQL, Args: []any{"photo", "", 20}, Page: true},
	}
}

// App is one app found.
type App struct {
	TrackID       int64    `json:"track_id"`
	Name          string   `json:"name"`
	DeveloperName string   `json:"developer_name"`
	Subtitle      string   `json:"subtitle"`
	Genre         string   `json:"genre"`
	AverageRating *float64 `json:"average_rating"`
	RatingCount   *int64   `json:"rating_count"`
	Price         *float64 `json:"price"`
	ArtworkURL    string   `json:"artwork_url"`
	// Matched says which of its texts starts with the query.
	Matched string `json:"matched"`
}

// Keyword is one keyword found.
type Keyword struct {
	Keyword          string   `json:"keyword"`
	ResultCount      *int64   `json:"result_count"`
	SearchedAt       *string  `json:"searched_at"`
	OpportunityScore *float64 `json:"opportunity_score"`
	HasMarket        bool     `json:"has_market"` // decoded from is_market
}

// Store reads D1.
type Store struct{ DB *d1.DB }

// Search reads one page: its items and the cursor of the next ("" after
// the last). An app matched by two of its texts appears once a page.
func (s Store) Search(ctx context.Context, q Query) (items []json.RawMessage, next string, err error) {
	if q.Kind == KindKeywords {
		var rows []struct {
			Keyword
			IsMarket int `json:"is_market"`
		}
		if err := s.DB.Query(ctx, &rows, KeywordsSQL, q.Q, q.After.Term, q.Limit); err != nil {
			return nil, "", err
		}
		for _, r := range rows {
			k := r.Keyword
			k.HasMarket = r.IsMarket == 1
			b, _ := json.Marshal(k)
			items = append(items, b)
		}
		if len(rows) == q.Limit {
			next = Cursor{Term: rows[len(rows)-1].Keyword.Keyword}.Encode()
		}
		return items, next, nil
	}
	var rows []struct {
		App
		Term  string `json:"term"`
		Field int    `json:"field"`
	}
	if err := s.DB.Query(ctx, &rows, AppsSQL, q.Q, q.After.Term, q.After.TrackID, q.After.Field, q.Limit); err != nil {
		return nil, "", err
	}
	seen := map[int64]bool{}
	for _, r := range rows {
		if seen[r.TrackID] {
			continue
		}
		seen[r.TrackID] = true
		a := r.App
		a.Matched = fieldNames[r.Field]
		b, _ := json.Marshal(a)
		items = append(items, b)
	}
	if len(rows) == q.Limit {
		last := rows[len(rows)-1]
		next = Cursor{Term: last.Term, TrackID: last.TrackID, Field: last.Field}.Encode()
	}
	return items, next, nil
}
