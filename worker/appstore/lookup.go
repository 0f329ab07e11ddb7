package appstore

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// App is the subset of an iTunes lookup/search result the crawler stores.
type App struct {
	TrackID                   int64    `json:"track_id"`
	Name                      string   `json:"name"`
	BundleID                  string   `json:"bundle_id"`
	DeveloperID               int64    `json:"developer_id"`
	DeveloperName             string   `json:"developer_name"`
	Price                     float64  `json:"price"`
	Currency                  string   `json:"currency"`
	Genre                     string   `json:"genre"`
	GenreID                   int      `json:"genre_id"`
	AverageRating             float64  `json:"average_rating"`
	RatingCount               int64    `json:"rating_count"`
	Version                   string   `json:"version"`
	ReleaseDate               string   `json:"release_date"`
	CurrentVersionReleaseDate string   `json:"current_version_release_date"`
	Description               string   `json:"description"`
	ContentRating             string   `json:"content_rating"`
	TrackViewURL              string   `json:"track_view_url"`
	ArtworkURL                string   `json:"artwork_url"`
	FileSizeBytes             int64    `json:"file_size_bytes"`
	Languages                 []string `json:"languages"`
	// ReleaseNotes are the current version's "What's New" text
	// (releaseNotes; absent from some results).
	ReleaseNotes string `json:"release_notes"`
}

// wrapperSoftware is the wrapperType of an app (iOS or Mac) in the iTunes
// Search API; search without entity=software also returns tracks, films
// and artists under other wrapper types.
const wrapperSoftware = "software"

// itunesResult mirrors one element of the iTunes "results" array.
type itunesResult struct {
	WrapperType               string      `json:"wrapperType"`
	TrackID                   int64       `json:"trackId"`
	TrackName                 string      `json:"trackName"`
	BundleID                  string      `json:"bundleId"`
	ArtistID                  int64       `json:"artistId"`
	ArtistName                string      `json:"artistName"`
	Price                     float64     `json:"price"`
	Currency                  string      `json:"currency"`
	PrimaryGenreName          string      `json:"primaryGenreName"`
	PrimaryGenreID            int         `json:"primaryGenreId"`
	AverageUserRating         float64     `json:"averageUserRating"`
	UserRatingCount           int64       `json:"userRatingCount"`
	Version                   string      `json:"version"`
	ReleaseDate               string      `json:"releaseDate"`
	CurrentVersionReleaseDate string      `json:"currentVersionReleaseDate"`
	Description               string      `json:"description"`
	ContentAdvisoryRating     string      `json:"contentAdvisoryRating"`
	TrackViewURL              string      `json:"trackViewUrl"`
	ArtworkURL512             string      `json:"artworkUrl512"`
	ArtworkURL100             string      `json:"artworkUrl100"`
	FileSizeBytes             stringInt64 `json:"fileSizeBytes"`
	LanguageCodesISO2A        []string    `json:"languageCodesISO2A"`
	ReleaseNotes              string      `json:"releaseNotes"`
}

// envelope is the shared lookup/search wrapper. Results is a pointer so a
// body without a "results" key (e.g. `{}` or `null`) is a parse error rather
// than a silent "not found".
type envelope struct {
	ResultCount int             `json:"resultCount"`
	Results     *[]itunesResult `json:"results"`
}

// stringInt64 decodes iTunes' fileSizeBytes, which is a JSON string holding
// an integer ("123456"); a bare number is accepted too for robustness.
type stringInt64 int64

func (s *stringInt64) UnmarshalJSON(b []byte) error {
	b = bytes.Trim(b, `"`)
	if len(b) == 0 || string(b) == "null" {
		*s = 0
		return nil
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return fmt.Errorf("fileSizeBytes %q: %w", b, err)
	}
	*s = stringInt64(n)
	return nil
}

// ParseLookup parses an iTunes lookup response for a single id. An empty
// result set yields ErrNotFound; anything malformed wraps ErrParse.
func ParseLookup(body []byte) (App, error) {
	results, err := decode(body)
	if err != nil {
		return App{}, err
	}
	if len(results) == 0 {
		return App{}, ErrNotFound
	}
	return results[0], nil
}

// ParseSearch parses an iTunes search response; an empty result set is a
// valid, empty answer. Anything malformed wraps ErrParse.
func ParseSearch(body []byte) ([]App, error) {
	return decode(body)
}

func decode(body []byte) ([]App, error) {
	var env envelope
	if err := json.Unmarshal(body, &env); err != nil {
		return nil, fmt.Errorf("itunes json: %v: %w", err, ErrParse)
	}
	if env.Results == nil {
		return nil, fmt.Errorf("itunes json: missing results: %w", ErrParse)
	}
	apps := make([]App, 0, len(*env.Results))
	for i, r := range *env.Results {
		if r.WrapperType != "" && r.WrapperType != wrapperSoftware {
			continue // a song, film or artist: not an app
		}
		if r.TrackID <= 0 {
			return nil, fmt.Errorf("itunes json: result %d has no trackId: %w", i, ErrParse)
		}
		apps = append(apps, r.toApp().Bounded())
	}
	return apps, nil
}

func (r itunesResult) toApp() App {
	artwork := r.ArtworkURL512
	if artwork == "" {
		artwork = r.ArtworkURL100
	}
	return App{
		TrackID:                   r.TrackID,
		Name:                      r.TrackName,
		BundleID:                  r.BundleID,
		DeveloperID:               r.ArtistID,
		DeveloperName:             r.ArtistName,
		Price:                     r.Price,
		Currency:                  r.Currency,
		Genre:                     r.PrimaryGenreName,
		GenreID:                   r.PrimaryGenreID,
		AverageRating:             r.AverageUserRating,
		RatingCount:               r.UserRatingCount,
		Version:                   r.Version,
		ReleaseDate:               r.ReleaseDate,
		CurrentVersionReleaseDate: r.CurrentVersionReleaseDate,
		Description:               r.Description,
		ContentRating:             r.ContentAdvisoryRating,
		TrackViewURL:              r.TrackViewURL,
		ArtworkURL:                artwork,
		FileSizeBytes:             int64(r.FileSizeBytes),
		Languages:                 r.LanguageCodesISO2A,
		ReleaseNotes:              r.ReleaseNotes,
	}
}

// LookupBatch is what one lookup of several ids
// ({api}/lookup?id=1,2,3&country=cc) said about each of them. The real
// endpoint answers one result per id it knows, in the order asked
// (testdata/lookup_us_two_apps_2017.json), and leaves out the ids it does
// not know: it answers 200 with fewer results, down to
// {"resultCount":0,"results":[]} when it knows none
// (testdata/search_us_empty_mas_2018.json). Results are matched to the ids
// by trackId, never by position.
type LookupBatch struct {
	// Found holds the apps of the ids asked, by trackId.
	Found map[int64]App
	// Bad holds the ids asked whose result is there but does not parse
	// (a field of the wrong type): a parse error for that app alone.
	Bad map[int64]error
	// Unasked lists the trackIds answered that were not asked for: such a
	// result is not trusted, and never stored under any id.
	Unasked []int64
	// Repeated lists the trackIds answered more than once: the first answer
	// is kept, the others were meant for some other id, or for none.
	Repeated []int64
	// Unreadable counts results whose trackId could not be read at all.
	Unreadable int
}

// unmatched counts the results that answered no distinct id asked.
func (b LookupBatch) unmatched() int { return len(b.Unasked) + len(b.Repeated) + b.Unreadable }

// Lookup is the outcome for one id asked: its app; ErrNotFound when the
// answer has no result for it; ErrParse when its result does not parse,
// or when the answer holds results it could not match to a distinct id
// asked (one of them may be this id's: not found would be a guess).
func (b LookupBatch) Lookup(id int64) (App, error) {
	if app, ok := b.Found[id]; ok {
		return app, nil
	}
	if err, ok := b.Bad[id]; ok {
		return App{}, err
	}
	if n := b.unmatched(); n > 0 {
		return App{}, fmt.Errorf("no result for id %d, and %d result(s) of the answer match no id asked (other trackIds %v, repeated %v, %d unreadable): %w",
			id, n, b.Unasked, b.Repeated, b.Unreadable, ErrParse)
	}
	return App{}, ErrNotFound
}

// ParseLookupBatch parses the answer to a lookup of ids. The error (ErrParse)
// is for an answer that cannot be used at all: not JSON, cut short, or
// without a results array. One result that does not parse costs only its
// own id (Bad); results that are not apps are left out as a single lookup
// leaves them out (their id is then not found).
func ParseLookupBatch(body []byte, ids []int64) (LookupBatch, error) {
	var env struct {
		Results *[]json.RawMessage `json:"results"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return LookupBatch{}, fmt.Errorf("itunes json: %v: %w", err, ErrParse)
	}
	if env.Results == nil {
		return LookupBatch{}, fmt.Errorf("itunes json: missing results: %w", ErrParse)
	}
	asked := make(map[int64]bool, len(ids))
	for _, id := range ids {
		asked[id] = true
	}
	b := LookupBatch{Found: map[int64]App{}, Bad: map[int64]error{}}
	for i, raw := range *env.Results {
		var head struct {
			WrapperType string `json:"wrapperType"`
			TrackID     int64  `json:"trackId"`
		}
		if err := json.Unmarshal(raw, &head); err != nil || head.TrackID <= 0 {
			if head.WrapperType == "" || head.WrapperType == wrapperSoftware {
				b.Unreadable++
			}
			continue
		}
		switch {
		case head.WrapperType != "" && head.WrapperType != wrapperSoftware:
			continue // not an app: the id is not found, as in a single lookup
		case !asked[head.TrackID]:
			b.Unasked = append(b.Unasked, head.TrackID)
			continue
		}
		if _, seen := b.Found[head.TrackID]; seen {
			b.Repeated = append(b.Repeated, head.TrackID) // the first answer is the one kept
			continue
		}
		var r itunesResult
		if err := json.Unmarshal(raw, &r); err != nil {
			b.Bad[head.TrackID] = fmt.Errorf("itunes json: result %d (trackId %d): %v: %w", i, head.TrackID, err, ErrParse)
			continue
		}
		delete(b.Bad, head.TrackID)
		b.Found[head.TrackID] = r.toApp().Bounded()
	}
	return b, nil
}

// StoredLookupArgs are a's values for registry.LookupColumns (the
// app_registry columns a lookup or search result fills, in this order),
// texts cut to their bounds and the languages as a JSON array.
func (a App) StoredLookupArgs() []any {
	langs := a.Languages
	if langs == nil {
		langs = []string{}
	}
	langsJSON, _ := json.Marshal(langs) // a []string always encodes
	return []any{
		a.TrackID, Truncate(a.Name, MaxTextLen), a.BundleID, a.DeveloperID,
		Truncate(a.DeveloperName, MaxTextLen), a.Genre, a.GenreID,
		a.Price, a.Currency, a.AverageRating, a.RatingCount, a.Version, a.ReleaseDate,
		a.CurrentVersionReleaseDate, Truncate(a.Description, MaxDescriptionLen),
		a.ContentRating, a.ArtworkURL, a.FileSizeBytes, string(langsJSON), Truncate(a.ReleaseNotes, MaxTextLen),
	}
}

// wrapperArtist is the wrapperType of the developer's entry that a lookup
// by artist id with entity=software answers first.
const wrapperArtist = "artist"

// ParsePortfolio parses a developer lookup
// ({api}/lookup?id=ARTIST_ID&entity=software): the artist's wrapper
// (wrapperType "artist", artistType "Software Artist") first, then their
// apps, each a lookup result (testdata/lookup_us_developer_uber_built.json).
// It returns the apps of developerID; an answer with no result is a
// developer the storefront does not know: no apps, no error. An answer
// with results but no wrapper of that artist is not a developer lookup
// (ErrParse), and an app of another developer is left out.
func ParsePortfolio(body []byte, developerID int64) ([]App, error) {
	var env struct {
		Results *[]struct {
			WrapperType string `json:"wrapperType"`
			ArtistID    int64  `json:"artistId"`
		} `json:"results"`
	}
	if err := json.Unmarshal(body, &env); err != nil || env.Results == nil {
		return nil, fmt.Errorf("itunes json: not a lookup: %w", ErrParse)
	}
	if len(*env.Results) == 0 {
		return []App{}, nil
	}
	artist := false
	for _, r := range *env.Results {
		artist = artist || (r.WrapperType == wrapperArtist && r.ArtistID == developerID)
	}
	if !artist {
		return nil, fmt.Errorf("itunes json: no artist %d in a developer lookup: %w", developerID, ErrParse)
	}
	apps, err := decode(body)
	if err != nil {
		return nil, err
	}
	out := apps[:0]
	for _, a := range apps {
		if a.DeveloperID == developerID {
			out = append(out, a)
		}
	}
	return out, nil
}
