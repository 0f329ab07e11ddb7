package appstore

import (
	"strings"
	"unicode/utf8"
)

// MaxTextLen caps free text (subtitles, release notes, names) before a DB
// insert so one huge row cannot blow the D1 statement/row limits.
const MaxTextLen = 2000

// MaxDescriptionLen caps the description kept: its opening, the lines the
// store's own page shows above its "more" and more. Its readers are the
// app record (GET /v1/apps/{id}, the MCP app tool; the full text is the
// store's page) and the daily completeness check (more than 10
// characters); no search, segment or explorer page reads it. The store's
// descriptions run to 4,000 characters and app_registry holds one an app:
// kept whole (up to MaxTextLen) they would take D1 past its included
// storage within a year at the catalogue's size (docs/scale.md, "D1 after
// a year").
const MaxDescriptionLen = 400

// Truncate returns s cut to at most max runes (never splitting a UTF-8
// sequence); invalid UTF-8 is replaced, so a stored value is always valid.
// A non-positive max yields "".
func Truncate(s string, max int) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if max <= 0 {
		return ""
	}
	n := 0
	for i := range s {
		if n == max {
			return s[:i]
		}
		n++
	}
	return s
}

// Bounds on every upstream value we store: the upstream
// is not ours, and one oversized answer must not make a row D1 refuses, a
// save that fails on every attempt, or a record that crowds the isolate.
const (
	// MaxFieldLen caps short fields: names of things, ids, versions,
	// currencies, dates, URLs (real ones are well under 300 characters).
	MaxFieldLen = 512
	// MaxLanguages caps an app's language list (real apps list up to ~40).
	MaxLanguages = 100
	// MaxIAPs caps the in-app purchases kept (the page shows the top 10).
	MaxIAPs = 20
	// MaxSimilar caps an app's similar-app edges (a real shelf holds 10-20).
	MaxSimilar = 40
	// MaxMissingSections caps the missing-section names recorded.
	MaxMissingSections = 16
)

// field truncates a short field to MaxFieldLen.
func field(s string) string { return Truncate(s, MaxFieldLen) }

// Bounded returns a with every string and list cut to its bound.
func (a App) Bounded() App {
	a.Name, a.BundleID, a.DeveloperName = field(a.Name), field(a.BundleID), field(a.DeveloperName)
	a.Currency, a.Genre, a.Version = field(a.Currency), field(a.Genre), field(a.Version)
	a.ReleaseDate, a.CurrentVersionReleaseDate = field(a.ReleaseDate), field(a.CurrentVersionReleaseDate)
	a.ContentRating, a.TrackViewURL, a.ArtworkURL = field(a.ContentRating), field(a.TrackViewURL), field(a.ArtworkURL)
	a.Description, a.ReleaseNotes = Truncate(a.Description, MaxDescriptionLen), Truncate(a.ReleaseNotes, MaxTextLen)
	a.Languages = boundedFields(a.Languages, MaxLanguages)
	return a
}

// Bounded returns p with every string and list cut to its bound.
func (p StorePage) Bounded() StorePage {
	p.Name, p.Currency, p.Category = field(p.Name), field(p.Currency), field(p.Category)
	p.Subtitle = Truncate(p.Subtitle, MaxTextLen)
	if len(p.InAppPurchases) > MaxIAPs {
		p.InAppPurchases = p.InAppPurchases[:MaxIAPs]
	}
	iaps := make([]IAP, len(p.InAppPurchases))
	for i, x := range p.InAppPurchases {
		iaps[i] = IAP{Name: field(x.Name), Price: field(x.Price)}
	}
	p.InAppPurchases = iaps
	if len(p.SimilarAppIDs) > MaxSimilar {
		p.SimilarAppIDs = p.SimilarAppIDs[:MaxSimilar]
	}
	p.MissingSections = boundedFields(p.MissingSections, MaxMissingSections)
	return p
}

// boundedFields is a copy of xs cut to n entries of at most MaxFieldLen
// each (nil stays nil), leaving the caller's slice as it was.
func boundedFields(xs []string, n int) []string {
	if xs == nil {
		return nil
	}
	out := make([]string, min(len(xs), n))
	for i := range out {
		out[i] = field(xs[i])
	}
	return out
}
