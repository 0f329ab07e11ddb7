package appstore

import (
	"errors"
	"reflect"
	"testing"
)

func TestChartURL(t *testing.T) {
	tests := []struct {
		country, coll string
		genre, limit  int
		want          string
	}{
		{"us", "topfreeapplications", 0, 50, "https://itunes.apple.com/us/rss/topfreeapplications/limit=50/json"},
		{"GB", "topgrossingapplications", 6014, 200, "https://itunes.apple.com/gb/rss/topgrossingapplications/limit=200/genre=6014/json"},
		{"us", "toppaidapplications", 0, 1000, "https://itunes.apple.com/us/rss/toppaidapplications/limit=200/json"},
	}
	for _, tt := range tests {
		if got := ChartURL("https://itunes.apple.com/", tt.country, tt.coll, tt.genre, tt.limit); got != tt.want {
			t.Errorf("got %s, want %s", got, tt.want)
		}
	}
}

func TestParseChartShapes(t *testing.T) {
	tests := []struct {
		name string
		body string
		want []ChartEntry
	}{
		{"rss list", `{"feed":{"entry":[{"im:name":{"label":"A"},"id":{"label":"u","attributes":{"im:id":"7","im:bundleId":"b"}}},{"im:name":{"label":"B"},"id":{"attributes":{"im:id":"3"}}}]}}`,
			[]ChartEntry{{7, "A", 1}, {3, "B", 2}}},
		{"rss single entry is an object", `{"feed":{"entry":{"im:name":{"label":"A"},"id":{"attributes":{"im:id":"7"}}}}}`,
			[]ChartEntry{{7, "A", 1}}},
		{"rss empty feed has no entry", `{"feed":{"title":{"label":"iTunes Store: Top Free Applications"}}}`, []ChartEntry{}},
		{"marketing tools", `{"feed":{"results":[{"id":"6448311069","name":"ChatGPT","kind":"apps"},{"id":"1","name":"X"}]}}`,
			[]ChartEntry{{6448311069, "ChatGPT", 1}, {1, "X", 2}}},
		{"marketing tools empty", `{"feed":{"results":[]}}`, []ChartEntry{}},
	}
	for _, tt := range tests {
		got, err := ParseChart([]byte(tt.body))
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: %+v %v", tt.name, got, err)
		}
	}
	for _, bad := range []string{`{}`, `nope`, `{"feed":{}}`, `{"feed":{"entry":[{"id":{"attributes":{"im:id":"x"}}}]}}`,
		`{"feed":{"entry":[{"id":"7"}]}}`, `{"feed":{"results":[{"id":"-1"}]}}`} {
		if _, err := ParseChart([]byte(bad)); !errors.Is(err, ErrParse) {
			t.Errorf("%s: %v", bad, err)
		}
	}
}
