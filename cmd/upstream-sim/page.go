package main

import "html/template"

// productHeaderTag starts the element whose absence makes a page a parse
// error; broken pages are cut right before it.
const productHeaderTag = `<header class="product-header`

const notFoundPage = `<!DOCTYPE html>
<html lang="en-US"><head><meta charset="utf-8"><title>Page Not Found</title></head>
<body><main class="error-page"><h1>The page you're looking for can't be found.</h1></main></body></html>
`

// pageTmpl mirrors the older apps.apple.com product page markup parsed by
// worker/appstore.ParseStorePage. html/template escapes names (e.g. "&").
var pageTmpl = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html prefix="og: http://ogp.me/ns#" dir="ltr" lang="en-US">
  <head>
    <meta charset="utf-8">
    <title>{{.Name}} on the App Store</title>
    <meta name="description" content="Read reviews, compare customer ratings, see screenshots and learn more about {{.Name}}.">
    <link rel="canonical" href="{{.URL}}">
  </head>
  <body class="no-js no-touch">
    <main class="selfclear is-apps-theme" role="main">
      <div class="animation-wrapper is-visible">
        <section class="l-content-width section section--hero product-hero">
          <div class="l-row">
            <div class="l-column small-7 medium-8 large-9 small-valign-top">
              <header class="product-header app-header product-header--padded-start" aria-label="App info">
                <h1 class="product-header__title app-header__title">
                  {{.Name}}
                  <span class="badge badge--product-title">{{.ContentRating}}</span>
                </h1>
                {{- if .Subtitle}}
                <h2 class="product-header__subtitle app-header__subtitle">
                  {{.Subtitle}}
                </h2>
                {{- end}}
                <h2 class="product-header__identity app-header__identity">
                  <a class="link" href="/us/developer/id{{.DevID}}">{{.DevName}}</a>
                </h2>
                <ul class="product-header__list app-header__list">
                  <li class="product-header__list__item">
                    <ul class="inline-list inline-list--mobile-compact">
                      <li class="inline-list__item">{{.Genre.Name}}</li>
                    </ul>
                  </li>
                  <li class="product-header__list__item">
                    <figure class="we-star-rating" aria-label="{{.Rating}} out of 5">
                      <figcaption class="we-rating-count star-rating__count">{{.Rating}} • {{.RatingCount}} Ratings</figcaption>
                    </figure>
                  </li>
                  <li class="product-header__list__item">
                    <ul class="inline-list inline-list--mobile-compact">
                      <li class="inline-list__item inline-list__item--bulleted app-header__list__item--price">{{.Price}}</li>
                      {{- if .IAPs}}
                      <li class="inline-list__item inline-list__item--bulleted app-header__list__item--in-app-purchase">Offers In-App Purchases</li>
                      {{- end}}
                    </ul>
                  </li>
                </ul>
              </header>
            </div>
          </div>
        </section>

        <section class="l-content-width section section--bordered">
          <div class="section__description">
            <h2 class="section__headline visuallyhidden">Description</h2>
            <div class="we-truncate we-truncate--multi-line we-truncate--interactive"><p>{{.Description}}</p></div>
          </div>
        </section>

        <section class="l-content-width section section--bordered we-customer-ratings lockup">
          <h2 class="section__headline">Ratings and Reviews</h2>
          {{- if .Histogram}}
          <div class="we-customer-ratings__stats l-column small-4 medium-6 large-4">
            <div class="we-customer-ratings__averages"><span class="we-customer-ratings__averages__display">{{.Rating}}</span> out of 5</div>
            <div class="we-customer-ratings__count small-hide medium-show">{{.RatingCount}} Ratings</div>
          </div>
          <div class="l-column small-8 medium-6 large-4">
            <figure class="we-star-bar-graph">
              {{- range .Histogram}}
              <div class="we-star-bar-graph__row">
                <span class="we-star-bar-graph__stars we-star-bar-graph__stars--{{.Stars}}"></span>
                <div class="we-star-bar-graph__bar">
                  <div class="we-star-bar-graph__bar__foreground-bar" style="width: {{.Pct}}%;" data-count="{{.Count}}"></div>
                </div>
              </div>
              {{- end}}
            </figure>
          </div>
          {{- else}}
          <p class="we-customer-ratings__count">This app hasn’t received enough ratings or reviews to display an overview.</p>
          {{- end}}
        </section>

        <section class="l-content-width section section--bordered section--information">
          <h2 class="section__headline">Information</h2>
          <dl class="information-list information-list--app medium-columns l-row">
            <div class="information-list__item l-column small-12 medium-6 large-4 small-valign-top">
              <dt class="information-list__item__term medium-valign-top l-column medium-3 large-2">Size</dt>
              <dd class="information-list__item__definition l-column medium-9 large-6">{{.FileSize}} bytes</dd>
            </div>
            <div class="information-list__item l-column small-12 medium-6 large-4 small-valign-top">
              <dt class="information-list__item__term medium-valign-top l-column medium-3 large-2">Category</dt>
              <dd class="information-list__item__definition l-column medium-9 large-6">{{.Genre.Name}}</dd>
            </div>
            {{- if .IAPs}}
            <div class="information-list__item l-column small-12 medium-6 large-4 small-valign-top">
              <dt class="information-list__item__term medium-valign-top l-column medium-3 large-2">In-App Purchases</dt>
              <dd class="information-list__item__definition l-column medium-9 large-6">
                <ol class="list-with-numbers">
                  {{- range .IAPs}}
                  <li class="list-with-numbers__item">
                    <span class="truncate-single-line truncate-single-line--block">
                      <span class="list-with-numbers__item__title"><span class="truncate-single-line">{{.Name}}</span></span>
                      <span class="list-with-numbers__item__price small-hide medium-show-tablecell">{{.Price}}</span>
                    </span>
                  </li>
                  {{- end}}
                </ol>
              </dd>
            </div>
            {{- end}}
          </dl>
        </section>
        {{- if .MoreBy}}

        <section class="l-content-width section section--bordered">
          <h2 class="section__headline">More By This Developer</h2>
          <div class="l-row l-row--peek">
            {{- range .MoreBy}}
            <a href="{{.URL}}" class="we-lockup targeted-link l-column small-2 medium-3 large-2 we-lockup--in-app-shelf"><div class="we-lockup__title">{{.Name}}</div></a>
            {{- end}}
          </div>
        </section>
        {{- end}}
        {{- if .Similar}}

        <section class="l-content-width section section--bordered section--similar">
          <h2 class="section__headline">You Might Also Like</h2>
          <div class="l-row l-row--peek">
            {{- range .Similar}}
            <a href="{{.URL}}" class="we-lockup targeted-link l-column small-2 medium-3 large-2 we-lockup--in-app-shelf"><div class="we-lockup__title">{{.Name}}</div></a>
            {{- end}}
          </div>
        </section>
        {{- end}}
      </div>
    </main>
  </body>
</html>
`))
