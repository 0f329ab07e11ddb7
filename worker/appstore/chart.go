package appstore

import (
	"encoding/json"
	"fmt"
)

// ChartCollections are the top charts the crawl scans and the charts-refresh
// task keeps: the upstream's names for them.
var ChartCollections = []string{"topfreeapplications", "toppaidapplications", "topgrossingapplications"}

// ChartEntry is one ranked app of a top chart.
type ChartEntry struct {
	TrackID int64  `json:"track_id"`
	Name    string `json:"name"`
	Rank    int    `json:"rank"`
}

// ParseChart parses a chart feed: {"feed":{"entry":[{"id","name","rank"}]}}.
func ParseChart(body []byte) ([]ChartEntry, error) {
	var doc struct {
		Feed *struct {
			Entry []struct {
				ID   json.Number `json:"id"`
				Name string      `json:"name"`
				Rank int         `json:"rank"`
			} `json:"entry"`
		} `json:"feed"`
	}
	if err := json.Unmarshal(body, &doc); err != nil || doc.Feed == nil {
		return nil, fmt.Errorf("chart: %w", ErrParse)
	}
	out := make([]ChartEntry, 0, len(doc.Feed.Entry))
	for _, e := range doc.Feed.Entry {
		id, err := e.ID.Int64()
		if err != nil || id <= 0 {
			return nil, fmt.Errorf("chart entry id %q: %w", e.ID, ErrParse)
		}
		out = append(out, ChartEntry{TrackID: id, Name: e.Name, Rank: e.Rank})
	}
	return out, nil
}
