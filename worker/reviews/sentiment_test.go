package reviews

import (
	"encoding/json"
	"math"
	"testing"
)

type labelled struct {
	Source string         `json:"source"`
	AppID  string         `json:"app_id"`
	ID     string         `json:"id"`
	Stars  int            `json:"stars"`
	Label  SentimentLabel `json:"label"`
	Title  string         `json:"title"`
	Body   string         `json:"body"`
}

func loadLabelled(t *testing.T) []labelled {
	t.Helper()
	var xs []labelled
	if err := json.Unmarshal(fixture(t, "labelled.json"), &xs); err != nil {
		t.Fatal(err)
	}
	return xs
}

// Floors on the labelled sample (testdata/README.md: 250 real reviews, star
// rating as truth). The scorer and the sample are fixed and nothing is
// drawn at random (no seed): every run gives the same figures, so each
// floor is the figure itself, printed by
//
//	go test ./worker/reviews -run TestSentimentAccuracyOnLabelledSample -v
//
// and a change that makes the scorer worse on a single review fails here.
const (
	minPolarAccuracy = 181.0 / 224 // 1-2 vs 4-5 stars, neutral predictions count as wrong: 80.8% (181/224)
	minThreeClass    = 185.0 / 250 // negative / neutral / positive: 74.0% (185/250)
)

func TestSentimentAccuracyOnLabelledSample(t *testing.T) {
	xs := loadLabelled(t)
	var polar, polarRight, all, allRight int
	confusion := map[SentimentLabel]map[SentimentLabel]int{}
	for _, x := range xs {
		got := Label(ScoreReview(x.Title, x.Body))
		if confusion[x.Label] == nil {
			confusion[x.Label] = map[SentimentLabel]int{}
		}
		confusion[x.Label][got]++
		all++
		if got == x.Label {
			allRight++
		}
		if x.Label != Neutral {
			polar++
			if got == x.Label {
				polarRight++
			}
		}
	}
	pa := float64(polarRight) / float64(polar)
	ta := float64(allRight) / float64(all)
	t.Logf("sentiment on %d labelled reviews (truth = stars): polar accuracy %.1f%% (%d/%d), three-class %.1f%% (%d/%d)",
		all, 100*pa, polarRight, polar, 100*ta, allRight, all)
	for _, truth := range []SentimentLabel{Negative, Neutral, Positive} {
		t.Logf("  truth %-8s → predicted negative %3d  neutral %3d  positive %3d", truth,
			confusion[truth][Negative], confusion[truth][Neutral], confusion[truth][Positive])
	}
	if pa < minPolarAccuracy || ta < minThreeClass {
		t.Errorf("accuracy under the floor: polar %.4f < %.4f or three-class %.4f < %.4f", pa, minPolarAccuracy, ta, minThreeClass)
	}
}

func TestSentimentRules(t *testing.T) {
	tests := []struct {
		text string
		want SentimentLabel
	}{
		{"good", Positive},
		{"not good", Negative},
		{"It never works", Negative},
		{"The app doesn't work anymore", Negative},
		{"Can't log in since the update", Negative},
		{"Works great", Positive},
		{"It's not bad at all", Positive},
		{"Great app but it crashes every time I open it", Negative},
		{"Crashed once but overall I love it", Positive},
		{"Il ne fonctionne pas", Neutral}, // not English: no opinion words
		{"", Neutral},
		{"I downloaded it yesterday", Neutral},
	}
	for _, tc := range tests {
		if got := Label(Score(tc.text)); got != tc.want {
			t.Errorf("%q: %s (%.3f), want %s", tc.text, got, Score(tc.text), tc.want)
		}
	}
	// Intensifiers and "!" push further from zero; downtoners pull back.
	if !(Score("very slow") < Score("slow") && Score("slow") < Score("a bit slow") && Score("a bit slow") < 0) {
		t.Errorf("very slow %.3f, slow %.3f, a bit slow %.3f", Score("very slow"), Score("slow"), Score("a bit slow"))
	}
	if !(Score("good!!!") > Score("good")) {
		t.Error("exclamation marks add emphasis")
	}
	// Negated function verbs are strong complaints, stronger than "not good".
	if !(Score("doesn't work") < Score("not good")) {
		t.Errorf("doesn't work %.3f, not good %.3f", Score("doesn't work"), Score("not good"))
	}
}

func TestSentimentBounded(t *testing.T) {
	long := ""
	for range 5000 {
		long += "terrible awful worst! "
	}
	for _, s := range []float64{Score(long), ScoreReview(long, long), Score("love love love love love love love")} {
		if math.IsNaN(s) || s < -1 || s > 1 {
			t.Errorf("score %v out of [-1,1]", s)
		}
	}
	if Score(long) > -0.9 {
		t.Errorf("a wall of complaints scores %v", Score(long))
	}
}
