package appstore

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/PuerkitoBio/goquery"
)

// numStars is the number of star levels, hence histogram buckets.
const numStars = 5

// CSS selectors of the (older) apps.apple.com product page markup.
const (
	selProductHeader = "header.product-header"
	selSubtitle      = "h2.product-header__subtitle"
	selHistogramRow  = "figure.we-star-bar-graph div.we-star-bar-graph__row"
	selStars         = "span.we-star-bar-graph__stars"
	selBarCount      = "div.we-star-bar-graph__bar__foreground-bar"
	selIAPItem       = "li.list-with-numbers__item"
	selIAPTitle      = "span.list-with-numbers__item__title"
	selIAPPrice      = "span.list-with-numbers__item__price"
	// Only the "You Might Also Like" shelf: "More By This Developer" also
	// uses we-lockup links but lives in a different section.
	selSimilarLink = "section.l-content-width.section--similar a.we-lockup"

	attrCount  = "data-count"
	starsClass = "we-star-bar-graph__stars--"
)

// appIDInHref matches the trailing "/id<digits>" of an app URL, optionally
// followed by a query string or fragment.
var appIDInHref = regexp.MustCompile(`/id(\d+)(?:[?#].*)?$`)

// StorePage holds the fields only present on the HTML product page.
type StorePage struct {
	Subtitle string `json:"subtitle"`
	// RatingHistogram counts ratings per star: index 0 = 5 stars ...
	// index 4 = 1 star.
	RatingHistogram [numStars]int64 `json:"rating_histogram"`
	InAppPurchases  []IAP           `json:"in_app_purchases"`
	SimilarAppIDs   []int64         `json:"similar_app_ids"`
}

// IAP is one "Top In-App Purchases" entry; Price is the display string
// (e.g. "$4.99") because the page only shows formatted, localised prices.
type IAP struct {
	Name  string `json:"name"`
	Price string `json:"price"`
}

// ParseStorePage extracts StorePage from product page HTML. A page without
// the product header (captcha/blocked/truncated) wraps ErrParse; missing
// optional sections just leave their fields empty.
func ParseStorePage(html []byte) (StorePage, error) {
	doc, err := goquery.NewDocumentFromReader(bytes.NewReader(html))
	if err != nil {
		return StorePage{}, fmt.Errorf("store page html: %v: %w", err, ErrParse)
	}
	header := doc.Find(selProductHeader)
	if header.Length() == 0 {
		return StorePage{}, fmt.Errorf("store page: no %s: %w", selProductHeader, ErrParse)
	}

	var page StorePage
	page.Subtitle = strings.TrimSpace(header.Find(selSubtitle).First().Text())
	if page.RatingHistogram, err = parseHistogram(doc); err != nil {
		return StorePage{}, err
	}
	page.InAppPurchases = parseIAPs(doc)
	page.SimilarAppIDs = parseSimilar(doc)
	return page, nil
}

func parseHistogram(doc *goquery.Document) ([numStars]int64, error) {
	var hist [numStars]int64
	var err error
	doc.Find(selHistogramRow).EachWithBreak(func(i int, row *goquery.Selection) bool {
		stars := starsOf(row.Find(selStars))
		if stars == 0 {
			err = fmt.Errorf("store page: histogram row %d has no star class: %w", i, ErrParse)
			return false
		}
		raw, ok := row.Find(selBarCount).Attr(attrCount)
		if !ok {
			err = fmt.Errorf("store page: histogram row %d has no %s: %w", i, attrCount, ErrParse)
			return false
		}
		n, perr := strconv.ParseInt(strings.TrimSpace(raw), 10, 64)
		if perr != nil || n < 0 {
			err = fmt.Errorf("store page: histogram row %d count %q: %w", i, raw, ErrParse)
			return false
		}
		hist[numStars-stars] = n
		return true
	})
	return hist, err
}

// starsOf returns the star level (1..5) from a "we-star-bar-graph__stars--N"
// class, or 0 if none is present.
func starsOf(s *goquery.Selection) int {
	for n := numStars; n >= 1; n-- {
		if s.HasClass(starsClass + strconv.Itoa(n)) {
			return n
		}
	}
	return 0
}

func parseIAPs(doc *goquery.Document) []IAP {
	var iaps []IAP
	doc.Find(selIAPItem).Each(func(_ int, li *goquery.Selection) {
		name := strings.TrimSpace(li.Find(selIAPTitle).First().Text())
		if name == "" {
			return // a list-with-numbers item that is not an IAP row
		}
		iaps = append(iaps, IAP{
			Name:  name,
			Price: strings.TrimSpace(li.Find(selIAPPrice).First().Text()),
		})
	})
	return iaps
}

func parseSimilar(doc *goquery.Document) []int64 {
	var ids []int64
	seen := make(map[int64]bool)
	doc.Find(selSimilarLink).Each(func(_ int, a *goquery.Selection) {
		m := appIDInHref.FindStringSubmatch(a.AttrOr("href", ""))
		if m == nil {
			return // e.g. a "See All" link
		}
		id, err := strconv.ParseInt(m[1], 10, 64)
		if err != nil || id <= 0 || seen[id] {
			return
		}
		seen[id] = true
		ids = append(ids, id)
	})
	return ids
}
