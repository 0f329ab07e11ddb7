package appstore

import (
	"reflect"
	"testing"
)

// Real chart feeds (testdata/README.md). Both hold one entry (limit=1), so
// the iTunes RSS writes entry as an object.
func TestParseChartFixtures(t *testing.T) {
	tests := []struct {
		fixture string
		want    []ChartEntry
	}{
		{"chart_rss_hk_topfree_2018.json", []ChartEntry{{310633997, "WhatsApp Messenger", 1}}},
		{"chart_rss_hk_topgrossing_2018.json", []ChartEntry{{1289157855, "新三國志手機版-光榮正版授權", 1}}},
	}
	for _, tt := range tests {
		got, err := ParseChart(readFixture(t, tt.fixture))
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: %+v %v", tt.fixture, got, err)
		}
	}
}

// A real marketing-tools (v1) feed: feed.results[]. It is the iTunes U
// courses chart, the only real capture of this shape found; the app feeds
// share it.
func TestParseChartResultsShape(t *testing.T) {
	got, err := ParseChart(readFixture(t, "chart_mtools_v1_us_courses_2019.json"))
	if err != nil || len(got) != 10 {
		t.Fatalf("%d entries, %v", len(got), err)
	}
	if got[0] != (ChartEntry{1153807202, "Swift Playgrounds: Learn to Code 1&2", 1}) || got[9].Rank != 10 {
		t.Fatalf("%+v", got)
	}
}
