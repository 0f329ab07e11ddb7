package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"storecrawl/internal/upstreammodel"
)

// The living catalogue (-living): apps come from an upstreammodel.World,
// so at the simulator's virtual time they have gained ratings, shipped
// versions, changed price, appeared or been removed, and search finds
// them by what their text says (upstreammodel.Index). Each app's generated
// App (catalogue.go) supplies what the world leaves alone (content rating,
// size, languages, similar apps, the rating histogram's shape); the world
// overlays everything that lives.

// defaultEpoch is the world's time zero: the static catalogue's latest
// update, so a living app at the epoch is as recent as a static one.
var defaultEpoch = latestUpdate

// living is a catalogue's world and its index.
type living struct {
	w   *upstreammodel.World
	ix  *upstreammodel.Index
	now func() time.Time
}

// NewLivingCatalogue is the living catalogue of n apps at epoch.
func NewLivingCatalogue(n int, seed uint64, epoch time.Time, rates upstreammodel.Rates) *Catalogue {
	w := upstreammodel.NewWorld(seed, n, epoch, rates)
	return &Catalogue{living: &living{w: w, ix: upstreammodel.NewIndex(w), now: func() time.Time { return epoch }}}
}

// get is app off as it is at t, if it is in the store then.
func (l *living) get(off int64, t time.Time) (*App, bool) {
	w := l.w
	if off < 1 || off > w.Total(t) {
		return nil, false
	}
	s := w.Static(off)
	if !w.Exists(&s, t) {
		return nil, false
	}
	a := generate(off, w.Base, w.Devs, w.Seed)
	txt := w.TextOf(&s)
	st := w.At(&s, t)
	a.Name, a.Subtitle, a.Description = txt.Title, txt.Subtitle, txt.Description
	a.Slug = slugify(a.Name)
	primary, sub := w.GenreOf(&s)
	a.Genre, a.SubGenre = Genre(primary), Genre(sub)
	a.DevID, a.DevName = baseDeveloperID+int64(s.Dev)+1, developerName(s.Dev)
	a.BundleID = fmt.Sprintf("com.%s.%s%d", strings.ReplaceAll(slugify(devNames[s.Dev%len(devNames)]), "-", ""),
		strings.ReplaceAll(a.Slug, "-", ""), off)
	a.Histogram = scaleHistogram(a.Histogram, st.Ratings)
	a.RatingCount = st.Ratings
	a.AverageRating = average(a.Histogram, a.RatingCount)
	a.Version = st.Version
	a.ReleaseDate = s.Appear.UTC().Format(time.RFC3339)
	a.UpdatedDate = st.Updated.UTC().Format(time.RFC3339)
	a.Price = st.Price
	a.IAPs = a.IAPs[:0]
	for i := range s.IAPs {
		a.IAPs = append(a.IAPs, IAP{Name: iapNames[(int(off)+i)%len(iapNames)], Price: iapPriceTiers[(int(off)+3*i)%len(iapPriceTiers)]})
	}
	return &a, true
}

// scaleHistogram spreads total over h's shares (5 stars first); an empty
// h gets a typical shape. The counts sum to total.
func scaleHistogram(h [histogramStars]int64, total int64) [histogramStars]int64 {
	var sum int64
	for _, c := range h {
		sum += c
	}
	if sum == 0 {
		h, sum = [histogramStars]int64{60, 20, 8, 4, 8}, 100
	}
	var out [histogramStars]int64
	rest := total
	for i := 1; i < histogramStars; i++ {
		out[i] = h[i] * total / sum
		rest -= out[i]
	}
	out[0] = rest
	return out
}

// --- the virtual clock -------------------------------------------------

// simClock is the simulator's time: a base clock (the wall clock, or a
// test's) plus an offset that only grows. Everything the simulator decides
// by time reads it: the living catalogue, drift, the limiter's buckets.
type simClock struct {
	base func() time.Time
	mu   sync.Mutex
	off  time.Duration
}

func (c *simClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.base().Add(c.off)
}

// advance moves the clock forward by d (d ≥ 0).
func (c *simClock) advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.off += d
	return c.base().Add(c.off)
}

// maxClockAdvance bounds one POST /__sim/clock: ten years.
const maxClockAdvance = 10 * 365 * 24 * time.Hour

// clockBody is the /__sim/clock request and answer.
type clockBody struct {
	Now      string  `json:"now"`
	AdvanceS *int64  `json:"advance_s,omitempty"`
	OffsetS  float64 `json:"offset_s"`
	// Epoch is the living world's time zero (absent without -living).
	Epoch string `json:"epoch,omitempty"`
}

// GET /__sim/clock: the virtual time. POST /__sim/clock {"advance_s": N}
// or {"now": RFC3339}: moves it forward (never back: buckets, drift and
// the world run forward only). Never limited.
func (s *Server) handleClock(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost {
		var req struct {
			Now      *string `json:"now"`
			AdvanceS *int64  `json:"advance_s"`
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxConfigBody))
		if err != nil || json.Unmarshal(body, &req) != nil || (req.Now == nil) == (req.AdvanceS == nil) {
			writeJSON(w, http.StatusBadRequest, FieldError{Msg: `body must be {"advance_s": seconds} or {"now": RFC3339}`, Field: "advance_s"})
			return
		}
		var d time.Duration
		if req.AdvanceS != nil {
			d = time.Duration(*req.AdvanceS) * time.Second
			if *req.AdvanceS < 0 || d > maxClockAdvance {
				writeJSON(w, http.StatusBadRequest, FieldError{Msg: fmt.Sprintf("must be between 0 and %d", int64(maxClockAdvance/time.Second)), Field: "advance_s"})
				return
			}
		} else {
			to, err := time.Parse(time.RFC3339, *req.Now)
			d = to.Sub(s.clock.Now())
			if err != nil || d < 0 || d > maxClockAdvance {
				writeJSON(w, http.StatusBadRequest, FieldError{Msg: "must be an RFC 3339 time, not before the current one, at most ten years ahead", Field: "now"})
				return
			}
		}
		now := s.clock.advance(d)
		s.log.Info("clock_advanced", "by_s", d.Seconds(), "now", now.UTC().Format(time.RFC3339))
	}
	now := s.clock.Now()
	out := clockBody{Now: now.UTC().Format(time.RFC3339Nano), OffsetS: now.Sub(s.clock.base()).Seconds()}
	if l := s.cat.living; l != nil {
		out.Epoch = l.w.Epoch.UTC().Format(time.RFC3339)
	}
	writeJSON(w, http.StatusOK, out)
}

// --- developer lookups ---------------------------------------------------

// artistResult is a lookup's developer wrapper, first in a developer
// lookup's answer, as the real API answers lookup?id=ARTIST&entity=software.
type artistResult struct {
	WrapperType   string `json:"wrapperType"`
	ArtistType    string `json:"artistType"`
	ArtistName    string `json:"artistName"`
	ArtistLinkURL string `json:"artistLinkUrl"`
	ArtistID      int64  `json:"artistId"`
}

// Developer lookups' list sizes: the Search API's lookup with an entity
// answers 50 by default, up to 200 with limit.
const (
	defaultDeveloperApps = 50
	maxDeveloperApps     = 200
)

// isDeveloperID reports whether id is one of the catalogue's developers.
func (c *Catalogue) isDeveloperID(id int64) bool {
	return id > baseDeveloperID && id <= baseDeveloperID+int64(c.numDevs())
}

func (c *Catalogue) numDevs() int {
	switch {
	case c.living != nil:
		return c.living.w.Devs
	case c.lazy != nil:
		return c.lazy.numDevs
	}
	return max(1, len(c.apps)/appsPerDeveloper)
}

// developerName of a developer id.
func developerNameOf(id int64) string { return developerName(int(id - baseDeveloperID - 1)) }

func artistOf(r *http.Request, country string, id int64) artistResult {
	return artistResult{WrapperType: "artist", ArtistType: "Software Artist", ArtistName: developerNameOf(id),
		ArtistLinkURL: fmt.Sprintf("http://%s/%s/developer/id%d?uo=4", r.Host, country, id), ArtistID: id}
}

// lookupEntry is one lookup result: an app, or a developer's wrapper.
type lookupEntry any

// developerResults are a developer lookup's results: the wrapper, then,
// with entity=software, up to limit of its apps in the store now.
func (s *Server) developerResults(r *http.Request, country string, id int64, withApps bool, limit int) []lookupEntry {
	out := []lookupEntry{artistOf(r, country, id)}
	if !withApps {
		return out
	}
	for _, appID := range s.cat.ByDeveloper(id) {
		if len(out) > limit {
			break
		}
		if a, ok := s.cat.Get(appID); ok {
			out = append(out, toLookup(r, country, a))
		}
	}
	return out
}

func parseDeveloperLimit(raw string) (int, bool) {
	if raw == "" {
		return defaultDeveloperApps, true
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < 1 {
		return 0, false
	}
	return min(n, maxDeveloperApps), true
}
