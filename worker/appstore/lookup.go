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
	}
}
