package mcp

import (
	"cmp"
	"context"
	"slices"
	"strings"

	"storecrawl/worker/crawl"
	"storecrawl/worker/d1"
	"storecrawl/worker/keywords"
)

// search_apps bounds.
const (
	// MaxSearchKeywords is how many keywords of the index one search
	// reads: the first after the prefix, in order (the query itself first
	// when it is a keyword).
	MaxSearchKeywords = 5
	// DefaultSearchLimit and MaxSearchLimit bound the apps answered, and
	// the ranks read of each keyword.
	DefaultSearchLimit = 10
	MaxSearchLimit     = 50
)

// AppSearcher finds apps by the start of their name.
type AppSearcher interface {
	SearchApps(ctx context.Context, q string, limit int) (SearchResult, error)
}

// SearchHit is one app found: its values and the keyword it was found by,
// with its rank in that keyword's latest search.
type SearchHit struct {
	TrackID       int64    `json:"track_id"`
	Name          *string  `json:"name"`
	DeveloperName *string  `json:"developer_name"`
	Genre         *string  `json:"genre"`
	AverageRating *float64 `json:"average_rating"`
	RatingCount   *int64   `json:"rating_count"`
	Price         *float64 `json:"price"`
	Keyword       string   `json:"keyword"`
	Rank          int      `json:"rank"`
	// NameMatch: the app's name starts with the query (those come first).
	NameMatch bool `json:"name_match"`
}

// SearchResult is search_apps' answer.
type SearchResult struct {
	Query    string      `json:"q"`
	Keywords []string    `json:"keywords"`
	Items    []SearchHit `json:"items"`
}

// D1Search searches the crawl's keyword index: the keywords are the words,
// word pairs and short titles of the apps' names (appstore.DeriveKeywords),
// kept in crawl_keywords' UNIQUE index, so a prefix of a name is a range
// of that index.
type D1Search struct{ DB *d1.DB }

// searchSQL reads at most ?3 keywords from ?1 up to (not including) ?2 by
// crawl_keywords' UNIQUE index, each one's rankings by crawl_rankings'
// primary key prefix (at most crawl.KeywordSearchSize rows; those ranked
// ?4 or better kept) and each kept app by primary key: at most
// ?3 + ?3 × KeywordSearchSize + ?3 × ?4 rows, whatever the catalogue holds.
const searchSQL = `SELECT k.keyword AS keyword, r.track_id AS track_id, r.rank AS rank, a.name AS name,
  a.developer_name AS developer_name, a.genre AS genre, a.average_rating AS average_rating,
  a.rating_count AS rating_count, a.price AS price
FROM (SELECT keyword FROM crawl_keywords WHERE keyword >= ?1 AND keyword < ?2 ORDER BY keyword LIMIT ?3) k
CROSS JOIN crawl_rankings r ON r.keyword = k.keyword
LEFT JOIN app_registry a ON a.track_id = r.track_id
WHERE r.rank <= ?4`

// MaxSearchRowsRead is what searchSQL reads at most for a search of
// MaxSearchLimit apps.
const MaxSearchRowsRead = MaxSearchKeywords + MaxSearchKeywords*crawl.KeywordSearchSize + MaxSearchKeywords*MaxSearchLimit

// prefixEnd is the first string past every string that starts with q
// (SQLite compares TEXT bytewise; U+10FFFF's UTF-8 is past any character's).
func prefixEnd(q string) string { return q + string(rune(0x10FFFF)) }

// SearchApps finds up to limit apps for q (normalized as the keywords
// are): the apps the store ranks for the index's first keywords starting
// with q, an app once (its best keyword, then rank), those whose name
// starts with q first.
func (s D1Search) SearchApps(ctx context.Context, q string, limit int) (SearchResult, error) {
	q = keywords.Normalize(q)
	res := SearchResult{Query: q, Keywords: []string{}, Items: []SearchHit{}}
	var hits []SearchHit
	if err := s.DB.Query(ctx, &hits, searchSQL, q, prefixEnd(q), MaxSearchKeywords, limit); err != nil {
		return res, err
	}
	res.Items, res.Keywords = rankHits(q, hits, limit)
	return res, nil
}

// rankHits orders the hits (name starts with q first, then by keyword,
// then rank), keeps each app's first and cuts to limit; the keywords are
// every keyword that had a hit, in order.
func rankHits(q string, hits []SearchHit, limit int) ([]SearchHit, []string) {
	kws := []string{}
	for i := range hits {
		h := &hits[i]
		h.NameMatch = h.Name != nil && strings.HasPrefix(keywords.Normalize(*h.Name), q)
		if !slices.Contains(kws, h.Keyword) {
			kws = append(kws, h.Keyword)
		}
	}
	slices.Sort(kws)
	slices.SortStableFunc(hits, func(a, b SearchHit) int {
		switch {
		case a.NameMatch != b.NameMatch:
			if a.NameMatch {
				return -1
			}
			return 1
		case a.Keyword != b.Keyword:
			return strings.Compare(a.Keyword, b.Keyword)
		case a.Rank != b.Rank:
			return a.Rank - b.Rank
		}
		return cmp.Compare(a.TrackID, b.TrackID)
	})
	out := []SearchHit{}
	seen := map[int64]bool{}
	for _, h := range hits {
		if seen[h.TrackID] || len(out) == limit {
			continue
		}
		seen[h.TrackID] = true
		out = append(out, h)
	}
	return out, kws
}
