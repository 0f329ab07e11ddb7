package appstore

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/PuerkitoBio/goquery"
)

// numStars is the number of star levels, hence histogram buckets.
const numStars = 5

// ParserVersion names the page parsers' behaviour. Stored with each parsed
// page so a reparse can tell which records an older parser wrote; bump it
// whenever what the parsers extract changes.
const ParserVersion = 2

// Format is the product page markup a page was read as.
type Format string

const (
	// FormatLegacy is the Ember-rendered markup apps.apple.com served until
	// the 2025 redesign (we-star-bar-graph, product-header, ...).
	FormatLegacy Format = "legacy"
	// FormatCurrent is the redesigned page, which carries its data as JSON
	// in <script id="serialized-server-data">.
	FormatCurrent Format = "current"
)

// Section names, as listed in StorePage.MissingSections.
const (
	SectionSubtitle       = "subtitle"
	SectionRatings        = "ratings"
	SectionInAppPurchases = "in_app_purchases"
	SectionSimilarApps    = "similar_apps"
	// SectionSummary is the schema.org JSON-LD block (name, rating, rating
	// count, price, category).
	SectionSummary = "summary"
)

// ErrSoftBlock reports a 200 answer that is a challenge, consent or
// rate-limit page rather than a product page: the upstream refusing us,
// not a page we cannot read. Callers pace it like a refusal.
var ErrSoftBlock = errors.New("appstore: challenge page instead of a product page")

// StorePage holds what a product page says beyond the lookup JSON.
type StorePage struct {
	Format   Format `json:"format"`
	Name     string `json:"name,omitempty"`
	Subtitle string `json:"subtitle"`
	// RatingShare is each star level's share of the ratings, 5 stars first,
	// summing to 1, or all 0 when the page shows no ratings.
	RatingShare [numStars]float64 `json:"rating_share"`
	// RatingAverage and RatingTotal are the page's own figures; RatingTotal
	// is -1 when the page does not say.
	RatingAverage float64 `json:"rating_average"`
	RatingTotal   int64   `json:"rating_total"`
	// ExactCounts is set when the page gives per-star counts (the current
	// markup); the legacy markup only draws bars.
	ExactCounts *[numStars]int64 `json:"-"`
	// Price is -1 when the page does not say.
	Price           float64  `json:"price"`
	Currency        string   `json:"currency,omitempty"`
	Category        string   `json:"category,omitempty"`
	InAppPurchases  []IAP    `json:"in_app_purchases"`
	SimilarAppIDs   []int64  `json:"similar_app_ids"`
	MissingSections []string `json:"missing_sections"`
}

// IAP is one "Top In-App Purchases" entry; Price is the display string
// (e.g. "$4.99") because the page only shows formatted, localised prices.
type IAP struct {
	Name  string `json:"name"`
	Price string `json:"price"`
}

// ParseStorePage reads a product page in whichever markup it holds: the
// current JSON when the page carries serialized-server-data, the legacy
// Ember markup otherwise. A missing optional section leaves its field empty
// and is named in MissingSections. Only a page with no recognisable
// product data fails: ErrSoftBlock for a challenge page, ErrParse otherwise.
func ParseStorePage(html []byte) (StorePage, error) {
	var page StorePage
	var err error
	if bytes.Contains(html, []byte(serverDataID)) {
		page, err = parseCurrent(html)
	} else {
		page, err = parseLegacy(html)
	}
	if err != nil {
		if looksLikeChallenge(html) {
			return StorePage{}, fmt.Errorf("%v: %w", err, ErrSoftBlock)
		}
		return StorePage{}, err
	}
	if page.InAppPurchases == nil {
		page.InAppPurchases = []IAP{}
	}
	if page.SimilarAppIDs == nil {
		page.SimilarAppIDs = []int64{}
	}
	if page.MissingSections == nil {
		page.MissingSections = []string{}
	}
	slices.Sort(page.MissingSections)
	return page.Bounded(), nil
}

// RatingCounts is the per-star count, 5 stars first: the page's exact
// counts when it has them, else total spread by RatingShare so that the
// counts sum to total (largest remainder). total is the lookup's exact
// userRatingCount; pass RatingTotal when there is no lookup.
func (p StorePage) RatingCounts(total int64) [numStars]int64 {
	if p.ExactCounts != nil {
		return *p.ExactCounts
	}
	var counts [numStars]int64
	if total <= 0 || p.RatingShare == ([numStars]float64{}) {
		return counts
	}
	type rem struct {
		i    int
		frac float64
	}
	var rems []rem
	left := total
	for i, s := range p.RatingShare {
		exact := s * float64(total)
		counts[i] = int64(math.Floor(exact))
		left -= counts[i]
		rems = append(rems, rem{i, exact - math.Floor(exact)})
	}
	slices.SortStableFunc(rems, func(a, b rem) int {
		switch {
		case a.frac > b.frac:
			return -1
		case a.frac < b.frac:
			return 1
		}
		return 0
	})
	for k := 0; left > 0 && k < len(rems); k++ {
		counts[rems[k].i]++
		left--
	}
	return counts
}

// sharesOf normalises non-negative weights (bar widths, counts) into shares
// summing to 1, or all 0 when there is nothing to share.
func sharesOf(w [numStars]float64) [numStars]float64 {
	var sum float64
	for _, v := range w {
		sum += v
	}
	var s [numStars]float64
	if sum <= 0 {
		return s
	}
	for i, v := range w {
		s[i] = v / sum
	}
	return s
}

// challengeMarkers are phrases of pages that stand between a client and
// the content (bot challenges, consent walls, throttling notices).
var challengeMarkers = [][]byte{
	[]byte("captcha"), []byte("cf-challenge"), []byte("challenge-form"),
	[]byte("unusual traffic"), []byte("are you a robot"), []byte("too many requests"),
}

func looksLikeChallenge(html []byte) bool {
	lower := bytes.ToLower(html)
	for _, m := range challengeMarkers {
		if bytes.Contains(lower, m) {
			return true
		}
	}
	return false
}

// newDoc parses HTML for goquery.
func newDoc(html []byte) (*goquery.Document, error) {
	doc, err := goquery.NewDocumentFromReader(bytes.NewReader(html))
	if err != nil {
		return nil, fmt.Errorf("store page html: %v: %w", err, ErrParse)
	}
	return doc, nil
}
