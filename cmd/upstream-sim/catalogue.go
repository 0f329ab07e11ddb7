package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"
	"unicode/utf8"
)

// Catalogue id space and special ids.
//
// Track ids are baseTrackID+1 .. baseTrackID+N. Any other id is unknown:
// lookup answers 200 {"resultCount":0,"results":[]} and the store page 404.
// In-catalogue ids whose offset (id-baseTrackID) is divisible by
// brokenPageEvery (100000097, 100000194, ...) have a normal lookup but a
// store page truncated before <header class="product-header">, i.e. a
// permanent parse error for the client.
const (
	baseTrackID     = 100000000
	brokenPageEvery = 97
	// Developer ids live far above track ids so the two never collide.
	baseDeveloperID = 300000000
	// appsPerDeveloper makes developers fewer than apps (≈ N/4 developers).
	appsPerDeveloper = 4
)

// Generation bounds (the "why" is realism: most apps are free, few get
// many ratings, IAP and similar shelves are short).
const (
	freePercent      = 85
	noRatingsOneIn   = 10   // 10% of apps have no ratings at all
	maxLogRatings    = 13.0 // e^13 ≈ 442k ratings for the biggest apps
	subtitlePercent  = 80
	longDescOneIn    = 10   // some descriptions exceed appstore.MaxTextLen
	longDescMinRunes = 3000 // comfortably above the 2000-rune cap
	maxIAPs          = 5
	maxIAPsPaid      = 2
	maxSimilar       = 6
	extraLangPercent = 25
	minFileSize      = 5 << 20
	fileSizeRange    = 2 << 30
	releaseSpanDays  = 14 * 365
	histogramStars   = 5
	ratingDecimals   = 1e5 // iTunes reports averages like 4.71234
	gamesOneIn       = 4   // Games are over-represented, as on the real store
	maxMajorVersion  = 12
	maxMinorVersion  = 20
	maxPatchVersion  = 10
)

var (
	releaseEpoch = time.Date(2010, 1, 1, 7, 0, 0, 0, time.UTC)
	latestUpdate = time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
)

// Genre is an App Store primary genre.
type Genre struct {
	ID   int
	Name string
}

// genres are the App Store's top-level genres (worker/appstore.AppGenres,
// from Apple's genre service): the first coreGenres are drawn from the
// generator's random stream; the newer, smaller ones after them are given
// to one app in newerGenreOneIn by its id alone, so adding them moved no
// other field of any app.
var genres = []Genre{
	{6000, "Business"}, {6001, "Weather"}, {6002, "Utilities"}, {6003, "Travel"},
	{6004, "Sports"}, {6005, "Social Networking"}, {6006, "Reference"},
	{6007, "Productivity"}, {6008, "Photo & Video"}, {6009, "News"},
	{6010, "Navigation"}, {6011, "Music"}, {6012, "Lifestyle"},
	{6013, "Health & Fitness"}, {6014, "Games"}, {6015, "Finance"},
	{6016, "Entertainment"}, {6017, "Education"}, {6018, "Books"},
	{6020, "Medical"}, {6023, "Food & Drink"}, {6024, "Shopping"},
	// newer and smaller
	{6021, "Magazines & Newspapers"}, {6022, "Catalogs"}, {6025, "Stickers"},
	{6026, "Developer Tools"}, {6027, "Graphics & Design"},
}

const (
	gamesGenreIndex = 14
	coreGenres      = 22
	// newerGenreOneIn: one non-game app in this many is in a newer genre.
	newerGenreOneIn = 25
)

// gameSubgenres are the Games subgenres (worker/appstore.GameGenres): a
// game's primary genre is Games, and its subgenre, by id, has a chart of
// its own (the RSS feed's genre=7001..7019) and is its second genreId.
var gameSubgenres = []Genre{
	{7001, "Action"}, {7002, "Adventure"}, {7003, "Casual"}, {7004, "Board"}, {7005, "Card"},
	{7006, "Casino"}, {7007, "Dice"}, {7008, "Educational"}, {7009, "Family"}, {7011, "Music"},
	{7012, "Puzzle"}, {7013, "Racing"}, {7014, "Role Playing"}, {7015, "Simulation"}, {7016, "Sports"},
	{7017, "Strategy"}, {7018, "Trivia"}, {7019, "Word"},
}

// idHash spreads ids for the choices made by id alone.
func idHash(id int64) uint64 { return uint64(id) * 0x9E3779B97F4A7C15 >> 17 }

// subgenre is a game's subgenre (ok false for an app not a game).
func subgenre(a *App) (Genre, bool) {
	if a.SubGenre.ID != 0 { // the living catalogue's own
		return a.SubGenre, true
	}
	if a.Genre.ID != genres[gamesGenreIndex].ID {
		return Genre{}, false
	}
	return gameSubgenres[idHash(a.ID)%uint64(len(gameSubgenres))], true
}

// inGenre reports whether a is in genre's charts: its primary genre, or
// its Games subgenre.
func inGenre(a *App, genre int) bool {
	if a.Genre.ID == genre {
		return true
	}
	sub, ok := subgenre(a)
	return ok && sub.ID == genre
}

var (
	nameAdjectives = []string{"Swift", "Bright", "Tiny", "Lucky", "Pocket", "Smart", "Happy", "Zen", "Epic", "Daily",
		"Simple", "Super", "Clever", "Cosmic", "Pixel", "Quiet", "Bold", "Magic", "Rapid", "Golden",
		"Fresh", "Urban", "Wild", "Pure", "Neon", "Royal", "Sunny", "Ultra", "Mighty", "Clear"}
	nameNouns = []string{"Budget", "Puzzle", "Notes", "Fitness", "Recipes", "Weather", "Scanner", "Radio", "Photo", "Quest",
		"Tracker", "Planner", "Maps", "Chess", "Journal", "Sleep", "Words", "Timer", "Wallet", "Garden",
		"Runner", "Studio", "Calendar", "Translate", "Kitchen", "Stocks", "Podcast", "Flashcards", "Habits", "Racer"}
	nameSuffixes = []string{"Pro", "Plus", "Lite", "HD", "2", "Go", "Max", "Studio"}
	devNames     = []string{"Northwind", "Bluebird", "Pinecone", "Ledgerleaf", "Tally", "Orbit", "Maple", "Cobalt", "Lumen", "Harbor",
		"Quartz", "Falcon", "Willow", "Summit", "Ember", "Nimbus", "Atlas", "Juniper", "Vector", "Meadow"}
	devWords  = []string{"Peak", "Bay", "Forge", "Bit", "Leaf", "Stone", "Field", "Wave", "Light", "Works", "Code", "Hill", "Spark", "Cloud", "Tree", "Sky"}
	devKinds  = []string{"Labs", "Games", "Software Inc.", "Studios", "Apps LLC", "Digital", "Interactive", "Media GmbH"}
	subtitles = []string{"Track, plan & save", "Your daily companion", "Simple. Fast. Private.", "Play with friends online",
		"Learn something new every day", "Stay focused & get more done", "Offline-first, no ads", "Made for iPhone & iPad",
		"The smarter way to organise", "Relax, breathe & sleep better"}
	sentences = []string{"Designed for speed and simplicity.", "Sync across all your devices — automatically.",
		"Join millions of happy users worldwide.", "No account required; your data stays on your device.",
		"New features every month, driven by your feedback.", "Widgets, Shortcuts and Apple Watch support included.",
		"Beautiful themes and a fully customisable layout.", "Works offline, wherever you are.",
		"• Dark mode\n• iCloud backup\n• Home-screen widgets", "Crafted with care by a small, independent team."}
	iapNames = []string{"Remove Ads", "Pro Monthly", "Pro Yearly", "Lifetime Unlock", "Gems & Coins Bundle",
		"Starter Pack", "Premium (Family)", "Theme Pack", "500 Coins", "Tip Jar — Large"}
	priceTiers     = []float64{0.99, 1.99, 2.99, 4.99, 9.99}
	iapPriceTiers  = []float64{0.99, 1.99, 2.99, 4.99, 9.99, 19.99, 49.99}
	contentRatings = []string{"4+", "4+", "4+", "9+", "12+", "17+"}
	extraLanguages = []string{"DE", "ES", "FR", "IT", "JA", "KO", "PT", "RU", "ZH"}
)

// IAP is one in-app purchase shown on the store page.
type IAP struct {
	Name  string
	Price float64
}

// App is one generated catalogue entry, the single source of truth for the
// lookup JSON, search, charts and store page.
type App struct {
	ID            int64
	Name          string
	Slug          string
	Subtitle      string
	BundleID      string
	DevID         int64
	DevName       string
	Price         float64
	Genre         Genre
	SubGenre      Genre                 // a game's subgenre (living catalogue); zero otherwise
	Histogram     [histogramStars]int64 // index 0 = 5 stars ... 4 = 1 star
	RatingCount   int64
	AverageRating float64
	Version       string
	ReleaseDate   string
	UpdatedDate   string
	Description   string
	ContentRating string
	FileSize      int64
	Languages     []string
	IAPs          []IAP
	Similar       []int64
}

// Catalogue is the deterministic set of apps: immutable as generated; a
// server's copy (withDrift) can change over time (drift.go).
type Catalogue struct {
	apps  []App
	byDev map[int64][]int64
	drift *drifter // nil: as generated
	// lazy is set instead of apps above EagerMaxApps: apps are generated
	// on demand (lazy.go).
	lazy *lazyIndex
	// living is set instead of both for a living catalogue (living.go):
	// apps as they are at the server's virtual time.
	living *living
}

// withDrift is a copy of c for one server, whose apps change as its
// drift config says (none until set).
func (c *Catalogue) withDrift(now func() time.Time) *Catalogue {
	cp := *c
	cp.drift = newDrifter(c.apps, now)
	if c.living != nil {
		l := *c.living
		l.now = now
		cp.living = &l
	}
	return &cp
}

// current is the apps as they are now.
func (c *Catalogue) current() []App {
	if c.drift == nil {
		return c.apps
	}
	return c.drift.snapshot()
}

// NewCatalogue generates n apps from seed. Each app draws from its own PCG
// stream (seed, offset), so an app does not depend on generation order;
// only the fields sized by n (developer, bundle id, similar ids) change
// with n.
func NewCatalogue(n int, seed uint64) *Catalogue {
	numDevs := max(1, n/appsPerDeveloper)
	if n > EagerMaxApps {
		return &Catalogue{lazy: newLazyIndex(n, numDevs, seed)}
	}
	c := &Catalogue{apps: make([]App, n), byDev: make(map[int64][]int64)}
	for i := range n {
		a := generate(int64(i+1), n, numDevs, seed)
		c.apps[i] = a
		c.byDev[a.DevID] = append(c.byDev[a.DevID], a.ID)
	}
	return c
}

// Len is the number of apps.
func (c *Catalogue) Len() int {
	if c.living != nil {
		return c.living.w.Base
	}
	if c.lazy != nil {
		return c.lazy.n
	}
	return len(c.apps)
}

// Get returns the app with track id id.
func (c *Catalogue) Get(id int64) (*App, bool) {
	off := id - baseTrackID
	if c.living != nil {
		return c.living.get(off, c.living.now())
	}
	if c.lazy != nil {
		return c.lazy.get(off)
	}
	apps := c.current()
	if off < 1 || off > int64(len(apps)) {
		return nil, false
	}
	return &apps[off-1], true
}

// ByDeveloper returns the ids of devID's apps in id order.
func (c *Catalogue) ByDeveloper(devID int64) []int64 {
	if l := c.living; l != nil {
		offs := l.ix.ByDeveloper(int(devID-baseDeveloperID-1), l.now())
		ids := make([]int64, len(offs))
		for i, off := range offs {
			ids[i] = baseTrackID + off
		}
		return ids
	}
	if c.lazy != nil {
		return c.lazy.byDeveloper(devID)
	}
	return c.byDev[devID]
}

// All returns every app in id order; callers must not modify it. Eager
// catalogues only (tests); servers iterate with Each.
func (c *Catalogue) All() []App { return c.current() }

// Each calls fn with every app in id order. A lazy catalogue passes an
// app holding only the fields search and charts sort by (ID, Name, Genre,
// Price's sign, the IAP count, RatingCount), reused between calls: fn
// keeps ids, never the pointer, and Gets the apps it answers with.
func (c *Catalogue) Each(fn func(a *App)) {
	if c.lazy != nil {
		c.lazy.each(fn)
		return
	}
	apps := c.current()
	for i := range apps {
		fn(&apps[i])
	}
}

// BrokenPage reports whether id's store page is served truncated.
func BrokenPage(id int64) bool { return (id-baseTrackID)%brokenPageEvery == 0 }

func generate(off int64, n, numDevs int, seed uint64) App {
	r := rand.New(rand.NewPCG(seed, uint64(off)))
	a := App{ID: baseTrackID + off}

	a.Name = pick(r, nameAdjectives) + " " + pick(r, nameNouns)
	if r.IntN(2) == 0 {
		a.Name += " " + pick(r, nameSuffixes)
	}
	a.Slug = slugify(a.Name)
	if r.IntN(100) < subtitlePercent {
		a.Subtitle = pick(r, subtitles)
	}

	devIdx := r.IntN(numDevs)
	a.DevID = baseDeveloperID + int64(devIdx) + 1
	a.DevName = developerName(devIdx)
	a.BundleID = fmt.Sprintf("com.%s.%s%d", strings.ReplaceAll(slugify(devNames[devIdx%len(devNames)]), "-", ""),
		strings.ReplaceAll(a.Slug, "-", ""), off)

	if r.IntN(100) >= freePercent {
		a.Price = pick(r, priceTiers)
	}
	if r.IntN(gamesOneIn) == 0 {
		a.Genre = genres[gamesGenreIndex]
	} else {
		a.Genre = pick(r, genres[:coreGenres])
		if h := idHash(a.ID); a.Genre.ID != genres[gamesGenreIndex].ID && h%newerGenreOneIn == 0 {
			a.Genre = genres[coreGenres+int(h/newerGenreOneIn)%(len(genres)-coreGenres)]
		}
	}

	if r.IntN(noRatingsOneIn) != 0 {
		a.RatingCount = int64(math.Exp(r.Float64() * maxLogRatings))
	}
	a.Histogram = histogram(r, a.RatingCount)
	a.AverageRating = average(a.Histogram, a.RatingCount)

	a.Version = fmt.Sprintf("%d.%d.%d", r.IntN(maxMajorVersion)+1, r.IntN(maxMinorVersion), r.IntN(maxPatchVersion))
	released := releaseEpoch.AddDate(0, 0, r.IntN(releaseSpanDays))
	updated := released.Add(time.Duration(r.Int64N(int64(latestUpdate.Sub(released)))))
	a.ReleaseDate = released.Format(time.RFC3339)
	a.UpdatedDate = updated.Truncate(time.Second).Format(time.RFC3339)

	a.Description = description(r, a.Name)
	a.ContentRating = pick(r, contentRatings)
	a.FileSize = minFileSize + r.Int64N(fileSizeRange)
	a.Languages = []string{"EN"}
	for _, l := range extraLanguages {
		if r.IntN(100) < extraLangPercent {
			a.Languages = append(a.Languages, l)
		}
	}

	nIAP := r.IntN(maxIAPs + 1)
	if a.Price > 0 {
		nIAP = r.IntN(maxIAPsPaid + 1)
	}
	for _, i := range r.Perm(len(iapNames))[:nIAP] {
		a.IAPs = append(a.IAPs, IAP{Name: iapNames[i], Price: pick(r, iapPriceTiers)})
	}

	nSim := min(r.IntN(maxSimilar+1), n-1)
	seen := map[int64]bool{a.ID: true}
	for len(a.Similar) < nSim {
		id := baseTrackID + 1 + r.Int64N(int64(n))
		if !seen[id] {
			seen[id] = true
			a.Similar = append(a.Similar, id)
		}
	}
	return a
}

func pick[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

// developerName is unique per index: word combinations first, then numbered.
func developerName(idx int) string {
	n, w, k := len(devNames), len(devWords), len(devKinds)
	combos := n * w * k
	name := devNames[idx%n] + devWords[(idx/n)%w] + " " + devKinds[(idx/(n*w))%k]
	if idx >= combos {
		name += fmt.Sprintf(" %d", idx/combos+1)
	}
	return name
}

// histogram splits total into 5..1-star counts skewed by a per-app quality,
// so that the counts always sum to total.
func histogram(r *rand.Rand, total int64) [histogramStars]int64 {
	var h [histogramStars]int64
	if total == 0 {
		return h
	}
	q := r.Float64()
	weights := [histogramStars]float64{1 + 8*q, 2, 1, 0.5 + (1 - q), 0.5 + 2*(1-q)}
	var sum float64
	for _, w := range weights {
		sum += w
	}
	rest := total
	for i := 1; i < histogramStars; i++ {
		h[i] = int64(float64(total) * weights[i] / sum)
		rest -= h[i]
	}
	h[0] = rest
	return h
}

func average(h [histogramStars]int64, total int64) float64 {
	if total == 0 {
		return 0
	}
	var stars int64
	for i, c := range h {
		stars += int64(histogramStars-i) * c
	}
	return math.Round(float64(stars)/float64(total)*ratingDecimals) / ratingDecimals
}

func description(r *rand.Rand, name string) string {
	var b strings.Builder
	b.WriteString(name + " — " + pick(r, sentences))
	n := 2 + r.IntN(5)
	long := r.IntN(longDescOneIn) == 0
	for i := 0; i < n || (long && utf8.RuneCountInString(b.String()) < longDescMinRunes); i++ {
		b.WriteString("\n\n" + pick(r, sentences))
	}
	return b.String()
}

func slugify(s string) string {
	var b strings.Builder
	dash := false
	for _, c := range strings.ToLower(s) {
		if ('a' <= c && c <= 'z') || ('0' <= c && c <= '9') {
			b.WriteRune(c)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	return strings.TrimSuffix(b.String(), "-")
}
