package appstore

import (
	"errors"
	"testing"
)

func TestParseChart(t *testing.T) {
	got, err := ParseChart([]byte(`{"feed":{"country":"us","entry":[{"id":100000007,"name":"A","rank":1},{"id":"100000003","name":"B","rank":2}]}}`))
	if err != nil || len(got) != 2 || got[0].TrackID != 100000007 || got[1].TrackID != 100000003 || got[1].Rank != 2 {
		t.Fatalf("%+v %v", got, err)
	}
	for _, bad := range []string{`{}`, `nope`, `{"feed":{"entry":[{"id":"x"}]}}`} {
		if _, err := ParseChart([]byte(bad)); !errors.Is(err, ErrParse) {
			t.Errorf("%s: %v", bad, err)
		}
	}
}
