package keywords

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"

	"storecrawl/internal/objects"
	"storecrawl/worker/upstream"
)

// ErrHintsParse wraps every answer that is not a hints plist.
var ErrHintsParse = errors.New("not a search hints plist")

// maxHints bounds the terms kept of one answer (Apple sends about ten).
const maxHints = 50

// ParseHints reads Apple's search hints answer: an XML property list whose
// top dict has "title" ("Suggestions") and "hints", an array of dicts each
// with a "term" (and a "url"; older answers add "priority", newer ones
// "displayTerm"). A hint given as a bare string is read too. The terms
// come back in Apple's order; an answer with no "hints" key is an error,
// an empty array an empty answer.
func ParseHints(body []byte) ([]string, error) {
	dec := xml.NewDecoder(bytes.NewReader(body))
	dec.Strict = false
	var (
		path    []string // element names from the root
		lastKey string   // the last <key> text at each dict depth that matters
		inHints bool
		found   bool
		hintKey string
		terms   []string
		text    strings.Builder
	)
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("hints: %v: %w", err, ErrHintsParse)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			path = append(path, t.Name.Local)
			text.Reset()
			// plist > dict > array: the top dict's array after key "hints".
			if len(path) == 3 && t.Name.Local == "array" && path[1] == "dict" && lastKey == "hints" {
				inHints, found = true, true
			}
		case xml.CharData:
			text.Write(t)
		case xml.EndElement:
			name := t.Name.Local
			depth := len(path)
			if depth == 0 {
				return nil, fmt.Errorf("hints: unbalanced </%s>: %w", name, ErrHintsParse)
			}
			path = path[:depth-1]
			switch {
			case depth == 3 && name == "key" && path[1] == "dict":
				lastKey = strings.TrimSpace(text.String())
			case depth == 3 && name == "array" && inHints:
				inHints = false
			case inHints && depth == 4 && name == "string": // a bare string hint
				terms = append(terms, text.String())
			case inHints && depth == 5 && name == "key":
				hintKey = strings.TrimSpace(text.String())
			case inHints && depth == 5 && name == "string" && hintKey == "term":
				terms = append(terms, text.String())
				hintKey = ""
			case inHints && depth == 5:
				hintKey = ""
			}
			text.Reset()
		}
		if len(terms) >= maxHints {
			break
		}
	}
	if !found {
		return nil, fmt.Errorf("hints: no hints array: %w", ErrHintsParse)
	}
	return terms, nil
}

// HintsPath is the search hints endpoint's path, on the upstream's API host.
const HintsPath = "/WebObjects/MZSearchHints.woa/wa/hints"

// HintsURL is the hints request for a prefix: the App Store's
// (clientApplication=Software) in country's storefront.
func HintsURL(base, country, prefix string) string {
	q := url.Values{"clientApplication": {"Software"}, "term": {prefix}, "cc": {country}}
	return base + HintsPath + "?" + q.Encode()
}

// HTTPHints is a HintsFetcher over the upstream client (through the
// global catalogue limit in the wiring).
type HTTPHints struct {
	Get           func(ctx context.Context, url string) upstream.Response
	Base, Country string
}

// Hints fetches and parses one prefix's hints.
func (h HTTPHints) Hints(ctx context.Context, prefix string) ([]string, error) {
	r := h.Get(ctx, HintsURL(h.Base, h.Country, prefix))
	defer r.Release()
	switch r.Class {
	case objects.ClassOK:
		return ParseHints(r.Body)
	case objects.ClassRateLimit:
		return nil, &RateLimited{RetryAfterS: r.RetryAfterS}
	default:
		return nil, fmt.Errorf("hints: HTTP %d (%s): %v", r.Status, r.Class, r.Err)
	}
}
