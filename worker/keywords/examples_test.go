package keywords

import "testing"

// TestMetricExamples prints the examples docs/keywords.md shows and holds
// them (go test -run TestMetricExamples -v ./worker/keywords/).
func TestMetricExamples(t *testing.T) {
	for _, c := range []struct {
		s    Suggested
		want int
	}{{Suggested{1, 0}, 100}, {Suggested{2, 1}, 92}, {Suggested{3, 0}, 87}, {Suggested{3, 4}, 81}, {Suggested{6, 0}, 67}, {Suggested{10, 2}, 37}, {Suggested{15, 4}, 1}, {Suggested{}, 0}} {
		got := c.s.Score()
		t.Logf("popularity: suggested after %2d characters, place %d → %3d", c.s.Prefix, c.s.Position+1, got)
		if got != c.want {
			t.Errorf("%+v: %d, want %d", c.s, got, c.want)
		}
	}
	top := slackTop(t)
	for _, c := range []struct {
		term string
		want int
	}{{"slack", 25}, {"team chat", 6}} {
		d := Difficulty(c.term, top, slackCaptured)
		t.Logf("difficulty of %q over the captured \"slack\" search (6 apps): %d, parts %+v", c.term, d.Score, d.Parts)
		if d.Score != c.want {
			t.Errorf("%q: %d, want %d", c.term, d.Score, c.want)
		}
	}
}
