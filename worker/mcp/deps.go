package mcp

import (
	"context"

	"storecrawl/worker/api"
	"storecrawl/worker/d1"
	"storecrawl/worker/markets"
)

// Deps are what the tools read: the API's own readers (the same values
// worker/api's Server routes with, FromAPI), plus the two reads no route
// makes (the app search and one market's scores).
type Deps struct {
	Apps       api.AppReader        // get_app: GET /v1/apps/{id}'s reader
	AppHistory api.AppHistoryReader // app_history: GET /v1/apps/{id}/history's
	Markets    api.MarketReader     // list_segments: GET /v1/opportunities' and /v1/clusters'
	Reviews    api.ReviewReader     // get_segment's themes: GET /v1/clusters/{id}/themes'
	Keywords   api.KeywordReader    // keyword_metrics: GET /v1/keywords/{term}'s
	// Country is the storefront the deployment crawls (keyword_metrics'
	// default country).
	Country string
	// Search finds apps by name (search_apps); Scores reads one market's
	// scores (get_segment).
	Search AppSearcher
	Scores ScoreReader
}

// FromAPI is the readers s routes with; the two MCP-only reads are the
// caller's to add.
func FromAPI(s *api.Server) Deps {
	return Deps{Apps: s.Apps, AppHistory: s.AppHistory, Markets: s.Markets, Reviews: s.Reviews,
		Keywords: s.Keywords, Country: s.Country}
}

// ScoreReader reads one market's scores as the API serves them (false:
// no such market).
type ScoreReader interface {
	Scores(ctx context.Context, clusterID string) (markets.Scores, bool, error)
}

// D1Scores reads a market's scores by primary key (markets.ReadScores,
// the analyst's read).
type D1Scores struct{ DB *d1.DB }

func (s D1Scores) Scores(ctx context.Context, clusterID string) (markets.Scores, bool, error) {
	return markets.ReadScores(ctx, s.DB, clusterID)
}
