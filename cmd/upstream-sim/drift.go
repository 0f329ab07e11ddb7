package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"storecrawl/internal/simserve"
)

// Catalogue drift: the App Store changes every day, so the
// simulator's catalogue can too. POST /__config with
// catalogue_changes_per_hour > 0 makes that many app changes every
// simulated hour (catalogue_hour_s real seconds, 3600 by default): each
// change adds ratings to one app (so its average moves, and its rank in
// charts and searches, which sort by rating count) and, one time in
// driftVersionEvery, bumps its version. Which apps change and by how much
// is drawn from catalogue_seed and the hour's index alone, so a run is
// deterministic given its seed and config timeline. GET /__catalogue
// shows the drift and, for ?id=..., the apps' current values (unlimited:
// the bench's ground truth).

// Drift bounds.
const (
	driftPrefix = "catalogue_"
	// maxChangesPerHour: a change costs a few hundred nanoseconds; a
	// million an hour is more churn than any test needs.
	maxChangesPerHour = 1_000_000
	// defaultHourS: real time by default; tests and the bench compress it.
	defaultHourS = 3600
	maxHourS     = 86400
	// driftMaxGrowthPct: one change adds 1 to this share of an app's
	// ratings (at least 1), so most changes move the count by over 1%.
	driftMaxGrowthPct = 5
	// driftVersionEvery: one change in this many is a new version.
	driftVersionEvery = 3
	// maxCatalogueIDs bounds GET /__catalogue?id=.
	maxCatalogueIDs = 1000
)

// DriftConfig is the catalogue-change part of /__config.
type DriftConfig struct {
	ChangesPerHour int `json:"catalogue_changes_per_hour"`
	HourS          int `json:"catalogue_hour_s"`
	Seed           int `json:"catalogue_seed"`
}

// driftField is a settable drift field with its bounds.
type driftField struct {
	name     string
	min, max int
	ptr      func(*DriftConfig) *int
}

var driftFields = []driftField{
	{"catalogue_changes_per_hour", 0, maxChangesPerHour, func(c *DriftConfig) *int { return &c.ChangesPerHour }},
	{"catalogue_hour_s", 1, maxHourS, func(c *DriftConfig) *int { return &c.HourS }},
	{"catalogue_seed", 0, 1<<31 - 1, func(c *DriftConfig) *int { return &c.Seed }},
}

// splitDriftPatch takes the catalogue_ fields out of a /__config body: the
// rest (for Config.Patch) and the drift fields to apply, validated. A body
// that is not a JSON object is left for Patch to refuse.
func splitDriftPatch(body []byte, cur DriftConfig) (rest []byte, next DriftConfig, changed bool, ferr *FieldError) {
	var raw map[string]json.RawMessage
	if json.Unmarshal(body, &raw) != nil || raw == nil {
		return body, cur, false, nil
	}
	next = cur
	for _, k := range slices.Sorted(maps.Keys(raw)) {
		if !strings.HasPrefix(k, driftPrefix) {
			continue
		}
		i := slices.IndexFunc(driftFields, func(f driftField) bool { return f.name == k })
		if i < 0 {
			return body, cur, false, &FieldError{Msg: "unknown field", Field: k}
		}
		var v *int
		if err := json.Unmarshal(raw[k], &v); err != nil || v == nil {
			return body, cur, false, &FieldError{Msg: "must be an integer", Field: k}
		}
		f := driftFields[i]
		if *v < f.min || *v > f.max {
			return body, cur, false, &FieldError{Msg: fmt.Sprintf("must be between %d and %d", f.min, f.max), Field: k}
		}
		*f.ptr(&next) = *v
		delete(raw, k)
		changed = true
	}
	rest, _ = json.Marshal(raw)
	return rest, next, changed, nil
}

// drifter is one server's changing view of its catalogue: the base apps
// plus every simulated hour's changes so far. Readers get a snapshot slice
// that is never written again (each catch-up copies), so handlers read it
// without a lock.
type drifter struct {
	base []App
	now  func() time.Time

	mu      sync.Mutex
	cfg     DriftConfig
	start   time.Time // when the current config's hour 0 began
	hours   int64     // hours applied under the current config
	total   int64     // hours applied in all: the next hour's index
	changes int64     // app changes applied in all
	apps    []App     // the current snapshot; nil until the first change
}

func newDrifter(base []App, now func() time.Time) *drifter {
	return &drifter{base: base, now: now, cfg: DriftConfig{HourS: defaultHourS}, start: now()}
}

// snapshot brings the catalogue up to now and returns it.
func (d *drifter) snapshot() []App {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.catchUpLocked(d.now())
	if d.apps == nil {
		return d.base
	}
	return d.apps
}

// catchUpLocked applies every whole simulated hour due by now.
func (d *drifter) catchUpLocked(now time.Time) {
	if d.cfg.ChangesPerHour <= 0 || len(d.base) == 0 {
		return
	}
	hourLen := time.Duration(d.cfg.HourS) * time.Second
	due := int64(now.Sub(d.start) / hourLen)
	if due <= d.hours {
		return
	}
	cur := d.apps
	if cur == nil {
		cur = d.base
	}
	next := slices.Clone(cur)
	for ; d.hours < due; d.hours++ {
		at := d.start.Add(time.Duration(d.hours+1) * hourLen)
		r := rand.New(rand.NewPCG(uint64(d.cfg.Seed), uint64(d.total)))
		for range d.cfg.ChangesPerHour {
			mutate(&next[r.IntN(len(next))], r, at)
		}
		d.changes += int64(d.cfg.ChangesPerHour)
		d.total++
	}
	d.apps = next
}

// set installs a new drift config: the old one's due hours are applied
// first, and the new one's hour 0 starts now.
func (d *drifter) set(cfg DriftConfig) {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.now()
	d.catchUpLocked(now)
	d.cfg, d.start, d.hours = cfg, now, 0
}

func (d *drifter) config() DriftConfig {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.cfg
}

// mutate is one change of one app at simulated time at: new ratings, in
// the stars the app already earns (so its average moves a little), and
// now and then a new version.
func mutate(a *App, r *rand.Rand, at time.Time) {
	inc := 1 + r.Int64N(max(1, a.RatingCount*driftMaxGrowthPct/100))
	var total int64
	for _, n := range a.Histogram {
		total += n + 1
	}
	x := r.Int64N(total)
	for b, n := range a.Histogram {
		if x < n+1 {
			a.Histogram[b] += inc
			break
		}
		x -= n + 1
	}
	a.RatingCount += inc
	a.AverageRating = average(a.Histogram, a.RatingCount)
	if r.IntN(driftVersionEvery) == 0 {
		a.Version = bumpPatch(a.Version)
		a.UpdatedDate = at.UTC().Truncate(time.Second).Format(time.RFC3339)
	}
}

// bumpPatch raises the last number of a dotted version ("2.3.9" → "2.3.10").
func bumpPatch(v string) string {
	i := strings.LastIndexByte(v, '.')
	n, err := strconv.Atoi(v[i+1:])
	if err != nil {
		return v + ".1"
	}
	return v[:i+1] + strconv.Itoa(n+1)
}

// catalogueState is the GET /__catalogue body.
type catalogueState struct {
	Config  DriftConfig             `json:"config"`
	Hours   int64                   `json:"hours"`   // simulated hours applied
	Changes int64                   `json:"changes"` // app changes applied
	Apps    []simserve.CatalogueApp `json:"apps,omitempty"`
}

// handleCatalogue serves GET /__catalogue[?id=<id>,...] (never limited).
func (s *Server) handleCatalogue(w http.ResponseWriter, r *http.Request) {
	var ids []int64
	if raw := r.URL.Query().Get("id"); raw != "" {
		for _, part := range strings.Split(raw, ",") {
			id, err := strconv.ParseInt(part, 10, 64)
			if err != nil || len(ids) >= maxCatalogueIDs {
				writeJSON(w, http.StatusBadRequest, FieldError{Msg: fmt.Sprintf("up to %d comma-separated ids", maxCatalogueIDs), Field: "id"})
				return
			}
			ids = append(ids, id)
		}
	}
	st := catalogueState{}
	for _, id := range ids {
		if a, ok := s.cat.Get(id); ok {
			st.Apps = append(st.Apps, simserve.CatalogueApp{ID: a.ID, RatingCount: a.RatingCount, AverageRating: a.AverageRating, Version: a.Version,
				Name: a.Name, Price: a.Price, GenreID: a.Genre.ID, Genre: a.Genre.Name, DeveloperID: a.DevID, DeveloperName: a.DevName,
				UpdatedDate: a.UpdatedDate, ReleaseNotes: releaseNotes(a.Version), DescriptionLen: len(a.Description)})
		}
	}
	d := s.cat.drift
	d.mu.Lock()
	st.Config, st.Hours, st.Changes = d.cfg, d.total, d.changes
	d.mu.Unlock()
	writeJSON(w, http.StatusOK, st)
}
