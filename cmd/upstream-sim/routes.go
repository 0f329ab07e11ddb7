package main

import (
	"bytes"
	"cmp"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// List sizes for /search, as on the iTunes Search API.
const (
	defaultListLimit = 50
	maxListLimit     = 200
	defaultCountry   = "us"
	// maxMoreByDeveloper caps the "More By This Developer" shelf.
	maxMoreByDeveloper = 4
)

// Chart collections of the iTunes RSS feeds (/{cc}/rss/{collection}/...).
const (
	chartTopFree     = "topfreeapplications"
	chartTopPaid     = "toppaidapplications"
	chartTopGrossing = "topgrossingapplications"
)

var countryRE = regexp.MustCompile(`^[a-z]{2}$`)

// itunesError mimics the iTunes API's 400 body.
type itunesError struct {
	ErrorMessage string `json:"errorMessage"`
}

func badParam(w http.ResponseWriter, key string) {
	writeJSON(w, http.StatusBadRequest, itunesError{fmt.Sprintf("Invalid value(s) for key(s): [%s]", key)})
}

func country(r *http.Request) string {
	if c := strings.ToLower(r.URL.Query().Get("country")); countryRE.MatchString(c) {
		return c
	}
	return defaultCountry
}

// parseLimit returns the list size: default when absent, clamped to
// maxListLimit, ok=false when not a positive integer.
func parseLimit(s string) (int, bool) {
	if s == "" {
		return defaultListLimit, true
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, false
	}
	return min(n, maxListLimit), true
}

// lookupResult is one iTunes Search API "software" result.
type lookupResult struct {
	WrapperType       string   `json:"wrapperType"`
	Kind              string   `json:"kind"`
	TrackID           int64    `json:"trackId"`
	TrackName         string   `json:"trackName"`
	TrackCensoredName string   `json:"trackCensoredName"`
	BundleID          string   `json:"bundleId"`
	ArtistID          int64    `json:"artistId"`
	ArtistName        string   `json:"artistName"`
	SellerName        string   `json:"sellerName"`
	Price             float64  `json:"price"`
	FormattedPrice    string   `json:"formattedPrice"`
	Currency          string   `json:"currency"`
	PrimaryGenreName  string   `json:"primaryGenreName"`
	PrimaryGenreID    int      `json:"primaryGenreId"`
	Genres            []string `json:"genres"`
	GenreIDs          []string `json:"genreIds"`
	// Unrated apps carry no rating keys at all, as on the real API.
	AverageUserRating         *float64 `json:"averageUserRating,omitempty"`
	UserRatingCount           *int64   `json:"userRatingCount,omitempty"`
	Version                   string   `json:"version"`
	ReleaseDate               string   `json:"releaseDate"`
	CurrentVersionReleaseDate string   `json:"currentVersionReleaseDate"`
	ReleaseNotes              string   `json:"releaseNotes"`
	Description               string   `json:"description"`
	ContentAdvisoryRating     string   `json:"contentAdvisoryRating"`
	TrackContentRating        string   `json:"trackContentRating"`
	TrackViewURL              string   `json:"trackViewUrl"`
	ArtistViewURL             string   `json:"artistViewUrl"`
	ArtworkURL60              string   `json:"artworkUrl60"`
	ArtworkURL100             string   `json:"artworkUrl100"`
	ArtworkURL512             string   `json:"artworkUrl512"`
	FileSizeBytes             string   `json:"fileSizeBytes"` // a string, as in iTunes
	LanguageCodesISO2A        []string `json:"languageCodesISO2A"`
	MinimumOSVersion          string   `json:"minimumOsVersion"`
}

type lookupResponse struct {
	ResultCount int            `json:"resultCount"`
	Results     []lookupResult `json:"results"`
}

// releaseNotesTemplates are "What's New" texts in the style of the real
// captures' releaseNotes ("Bug fixes.", a short list of changes).
var releaseNotesTemplates = []string{
	"Bug fixes.",
	"Bug fixes and performance improvements.",
	"What's new in %s:\n\n- Faster start-up\n- Fixed a crash when syncing",
	"We update the app regularly to make it faster and more reliable. Version %s fixes bugs and improves stability.",
}

// releaseNotes are the notes of a version: chosen by the version string
// alone (no catalogue state), so a new version (drift) brings new notes.
func releaseNotes(version string) string {
	h := 0
	for _, c := range version {
		h = h*31 + int(c)
	}
	t := releaseNotesTemplates[(h%len(releaseNotesTemplates)+len(releaseNotesTemplates))%len(releaseNotesTemplates)]
	if strings.Contains(t, "%s") {
		return fmt.Sprintf(t, version)
	}
	return t
}

func formattedPrice(p float64) string {
	if p == 0 {
		return "Free"
	}
	return fmt.Sprintf("$%.2f", p)
}

// appURL is the store page URL on this simulator (the request's Host), so
// a crawler following trackViewUrl stays on loopback.
func appURL(r *http.Request, country string, a *App) string {
	return fmt.Sprintf("http://%s/%s/app/%s/id%d", r.Host, country, a.Slug, a.ID)
}

func toLookup(r *http.Request, country string, a *App) lookupResult {
	art := func(px int) string { return fmt.Sprintf("http://%s/artwork/%d/%dx%dbb.jpg", r.Host, a.ID, px, px) }
	res := lookupResult{
		WrapperType: "software", Kind: "software",
		TrackID: a.ID, TrackName: a.Name, TrackCensoredName: a.Name, BundleID: a.BundleID,
		ArtistID: a.DevID, ArtistName: a.DevName, SellerName: a.DevName,
		Price: a.Price, FormattedPrice: formattedPrice(a.Price), Currency: "USD",
		PrimaryGenreName: a.Genre.Name, PrimaryGenreID: a.Genre.ID,
		Genres: []string{a.Genre.Name}, GenreIDs: []string{strconv.Itoa(a.Genre.ID)},
		Version: a.Version, ReleaseDate: a.ReleaseDate, CurrentVersionReleaseDate: a.UpdatedDate,
		ReleaseNotes: releaseNotes(a.Version),
		Description:  a.Description, ContentAdvisoryRating: a.ContentRating, TrackContentRating: a.ContentRating,
		TrackViewURL:  appURL(r, country, a),
		ArtistViewURL: fmt.Sprintf("http://%s/%s/developer/id%d", r.Host, country, a.DevID),
		ArtworkURL60:  art(60), ArtworkURL100: art(100), ArtworkURL512: art(512),
		FileSizeBytes:      strconv.FormatInt(a.FileSize, 10),
		LanguageCodesISO2A: a.Languages,
		MinimumOSVersion:   "15.0",
	}
	if sub, ok := subgenre(a); ok {
		// A game: Games first, then its subgenre (as real lookups list them).
		res.Genres = append(res.Genres, sub.Name)
		res.GenreIDs = append(res.GenreIDs, strconv.Itoa(sub.ID))
	}
	if a.RatingCount > 0 {
		avg, n := a.AverageRating, a.RatingCount
		res.AverageUserRating, res.UserRatingCount = &avg, &n
	}
	return res
}

// maxLookupIDs is how many ids one lookup may ask for. Apple documents
// comma-separated ids but no cap; the only report found is that the real
// endpoint answers up to 200 app ids in one call (facundoolano/app-store-scraper
// pull request #2, 2016: "Apple seems to return valid results for up to 200
// app ids"). What it does beyond that is not known; the simulator refuses
// such a lookup as it refuses any bad id list, with the iTunes API's 400
// body, so a client that asks for too many ids fails loudly instead of
// reading the apps it did not get as not found.
const maxLookupIDs = 200

// parseIDs reads the id parameter: one id, or up to maxLookupIDs
// comma-separated ones; an id asked twice is answered once, where it was
// first asked (the real endpoint's answer to a repeated id has not been
// observed). ok is false for anything else, as the real API answers
// "Invalid value(s) for key(s): [id]".
func parseIDs(raw string) (ids []int64, ok bool) {
	parts := strings.Split(raw, ",")
	if len(parts) > maxLookupIDs {
		return nil, false
	}
	seen := make(map[int64]bool, len(parts))
	for _, p := range parts {
		id, err := strconv.ParseInt(p, 10, 64)
		if err != nil || id <= 0 {
			return nil, false
		}
		if !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	return ids, true
}

// GET /lookup?id=<id>[,<id>...][&country=us]: one result per id the
// catalogue knows, in the order asked; ids it does not know are left out
// (resultCount counts the results), as the real endpoint answers
// (worker/appstore/testdata: lookup_us_two_apps_2017.json,
// search_us_empty_mas_2018.json). It costs one token however many ids it
// asks for, and counts as not found when it left any id out.
func (s *Server) handleLookup(w http.ResponseWriter, r *http.Request) bool {
	ids, ok := parseIDs(r.URL.Query().Get("id"))
	if !ok {
		badParam(w, "id")
		return false
	}
	q := r.URL.Query()
	withApps := q.Get("entity") == "software"
	limit, ok := parseDeveloperLimit(q.Get("limit"))
	if !ok {
		badParam(w, "limit")
		return false
	}
	results := []lookupEntry{}
	c := country(r)
	answered := 0
	for _, id := range ids {
		if s.cat.isDeveloperID(id) {
			results = append(results, s.developerResults(r, c, id, withApps, limit)...)
			answered++
			continue
		}
		if a, ok := s.cat.Get(id); ok {
			results = append(results, toLookup(r, c, a))
			answered++
		}
	}
	writeJSON(w, http.StatusOK, struct {
		ResultCount int           `json:"resultCount"`
		Results     []lookupEntry `json:"results"`
	}{len(results), results})
	return answered < len(ids)
}

// GET /search?term=<t>&limit=<n>[&country=us]: case-insensitive substring
// match on the name, most-rated first (ties by id) so results are stable;
// a living catalogue ranks by relevance over title, subtitle and
// description (upstreammodel.Index.Search).
func (s *Server) handleSearch(w http.ResponseWriter, r *http.Request) bool {
	q := r.URL.Query()
	term := strings.ToLower(strings.TrimSpace(q.Get("term")))
	if term == "" {
		badParam(w, "term")
		return false
	}
	limit, ok := parseLimit(q.Get("limit"))
	if !ok {
		badParam(w, "limit")
		return false
	}
	if l := s.cat.living; l != nil {
		resp := lookupResponse{Results: []lookupResult{}}
		c := country(r)
		for _, h := range l.ix.Search(term, l.now(), limit) {
			if a, ok := s.cat.Get(baseTrackID + h.Off); ok {
				resp.Results = append(resp.Results, toLookup(r, c, a))
			}
		}
		resp.ResultCount = len(resp.Results)
		writeJSON(w, http.StatusOK, resp)
		return false
	}
	type hit struct{ id, ratings int64 }
	var hits []hit
	match := map[string]bool{} // names repeat: one lowercase test per distinct name
	s.cat.Each(func(a *App) {
		m, seen := match[a.Name]
		if !seen {
			m = strings.Contains(strings.ToLower(a.Name), term)
			match[a.Name] = m
		}
		if m {
			hits = append(hits, hit{a.ID, a.RatingCount})
		}
	})
	slices.SortFunc(hits, func(a, b hit) int {
		return cmp.Or(cmp.Compare(b.ratings, a.ratings), cmp.Compare(a.id, b.id))
	})
	hits = hits[:min(len(hits), limit)]
	resp := lookupResponse{ResultCount: len(hits), Results: make([]lookupResult, 0, len(hits))}
	c := country(r)
	for _, h := range hits {
		a, _ := s.cat.Get(h.id)
		resp.Results = append(resp.Results, toLookup(r, c, a))
	}
	writeJSON(w, http.StatusOK, resp)
	return false
}

// GET /{country}/app/[{slug}/]id{id}: the product page. The slug is not
// checked (Apple redirects on a wrong slug; serving is good enough).
func (s *Server) handlePage(w http.ResponseWriter, r *http.Request) bool {
	idseg := r.PathValue("idseg")
	id, err := strconv.ParseInt(strings.TrimPrefix(idseg, "id"), 10, 64)
	a, ok := s.cat.Get(id)
	if err != nil || !strings.HasPrefix(idseg, "id") || !ok {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(notFoundPage))
		return true
	}
	s.mu.Lock()
	markup := markupFor(a.ID, s.bucket.cfg)
	s.mu.Unlock()
	tmpl := legacyTmpl
	switch markup {
	case markupUnknown:
		tmpl = unknownTmpl
	case markupCurrent:
		tmpl = currentTmpl
	}
	var buf bytes.Buffer
	if err := tmpl.Execute(&buf, s.pageData(r, r.PathValue("country"), a)); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return false
	}
	page := buf.Bytes()
	if BrokenPage(a.ID) {
		// Simulate a truncated document: cut before any product data.
		for _, tag := range productDataTags {
			if i := bytes.Index(page, []byte(tag)); i >= 0 {
				page = page[:i]
				break
			}
		}
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(page)
	return false
}

type lockup struct {
	URL         string
	Name        string
	ID          int64
	DevName     string
	Rating      float64
	RatingCount int64
}

// barRow is one rating bar: its star class ("" for the 1-star row, as on
// real pages) and its width, the rounded percentage of all ratings.
type barRow struct {
	StarsClass string
	Width      int64
}

type iapRow struct {
	Name  string
	Price string
}

type pageData struct {
	*App
	URL           string
	DevURL        string
	Price         string
	Rating        string
	ShortCount    string
	Summary       ldSummary
	Rows          []barRow
	IAPs          []iapRow
	Similar       []lockup
	SeeAllSimilar string
	MoreBy        []lockup
	// The current markup's data: its summary and its server data.
	CurrentSummary ldSummary
	ServerData     serverData
}

func (s *Server) pageData(r *http.Request, country string, a *App) pageData {
	d := pageData{App: a, URL: appURL(r, country, a), Price: formattedPrice(a.Price),
		DevURL: fmt.Sprintf("http://%s/%s/developer/id%d", r.Host, country, a.DevID),
		Rating: strconv.FormatFloat(a.AverageRating, 'f', 1, 64), ShortCount: shortCount(a.RatingCount)}
	d.SeeAllSimilar = d.URL + "?see-all=customers-also-bought-apps"
	d.Summary = ldSummary{Context: "http://schema.org", Type: "SoftwareApplication", Name: a.Name,
		Description: a.Description, Category: a.Genre.Name, DatePublished: a.ReleaseDate,
		OperatingSystem: "Requires iOS 15.0 or later.",
		Author:          ldAuthor{Type: "Person", Name: a.DevName, URL: d.DevURL},
		Offers:          ldOffer{Type: "Offer", Category: "free", Price: a.Price}}
	if a.Price > 0 {
		d.Summary.Offers.Category = "paid"
	}
	// The current markup's JSON-LD: https context, an Organization author,
	// the currency, no offer category (as on the real 2025 page).
	d.CurrentSummary = d.Summary
	d.CurrentSummary.Context, d.CurrentSummary.Author.Type = "https://schema.org", "Organization"
	d.CurrentSummary.Offers = ldOffer{Type: "Offer", Price: a.Price, PriceCurrency: "USD"}
	if a.RatingCount > 0 {
		d.Summary.AggregateRating = &ldAggregate{Type: "AggregateRating", RatingValue: a.AverageRating, ReviewCount: a.RatingCount}
		d.CurrentSummary.AggregateRating = d.Summary.AggregateRating
		for i, c := range a.Histogram {
			row := barRow{Width: (c*100 + a.RatingCount/2) / a.RatingCount}
			if stars := histogramStars - i; stars > 1 {
				row.StarsClass = "we-star-bar-graph__stars--" + strconv.Itoa(stars)
			}
			d.Rows = append(d.Rows, row)
		}
	}
	for _, p := range a.IAPs {
		d.IAPs = append(d.IAPs, iapRow{p.Name, formattedPrice(p.Price)})
	}
	for i, id := range a.Similar {
		o, ok := s.cat.Get(id)
		if !ok { // removed from a living catalogue
			continue
		}
		u := appURL(r, country, o)
		if i%2 == 1 {
			u += "?platform=iphone" // real shelves mix both forms
		}
		d.Similar = append(d.Similar, lockup{u, o.Name, o.ID, o.DevName, o.AverageRating, o.RatingCount})
	}
	for _, id := range s.cat.ByDeveloper(a.DevID) {
		if id != a.ID && len(d.MoreBy) < maxMoreByDeveloper {
			o, ok := s.cat.Get(id)
			if !ok {
				continue
			}
			d.MoreBy = append(d.MoreBy, lockup{appURL(r, country, o), o.Name, o.ID, o.DevName, o.AverageRating, o.RatingCount})
		}
	}
	d.ServerData = serverDataOf(d, country)
	return d
}
