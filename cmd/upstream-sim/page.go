package main

import (
	"fmt"
	"html/template"
	"strconv"
)

// productDataTags start the first element that makes a page a product page
// (the JSON-LD summary, in <head>), in the legacy and the current markup;
// broken pages are cut right before it.
var productDataTags = []string{`<script name="schema:software-application"`, `<script id=software-application`}

const notFoundPage = `<!DOCTYPE html>
<html lang="en-US"><head><meta charset="utf-8"><title>Page Not Found</title></head>
<body><main class="error-page"><h1>The page you're looking for can't be found.</h1></main></body></html>
`

// Page markups the simulator serves.
const (
	markupLegacy  = "legacy"
	markupCurrent = "current"
	markupUnknown = "unknown"
)

// markupFor picks an app's markup from the configured shares. The app's
// place is a hash of its id, so an app keeps its markup while the shares
// stay, as when a site rolls a redesign out to part of its pages.
func markupFor(id int64, cfg Config) string {
	slot := int((uint64(id) * 2654435761) % 100)
	switch {
	case slot < cfg.UnknownMarkupPct:
		return markupUnknown
	case slot < cfg.UnknownMarkupPct+cfg.CurrentMarkupPct:
		return markupCurrent
	}
	return markupLegacy
}

// unknownTmpl is a markup no parser knows: the product is on the page, but
// with none of the structures the parsers read (no JSON-LD, no server
// data, no Ember classes), as after an unannounced redesign. It is what
// parser-drift detection must catch.
var unknownTmpl = template.Must(template.New("unknown").Parse(`<!DOCTYPE html>
<html lang="en-US">
  <head><meta charset="utf-8"><title>{{.Name}} - App Store</title></head>
  <body>
    <main class="app-page-2027">
      <article data-kind="product">
        <h1 class="app-page-2027__name">{{.Name}}</h1>
        <p class="app-page-2027__tagline">{{.Subtitle}}</p>
        <p class="app-page-2027__score">{{.Rating}} of 5, {{.ShortCount}} reviews</p>
      </article>
    </main>
  </body>
</html>
`))

// ldSummary is the schema.org block real pages carry in <head>.
type ldSummary struct {
	Context         string       `json:"@context"`
	Type            string       `json:"@type"`
	Name            string       `json:"name"`
	Description     string       `json:"description"`
	Category        string       `json:"applicationCategory"`
	DatePublished   string       `json:"datePublished"`
	OperatingSystem string       `json:"operatingSystem"`
	Author          ldAuthor     `json:"author"`
	AggregateRating *ldAggregate `json:"aggregateRating,omitempty"`
	Offers          ldOffer      `json:"offers"`
}

type ldAuthor struct {
	Type string `json:"@type"`
	Name string `json:"name"`
	URL  string `json:"url"`
}

type ldAggregate struct {
	Type        string  `json:"@type"`
	RatingValue float64 `json:"ratingValue"`
	ReviewCount int64   `json:"reviewCount"`
}

type ldOffer struct {
	Type          string  `json:"@type"`
	Category      string  `json:"category,omitempty"`
	Price         float64 `json:"price"`
	PriceCurrency string  `json:"priceCurrency,omitempty"`
}

// shortCount writes a rating count as the page does: 342262 → "342.3K".
func shortCount(n int64) string {
	switch {
	case n >= 1_000_000:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 1_000:
		return fmt.Sprintf("%.1fK", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}

// legacyTmpl is the legacy (Ember) product page, built from the real
// capture in worker/appstore/testdata/legacy_netflix_us_2023.html: the same
// elements, classes and attributes around every value, with the parts no
// crawler reads (scripts, styles, navigation, screenshots, reviews) left
// out. The 1-star row has no star class, as on real pages.
var legacyTmpl = template.Must(template.New("legacy").Parse(`<!DOCTYPE html>
<html prefix="og: http://ogp.me/ns#" dir="ltr" lang="en-US">
  <head>
    <meta charset="utf-8">
    <title>{{.Name}} on the App Store</title>
    <meta name="description" content="Read reviews, compare customer ratings, see screenshots, and learn more about {{.Name}}. Download {{.Name}} and enjoy it on your iPhone, iPad, and iPod touch.">
    <link rel="canonical" href="{{.URL}}">
    <meta name="apple:content_id" content="{{.ID}}">

      <script name="schema:software-application" type="application/ld+json">
        {{.Summary}}
      </script>
  </head>
  <body class="no-js no-touch">
    <div class="ember-view">
<main class="selfclear is-apps-theme" id="main" role="main">
      <div class="animation-wrapper is-visible">
  <section class="l-content-width section section--hero product-hero">
  <div class="l-row">
    <div class="product-hero__media l-column small-5 medium-4 large-3 small-valign-top">
    </div>
    <div class="l-column small-7 medium-8 large-9 small-valign-top">
      <header class="product-header app-header product-header--padded-start">
<!---->
        <h1 class="product-header__title app-header__title">
          {{.Name}}
<!---->            <span class="badge badge--product-title">{{.ContentRating}}</span>
        </h1>
{{if .Subtitle}}
          <h2 class="product-header__subtitle app-header__subtitle">
            {{.Subtitle}}
          </h2>
{{end}}
        <h2 class="product-header__identity app-header__identity">
          <a href="{{.DevURL}}" class="link" dir="auto">
            {{.DevName}}
          </a>
        </h2>

<!---->
          <ul class="product-header__list app-header__list">
              <li class="product-header__list__item app-header__list__item--user-rating">
                <ul class="inline-list inline-list--mobile-compact">
                  <li class="inline-list__item">
                    <figure class="we-star-rating" aria-label="{{.Rating}} out of 5">
  <span class="we-star-rating-stars-outlines">
    <span class="we-star-rating-stars"></span>
  </span>
    <figcaption class="we-rating-count star-rating__count">{{.Rating}} • {{.ShortCount}} Ratings</figcaption>
</figure>

                  </li>
                </ul>
              </li>
          </ul>

        <ul class="product-header__list app-header__list">
<!---->
          <li class="product-header__list__item">
            <ul class="inline-list inline-list--mobile-compact">
                <li class="inline-list__item inline-list__item--bulleted app-header__list__item--price">{{.Price}}</li>
{{if .IAPs}}
                <li class="inline-list__item inline-list__item--bulleted app-header__list__item--in-app-purchase">Offers In-App Purchases</li>
{{end}}
                          </ul>
          </li>
<!---->        </ul>
      </header>
    </div>
  </div>
</section>

    <section class="l-content-width section section--bordered">
      <div class="section__description">
        <h2 class="section__headline visuallyhidden">Description</h2>
          <div class="we-truncate we-truncate--multi-line we-truncate--interactive " dir="">
  <p dir="ltr" data-test-bidi="">{{.Description}}</p>
</div>
      </div>
    </section>

      <section class="l-content-width section section--bordered">
      <div class="section__nav">
        <h2 class="section__headline">
          Ratings and Reviews
        </h2>
      </div>
{{if .Rows}}
        <div class="we-customer-ratings lockup">
  <div class="l-row">
    <div class="we-customer-ratings__stats l-column small-4 medium-6 large-4">
      <div class="we-customer-ratings__averages"><span class="we-customer-ratings__averages__display">{{.Rating}}</span> out of 5</div>
        <div class="we-customer-ratings__count small-hide medium-show">{{.ShortCount}} Ratings</div>
    </div>
    <div class=" l-column small-8 medium-6 large-4">
      <figure class="we-star-bar-graph">
{{- range .Rows}}
          <div class="we-star-bar-graph__row">
            <span class="we-star-bar-graph__stars {{.StarsClass}}"></span>
            <div class="we-star-bar-graph__bar">
              <div class="we-star-bar-graph__bar__foreground-bar" style="width: {{.Width}}%;"></div>
            </div>
          </div>
{{- end}}
      </figure>
        <p class="we-customer-ratings__count medium-hide">{{.ShortCount}} Ratings</p>
    </div>
  </div>
</div>
{{else}}
        <p class="we-customer-ratings__count">This app hasn’t received enough ratings or reviews to display an overview.</p>
{{end}}
    </section>

  <section class="l-content-width section section--bordered section--information">
    <div class="section__nav">
      <h2 class="section__headline">Information</h2>
    </div>
    <dl class="information-list information-list--app medium-columns l-row">
      <div class="information-list__item l-column small-12 medium-6 large-4 small-valign-top">
        <dt class="information-list__item__term medium-valign-top">Seller</dt>
        <dd class="information-list__item__definition">{{.DevName}}</dd>
      </div>
      <div class="information-list__item l-column small-12 medium-6 large-4 small-valign-top">
        <dt class="information-list__item__term medium-valign-top">Size</dt>
        <dd class="information-list__item__definition">{{.FileSize}} bytes</dd>
      </div>
      <div class="information-list__item l-column small-12 medium-6 large-4 small-valign-top">
        <dt class="information-list__item__term medium-valign-top">Category</dt>
        <dd class="information-list__item__definition">{{.Genre.Name}}</dd>
      </div>
        <div class="information-list__item l-column small-12 medium-6 large-4 small-valign-top">
          <dt class="information-list__item__term medium-valign-top">Price</dt>
          <dd class="information-list__item__definition">{{.Price}}</dd>
        </div>
{{if .IAPs}}
        <div class="information-list__item l-column small-12 medium-6 large-4 small-valign-top">
          <dt class="information-list__item__term medium-valign-top">In-App Purchases</dt>
          <dd class="information-list__item__definition">
            <ol role="table" class="list-with-numbers">
              <div>
{{range .IAPs}}
                <li class="list-with-numbers__item">
                  <span class="list-with-numbers__item__title"><span class="truncate-single-line truncate-single-line--block">{{.Name}}</span></span>
                  <span class="list-with-numbers__item__price small-hide medium-show-tablecell">{{.Price}}</span>
                </li>
{{end}}
</div>
            </ol>
          </dd>
        </div>
{{end}}
    </dl>
  </section>
{{if .MoreBy}}
    <section class="l-content-width section section--bordered">
      <div class="section__nav">
        <h2 class="section__headline">
          More By This Developer
        </h2>
      </div>

      <div class="l-row l-row--peek">
{{range .MoreBy}}
            <a href="{{.URL}}" class="we-lockup targeted-link l-column small-2 medium-3 large-2 we-lockup--shelf-align-top we-lockup--in-app-shelf" aria-label="{{.Name}}." data-metrics-location="{&quot;locationType&quot;:&quot;shelfDeveloperOtherApps&quot;}">
<div class="we-lockup__copy">
<div class="we-lockup__title " dir="ltr">{{.Name}}</div>
</div>
</a>
{{end}}
      </div>
    </section>
{{end}}
{{if .Similar}}
    <section class="l-content-width section section--bordered">
      <div class="section__nav">
        <h2 class="section__headline">
          You Might Also Like
        </h2>
           <a class="ember-view link section__nav__see-all-link" rel="nofollow" data-we-link-to-exclude="" href="{{.SeeAllSimilar}}">
     See All
   </a>
      </div>

      <div class="l-row l-row--peek">
{{range .Similar}}
            <a href="{{.URL}}" class="we-lockup targeted-link l-column small-2 medium-3 large-2 we-lockup--shelf-align-top we-lockup--in-app-shelf" aria-label="{{.Name}}." data-metrics-location="{&quot;locationType&quot;:&quot;shelfCustomersAlsoBoughtApps&quot;}">
<div class="we-lockup__copy">
<div class="we-lockup__title " dir="ltr">{{.Name}}</div>
</div>
</a>
{{end}}
      </div>
    </section>
{{end}}
      </div>
</main>
    </div>
  </body>
</html>
`))

// The current (2025) markup's server data, in the nesting and key order of
// the real capture described in worker/appstore/testdata/README.md: the
// page as data[0].data, its shelves in shelfMapping, the app's own lockup.
type (
	serverData struct {
		Data          []serverPage `json:"data"`
		UserTokenHash string       `json:"userTokenHash"`
	}
	serverPage struct {
		Intent pageIntent  `json:"intent"`
		Data   productPage `json:"data"`
	}
	pageIntent struct {
		Storefront        string `json:"storefront"`
		Language          string `json:"language"`
		IsDefaultLanguage bool   `json:"isDefaultLanguage"`
		Kind              string `json:"$kind"`
		ID                string `json:"id"`
	}
	productPage struct {
		ShelfMapping map[string]any `json:"shelfMapping"`
		Kind         string         `json:"$kind"`
		AppPlatforms []string       `json:"appPlatforms"`
		Uber         any            `json:"uber"`
		Title        string         `json:"title"`
		Lockup       pageLockup     `json:"lockup"`
		CanonicalURL string         `json:"canonicalURL"`
		PageMetrics  any            `json:"pageMetrics"`
	}
	pageLockup struct {
		Kind             string  `json:"$kind"`
		AdamID           string  `json:"adamId"`
		BundleID         string  `json:"bundleId"`
		Title            string  `json:"title"`
		Subtitle         string  `json:"subtitle,omitempty"`
		DeveloperTagline string  `json:"developerTagline,omitempty"`
		Rating           float64 `json:"rating"`
	}
	shelfOf struct {
		Kind              string `json:"$kind"`
		ImpressionMetrics any    `json:"impressionMetrics,omitempty"`
		ContentType       string `json:"contentType,omitempty"`
		Items             []any  `json:"items"`
	}
	ratingsItem struct {
		Kind                 string  `json:"$kind"`
		ProductID            string  `json:"productId"`
		RatingAverage        float64 `json:"ratingAverage"`
		TotalNumberOfRatings int64   `json:"totalNumberOfRatings"`
		Context              string  `json:"context"`
		RatingCounts         []int64 `json:"ratingCounts"`
	}
	annotationItem struct {
		Kind      string     `json:"$kind"`
		Text      string     `json:"text,omitempty"`
		TextPairs [][]string `json:"textPairs,omitempty"`
	}
	annotation struct {
		Kind    string           `json:"$kind"`
		Title   string           `json:"title"`
		Summary string           `json:"summary,omitempty"`
		Items   []annotationItem `json:"items"`
	}
	shelfLockup struct {
		Kind          string  `json:"$kind"`
		AdamID        string  `json:"adamId"`
		Title         string  `json:"title"`
		DeveloperName string  `json:"developerName"`
		Rating        float64 `json:"rating"`
		RatingCount   string  `json:"ratingCount"`
		ClickAction   any     `json:"clickAction"`
	}
)

func lockupOf(l lockup) shelfLockup {
	id := strconv.FormatInt(l.ID, 10)
	return shelfLockup{Kind: "Lockup", AdamID: id, Title: l.Name, DeveloperName: l.DevName, Rating: l.Rating,
		RatingCount: shortCount(l.RatingCount),
		ClickAction: map[string]any{"pageUrl": l.URL, "destination": map[string]string{"id": id, "$kind": "ProductPageIntent"}}}
}

// serverDataOf builds an app's server data. An unrated app has no
// productRatings shelf (not confirmed against a real unrated page).
func serverDataOf(d pageData, country string) serverData {
	id := strconv.FormatInt(d.ID, 10)
	shelves := map[string]any{}
	if d.RatingCount > 0 {
		shelves["productRatings"] = shelfOf{Kind: "Shelf", Items: []any{ratingsItem{Kind: "Ratings", ProductID: id,
			RatingAverage: d.AverageRating, TotalNumberOfRatings: d.RatingCount, Context: "productPage", RatingCounts: d.Histogram[:]}}}
	}
	info := []any{
		annotation{Kind: "Annotation", Title: "Seller", Items: []annotationItem{{Kind: "AnnotationItem", Text: d.DevName}}},
		annotation{Kind: "Annotation", Title: "Category", Items: []annotationItem{{Kind: "AnnotationItem", Text: d.Genre.Name}}},
	}
	if len(d.IAPs) > 0 {
		var pairs [][]string
		for _, p := range d.IAPs {
			pairs = append(pairs, []string{p.Name, p.Price})
		}
		info = append(info, annotation{Kind: "Annotation", Title: "In-App Purchases", Summary: "Yes",
			Items: []annotationItem{{Kind: "AnnotationItem", TextPairs: pairs}}})
	}
	shelves["information"] = shelfOf{Kind: "Shelf", Items: info}
	var more, similar []any
	for _, l := range d.MoreBy {
		more = append(more, lockupOf(l))
	}
	for _, l := range d.Similar {
		similar = append(similar, lockupOf(l))
	}
	if len(more) > 0 {
		shelves["moreByDeveloper"] = shelfOf{Kind: "Shelf", ContentType: "smallLockup", Items: more}
	}
	if len(similar) > 0 {
		metrics := map[string]any{"fields": map[string]any{"id": "customers-also-bought-apps", "impressionType": "similarItems", "idType": "relationship"}}
		shelves["similarItems"] = shelfOf{Kind: "Shelf", ImpressionMetrics: metrics, ContentType: "smallLockup", Items: similar}
		shelves["similarItemsDownloading"] = shelfOf{Kind: "Shelf", ImpressionMetrics: metrics, ContentType: "smallLockup", Items: similar}
	}
	return serverData{Data: []serverPage{{
		Intent: pageIntent{Storefront: country, Language: "en-US", IsDefaultLanguage: true, Kind: "ProductPageIntent", ID: id},
		Data: productPage{ShelfMapping: shelves, Kind: "ShelfBasedProductPage", AppPlatforms: []string{"phone"}, Title: d.Name,
			Lockup: pageLockup{Kind: "Lockup", AdamID: id, BundleID: d.BundleID, Title: d.Name, Subtitle: d.Subtitle,
				DeveloperTagline: d.Subtitle, Rating: d.AverageRating},
			CanonicalURL: d.URL,
			PageMetrics:  map[string]any{"pageFields": map[string]string{"pageType": "Software", "pageId": id}}},
	}}}
}

// currentTmpl is the redesigned product page: a server-rendered shell whose
// data is the JSON in serialized-server-data, plus the JSON-LD summary
// (<script id=software-application>, the id unquoted as on the real page).
var currentTmpl = template.Must(template.New("current").Parse(`<!DOCTYPE html>
<html dir="ltr" lang="en-US">
    <head>
        <meta charset="utf-8" />
        <title>{{.Name}} App - App Store</title>
        <link rel="canonical" href="{{.URL}}">
                <script id=software-application type="application/ld+json">
                    {{.CurrentSummary}}
                </script>
    </head>
    <body>
        <div class="body-container">
<script type="application/json" id="serialized-server-data">{{.ServerData}}</script>
        </div>
    </body>
</html>
`))
