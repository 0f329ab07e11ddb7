package api

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"time"
	"unicode/utf8"

	"storecrawl/worker/keywords"
	"storecrawl/worker/logx"
)

// KeywordReader reads a term's metrics (worker/keywords.D1Store).
type KeywordReader interface {
	// Keyword returns the term's report in country (false: no such keyword).
	Keyword(ctx context.Context, term, country string, now time.Time) (keywords.Report, bool, error)
}

// countryCode is a storefront's ISO 3166-1 alpha-2 code, lower case.
var countryCode = regexp.MustCompile(`^[a-z]{2}$`)

// keyword serves GET /v1/keywords/{term}?country=: the term's popularity,
// difficulty, result count and top apps with their rank history, from
// what the crawl stored in the deployment's storefront (Country); never a
// request upstream.
func (s *Server) keyword(w http.ResponseWriter, r *http.Request) {
	term := keywords.Normalize(r.PathValue("term"))
	if term == "" || utf8.RuneCountInString(term) > keywords.MaxTermLen {
		writeError(w, http.StatusBadRequest, "term", fmt.Sprintf("term must be a search term of 1–%d characters", keywords.MaxTermLen))
		return
	}
	country := r.URL.Query().Get("country")
	if country == "" {
		country = s.Country
	}
	if !countryCode.MatchString(country) {
		writeError(w, http.StatusBadRequest, "country", "country must be a two-letter storefront code (us, gb, ...)")
		return
	}
	if s.Keywords == nil {
		writeError(w, http.StatusServiceUnavailable, "", "keyword metrics are not available")
		return
	}
	if country != s.Country {
		writeError(w, http.StatusNotFound, "country", fmt.Sprintf("no keywords stored for storefront %s: this deployment crawls %s", country, s.Country))
		return
	}
	rep, found, err := s.Keywords.Keyword(r.Context(), term, country, time.Now())
	switch {
	case err != nil:
		logx.Err("keywords.read_failed", err, map[string]any{"term": term})
		writeError(w, http.StatusInternalServerError, "", "read failed")
	case !found:
		writeError(w, http.StatusNotFound, "term", "no keyword "+term+" in storefront "+country)
	default:
		writeJSON(w, http.StatusOK, rep)
	}
}
