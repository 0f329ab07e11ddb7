package appstore

import "regexp"

// Elements no parser reads, removed by TrimPage: scripts other than the
// JSON ones (JSON-LD, serialized-server-data), styles, responsive image
// sources and inline SVG icons, the global navigation and footer. They make up ~90% of a real page.
var (
	trimScript = regexp.MustCompile(`(?s)<script\b[^>]*>.*?</script>`)
	trimKeep   = regexp.MustCompile(`^<script\b[^>]*(application/ld\+json|serialized-server-data)`)
	trimStyle  = regexp.MustCompile(`(?s)<style\b[^>]*>.*?</style>`)
	trimSource = regexp.MustCompile(`<source\b[^>]*>`)
	trimSVG    = regexp.MustCompile(`(?s)<svg\b.*?</svg>`)
	// Apple's global navigation and footer wrap every page.
	trimChrome = regexp.MustCompile(`(?s)<nav\b[^>]*>.*?</nav>|<footer\b[^>]*>.*?</footer>`)
)

// TrimPage cuts a saved product page down to what the parsers read,
// leaving every other byte as it was, so a fixture stays a real page.
func TrimPage(html []byte) []byte {
	out := trimScript.ReplaceAllFunc(html, func(s []byte) []byte {
		if trimKeep.Match(s) {
			return s
		}
		return nil
	})
	out = trimStyle.ReplaceAll(out, nil)
	out = trimSource.ReplaceAll(out, nil)
	out = trimSVG.ReplaceAll(out, nil)
	return trimChrome.ReplaceAll(out, nil)
}
