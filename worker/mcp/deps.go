package mcp

import (
	"storecrawl/worker/api"
)

// Deps are what the tools read: the API's own readers (the same values
// worker/api's Server routes with, FromAPI), plus the app search no route
// makes.
type Deps struct {
	Apps       api.AppReader        // get_app: GET /v1/apps/{id}'s reader
	AppHistory api.AppHistoryReader // app_history: GET /v1/apps/{id}/history's
	Segments   api.SegmentReader    // list_segments, get_segment: GET /v1/segments' and /v1/segments/{id}'s
	Keywords   api.KeywordReader    // keyword_metrics: GET /v1/keywords/{term}'s
	// Country is the storefront the deployment crawls (keyword_metrics'
	// default country).
	Country string
	// Search finds apps by name (search_apps).
	Search AppSearcher
}

// FromAPI is the readers s routes with; the app search is the caller's to
// add.
func FromAPI(s *api.Server) Deps {
	return Deps{Apps: s.Apps, AppHistory: s.AppHistory, Segments: s.Segments, Keywords: s.Keywords, Country: s.Country}
}
