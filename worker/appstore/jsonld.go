package appstore

import (
	"encoding/json"
	"fmt"
	"html"
	"strconv"
	"strings"

	"github.com/PuerkitoBio/goquery"
)

// summary is the schema.org SoftwareApplication block both markups carry
// in <script type="application/ld+json">: the fallback for name, rating,
// rating count, price and category.
type summary struct {
	Type            any    `json:"@type"`
	Name            string `json:"name"`
	Category        string `json:"applicationCategory"`
	AggregateRating *struct {
		RatingValue json.Number `json:"ratingValue"`
		ReviewCount json.Number `json:"reviewCount"`
		RatingCount json.Number `json:"ratingCount"`
	} `json:"aggregateRating"`
	Offers json.RawMessage `json:"offers"`
}

type offer struct {
	Price         json.Number `json:"price"`
	PriceCurrency string      `json:"priceCurrency"`
}

// isApp reports whether @type (a string or a list) names an application.
func (s summary) isApp() bool {
	types := fmt.Sprint(s.Type)
	return strings.Contains(types, "SoftwareApplication") || strings.Contains(types, "MobileApplication")
}

// findSummary returns the first application JSON-LD block of the page.
func findSummary(doc *goquery.Document) (summary, bool) {
	var found summary
	ok := false
	doc.Find(`script[type="application/ld+json"]`).EachWithBreak(func(_ int, s *goquery.Selection) bool {
		var sm summary
		if json.Unmarshal([]byte(s.Text()), &sm) == nil && sm.isApp() {
			found, ok = sm, true
			return false
		}
		return true
	})
	return found, ok
}

// apply fills what the summary knows into page, leaving the rest.
func (s summary) apply(page *StorePage) {
	page.Name = html.UnescapeString(s.Name)
	page.Category = html.UnescapeString(s.Category)
	if r := s.AggregateRating; r != nil {
		if v, err := r.RatingValue.Float64(); err == nil {
			page.RatingAverage = v
		}
		count := r.RatingCount
		if count == "" {
			count = r.ReviewCount // what apps.apple.com writes
		}
		if n, err := strconv.ParseInt(count.String(), 10, 64); err == nil && n >= 0 {
			page.RatingTotal = n
		}
	}
	var offers []offer
	raw := strings.TrimSpace(string(s.Offers))
	if strings.HasPrefix(raw, "[") {
		_ = json.Unmarshal(s.Offers, &offers)
	} else if raw != "" {
		var o offer
		if json.Unmarshal(s.Offers, &o) == nil {
			offers = []offer{o}
		}
	}
	if len(offers) > 0 {
		if p, err := offers[0].Price.Float64(); err == nil && p >= 0 {
			page.Price = p
		}
		page.Currency = offers[0].PriceCurrency
	}
}

func errNoProductData(format string) error {
	return fmt.Errorf("store page (%s markup): no recognisable product data: %w", format, ErrParse)
}
