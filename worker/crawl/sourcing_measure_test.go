//go:build !js

package crawl

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"storecrawl/worker/appstore"
	"storecrawl/worker/d1"
	"storecrawl/worker/d1/d1test"
)

// A catalogue shaped like the store's: most titles carry a brand of their
// own (a made-up word, as "Mintly" or "Zovami") beside a few category
// words ("Budget Planner"), in the patterns real titles use, and a
// subtitle of category words.
var (
	measureTerms = []string{"budget", "planner", "tracker", "money", "expense", "photo", "editor", "video", "maker", "collage",
		"fitness", "workout", "yoga", "meditation", "sleep", "sounds", "weather", "radar", "recipes", "meal", "calorie", "counter",
		"habit", "journal", "notes", "scanner", "pdf", "translator", "vpn", "music", "player", "podcast", "chess", "puzzle",
		"solitaire", "word", "games", "kids", "learning", "language", "flashcards", "calendar", "reminder", "timer", "focus",
		"wallet", "crypto", "stocks", "news", "radio", "maps", "travel", "flights", "hotel", "dating", "chat", "camera", "widget"}
	measureSyllables = []string{"zo", "va", "mi", "lu", "ka", "ri", "no", "te", "sa", "bel", "dor", "fin", "gra", "ly", "mo", "pex", "qui", "ren", "tos", "vy"}
	measureSubtitles = []string{"Track, plan & save", "Simple. Fast. Private.", "Your daily companion", "Learn something new every day"}
)

func measureBrand(r *rand.Rand) string {
	var b strings.Builder
	for range 2 + r.IntN(2) {
		b.WriteString(measureSyllables[r.IntN(len(measureSyllables))])
	}
	s := b.String()
	return strings.ToUpper(s[:1]) + s[1:]
}

func measureApp(r *rand.Rand) (title, subtitle string) {
	t := func() string { w := measureTerms[r.IntN(len(measureTerms))]; return strings.ToUpper(w[:1]) + w[1:] }
	brand := measureBrand(r)
	switch r.IntN(4) {
	case 0:
		title = brand + ": " + t() + " " + t()
	case 1:
		title = t() + " " + t() + " - " + brand
	case 2:
		title = brand + " " + t()
	default:
		title = t() + " " + t()
	}
	if r.IntN(2) == 0 {
		subtitle = t() + " & " + t()
	} else {
		subtitle = measureSubtitles[r.IntN(len(measureSubtitles))]
	}
	return title, subtitle
}

// TestNewKeywordsPerNewApp measures the keywords new apps add: a
// catalogue of 5,000 apps whose title terms are known, then 1,000 new
// apps. Before, each new app's guessed terms (appstore.DeriveKeywords:
// its title's and subtitle's words, bigrams, short title) became
// keywords; now the fill adds none (it values known terms, on the real
// SQL), and the hints add at most HintNewKeywordsPerDay a day whatever
// the apps: per new app that bound over the plan's new apps a day.
func TestNewKeywordsPerNewApp(t *testing.T) {
	const base, fresh = 5000, 1000
	r := rand.New(rand.NewPCG(7, 11))
	known := map[string]bool{}
	for range base {
		title, sub := measureApp(r)
		for _, kw := range appstore.DeriveKeywords(title, sub) {
			known[kw] = true
		}
	}
	apps := make([]FillApp, fresh)
	added := 0
	for i := range apps {
		title, sub := measureApp(r)
		apps[i] = FillApp{TrackID: int64(i + 1), Name: title, Subtitle: sub}
		for _, kw := range appstore.DeriveKeywords(title, sub) {
			if !known[kw] {
				known[kw] = true
				added++
			}
		}
	}
	before := float64(added) / fresh

	db, drv := d1test.New(t)
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	for _, a := range apps {
		drv.Exec(t, `INSERT INTO app_registry (track_id, name, subtitle, enrichment_source, enriched_at) VALUES (?, ?, ?, 'itunes+store', ?)`, a.TrackID, a.Name, a.Subtitle, d1.Time(now))
	}
	for _, w := range measureTerms { // the hints' terms: the category words
		drv.Exec(t, `INSERT INTO crawl_keywords (keyword, source, created_at, value) VALUES (?, 'hints', ?, 11)`, w, d1.Time(now))
	}
	kw0 := drv.Int(t, `SELECT count(*) FROM crawl_keywords`)
	for i := 0; i < fresh; i += RankingFillApps {
		if r := fillRankings(context.Background(), D1Store{DB: db}, now); r.Error != "" {
			t.Fatal(r.Error)
		}
	}
	fromApps := float64(drv.Int(t, `SELECT count(*) FROM crawl_keywords`)-kw0) / fresh
	const planNewAppsPerDay = 37_767 // docs/scale.md, the fill month
	bound := float64(HintNewKeywordsPerDay) / planNewAppsPerDay
	t.Logf("new keywords per new app: before %.3f (%d guessed terms new to a catalogue of %d, from %d new apps); now %.3f from the apps, and the hints' %d a day: ≤ %.3f at %d new apps a day",
		before, added, base, fresh, fromApps, HintNewKeywordsPerDay, bound, planNewAppsPerDay)
	if fromApps != 0 || bound > before {
		t.Fatalf("new apps still add keywords: %.3f (bound %.3f)", fromApps, bound)
	}
}
