package appstore

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
)

// Search hints: the App Store's own completions of what people type in
// its search field. GET {base}/WebObjects/MZSearchHints.woa/wa/hints
// ?clientApplication=Software&q=PREFIX with the storefront in the
// X-Apple-Store-Front header answers an XML property list:
//
//	<plist version="1.0"><dict>
//	  <key>title</key><string>Suggestions</string>
//	  <key>hints</key><array>
//	    <dict><key>term</key><string>budget planner</string>
//	          <key>url</key><string>https://…</string></dict>
//	    …
//	  </array>
//	</dict></plist>
//
// most typed first. The array is empty when nothing matches, and also when
// the storefront header is missing: both are a 200. Current answers carry
// no popularity number; older ones had a `priority` integer per hint, read
// when present.

// HintsPath is the hints endpoint's path on its host (UPSTREAM_HINTS_BASE).
const HintsPath = "/WebObjects/MZSearchHints.woa/wa/hints"

// HintsClient is the clientApplication the hints are asked for: the App
// Store's software search (other values complete music or books).
const HintsClient = "Software"

// StoreFrontHeader names the header that carries the storefront.
const StoreFrontHeader = "X-Apple-Store-Front"

// Hints bounds.
const (
	// MaxHints bounds what one answer is read for: the App Store returns
	// about 10 for Software; more is not a hints answer.
	MaxHints = 50
	// MaxHintTermLen bounds one term (in bytes): a search term, not a text.
	MaxHintTermLen = 200
	// maxPlistDepth bounds nesting: the answer is a dict of an array of dicts.
	maxPlistDepth = 8
)

// storefronts are the App Store storefront ids by country (ISO 3166-1
// alpha-2, lower case). Source: Apple's storefront ids as the App Store
// sends them in X-Apple-Store-Front and as its affiliate documentation
// lists them (143441 United States, 143444 United Kingdom, …).
var storefronts = map[string]int{
	"us": 143441, "fr": 143442, "de": 143443, "gb": 143444, "at": 143445,
	"be": 143446, "fi": 143447, "gr": 143448, "ie": 143449, "it": 143450,
	"nl": 143452, "pt": 143453, "es": 143454, "ca": 143455, "se": 143456,
	"no": 143457, "dk": 143458, "ch": 143459, "au": 143460, "nz": 143461,
	"jp": 143462, "hk": 143463, "sg": 143464, "cn": 143465, "kr": 143466,
	"in": 143467, "mx": 143468, "ru": 143469, "tw": 143470, "vn": 143471,
	"br": 143503, "ar": 143505, "cl": 143483, "co": 143501, "tr": 143480,
	"pl": 143478, "th": 143475, "id": 143476, "my": 143473, "ph": 143474,
}

// StoreFront is the X-Apple-Store-Front value for country's App Store
// ("143441-1,29" for the US: the storefront, its default language, and
// 29, the software platform); ok is false for a country not in the table.
func StoreFront(country string) (string, bool) {
	id, ok := storefronts[strings.ToLower(country)]
	if !ok {
		return "", false
	}
	return strconv.Itoa(id) + "-1,29", true
}

// HintsURL is the hints request for prefix on base.
func HintsURL(base, prefix string) string {
	q := url.Values{"clientApplication": {HintsClient}, "q": {prefix}}
	return strings.TrimRight(base, "/") + HintsPath + "?" + q.Encode()
}

// Hint is one completion: the term people type, the search it opens,
// and its priority when the answer carries one (0: none).
type Hint struct {
	Term     string `json:"term"`
	URL      string `json:"url,omitempty"`
	Priority int64  `json:"priority,omitempty"`
}

// ErrNotHints is a body that is not a hints property list.
var ErrNotHints = errors.New("not a hints answer")

// ParseHints reads a hints answer's terms in the answer's order, each
// once (trimmed, empty ones left out), at most MaxHints. An answer with
// an empty array (nothing matched, or no storefront) is no hints and no
// error; a body that is no plist dict with a hints array is ErrNotHints.
func ParseHints(body []byte) ([]Hint, error) {
	dec := xml.NewDecoder(bytes.NewReader(body))
	dec.Strict = false // Apple's DOCTYPE and entities are plain XML, but be lenient
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrNotHints, err)
		}
		se, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		if se.Name.Local == "plist" {
			continue
		}
		if se.Name.Local != "dict" {
			return nil, fmt.Errorf("%w: top-level <%s>", ErrNotHints, se.Name.Local)
		}
		v, err := plistValue(dec, se, 0)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrNotHints, err)
		}
		return hintsOf(v.(plistDict))
	}
}

func hintsOf(d plistDict) ([]Hint, error) {
	raw, ok := d.get("hints")
	if !ok {
		return nil, fmt.Errorf("%w: no hints key", ErrNotHints)
	}
	arr, ok := raw.([]any)
	if !ok {
		return nil, fmt.Errorf("%w: hints is not an array", ErrNotHints)
	}
	out := []Hint{}
	seen := map[string]bool{}
	for _, item := range arr {
		var h Hint
		switch v := item.(type) {
		case plistDict: // the current shape: {term, url}
			h.Term, _ = v.str("term")
			h.URL, _ = v.str("url")
			if p, ok := v.get("priority"); ok {
				h.Priority, _ = p.(int64)
			}
		case string: // a bare term, as some older answers had
			h.Term = v
		}
		h.Term = strings.TrimSpace(h.Term)
		if h.Term == "" || len(h.Term) > MaxHintTermLen || seen[h.Term] {
			continue
		}
		seen[h.Term] = true
		out = append(out, h)
		if len(out) == MaxHints {
			break
		}
	}
	return out, nil
}

// plistDict is a plist dict in document order.
type plistDict struct {
	keys []string
	vals []any
}

func (d plistDict) get(k string) (any, bool) {
	for i, key := range d.keys {
		if key == k {
			return d.vals[i], true
		}
	}
	return nil, false
}

func (d plistDict) str(k string) (string, bool) {
	v, ok := d.get(k)
	s, isStr := v.(string)
	return s, ok && isStr
}

// plistValue reads the value that start opens: a dict (plistDict), an
// array ([]any), a string, an integer (int64); other kinds are read and
// kept as their text.
func plistValue(dec *xml.Decoder, start xml.StartElement, depth int) (any, error) {
	if depth > maxPlistDepth {
		return nil, errors.New("nested too deep")
	}
	switch start.Name.Local {
	case "dict":
		var d plistDict
		key, haveKey := "", false
		for {
			tok, err := dec.Token()
			if err != nil {
				return nil, err
			}
			switch t := tok.(type) {
			case xml.EndElement:
				return d, nil
			case xml.StartElement:
				if t.Name.Local == "key" {
					if key, err = text(dec); err != nil {
						return nil, err
					}
					haveKey = true
					continue
				}
				v, err := plistValue(dec, t, depth+1)
				if err != nil {
					return nil, err
				}
				if !haveKey {
					return nil, errors.New("a dict value without a key")
				}
				d.keys, d.vals = append(d.keys, key), append(d.vals, v)
				haveKey = false
			}
		}
	case "array":
		arr := []any{}
		for {
			tok, err := dec.Token()
			if err != nil {
				return nil, err
			}
			switch t := tok.(type) {
			case xml.EndElement:
				return arr, nil
			case xml.StartElement:
				v, err := plistValue(dec, t, depth+1)
				if err != nil {
					return nil, err
				}
				arr = append(arr, v)
			}
		}
	case "integer":
		s, err := text(dec)
		if err != nil {
			return nil, err
		}
		n, _ := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		return n, nil
	}
	return text(dec)
}

// text reads an element's character data up to its end.
func text(dec *xml.Decoder) (string, error) {
	var b strings.Builder
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return "", io.ErrUnexpectedEOF
		}
		if err != nil {
			return "", err
		}
		switch t := tok.(type) {
		case xml.CharData:
			b.Write(t)
		case xml.StartElement:
			if err := dec.Skip(); err != nil {
				return "", err
			}
		case xml.EndElement:
			return b.String(), nil
		}
	}
}
