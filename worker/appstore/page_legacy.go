package appstore

import (
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/PuerkitoBio/goquery"
)

// CSS selectors of the legacy (Ember) apps.apple.com product page, as in
// the captures under testdata/legacy_*.html.
const (
	selProductHeader = "header.product-header"
	selSubtitle      = "h2.product-header__subtitle"
	selStarGraph     = "figure.we-star-bar-graph"
	selGraphRow      = "div.we-star-bar-graph__row"
	selRowStars      = "span.we-star-bar-graph__stars"
	selRowBar        = "div.we-star-bar-graph__bar__foreground-bar"
	// The in-app purchases sit in the information list as a numbered list.
	selIAPItem  = "li.list-with-numbers__item"
	selIAPTitle = ".list-with-numbers__item__title"
	selIAPPrice = ".list-with-numbers__item__price"
	// "You Might Also Like" ("Vous aimerez peut-être aussi", ...), found by
	// its data attributes, never its localised headline: 2020 pages name the
	// section, 2023 pages only the lockups' metrics location.
	selSimilarLink = `section[data-test-content-section="customersAlsoBoughtApps"] a.we-lockup, ` +
		`a.we-lockup[data-metrics-location*="shelfCustomersAlsoBoughtApps"]`

	// starsClassPrefix + N marks a bar's star level; the 1-star row has no
	// such class on real pages, so rows are also read by position.
	starsClassPrefix = "we-star-bar-graph__stars--"
)

type legacyExprs struct {
	// barWidth reads a rating bar's length, drawn as style="width: 67%;".
	barWidth *regexp.Regexp
	// appIDInHref matches the trailing "/id<digits>" of an app URL,
	// optionally followed by a query string or fragment.
	appIDInHref *regexp.Regexp
}

// legacyRE compiles them on the first legacy page, not in the Worker's cold
// start.
var legacyRE = sync.OnceValue(func() legacyExprs {
	return legacyExprs{
		barWidth:    regexp.MustCompile(`width:\s*([0-9]+(?:\.[0-9]+)?)%`),
		appIDInHref: regexp.MustCompile(`/id(\d+)(?:[?#].*)?$`),
	}
})

func parseLegacy(html []byte) (StorePage, error) {
	doc, err := newDoc(html)
	if err != nil {
		return StorePage{}, err
	}
	page := StorePage{Format: FormatLegacy, RatingTotal: -1, Price: -1}
	summary, hasSummary := findSummary(doc)
	header := doc.Find(selProductHeader)
	graph := doc.Find(selStarGraph)
	if !hasSummary && header.Length() == 0 && graph.Length() == 0 {
		return StorePage{}, errNoProductData("legacy")
	}
	if hasSummary {
		summary.apply(&page)
	} else {
		page.MissingSections = append(page.MissingSections, SectionSummary)
	}
	if s := header.Find(selSubtitle).First(); s.Length() > 0 && cleanText(s.Text()) != "" {
		page.Subtitle = cleanText(s.Text())
	} else {
		page.MissingSections = append(page.MissingSections, SectionSubtitle)
	}
	if share, ok := legacyShares(graph.First()); ok {
		page.RatingShare = share
	} else {
		page.MissingSections = append(page.MissingSections, SectionRatings)
	}
	if page.InAppPurchases = legacyIAPs(doc); len(page.InAppPurchases) == 0 {
		page.MissingSections = append(page.MissingSections, SectionInAppPurchases)
	}
	if page.SimilarAppIDs = legacySimilar(doc); len(page.SimilarAppIDs) == 0 {
		page.MissingSections = append(page.MissingSections, SectionSimilarApps)
	}
	return page, nil
}

// legacyShares reads the five rating bars. Rows run 5 stars down to 1; a
// row's star class wins over its position when present. ok is false when
// the graph is absent or a bar cannot be read.
func legacyShares(graph *goquery.Selection) (share [numStars]float64, ok bool) {
	rows := graph.Find(selGraphRow)
	if rows.Length() != numStars {
		return share, false
	}
	var widths [numStars]float64
	ok = true
	rows.EachWithBreak(func(i int, row *goquery.Selection) bool {
		stars := numStars - i
		for n := 1; n <= numStars; n++ {
			if row.Find(selRowStars).HasClass(starsClassPrefix + strconv.Itoa(n)) {
				stars = n
			}
		}
		m := legacyRE().barWidth.FindStringSubmatch(row.Find(selRowBar).AttrOr("style", ""))
		if m == nil {
			ok = false
			return false
		}
		w, err := strconv.ParseFloat(m[1], 64)
		if err != nil || w < 0 || w > 100 {
			ok = false
			return false
		}
		widths[numStars-stars] = w
		return true
	})
	if !ok {
		return share, false
	}
	return sharesOf(widths), true
}

func legacyIAPs(doc *goquery.Document) []IAP {
	var iaps []IAP
	doc.Find(selIAPItem).Each(func(_ int, li *goquery.Selection) {
		name := cleanText(li.Find(selIAPTitle).First().Text())
		if name == "" {
			return // a numbered-list row that is not a purchase
		}
		iaps = append(iaps, IAP{Name: name, Price: cleanText(li.Find(selIAPPrice).First().Text())})
	})
	return iaps
}

func legacySimilar(doc *goquery.Document) []int64 {
	var ids []int64
	seen := make(map[int64]bool)
	doc.Find(selSimilarLink).Each(func(_ int, a *goquery.Selection) {
		m := legacyRE().appIDInHref.FindStringSubmatch(a.AttrOr("href", ""))
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

// cleanText collapses the whitespace Ember leaves around text nodes.
func cleanText(s string) string { return strings.Join(strings.Fields(s), " ") }
