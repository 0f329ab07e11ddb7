package appstore

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// ChartCollections are the top charts the crawl scans and the charts-refresh
// task keeps: the iTunes RSS names for them.
var ChartCollections = []string{"topfreeapplications", "toppaidapplications", "topgrossingapplications"}

// Bounds of the iTunes RSS chart feed: it serves at most 200 entries, and
// 10 when no limit is given.
const (
	MaxChartLimit     = 200
	DefaultChartLimit = 10
)

// ChartURL is the iTunes RSS feed of one top chart, the one chart source
// that takes a genre:
//
//	{base}/{cc}/rss/{collection}/limit={n}[/genre={id}]/json
//
// base is the API host (https://itunes.apple.com); genre 0 means all apps.
func ChartURL(base, country, collection string, genre, limit int) string {
	var b strings.Builder
	b.WriteString(strings.TrimRight(base, "/"))
	b.WriteString("/" + url.PathEscape(strings.ToLower(country)) + "/rss/" + url.PathEscape(collection))
	b.WriteString("/limit=" + strconv.Itoa(max(1, min(limit, MaxChartLimit))))
	if genre > 0 {
		b.WriteString("/genre=" + strconv.Itoa(genre))
	}
	b.WriteString("/json")
	return b.String()
}

// ChartEntry is one ranked app of a top chart.
type ChartEntry struct {
	TrackID int64  `json:"track_id"`
	Name    string `json:"name"`
	Rank    int    `json:"rank"`
}

// ParseChart reads a top-chart feed in either real shape Apple serves:
//
//   - the iTunes RSS JSON (itunes.apple.com/{cc}/rss/...): feed.entry[] with
//     id.attributes["im:id"] and im:name.label; a one-entry feed has entry as
//     an object, an empty one has no entry at all;
//   - the marketing-tools feed (rss.applemarketingtools.com/api/v2/...):
//     feed.results[] with id and name.
//
// Rank is the position in the feed, from 1. Anything else is ErrParse.
func ParseChart(body []byte) ([]ChartEntry, error) {
	var doc struct {
		Feed *struct {
			Entry   json.RawMessage `json:"entry"`
			Results *[]struct {
				ID   json.Number `json:"id"`
				Name string      `json:"name"`
			} `json:"results"`
			Title json.RawMessage `json:"title"`
		} `json:"feed"`
	}
	if err := json.Unmarshal(body, &doc); err != nil || doc.Feed == nil {
		return nil, fmt.Errorf("chart: not a feed: %w", ErrParse)
	}
	var out []ChartEntry
	add := func(raw, name string) error {
		id, err := strconv.ParseInt(raw, 10, 64)
		if err != nil || id <= 0 {
			return fmt.Errorf("chart entry %d id %q: %w", len(out)+1, field(raw), ErrParse)
		}
		if len(out) >= MaxChartLimit {
			return nil // a feed longer than any chart we ask for: the rest is not ranked
		}
		out = append(out, ChartEntry{TrackID: id, Name: field(name), Rank: len(out) + 1})
		return nil
	}
	switch {
	case doc.Feed.Results != nil:
		for _, r := range *doc.Feed.Results {
			if err := add(r.ID.String(), r.Name); err != nil {
				return nil, err
			}
		}
	case len(doc.Feed.Entry) > 0:
		entries, err := rssEntries(doc.Feed.Entry)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			if err := add(e.ID.Attributes.ID, e.Name.Label); err != nil {
				return nil, err
			}
		}
	case doc.Feed.Title == nil:
		// Neither entries nor a feed header: not a chart feed.
		return nil, fmt.Errorf("chart: no entry, results or title: %w", ErrParse)
	}
	if out == nil {
		out = []ChartEntry{}
	}
	return out, nil
}

// rssEntry is the part of an iTunes RSS entry a chart needs.
type rssEntry struct {
	Name struct {
		Label string `json:"label"`
	} `json:"im:name"`
	ID struct {
		Attributes struct {
			ID string `json:"im:id"`
		} `json:"attributes"`
	} `json:"id"`
}

// rssEntries decodes feed.entry, which the iTunes RSS writes as an object
// when the feed holds one entry.
func rssEntries(raw json.RawMessage) ([]rssEntry, error) {
	raw = bytes.TrimSpace(raw)
	var list []rssEntry
	if len(raw) > 0 && raw[0] == '{' {
		var one rssEntry
		if err := json.Unmarshal(raw, &one); err != nil {
			return nil, fmt.Errorf("chart entry: %v: %w", err, ErrParse)
		}
		return []rssEntry{one}, nil
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("chart entries: %v: %w", err, ErrParse)
	}
	return list, nil
}
