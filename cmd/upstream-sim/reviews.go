package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The customer-reviews feed:
//
//	GET /{cc}/rss/customerreviews/page={n}/id={id}/sortby=mostrecent/json
//
// Its answer follows the real captures in worker/reviews/testdata (2025
// shape): feed{author, entry, updated, rights, title, icon, link, id}; each
// entry {author{uri,name,label}, updated, im:rating, im:version, id, title,
// content{label,attributes}, link, im:voteSum, im:contentType, im:voteCount},
// every scalar wrapped in {"label": ...}; 50 entries a page, most recent
// first; rel=first/last/previous/next links (last = the last page); an app
// without reviews (or a page past the last) has no entry key and empty link
// hrefs; page 11 and beyond answer Apple's plain text
// "CustomerReviews RSS page depth is limited to 10" (captured as a body; its
// status is not in the capture, 200 is assumed). A one-review page has entry
// as a bare object, as Apple's other RSS feeds do.
const (
	routeReviews = "reviews"
	// reviewsPerPage and reviewsMaxPages are Apple's.
	reviewsPerPage  = 50
	reviewsMaxPages = 10
	// ratingsPerReview: roughly one rating in this many comes with a
	// written review, so big apps fill all 10 pages and small ones few.
	ratingsPerReview = 20
	// reviewSpacing is the time between an app's consecutive reviews.
	reviewSpacing = 5 * time.Hour
	// baseReviewID keeps review ids in the real id range (10-11 digits).
	baseReviewID = 10_000_000_000
	// weaknessesPerApp: each app has a few recurring complaints.
	weaknessesPerApp = 3
	depthLimitText   = "CustomerReviews RSS page depth is limited to 10"
)

// weaknesses are the complaint sentences an app's unhappy reviews repeat;
// complaints name a few of them, so theme grouping has something to find.
var weaknesses = []string{
	"It crashes every time I open it since the last update.",
	"There are ads every few seconds, even after paying.",
	"The subscription is way too expensive for what it does.",
	"Sync between my iPhone and iPad never works.",
	"I can't log in anymore, the password reset email never arrives.",
	"Notifications stopped arriving altogether.",
	"It drains my battery in a couple of hours.",
	"The app freezes on the loading screen.",
	"My saved data was lost after the update.",
	"Customer support never answers.",
}

var praises = []string{
	"Love it, does exactly what I need.", "Simple, fast and reliable.", "Best app of its kind, highly recommend.",
	"Beautiful design and easy to use.", "Use it every day, great work by the developers.",
}

var reviewTitles = map[int][]string{
	1: {"Useless", "Terrible", "Do not buy", "Broken"},
	2: {"Disappointed", "Needs work", "Going downhill"},
	3: {"Okay", "Could be better", "Mixed feelings"},
	4: {"Pretty good", "Nice app", "Almost perfect"},
	5: {"Love it", "Great app", "Perfect", "Five stars"},
}

type rvLabel struct {
	Label string `json:"label"`
}

type rvAuthor struct {
	URI   rvLabel `json:"uri"`
	Name  rvLabel `json:"name"`
	Label string  `json:"label"`
}

type rvContent struct {
	Label      string            `json:"label"`
	Attributes map[string]string `json:"attributes"`
}

// The real feed's attribute objects keep their keys in this order.
type rvLinkAttrs struct {
	Rel  string `json:"rel"`
	Type string `json:"type,omitempty"`
	Href string `json:"href"`
}

type rvLink struct {
	Attributes rvLinkAttrs `json:"attributes"`
}

type rvTypeAttrs struct {
	Attributes struct {
		Term  string `json:"term"`
		Label string `json:"label"`
	} `json:"attributes"`
}

// rvFeedAuthor is the feed's own author: name before uri, unlike entries'.
type rvFeedAuthor struct {
	Name rvLabel `json:"name"`
	URI  rvLabel `json:"uri"`
}

type rvEntry struct {
	Author      rvAuthor    `json:"author"`
	Updated     rvLabel     `json:"updated"`
	Rating      rvLabel     `json:"im:rating"`
	Version     rvLabel     `json:"im:version"`
	ID          rvLabel     `json:"id"`
	Title       rvLabel     `json:"title"`
	Content     rvContent   `json:"content"`
	Link        rvLink      `json:"link"`
	VoteSum     rvLabel     `json:"im:voteSum"`
	ContentType rvTypeAttrs `json:"im:contentType"`
	VoteCount   rvLabel     `json:"im:voteCount"`
}

type rvFeed struct {
	Author  rvFeedAuthor `json:"author"`
	Entry   any          `json:"entry,omitempty"`
	Updated rvLabel      `json:"updated"`
	Rights  rvLabel      `json:"rights"`
	Title   rvLabel      `json:"title"`
	Icon    rvLabel      `json:"icon"`
	Link    []rvLink     `json:"link"`
	ID      rvLabel      `json:"id"`
}

// parseReviewParams reads "page=N/id=ID/sortby=mostrecent/json" (page and
// sortby optional, in Apple's order or not).
func parseReviewParams(rest string) (page int, id int64, ok bool) {
	segs := strings.Split(strings.Trim(rest, "/"), "/")
	if len(segs) == 0 || segs[len(segs)-1] != "json" {
		return 0, 0, false
	}
	page = 1
	for _, seg := range segs[:len(segs)-1] {
		k, v, found := strings.Cut(seg, "=")
		if !found {
			return 0, 0, false
		}
		switch strings.ToLower(k) {
		case "page":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return 0, 0, false
			}
			page = n
		case "id":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 1 {
				return 0, 0, false
			}
			id = n
		case "sortby":
			if !strings.EqualFold(v, "mostrecent") && !strings.EqualFold(v, "mosthelpful") {
				return 0, 0, false
			}
		default:
			return 0, 0, false
		}
	}
	return page, id, id > 0
}

// reviewCount is how many reviews the feed serves for an app.
func reviewCount(a *App) int {
	return int(min(a.RatingCount/ratingsPerReview, reviewsPerPage*reviewsMaxPages))
}

// reviewsRoute is the limited reviews handler. Its stats entry is made on
// first use (and after a stats reset), so the route needs no change to the
// server's route list.
func (s *Server) reviewsRoute() http.HandlerFunc {
	h := s.limited(routeReviews, s.handleReviews)
	return func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		if s.byRoute[routeReviews] == nil {
			s.byRoute[routeReviews] = &RouteStats{}
		}
		s.mu.Unlock()
		h(w, r)
	}
}

// GET /{country}/rss/customerreviews/{params...}
func (s *Server) handleReviews(w http.ResponseWriter, r *http.Request) bool {
	cc := strings.ToLower(r.PathValue("country"))
	page, id, ok := parseReviewParams(r.PathValue("params"))
	if !ok || !countryRE.MatchString(cc) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(notFoundPage))
		return false
	}
	if page > reviewsMaxPages {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte(depthLimitText))
		return false
	}
	a, known := s.cat.Get(id)
	n := 0
	if known {
		n = reviewCount(a)
	}
	last := (n + reviewsPerPage - 1) / reviewsPerPage
	base := fmt.Sprintf("http://%s/%s/rss/customerreviews", r.Host, cc)
	pageURL := func(p int, format string) string {
		return fmt.Sprintf("%s/page=%d/id=%d/sortby=mostrecent/%s", base, p, id, format)
	}
	feed := rvFeed{
		Author:  rvFeedAuthor{Name: rvLabel{"iTunes Store"}, URI: rvLabel{"http://www.apple.com/itunes/"}},
		Updated: rvLabel{latestUpdate.Format("2006-01-02T15:04:05-07:00")},
		Rights:  rvLabel{"Copyright 2008 Apple Inc."},
		Title:   rvLabel{"iTunes Store: Customer Reviews"},
		Icon:    rvLabel{"http://itunes.apple.com/favicon.ico"},
		ID:      rvLabel{pageURL(page, "json")},
	}
	link := func(rel, href string) rvLink { return rvLink{rvLinkAttrs{Rel: rel, Href: href}} }
	feed.Link = []rvLink{
		{rvLinkAttrs{Rel: "alternate", Type: "text/html", Href: fmt.Sprintf("http://%s/WebObjects/MZStore.woa/wa/viewGrouping?cc=%s&id=1", r.Host, cc)}},
		link("self", pageURL(page, "json")),
	}
	var entries []rvEntry
	if page <= last {
		feed.Link = append(feed.Link, link("first", pageURL(1, "xml")), link("last", pageURL(last, "xml")),
			link("previous", pageURL(max(1, page-1), "xml")), link("next", pageURL(min(last, page+1), "xml")))
		for i := (page - 1) * reviewsPerPage; i < min(n, page*reviewsPerPage); i++ {
			entries = append(entries, s.reviewEntry(r, cc, a, i))
		}
	} else {
		feed.Link = append(feed.Link, link("first", ""), link("last", ""), link("previous", ""), link("next", ""))
	}
	switch len(entries) {
	case 0: // no entry key at all
	case 1:
		feed.Entry = entries[0]
	default:
		feed.Entry = entries
	}
	w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
	_ = json.NewEncoder(w).Encode(map[string]rvFeed{"feed": feed})
	return !known
}

// reviewEntry is app a's i-th most recent review, a pure function of (app,
// i): the same on every call and storefront.
func (s *Server) reviewEntry(r *http.Request, cc string, a *App, i int) rvEntry {
	rng := rand.New(rand.NewPCG(uint64(a.ID), uint64(i)+1))
	appRng := rand.New(rand.NewPCG(uint64(a.ID), 0))
	mine := make([]string, 0, weaknessesPerApp)
	for _, k := range appRng.Perm(len(weaknesses))[:weaknessesPerApp] {
		mine = append(mine, weaknesses[k])
	}
	stars := drawStars(rng, a)
	var body string
	switch {
	case stars <= 2:
		body = mine[rng.IntN(len(mine))]
		if rng.IntN(2) == 0 {
			body += " " + mine[rng.IntN(len(mine))]
		}
	case stars == 3:
		w := mine[rng.IntN(len(mine))]
		body = "Decent app, but " + strings.ToLower(w[:1]) + w[1:]
	default:
		body = pick(rng, praises)
	}
	reviewer := 100_000_000 + rng.Int64N(1_000_000_000)
	date := latestUpdate.Add(-time.Duration(i+1) * reviewSpacing)
	ct := rvTypeAttrs{}
	ct.Attributes.Term, ct.Attributes.Label = "Application", "Application"
	return rvEntry{
		Author: rvAuthor{
			URI:  rvLabel{fmt.Sprintf("http://%s/%s/reviews/id%d", r.Host, cc, reviewer)},
			Name: rvLabel{fmt.Sprintf("%s%d", pick(rng, []string{"happyuser", "appfan", "jd", "reviewer", "mk"}), rng.IntN(10000))},
		},
		Updated:     rvLabel{date.In(pacific).Format("2006-01-02T15:04:05-07:00")},
		Rating:      rvLabel{strconv.Itoa(stars)},
		Version:     rvLabel{a.Version},
		ID:          rvLabel{strconv.FormatInt(baseReviewID+a.ID%1_000_000*1000+int64(i), 10)},
		Title:       rvLabel{pick(rng, reviewTitles[stars])},
		Content:     rvContent{Label: body, Attributes: map[string]string{"type": "text"}},
		Link:        rvLink{rvLinkAttrs{Rel: "related", Href: fmt.Sprintf("http://%s/%s/review?id=%d&type=Purple%%20Software", r.Host, cc, a.ID)}},
		VoteSum:     rvLabel{"0"},
		ContentType: ct,
		VoteCount:   rvLabel{"0"},
	}
}

// pacific is Apple's feed time zone (the captures show -07:00/-08:00); a
// fixed offset keeps the simulator free of tzdata.
var pacific = time.FixedZone("PDT", -7*3600)

// drawStars draws a rating from the app's histogram (index 0 = 5 stars).
func drawStars(rng *rand.Rand, a *App) int {
	var total int64
	for _, c := range a.Histogram {
		total += c
	}
	if total <= 0 {
		return 1 + rng.IntN(5)
	}
	x := rng.Int64N(total)
	for k, c := range a.Histogram {
		if x < c {
			return histogramStars - k
		}
		x -= c
	}
	return 1
}
