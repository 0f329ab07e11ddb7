package appstore

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
)

// serverDataID marks the current markup: its data as JSON in
// <script type="application/json" id="serialized-server-data">. Matched
// without the attribute's quotes: the same pages write other ids bare
// (<script id=software-application ...>).
const serverDataID = `serialized-server-data`

// The current markup's JSON, as in the real capture documented in
// testdata/README.md (youseiushida/appstore test/fixtures/page_jp_free.json):
//
//	{"data":[{"intent":{"$kind":"ProductPageIntent","id":"…"},
//	          "data":{"$kind":"ShelfBasedProductPage","title":…,
//	                  "lockup":{"title":…,"subtitle":…},
//	                  "shelfMapping":{"productRatings":…,"information":…,"similarItems":…}}}]}
const (
	kindProductPage = "ShelfBasedProductPage"
	kindRatings     = "Ratings"
	shelfRatings    = "productRatings"
	shelfInfo       = "information"
	// similarItems is the customers-also-bought shelf ("You Might Also
	// Like"); similarItemsDownloading repeats it and moreByDeveloper is the
	// developer's own apps, so neither is read.
	shelfSimilar = "similarItems"
)

type serverData struct {
	Data []struct {
		Data *productPageData `json:"data"`
	} `json:"data"`
}

type productPageData struct {
	Kind   string `json:"$kind"`
	Title  string `json:"title"`
	Lockup *struct {
		Title    string `json:"title"`
		Subtitle string `json:"subtitle"`
	} `json:"lockup"`
	ShelfMapping map[string]json.RawMessage `json:"shelfMapping"`
}

// shelf is the part of a shelf the parsers read; items stay raw because
// each shelf holds its own kind of item.
type shelf struct {
	Items []json.RawMessage `json:"items"`
}

type ratingsItem struct {
	Kind                 string    `json:"$kind"`
	RatingAverage        float64   `json:"ratingAverage"`
	TotalNumberOfRatings float64   `json:"totalNumberOfRatings"`
	RatingCounts         []float64 `json:"ratingCounts"` // 5 stars first; numbers, sometimes 39433.00000000001
}

type annotation struct {
	Items []struct {
		TextPairs [][]string `json:"textPairs"`
	} `json:"items"`
}

type lockupItem struct {
	AdamID      string `json:"adamId"`
	ClickAction *struct {
		Destination *struct {
			ID string `json:"id"`
		} `json:"destination"`
	} `json:"clickAction"`
}

func parseCurrent(html []byte) (StorePage, error) {
	doc, err := newDoc(html)
	if err != nil {
		return StorePage{}, err
	}
	page := StorePage{Format: FormatCurrent, RatingTotal: -1, Price: -1}
	summary, hasSummary := findSummary(doc)
	var root serverData
	var product *productPageData
	if json.Unmarshal([]byte(doc.Find(`script#serialized-server-data`).First().Text()), &root) == nil &&
		len(root.Data) > 0 && root.Data[0].Data != nil && root.Data[0].Data.Kind == kindProductPage {
		product = root.Data[0].Data
	}
	if product == nil && !hasSummary {
		return StorePage{}, errNoProductData("current")
	}
	if hasSummary {
		summary.apply(&page)
	} else {
		page.MissingSections = append(page.MissingSections, SectionSummary)
	}
	if product == nil {
		// The server data is gone or not a product page: the summary is all.
		page.MissingSections = append(page.MissingSections, SectionSubtitle, SectionRatings, SectionInAppPurchases, SectionSimilarApps)
		return page, nil
	}
	if page.Name == "" {
		page.Name = product.Title
	}
	if product.Lockup != nil && strings.TrimSpace(product.Lockup.Subtitle) != "" {
		page.Subtitle = strings.TrimSpace(product.Lockup.Subtitle)
	} else {
		page.MissingSections = append(page.MissingSections, SectionSubtitle)
	}
	if !currentRatings(product.ShelfMapping[shelfRatings], &page) {
		page.MissingSections = append(page.MissingSections, SectionRatings)
	}
	if page.InAppPurchases = currentIAPs(product.ShelfMapping[shelfInfo]); len(page.InAppPurchases) == 0 {
		page.MissingSections = append(page.MissingSections, SectionInAppPurchases)
	}
	if page.SimilarAppIDs = currentSimilar(product.ShelfMapping[shelfSimilar]); len(page.SimilarAppIDs) == 0 {
		page.MissingSections = append(page.MissingSections, SectionSimilarApps)
	}
	return page, nil
}

func items(raw json.RawMessage) []json.RawMessage {
	var s shelf
	if len(raw) == 0 || json.Unmarshal(raw, &s) != nil {
		return nil
	}
	return s.Items
}

// currentRatings reads the productRatings shelf: exact counts, 5 stars
// first, and the page's own average and total.
func currentRatings(raw json.RawMessage, page *StorePage) bool {
	for _, it := range items(raw) {
		var r ratingsItem
		if json.Unmarshal(it, &r) != nil || r.Kind != kindRatings || len(r.RatingCounts) != numStars {
			continue
		}
		var counts [numStars]int64
		var weights [numStars]float64
		for i, c := range r.RatingCounts {
			if c < 0 {
				return false
			}
			counts[i] = int64(math.Round(c))
			weights[i] = float64(counts[i])
		}
		page.ExactCounts = &counts
		page.RatingShare = sharesOf(weights)
		page.RatingAverage = r.RatingAverage
		page.RatingTotal = int64(math.Round(r.TotalNumberOfRatings))
		return true
	}
	return false
}

// currentIAPs reads the information shelf's in-app purchases: the one
// annotation whose items hold [name, price] text pairs (its title is
// localised, so it is found by shape).
func currentIAPs(raw json.RawMessage) []IAP {
	var iaps []IAP
	for _, it := range items(raw) {
		var a annotation
		if json.Unmarshal(it, &a) != nil {
			continue
		}
		for _, ai := range a.Items {
			for _, pair := range ai.TextPairs {
				if len(pair) == 2 && strings.TrimSpace(pair[0]) != "" {
					iaps = append(iaps, IAP{Name: strings.TrimSpace(pair[0]), Price: strings.TrimSpace(pair[1])})
				}
			}
		}
	}
	return iaps
}

// currentSimilar reads the customers-also-bought lockups' app ids (adamId,
// else the click destination's id), deduplicated in page order.
func currentSimilar(raw json.RawMessage) []int64 {
	var ids []int64
	seen := map[int64]bool{}
	for _, it := range items(raw) {
		var l lockupItem
		if json.Unmarshal(it, &l) != nil {
			continue
		}
		s := l.AdamID
		if s == "" && l.ClickAction != nil && l.ClickAction.Destination != nil {
			s = l.ClickAction.Destination.ID
		}
		id, err := strconv.ParseInt(s, 10, 64)
		if err != nil || id <= 0 || seen[id] {
			continue
		}
		seen[id] = true
		ids = append(ids, id)
	}
	return ids
}
