package appstore

import (
	"regexp"
	"sync"
)

// Elements no parser reads, removed by TrimPage: scripts other than the
// JSON ones (JSON-LD, serialized-server-data), styles, responsive image
// sources and inline SVG icons, the global navigation and footer: most of
// a real page's bytes (compare a capture with go run ./cmd/scrape trim FILE).
type trimExprs struct{ script, keep, style, source, svg, chrome *regexp.Regexp }

// trimRE compiles them on first use: package initialisers run on every cold
// start of the Worker, and only fixtures are trimmed.
var trimRE = sync.OnceValue(func() trimExprs {
	return trimExprs{
		script: regexp.MustCompile(`(?s)<script\b[^>]*>.*?</script>`),
		keep:   regexp.MustCompile(`^<script\b[^>]*(application/ld\+json|serialized-server-data)`),
		style:  regexp.MustCompile(`(?s)<style\b[^>]*>.*?</style>`),
		source: regexp.MustCompile(`<source\b[^>]*>`),
		svg:    regexp.MustCompile(`(?s)<svg\b.*?</svg>`),
		// Apple's global navigation and footer wrap every page.
		chrome: regexp.MustCompile(`(?s)<nav\b[^>]*>.*?</nav>|<footer\b[^>]*>.*?</footer>`),
	}
})

// TrimPage cuts a saved product page down to what the parsers read,
// leaving every other byte as it was, so a fixture stays a real page.
func TrimPage(html []byte) []byte {
	re := trimRE()
	out := re.script.ReplaceAllFunc(html, func(s []byte) []byte {
		if re.keep.Match(s) {
			return s
		}
		return nil
	})
	out = re.style.ReplaceAll(out, nil)
	out = re.source.ReplaceAll(out, nil)
	out = re.svg.ReplaceAll(out, nil)
	return re.chrome.ReplaceAll(out, nil)
}
