package main

import (
	"cmp"

	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"storecrawl/internal/upstreammodel"
	"strconv"
	"strings"
	"time"
)

// The iTunes RSS chart feed: GET /{cc}/rss/{collection}/limit={n}[/genre={id}]/json.
// Its answer imitates the real feed (worker/appstore/testdata/chart_*.json):
// every entry's fields wrapped in {"label": ...} / {"attributes": {...}}, a
// one-entry feed with entry as an object, an empty feed with no entry key.
const (
	rssDefaultLimit = 10
	rssMaxLimit     = 200
)

var rssTitles = map[string]string{
	chartTopFree:     "Top Free Applications",
	chartTopPaid:     "Top Paid Applications",
	chartTopGrossing: "Top Grossing Applications",
}

type rssLabel struct {
	Label string `json:"label"`
}

type rssLabelAttrs struct {
	Label      string            `json:"label,omitempty"`
	Attributes map[string]string `json:"attributes,omitempty"`
}

type rssEntry struct {
	Name        rssLabel        `json:"im:name"`
	Image       []rssLabelAttrs `json:"im:image"`
	Summary     rssLabel        `json:"summary"`
	Price       rssLabelAttrs   `json:"im:price"`
	ContentType rssLabelAttrs   `json:"im:contentType"`
	Rights      rssLabel        `json:"rights"`
	Title       rssLabel        `json:"title"`
	Link        rssLabelAttrs   `json:"link"`
	ID          rssLabelAttrs   `json:"id"`
	Artist      rssLabelAttrs   `json:"im:artist"`
	Category    rssLabelAttrs   `json:"category"`
	ReleaseDate rssLabelAttrs   `json:"im:releaseDate"`
}

type rssFeed struct {
	Author  map[string]rssLabel `json:"author"`
	Entry   any                 `json:"entry,omitempty"`
	Updated rssLabel            `json:"updated"`
	Rights  rssLabel            `json:"rights"`
	Title   rssLabel            `json:"title"`
	Icon    rssLabel            `json:"icon"`
	Link    []rssLabelAttrs     `json:"link"`
	ID      rssLabel            `json:"id"`
}

// parseRSSParams reads the feed's path parameters ("limit=50", "genre=6014",
// then the format "json"). ok is false for anything the real feed refuses.
func parseRSSParams(rest string) (limit, genre int, ok bool) {
	segs := strings.Split(strings.Trim(rest, "/"), "/")
	if len(segs) == 0 || segs[len(segs)-1] != "json" {
		return 0, 0, false
	}
	limit = rssDefaultLimit
	for _, seg := range segs[:len(segs)-1] {
		k, v, found := strings.Cut(seg, "=")
		n, err := strconv.Atoi(v)
		if !found || err != nil || n < 0 {
			return 0, 0, false
		}
		switch k {
		case "limit":
			limit = min(max(n, 1), rssMaxLimit)
		case "genre":
			genre = n
		default:
			return 0, 0, false
		}
	}
	return limit, genre, true
}

// GET /{country}/rss/{collection}/{params...}
func (s *Server) handleRSSChart(w http.ResponseWriter, r *http.Request) bool {
	collection, cc := r.PathValue("collection"), strings.ToLower(r.PathValue("country"))
	title, known := rssTitles[collection]
	limit, genre, ok := parseRSSParams(r.PathValue("params"))
	if !known || !ok || !countryRE.MatchString(cc) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(notFoundPage))
		return false
	}
	type scored struct{ id, score int64 }
	var list []scored
	if l := s.cat.living; l != nil {
		key := func(c upstreammodel.ChartApp) (int64, bool) { return chartKey(collection, c.Ratings, c.Paid, c.IAPs) }
		for _, off := range l.ix.Chart(l.now(), genre, limit, key) {
			list = append(list, scored{id: baseTrackID + off})
		}
	}
	s.cat.Each(func(a *App) {
		if score, in := chartScore(collection, a); in && (genre == 0 || inGenre(a, genre)) {
			list = append(list, scored{a.ID, score})
		}
	})
	slices.SortFunc(list, func(x, y scored) int {
		return cmp.Or(cmp.Compare(y.score, x.score), cmp.Compare(x.id, y.id))
	})
	entries := make([]rssEntry, 0, min(len(list), limit))
	for _, x := range list[:min(len(list), limit)] {
		if a, ok := s.cat.Get(x.id); ok {
			entries = append(entries, s.rssEntry(r, cc, a))
		}
	}
	self := fmt.Sprintf("http://%s/%s/rss/%s/limit=%d", r.Host, cc, collection, limit)
	if genre > 0 {
		self += "/genre=" + strconv.Itoa(genre)
	}
	feed := rssFeed{
		Author:  map[string]rssLabel{"name": {"iTunes Store"}, "uri": {"http://www.apple.com/itunes/"}},
		Updated: rssLabel{s.now().UTC().Format("2006-01-02T15:04:05-07:00")},
		Rights:  rssLabel{"Copyright 2008 Apple Inc."},
		Title:   rssLabel{"iTunes Store: " + title},
		Icon:    rssLabel{"http://itunes.apple.com/favicon.ico"},
		Link: []rssLabelAttrs{
			{Attributes: map[string]string{"rel": "alternate", "type": "text/html", "href": fmt.Sprintf("http://%s/WebObjects/MZStore.woa/wa/viewTop?cc=%s&id=1&popId=27", r.Host, cc)}},
			{Attributes: map[string]string{"rel": "self", "href": self + "/json"}},
		},
		ID: rssLabel{self + "/json"},
	}
	switch len(entries) {
	case 0: // no entry key at all
	case 1:
		feed.Entry = entries[0]
	default:
		feed.Entry = entries
	}
	w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
	_ = json.NewEncoder(w).Encode(map[string]rssFeed{"feed": feed})
	return false
}

func (s *Server) rssEntry(r *http.Request, cc string, a *App) rssEntry {
	u := appURL(r, cc, a) + "?uo=2"
	price := rssLabelAttrs{Label: "Get", Attributes: map[string]string{"amount": "0.00", "currency": "USD"}}
	if a.Price > 0 {
		price = rssLabelAttrs{Label: formattedPrice(a.Price), Attributes: map[string]string{"amount": strconv.FormatFloat(a.Price, 'f', 2, 64), "currency": "USD"}}
	}
	var images []rssLabelAttrs
	for _, px := range []int{53, 75, 100} {
		images = append(images, rssLabelAttrs{Label: fmt.Sprintf("http://%s/artwork/%d/%dx%dbb.png", r.Host, a.ID, px, px), Attributes: map[string]string{"height": strconv.Itoa(px)}})
	}
	released, _ := time.Parse(time.RFC3339, a.ReleaseDate)
	return rssEntry{
		Name:        rssLabel{a.Name},
		Image:       images,
		Summary:     rssLabel{a.Description},
		Price:       price,
		ContentType: rssLabelAttrs{Attributes: map[string]string{"term": "Application", "label": "Application"}},
		Rights:      rssLabel{"© " + a.DevName},
		Title:       rssLabel{a.Name + " - " + a.DevName},
		Link:        rssLabelAttrs{Attributes: map[string]string{"rel": "alternate", "type": "text/html", "href": u}},
		ID:          rssLabelAttrs{Label: u, Attributes: map[string]string{"im:id": strconv.FormatInt(a.ID, 10), "im:bundleId": a.BundleID}},
		Artist:      rssLabelAttrs{Label: a.DevName, Attributes: map[string]string{"href": fmt.Sprintf("http://%s/%s/developer/id%d?uo=2", r.Host, cc, a.DevID)}},
		Category: rssLabelAttrs{Attributes: map[string]string{"im:id": strconv.Itoa(a.Genre.ID), "term": a.Genre.Name,
			"scheme": fmt.Sprintf("http://%s/%s/genre/id%d?uo=2", r.Host, cc, a.Genre.ID), "label": a.Genre.Name}},
		ReleaseDate: rssLabelAttrs{Label: a.ReleaseDate, Attributes: map[string]string{"label": released.Format("January 2, 2006")}},
	}
}

// chartScore returns an app's sort key in a collection and whether it
// belongs there at all. Top grossing excludes apps that cannot earn
// (free and no IAPs).
func chartScore(collection string, a *App) (int64, bool) {
	return chartKey(collection, a.RatingCount, a.Price > 0, len(a.IAPs))
}

func chartKey(collection string, ratings int64, paid bool, iaps int) (int64, bool) {
	switch collection {
	case chartTopFree:
		return ratings, !paid
	case chartTopPaid:
		return ratings, paid
	default: // chartTopGrossing
		return ratings * int64(1+iaps), paid || iaps > 0
	}
}
