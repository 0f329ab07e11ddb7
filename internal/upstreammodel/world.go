package upstreammodel

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// The living catalogue: a world of apps whose state at any virtual time is
// a pure function of (seed, app, time). Nothing is stored per app beyond
// what an index chooses to cache: an app's niche, text, popularity, its
// versions, prices, appearance and removal all come from the app's own
// PCG streams, so any app's state at any time is computed on demand.
//
// Apps are numbered by offset: 1..Base exist at Epoch; Base+1, Base+2, ...
// appear after it, NewAppsPerDay apart, and any app may be removed. Each
// rate is in Rates, with its source in docs/scale.md ("The living
// simulator").

// Rates are the world's rates of change.
type Rates struct {
	// NewPerDayPerMillion: new apps a day per million apps at Epoch.
	NewPerDayPerMillion float64
	// RemovalsPerDayPerMillion: the daily hazard of removal, per million
	// live apps.
	RemovalsPerDayPerMillion float64
	// VersionDaysPopular and VersionDaysQuiet are the mean days between
	// versions of an app with at least PopularRatings ratings and of an
	// app with none; between them the mean is interpolated on log ratings.
	VersionDaysPopular float64
	VersionDaysQuiet   float64
	// RatingGrowth scales an app's lifetime average of ratings a day: 1
	// keeps it gaining ratings at the pace it has gained them so far.
	RatingGrowth float64
	// PriceChangesPerYear is a paid app's mean price changes a year (free
	// apps stay free).
	PriceChangesPerYear float64
}

// PopularRatings is the rating count from which an app ships at
// VersionDaysPopular (the captures' popular apps all have more).
const PopularRatings = 1000

// DefaultRates are the measured or assumed rates (docs/scale.md).
func DefaultRates() Rates {
	return Rates{
		NewPerDayPerMillion:      1000,
		RemovalsPerDayPerMillion: 500,
		VersionDaysPopular:       16,
		VersionDaysQuiet:         504,
		RatingGrowth:             1,
		PriceChangesPerYear:      1,
	}
}

// Scaled is r with every rate multiplied by f (intervals divided by it),
// for the bench's ½× and 2× runs.
func (r Rates) Scaled(f float64) Rates {
	return Rates{
		NewPerDayPerMillion:      r.NewPerDayPerMillion * f,
		RemovalsPerDayPerMillion: r.RemovalsPerDayPerMillion * f,
		VersionDaysPopular:       r.VersionDaysPopular / f,
		VersionDaysQuiet:         r.VersionDaysQuiet / f,
		RatingGrowth:             r.RatingGrowth * f,
		PriceChangesPerYear:      r.PriceChangesPerYear * f,
	}
}

// Generation bounds of the world's apps.
const (
	// DefaultNiches is the design's count of market segments at 1.1M apps
	// (seed 004: "clustered them into 450 market segments").
	DefaultNiches = 450
	// appsPerNiche sizes smaller worlds: one niche per this many apps.
	appsPerNiche = 100
	minNiches    = 8
	// AppsPerDeveloper: developers are a quarter of the apps.
	AppsPerDeveloper = 4
	noRatingsOneIn   = 10   // 10% of apps have no ratings
	maxLogRatings    = 13.0 // e^13 ≈ 442k ratings for the biggest apps
	// releaseSpanDays: apps at Epoch were released within this many days.
	releaseSpanDays = 14 * 365
	// potentialDays: a new app gains its drawn rating count over this
	// many days, the mean age of the apps at Epoch.
	potentialDays = releaseSpanDays / 2
	minAgeDays    = 30 // a base app's age, for its rate, is at least this
	freePercent   = 85
	maxIAPs       = 5
	maxIAPsPaid   = 2
	gamesPercent  = 25 // a quarter of niches are games, as on the store
	titleFacetPct = 70 // titles name the niche's facet, else a detail
	subtitleWords = 2
	descWords     = 4
	vocabDetails  = 6
	// VocabSize is a niche's vocabulary: subject, facet, details.
	VocabSize = 2 + vocabDetails
	day       = 24 * time.Hour
	// nicheSkew: a niche is drawn as K·u^nicheSkew, so niche sizes are
	// skewed (at 450 niches the largest holds 1.7% of the apps, the
	// smallest 0.15%), and so are the details niches share.
	nicheSkew = 1.5
)

// PriceTiers are the paid prices apps are sold at.
var PriceTiers = []float64{0.99, 1.99, 2.99, 4.99, 9.99}

// RNG streams of the world (the PCG's first word is seed^stream).
const (
	staticStream  = 0x11fe_0001
	versionStream = 0x11fe_0002
	priceStream   = 0x11fe_0003
	nicheStream   = 0x11fe_0004
)

// Niche is a hidden market segment: its genre and its vocabulary
// (subject, facet, then details).
type Niche struct {
	Genre    Genre // the primary genre; a game's subgenre in SubGenre
	SubGenre Genre
	Vocab    [VocabSize]string
}

// World is a living catalogue. Build it with NewWorld; it is immutable.
type World struct {
	Seed  uint64
	Base  int       // apps at Epoch
	Epoch time.Time // the world's time zero
	Rates Rates
	Devs  int
	// Niches are the hidden segments, by index.
	Niches []Niche
}

// NichesFor is the niche count of a world of n apps: one per
// appsPerNiche apps, between minNiches and DefaultNiches.
func NichesFor(n int) int { return min(DefaultNiches, max(minNiches, n/appsPerNiche)) }

// NewWorld is the world of base apps at epoch, drawn from seed.
func NewWorld(seed uint64, base int, epoch time.Time, rates Rates) *World {
	w := &World{Seed: seed, Base: base, Epoch: epoch, Rates: rates, Devs: max(1, base/AppsPerDeveloper)}
	w.Niches = makeNiches(seed, NichesFor(base))
	return w
}

// makeNiches draws k niches: each a distinct (subject, facet) pair, games
// about a quarter of them, details biased towards the head of the list.
func makeNiches(seed uint64, k int) []Niche {
	r := rand.New(rand.NewPCG(seed^nicheStream, 0))
	type subj struct {
		word  string
		genre int
	}
	var apps, games []subj
	for _, g := range Genres {
		for _, s := range subjectsByGenre[g.ID] {
			if IsGameGenre(g.ID) {
				games = append(games, subj{s, g.ID})
			} else {
				apps = append(apps, subj{s, g.ID})
			}
		}
	}
	r.Shuffle(len(apps), func(i, j int) { apps[i], apps[j] = apps[j], apps[i] })
	r.Shuffle(len(games), func(i, j int) { games[i], games[j] = games[j], games[i] })
	used := map[string]bool{}
	out := make([]Niche, 0, k)
	var ai, gi int
	for len(out) < k {
		pool, facets, details, idx := apps, appFacets, appDetails, &ai
		if k := len(out); (k+1)*gamesPercent/100 != k*gamesPercent/100 {
			pool, facets, details, idx = games, gameFacets, gameDetails, &gi
		}
		s := pool[*idx%len(pool)]
		round := *idx / len(pool)
		*idx++
		// Each round of a subject takes the next facet after a per-subject
		// start, so pairs never repeat within len(facets) rounds.
		f := facets[(int(hashString(s.word))+round)%len(facets)]
		if used[s.word+" "+f] {
			continue
		}
		used[s.word+" "+f] = true
		n := Niche{Genre: GenreByID[s.genre]}
		if IsGameGenre(s.genre) {
			n.Genre, n.SubGenre = GenreByID[GamesGenreID], GenreByID[s.genre]
		}
		n.Vocab[0], n.Vocab[1] = s.word, f
		picked := map[string]bool{}
		for i := 2; i < VocabSize; {
			u := r.Float64()
			d := details[int(math.Pow(u, nicheSkew)*float64(len(details)))]
			if !picked[d] {
				picked[d] = true
				n.Vocab[i] = d
				i++
			}
		}
		out = append(out, n)
	}
	return out
}

func hashString(s string) uint32 {
	h := uint32(2166136261)
	for i := range len(s) {
		h = (h ^ uint32(s[i])) * 16777619
	}
	return h
}

// Static is what never changes of an app: drawn once from its stream.
type Static struct {
	Off    int64
	Niche  int
	Dev    int // developer index, 0..Devs-1
	Brand  int
	Masks  Masks
	Appear time.Time // Released: before Epoch for base apps
	// Ratings is the count at Epoch (base apps) or the count a new app
	// gains over potentialDays; Rate is ratings a day after Epoch.
	Ratings int64
	Rate    float64
	v       [3]int // the version at Epoch or at appearance (patch -1: "1.0")
	Updated time.Time
	Price   float64   // at Epoch or at appearance
	IAPs    int       // in-app purchases on sale
	Removed time.Time // zero: never
	// VersionDays is the app's mean days between versions.
	VersionDays float64
}

// Version is the app's version at Epoch or at its appearance.
func (s *Static) Version() string {
	if s.v[2] < 0 {
		return fmt.Sprintf("%d.%d", s.v[0], s.v[1])
	}
	return fmt.Sprintf("%d.%d.%d", s.v[0], s.v[1], s.v[2])
}

// Masks are which of the niche's words (bit i: Vocab[i]) each text field
// holds.
type Masks struct{ Title, Subtitle, Description uint8 }

// Total is how many app offsets exist or existed by t.
func (w *World) Total(t time.Time) int64 {
	return int64(w.Base) + w.newBy(t)
}

// NewPerDay is the world's new apps a day.
func (w *World) NewPerDay() float64 {
	return w.Rates.NewPerDayPerMillion * float64(w.Base) / 1e6
}

// newBy is how many new apps have appeared by t: the k-th appears at
// appearSecs(k) after Epoch.
func (w *World) newBy(t time.Time) int64 {
	per := w.NewPerDay()
	if per <= 0 || !t.After(w.Epoch) {
		return 0
	}
	secs := int64(t.Sub(w.Epoch) / time.Second)
	k := int64(float64(secs) * per / day.Seconds())
	for w.appearSecs(k+1) <= secs { // float rounding, either way
		k++
	}
	for k > 0 && w.appearSecs(k) > secs {
		k--
	}
	return k
}

func (w *World) appearSecs(k int64) int64 {
	return int64(math.Ceil(float64(k) / w.NewPerDay() * day.Seconds()))
}

// appearOf is when new app off (> Base) appears.
func (w *World) appearOf(off int64) time.Time {
	return w.Epoch.Add(time.Duration(w.appearSecs(off-int64(w.Base))) * time.Second)
}

// NicheOf is app off's niche: the ground truth the segment bench scores
// against. Never served over HTTP.
func (w *World) NicheOf(off int64) int { return w.Static(off).Niche }

// Static draws app off's static facts.
func (w *World) Static(off int64) Static {
	r := rand.New(rand.NewPCG(w.Seed^staticStream, uint64(off)))
	s := Static{Off: off}
	u := r.Float64()
	s.Niche = int(math.Pow(u, nicheSkew) * float64(len(w.Niches)))
	s.Dev = r.IntN(w.Devs)
	s.Brand = r.IntN(len(brands))
	s.Masks = drawMasks(r)
	if r.IntN(noRatingsOneIn) != 0 {
		s.Ratings = int64(math.Exp(r.Float64() * maxLogRatings))
	}
	paid := r.IntN(100) >= freePercent
	tier := r.IntN(len(PriceTiers))
	if paid {
		s.Price = PriceTiers[tier]
		s.IAPs = r.IntN(maxIAPsPaid + 1)
	} else {
		s.IAPs = r.IntN(maxIAPs + 1)
	}
	s.v = [3]int{1 + r.IntN(12), r.IntN(20), r.IntN(10)}
	released := w.Epoch.Add(-time.Duration(1+r.Int64N(releaseSpanDays)) * day).Truncate(time.Second)
	upd := r.Float64()
	removalU := r.Float64()
	if off > int64(w.Base) {
		s.Appear = w.appearOf(off)
		s.v, s.Updated = [3]int{1, 0, -1}, s.Appear
		s.Rate = float64(float32(w.Rates.RatingGrowth * float64(s.Ratings) / potentialDays))
		s.VersionDays = w.versionDays(0)
	} else {
		s.Appear = released
		s.Updated = released.Add(time.Duration(upd * float64(w.Epoch.Sub(released)))).Truncate(time.Second)
		age := max(w.Epoch.Sub(released).Hours()/24, minAgeDays)
		s.Rate = float64(float32(w.Rates.RatingGrowth * float64(s.Ratings) / age))
		s.VersionDays = w.versionDays(s.Ratings)
	}
	if h := w.Rates.RemovalsPerDayPerMillion / 1e6; h > 0 {
		start := s.Appear
		if start.Before(w.Epoch) {
			start = w.Epoch
		}
		days := -math.Log(1-removalU) / h
		if days < 1e6 { // beyond ~2,700 years: never
			s.Removed = start.Add(time.Duration(days * float64(day))).Truncate(time.Second)
		}
	}
	return s
}

// versionDays interpolates the mean version interval on log ratings.
func (w *World) versionDays(ratings int64) float64 {
	x := min(1, math.Log1p(float64(ratings))/math.Log1p(PopularRatings))
	return math.Exp((1-x)*math.Log(w.Rates.VersionDaysQuiet) + x*math.Log(w.Rates.VersionDaysPopular))
}

func drawMasks(r *rand.Rand) Masks {
	var m Masks
	m.Title = 1 // the subject
	if r.IntN(100) < titleFacetPct {
		m.Title |= 1 << 1
	} else {
		m.Title |= 1 << (2 + r.IntN(vocabDetails))
	}
	m.Subtitle = pickBits(r, subtitleWords)
	// The description opens with the title, so it holds the title's words.
	m.Description = pickBits(r, descWords) | m.Title
	return m
}

// pickBits sets n distinct bits of VocabSize (a partial Fisher-Yates).
func pickBits(r *rand.Rand, n int) uint8 {
	var idx [VocabSize]uint8
	for i := range idx {
		idx[i] = uint8(i)
	}
	var m uint8
	for i := range n {
		j := i + r.IntN(VocabSize-i)
		idx[i], idx[j] = idx[j], idx[i]
		m |= 1 << idx[i]
	}
	return m
}

// start is when an app starts changing: Epoch, or its appearance.
func (w *World) start(s *Static) time.Time {
	if s.Appear.After(w.Epoch) {
		return s.Appear
	}
	return w.Epoch
}

// Exists reports whether the app is in the store at t: appeared, not yet
// removed.
func (w *World) Exists(s *Static, t time.Time) bool {
	if s.Off > int64(w.Base) && t.Before(s.Appear) {
		return false
	}
	return s.Removed.IsZero() || t.Before(s.Removed)
}

// RatingsAt is the app's rating count at t.
func (w *World) RatingsAt(s *Static, t time.Time) int64 {
	return ratingsAt(s.Ratings, s.Rate, s.Off > int64(w.Base), w.secs(w.start(s)), w.secs(t))
}

// secs is t in whole seconds since Epoch (floored).
func (w *World) secs(t time.Time) int64 {
	d := t.Sub(w.Epoch)
	s := int64(d / time.Second)
	if d < 0 && d%time.Second != 0 {
		s--
	}
	return s
}

// ratingsAt: a new app starts from none, a base app from its count at
// Epoch, and each gains rate a day from start (seconds since Epoch).
func ratingsAt(r0 int64, rate float64, isNew bool, start, t int64) int64 {
	base := r0
	if isNew {
		base = 0
	}
	if t <= start {
		return base
	}
	return base + int64(rate*float64(t-start)/secsPerDay)
}

const secsPerDay = 86400

// State is an app's changing values at a time.
type State struct {
	Ratings  int64
	Version  string
	Versions int       // versions shipped since start
	Updated  time.Time // the current version's release
	Price    float64
	// PriceChanges is how many times the price changed since start.
	PriceChanges int
}

// At is the app's state at t (an app before its start is as it started).
func (w *World) At(s *Static, t time.Time) State {
	st := State{Ratings: w.RatingsAt(s, t), Version: s.Version(), Updated: s.Updated, Price: s.Price}
	start := w.start(s)
	// Versions: a Poisson process of mean interval VersionDays.
	r := rand.New(rand.NewPCG(w.Seed^versionStream, uint64(s.Off)))
	for at := start; ; {
		at = at.Add(time.Duration(r.ExpFloat64() * s.VersionDays * float64(day)))
		if at.After(t) {
			break
		}
		st.Versions++
		minor := r.IntN(4) == 0
		st.Version = BumpVersion(st.Version, minor)
		st.Updated = at.Truncate(time.Second)
	}
	if s.Price > 0 && w.Rates.PriceChangesPerYear > 0 {
		r := rand.New(rand.NewPCG(w.Seed^priceStream, uint64(s.Off)))
		for at := start; ; {
			at = at.Add(time.Duration(r.ExpFloat64() * 365 / w.Rates.PriceChangesPerYear * float64(day)))
			if at.After(t) {
				break
			}
			// Another tier than the current one.
			i := r.IntN(len(PriceTiers) - 1)
			if PriceTiers[i] >= st.Price {
				i++
			}
			st.Price = PriceTiers[i]
			st.PriceChanges++
		}
	}
	return st
}

// BumpVersion is the next version: "2.3.9" → "2.3.10", or with minor
// "2.3.9" → "2.4.0".
func BumpVersion(v string, minor bool) string {
	parts := strings.Split(v, ".")
	for len(parts) < 3 {
		parts = append(parts, "0")
	}
	n := func(s string) int { x, _ := strconv.Atoi(s); return x }
	if minor {
		return fmt.Sprintf("%s.%d.0", parts[0], n(parts[1])+1)
	}
	return fmt.Sprintf("%s.%s.%d", parts[0], parts[1], n(parts[2])+1)
}

// Text is an app's title, subtitle and description.
type Text struct{ Title, Subtitle, Description string }

// TextOf writes app s's text from its niche's vocabulary.
func (w *World) TextOf(s *Static) Text {
	n := &w.Niches[s.Niche]
	words := func(m uint8) []string {
		var out []string
		for i := range VocabSize {
			if m&(1<<i) != 0 {
				out = append(out, n.Vocab[i])
			}
		}
		return out
	}
	r := rand.New(rand.NewPCG(w.Seed^staticStream, uint64(s.Off)<<1|1))
	title := []string{capitalize(brands[s.Brand])}
	for _, x := range words(s.Masks.Title) {
		title = append(title, capitalize(x))
	}
	t := Text{Title: strings.Join(title, " ")}
	sw := words(s.Masks.Subtitle)
	t.Subtitle = fmt.Sprintf(subtitleTemplates[r.IntN(len(subtitleTemplates))], capitalize(sw[0]), sw[1])
	var b strings.Builder
	b.WriteString(t.Title + " — " + descFiller[r.IntN(len(descFiller))])
	for _, x := range words(s.Masks.Description &^ s.Masks.Title) {
		b.WriteString("\n\n" + fmt.Sprintf(descTemplates[r.IntN(len(descTemplates))], x))
	}
	b.WriteString("\n\n" + descFiller[r.IntN(len(descFiller))])
	t.Description = b.String()
	return t
}

// GenreOf is app s's primary genre and, for a game, its subgenre.
func (w *World) GenreOf(s *Static) (primary, sub Genre) {
	n := &w.Niches[s.Niche]
	return n.Genre, n.SubGenre
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// Tokens splits text into lowercase letter-and-digit tokens, as search
// matches them.
func Tokens(text string) []string {
	return strings.FieldsFunc(strings.ToLower(text), func(c rune) bool {
		return !('a' <= c && c <= 'z' || '0' <= c && c <= '9')
	})
}
