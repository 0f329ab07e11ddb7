package keywords

import (
	"math"
	"strings"
	"time"
	"unicode"
)

// Difficulty's bounds and weights.
const (
	// DifficultyTopApps are the apps a term's difficulty reads: the first
	// screen or two of its results, where a new app must land to be seen.
	// A term with fewer results leaves the rest of the slots empty, which
	// count as no competition.
	DifficultyTopApps = 10
	// DifficultyRatingsSaturation is the rating count that scores full
	// strength: an app with a million ratings is as entrenched as any; the
	// scale is log10, so 1,000 ratings is half of it.
	DifficultyRatingsSaturation = 1_000_000
	// DifficultyStaleDays is how old a current version scores no strength:
	// an app not updated for a year is rarely defended; one updated today
	// scores full strength, linearly between.
	DifficultyStaleDays = 365
	// The weights: rating counts say most (ranking and downloads follow
	// them), then the title match (Apple ranks title and subtitle words
	// first, so apps matching the term hold their places), then the
	// average rating, then recency.
	difficultyRatingsWeight = 5
	difficultyTitleWeight   = 4
	difficultyRatingWeight  = 2
	difficultyRecencyWeight = 1
)

// Title match strengths.
const (
	matchTitle    = 1.0  // the term, whole, in the title
	matchSubtitle = 0.7  // the term, whole, in the subtitle
	matchWords    = 0.5  // every word of the term in title and subtitle
	matchPartial  = 0.25 // some word of it
)

// RankedApp is one of a term's top apps as stored: its rank in the term's
// latest search and its enriched values (zero when not enriched yet).
type RankedApp struct {
	TrackID       int64
	Rank          int
	Name          string
	Subtitle      string
	RatingCount   int64
	AverageRating float64
	// CurrentVersionReleaseDate is the current version's date (RFC 3339,
	// as the lookup gives it; "" unknown).
	CurrentVersionReleaseDate string
}

// Strength is one top app's parts of difficulty, each in [0, 1].
type Strength struct {
	Ratings    float64 `json:"ratings"`
	Rating     float64 `json:"rating"`
	TitleMatch float64 `json:"title_match"`
	Recency    float64 `json:"recency"`
}

// DifficultyReport is a term's difficulty and the means of its parts over
// the DifficultyTopApps slots (an empty slot counts 0).
type DifficultyReport struct {
	Score int      `json:"score"`
	Parts Strength `json:"parts"`
	// Apps is how many of the slots held an app.
	Apps int `json:"apps"`
}

// AppStrength is an app's parts: log10(1 + ratings) / log10(1 +
// DifficultyRatingsSaturation), the average rating / 5, the title match
// (TitleMatch), and 1 − days since its current version /
// DifficultyStaleDays, each clamped to [0, 1]; unknown values score 0.
func AppStrength(term string, a RankedApp, now time.Time) Strength {
	s := Strength{
		Ratings:    clamp01(math.Log10(1+float64(max(a.RatingCount, 0))) / math.Log10(1+DifficultyRatingsSaturation)),
		Rating:     clamp01(a.AverageRating / 5),
		TitleMatch: TitleMatch(term, a.Name, a.Subtitle),
	}
	if at, err := time.Parse(time.RFC3339, a.CurrentVersionReleaseDate); err == nil {
		days := now.Sub(at).Hours() / 24
		s.Recency = clamp01(1 - max(days, 0)/DifficultyStaleDays)
	}
	return s
}

// TitleMatch is how the term appears in an app's title and subtitle: 1 the
// whole term in the title, 0.7 in the subtitle, 0.5 each of its words in
// either, 0.25 some word, 0 none. Words are compared whole and lower case.
func TitleMatch(term, title, subtitle string) float64 {
	t := Normalize(term)
	tw := strings.Fields(t)
	if len(tw) == 0 {
		return 0
	}
	title, subtitle = wordsOf(title), wordsOf(subtitle)
	switch {
	case containsPhrase(title, t):
		return matchTitle
	case containsPhrase(subtitle, t):
		return matchSubtitle
	}
	both := title + " " + subtitle
	n := 0
	for _, w := range tw {
		if containsPhrase(both, w) {
			n++
		}
	}
	switch {
	case n == len(tw):
		return matchWords
	case n > 0:
		return matchPartial
	}
	return 0
}

// wordsOf is text lower case with every run of non-letters and
// non-digits one space, so phrases match on word boundaries.
func wordsOf(s string) string {
	var b strings.Builder
	space := true
	for _, r := range strings.ToLower(s) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(r)
			space = false
		} else if !space {
			b.WriteByte(' ')
			space = true
		}
	}
	return strings.TrimSpace(b.String())
}

// containsPhrase: phrase (words joined by single spaces) in words, on
// word boundaries.
func containsPhrase(words, phrase string) bool {
	phrase = wordsOf(phrase)
	if phrase == "" {
		return false
	}
	return strings.Contains(" "+words+" ", " "+phrase+" ")
}

// Difficulty is a term's difficulty on 0–100 from its top apps, in rank
// order (the first DifficultyTopApps are read): the weighted mean of the parts'
// means over the DifficultyTopApps slots, 100 × (5 × ratings + 4 × title
// match + 2 × rating + 1 × recency) / 12.
func Difficulty(term string, top []RankedApp, now time.Time) DifficultyReport {
	var sum Strength
	n := min(len(top), DifficultyTopApps)
	for _, a := range top[:n] {
		s := AppStrength(term, a, now)
		sum.Ratings += s.Ratings
		sum.Rating += s.Rating
		sum.TitleMatch += s.TitleMatch
		sum.Recency += s.Recency
	}
	mean := Strength{
		Ratings: sum.Ratings / DifficultyTopApps, Rating: sum.Rating / DifficultyTopApps,
		TitleMatch: sum.TitleMatch / DifficultyTopApps, Recency: sum.Recency / DifficultyTopApps,
	}
	w := (difficultyRatingsWeight*mean.Ratings + difficultyTitleWeight*mean.TitleMatch +
		difficultyRatingWeight*mean.Rating + difficultyRecencyWeight*mean.Recency) /
		(difficultyRatingsWeight + difficultyTitleWeight + difficultyRatingWeight + difficultyRecencyWeight)
	return DifficultyReport{Score: int(math.Round(100 * w)), Parts: round3(mean), Apps: n}
}

func round3(s Strength) Strength {
	r := func(x float64) float64 { return math.Round(x*1000) / 1000 }
	return Strength{Ratings: r(s.Ratings), Rating: r(s.Rating), TitleMatch: r(s.TitleMatch), Recency: r(s.Recency)}
}

func clamp01(x float64) float64 { return max(0, min(1, x)) }
