// Package reviews reads Apple's customer-reviews feed and turns reviews into
// what the opportunity analyst uses: a sentiment score per review and the
// top complaint themes per app and per market cluster.
//
// Everything here is pure Go on plain types (no syscall/js, no clock, no
// I/O) so it is tested natively on real saved feeds (testdata/README.md).
package reviews

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"storecrawl/worker/appstore"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Bounds of the feed and of a stored review. The feed is not ours: one
// oversized or hostile answer must not make a row D1 refuses or a record
// that crowds the isolate, so every value is cut at parse.
const (
	// MaxPages is Apple's page depth: page 11 answers the plain text
	// "CustomerReviews RSS page depth is limited to 10"
	// (testdata/us_555731861_p11_depth_limit.txt).
	MaxPages = 10
	// MaxEntriesPerPage caps the entries read from one page. Apple serves
	// 50 (every 2025 capture has exactly 50); twice that leaves room for a
	// change without letting a runaway body through.
	MaxEntriesPerPage = 100
	// MaxFeedBytes caps the body parsed. A real 50-entry page is ~60 KB
	// compact (~95 KB pretty-printed); 1 MiB is an order of magnitude more.
	MaxFeedBytes = 1 << 20
	// MaxBodyRunes truncates a review's text, the cap the design document
	// (seed 004, "Reviews capped at 2000 chars") puts on reviews.
	MaxBodyRunes = 2000
	// MaxTitleRunes truncates a review's title; App Store titles are short
	// (the form allows about 100 characters).
	MaxTitleRunes = 200
	// MaxFieldRunes caps short fields: review id, version, country.
	MaxFieldRunes = 64
)

// Errors. Callers tell a permanent problem with the document (ErrParse) from
// the end of the paging (ErrPageDepth).
var (
	// ErrParse reports a body that is not a customer-reviews feed.
	ErrParse = errors.New("reviews: not a customer-reviews feed")
	// ErrPageDepth reports Apple's answer past the last page it serves.
	ErrPageDepth = errors.New("reviews: page depth limit reached")
	// ErrTooLarge reports a body over MaxFeedBytes.
	ErrTooLarge = errors.New("reviews: feed body too large")
)

// Review is one stored customer review. Author is a hash, never the name: the
// analyst needs to tell reviewers apart, not who they are.
type Review struct {
	ID      string `json:"id"`
	AppID   int64  `json:"app_id"`
	Country string `json:"country"`
	Rating  int    `json:"rating"` // 1..5 stars
	Title   string `json:"title"`
	Body    string `json:"body"` // cut to MaxBodyRunes
	// Truncated reports that Body was cut.
	Truncated bool   `json:"truncated,omitempty"`
	Version   string `json:"version"`
	// AuthorHash is AuthorHash(author uri, author name): 16 hex digits.
	AuthorHash string `json:"author_hash"`
	// Date is the entry's "updated" in UTC; zero when the feed has none
	// (captures from 2021 carry no per-entry date).
	Date time.Time `json:"date"`
}

// Page is one parsed feed page.
type Page struct {
	Reviews []Review
	// LastPage is the page number of the feed's rel=last link (0 when the
	// feed gives none, as an empty feed does).
	LastPage int
	// Skipped counts entries that were not reviews (the app itself, which
	// older feeds put first) or were unusable (no id, rating out of 1..5).
	Skipped int
}

// HasNext reports whether page n is worth fetching after this one.
func (p Page) HasNext(n int) bool {
	return len(p.Reviews) > 0 && n < MaxPages && n < p.LastPage
}

// countryRE is a storefront code (compiled on first use, not in the
// Worker's cold start).
var countryRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z]{2}$`) })

// FeedURL is the customer-reviews feed of one app in one storefront, most
// recent first:
//
//	{base}/{cc}/rss/customerreviews/page={n}/id={id}/sortby=mostrecent/json
//
// base is the API host (https://itunes.apple.com). page is clamped to
// 1..MaxPages.
func FeedURL(base, country string, page int, appID int64) string {
	page = max(1, min(page, MaxPages))
	return fmt.Sprintf("%s/%s/rss/customerreviews/page=%d/id=%d/sortby=mostrecent/json",
		strings.TrimRight(base, "/"), url.PathEscape(strings.ToLower(country)), page, appID)
}

type label struct {
	Label string `json:"label"`
}

type linkAttrs struct {
	Attributes struct {
		Rel  string `json:"rel"`
		Href string `json:"href"`
	} `json:"attributes"`
}

type rawEntry struct {
	Author *struct {
		Name label `json:"name"`
		URI  label `json:"uri"`
	} `json:"author"`
	Updated *label          `json:"updated"`
	Rating  *label          `json:"im:rating"`
	Version label           `json:"im:version"`
	ID      json.RawMessage `json:"id"`
	Title   label           `json:"title"`
	Content label           `json:"content"`
	Name    *label          `json:"im:name"` // only on the app entry of older feeds
}

// depthLimitPrefix starts Apple's plain-text answer past the last page.
const depthLimitPrefix = "CustomerReviews RSS page depth is limited"

// Parse reads one customer-reviews page for appID in country. It accepts
// every shape Apple has served: entry as an array, as a single object, or
// absent (no reviews); the app itself as the first entry (older feeds);
// entries with or without a per-entry "updated". Entries that are not
// reviews are skipped and counted, never an error; a body that is not a
// feed at all is ErrParse.
func Parse(body []byte, appID int64, country string) (Page, error) {
	if len(body) > MaxFeedBytes {
		return Page{}, ErrTooLarge
	}
	trimmed := bytes.TrimSpace(body)
	if bytes.HasPrefix(trimmed, []byte(depthLimitPrefix)) {
		return Page{}, ErrPageDepth
	}
	var doc struct {
		Feed *struct {
			Entry json.RawMessage `json:"entry"`
			Link  json.RawMessage `json:"link"`
		} `json:"feed"`
	}
	if err := json.Unmarshal(trimmed, &doc); err != nil {
		return Page{}, fmt.Errorf("%w: %v", ErrParse, err)
	}
	if doc.Feed == nil {
		return Page{}, fmt.Errorf("%w: no feed object", ErrParse)
	}
	entries, err := entryList(doc.Feed.Entry)
	if err != nil {
		return Page{}, err
	}
	page := Page{LastPage: lastPage(doc.Feed.Link)}
	country = strings.ToLower(country)
	if !countryRE().MatchString(country) {
		country = ""
	}
	seen := make(map[string]bool, len(entries))
	for _, raw := range entries {
		r, ok := toReview(raw, appID, country)
		if !ok || seen[r.ID] {
			page.Skipped++
			continue
		}
		seen[r.ID] = true
		page.Reviews = append(page.Reviews, r)
	}
	return page, nil
}

// entryList returns the feed's entries: an array, a lone object, or none.
// At most MaxEntriesPerPage are kept.
func entryList(raw json.RawMessage) ([]rawEntry, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	switch raw[0] {
	case '{':
		var e rawEntry
		if err := json.Unmarshal(raw, &e); err != nil {
			return nil, fmt.Errorf("%w: entry: %v", ErrParse, err)
		}
		return []rawEntry{e}, nil
	case '[':
		var list []json.RawMessage
		if err := json.Unmarshal(raw, &list); err != nil {
			return nil, fmt.Errorf("%w: entry: %v", ErrParse, err)
		}
		list = list[:min(len(list), MaxEntriesPerPage)]
		out := make([]rawEntry, 0, len(list))
		for _, item := range list {
			var e rawEntry
			if json.Unmarshal(item, &e) != nil {
				e = rawEntry{} // not an object: counted as skipped
			}
			out = append(out, e)
		}
		return out, nil
	default:
		return nil, fmt.Errorf("%w: entry is neither an object nor an array", ErrParse)
	}
}

var pageParamRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`/page=(\d+)/`) })

// lastPage reads the page number of the rel=last link ("" hrefs on empty
// feeds give 0).
func lastPage(raw json.RawMessage) int {
	var links []linkAttrs
	if json.Unmarshal(raw, &links) != nil {
		var one linkAttrs
		if json.Unmarshal(raw, &one) != nil {
			return 0
		}
		links = []linkAttrs{one}
	}
	for _, l := range links {
		if l.Attributes.Rel != "last" {
			continue
		}
		if m := pageParamRE().FindStringSubmatch(l.Attributes.Href); m != nil {
			if n, err := strconv.Atoi(m[1]); err == nil {
				return min(n, MaxPages)
			}
		}
	}
	return 0
}

// toReview maps one entry; ok is false for anything that is not a review.
func toReview(e rawEntry, appID int64, country string) (Review, bool) {
	if e.Name != nil || e.Rating == nil || e.Author == nil {
		return Review{}, false // the app entry of older feeds, or junk
	}
	var id label
	if json.Unmarshal(e.ID, &id) != nil {
		return Review{}, false
	}
	rid := strings.TrimSpace(id.Label)
	if rid == "" || len(rid) > MaxFieldRunes || strings.IndexFunc(rid, notDigit) >= 0 {
		return Review{}, false
	}
	rating, err := strconv.Atoi(strings.TrimSpace(e.Rating.Label))
	if err != nil || rating < 1 || rating > 5 {
		return Review{}, false
	}
	body := e.Content.Label
	r := Review{
		ID:         rid,
		AppID:      appID,
		Country:    country,
		Rating:     rating,
		Title:      appstore.Truncate(strings.TrimSpace(e.Title.Label), MaxTitleRunes),
		Body:       appstore.Truncate(body, MaxBodyRunes),
		Truncated:  utf8.RuneCountInString(body) > MaxBodyRunes,
		Version:    appstore.Truncate(strings.TrimSpace(e.Version.Label), MaxFieldRunes),
		AuthorHash: AuthorHash(e.Author.URI.Label, e.Author.Name.Label),
	}
	if e.Updated != nil {
		if t, err := time.Parse(time.RFC3339, strings.TrimSpace(e.Updated.Label)); err == nil {
			r.Date = t.UTC()
		}
	}
	return r, true
}

func notDigit(r rune) bool { return r < '0' || r > '9' }

// authorHashSalt separates these hashes from any other sha256 of a name.
const authorHashSalt = "storecrawl/reviews/author/v1\x00"

// authorHashHexLen is the stored hash length: 64 bits tell the reviewers of
// one app apart with no practical collision, and are no use for lookup.
const authorHashHexLen = 16

// AuthorHash identifies a reviewer without storing who they are. The
// profile URI (…/reviews/id123) is stable across renames, so it is used
// when present (its query, "?l=en", is dropped); the name otherwise.
func AuthorHash(uri, name string) string {
	key := strings.TrimSpace(uri)
	if i := strings.IndexByte(key, '?'); i >= 0 {
		key = key[:i]
	}
	if key == "" {
		key = "name:" + strings.TrimSpace(name)
	}
	sum := sha256.Sum256([]byte(authorHashSalt + key))
	return hex.EncodeToString(sum[:])[:authorHashHexLen]
}
