package upstreammodel

import (
	"math"
	"slices"
	"testing"
	"time"
)

var epoch = time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)

const month = 30 * day

func TestVocabularyPools(t *testing.T) {
	owner := map[string]string{}
	claim := func(pool string, words []string) {
		for _, w := range words {
			if toks := Tokens(w); len(toks) != 1 || toks[0] != w {
				t.Fatalf("%s word %q is not one lowercase token", pool, w)
			}
			if o, ok := owner[w]; ok && o != pool {
				t.Fatalf("%q is in both %s and %s", w, o, pool)
			}
			owner[w] = pool
		}
	}
	for _, ws := range subjectsByGenre {
		claim("subjects", ws)
	}
	claim("facets", appFacets)
	claim("facets", gameFacets)
	claim("details", appDetails)
	claim("details", gameDetails)
	claim("brands", brands)
	var filler []string
	filler = append(filler, subtitleTemplates...)
	filler = append(filler, descTemplates...)
	filler = append(filler, descFiller...)
	for _, f := range filler {
		for _, tok := range Tokens(f) {
			if o, ok := owner[tok]; ok && tok != "s" {
				t.Fatalf("filler %q holds the %s word %q", f, o, tok)
			}
		}
	}
	for id := range subjectsByGenre {
		if _, ok := GenreByID[id]; !ok {
			t.Fatalf("subjects under unknown genre %d", id)
		}
	}
}

func TestNichesAreDistinctPairs(t *testing.T) {
	w := NewWorld(1, 1_100_000, epoch, DefaultRates())
	if len(w.Niches) != DefaultNiches {
		t.Fatalf("%d niches at 1.1M apps, want %d", len(w.Niches), DefaultNiches)
	}
	seen := map[string]bool{}
	games := 0
	for _, n := range w.Niches {
		key := n.Vocab[0] + " " + n.Vocab[1]
		if seen[key] {
			t.Fatalf("niche %q twice", key)
		}
		seen[key] = true
		if n.Genre.ID == GamesGenreID {
			games++
			if !IsGameGenre(n.SubGenre.ID) {
				t.Fatalf("game niche %q without a subgenre", key)
			}
		}
	}
	if games != DefaultNiches*gamesPercent/100 { // 112
		t.Fatalf("%d game niches of %d", games, DefaultNiches)
	}
	if got := NichesFor(5000); got != 50 {
		t.Fatalf("NichesFor(5000) = %d", got)
	}
}

// An app's text holds exactly the niche words its masks say, in the
// fields they say, and otherwise only its brand and filler.
func TestTextHoldsExactlyItsMasks(t *testing.T) {
	w := NewWorld(3, 20_000, epoch, DefaultRates())
	vocabOwner := map[string]bool{}
	for _, n := range w.Niches {
		for _, v := range n.Vocab {
			vocabOwner[v] = true
		}
	}
	for off := int64(1); off <= 3000; off += 7 {
		s := w.Static(off)
		txt := w.TextOf(&s)
		n := w.Niches[s.Niche]
		for _, f := range []struct {
			name string
			text string
			mask uint8
		}{{"title", txt.Title, s.Masks.Title}, {"subtitle", txt.Subtitle, s.Masks.Subtitle}, {"description", txt.Description, s.Masks.Description}} {
			toks := Tokens(f.text)
			for i, v := range n.Vocab {
				if has := slices.Contains(toks, v); has != (f.mask&(1<<i) != 0) {
					t.Fatalf("app %d %s %q: holds %q = %v, mask %08b", off, f.name, f.text, v, has, f.mask)
				}
			}
			for _, tok := range toks {
				if vocabOwner[tok] && !slices.Contains(n.Vocab[:], tok) {
					t.Fatalf("app %d %s holds %q from another niche", off, f.name, tok)
				}
			}
		}
		if !slices.Contains(Tokens(txt.Title), brands[s.Brand]) {
			t.Fatalf("app %d title %q lacks its brand", off, txt.Title)
		}
	}
}

// Over a simulated month each rate is what it is configured to be, at ½×,
// 1× and 2×.
func TestRatesOverASimulatedMonth(t *testing.T) {
	const base = 100_000
	for _, f := range []float64{0.5, 1, 2} {
		rates := DefaultRates().Scaled(f)
		w := NewWorld(7, base, epoch, rates)
		end := epoch.Add(month)
		// New apps: exactly NewPerDay a day.
		if got, want := w.Total(end)-base, int64(30*rates.NewPerDayPerMillion*base/1e6); got != want {
			t.Errorf("×%v: %d new apps in a month, want %d", f, got, want)
		}
		var removed, paid, priceChanges, popular, popularVersions, quiet, quietVersions int
		var growth, wantGrowth float64
		for off := int64(1); off <= base; off++ {
			s := w.Static(off)
			if !w.Exists(&s, end) {
				removed++
			}
			if off%5 != 0 { // the rest on a fifth of the apps
				continue
			}
			st := w.At(&s, end)
			if s.Price > 0 {
				paid++
				priceChanges += st.PriceChanges
			}
			switch {
			case s.Ratings >= PopularRatings:
				popular++
				popularVersions += st.Versions
			case s.Ratings == 0:
				quiet++
				quietVersions += st.Versions
			}
			growth += float64(st.Ratings - s.Ratings)
			wantGrowth += s.Rate * 30
		}
		h := rates.RemovalsPerDayPerMillion / 1e6
		within(t, f, "removals", float64(removed), base*(1-math.Exp(-h*30)), 0.08)
		within(t, f, "popular apps' versions", float64(popularVersions), float64(popular)*30/rates.VersionDaysPopular, 0.05)
		within(t, f, "quiet apps' versions", float64(quietVersions), float64(quiet)*30/rates.VersionDaysQuiet, 0.2)
		within(t, f, "paid apps' price changes", float64(priceChanges), float64(paid)*rates.PriceChangesPerYear*30/365, 0.15)
		within(t, f, "ratings gained", growth, wantGrowth, 0.001)
	}
}

func within(t *testing.T, f float64, what string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol*want {
		t.Errorf("×%v: %s %.0f, want %.0f ± %.0f%%", f, what, got, want, tol*100)
	}
}

// A base app keeps its lifetime pace: after another lifetime it has
// twice its ratings.
func TestRatingsGrowAtTheLifetimePace(t *testing.T) {
	w := NewWorld(2, 10_000, epoch, DefaultRates())
	for off := int64(1); off <= 200; off++ {
		s := w.Static(off)
		age := epoch.Sub(s.Appear)
		if s.Ratings < 1000 || age < minAgeDays*day {
			continue
		}
		got := w.RatingsAt(&s, epoch.Add(age))
		if math.Abs(float64(got)-2*float64(s.Ratings)) > 1+float64(s.Ratings)*1e-6 {
			t.Fatalf("app %d: %d ratings after a lifetime of %v, want 2 × %d", off, got, age, s.Ratings)
		}
	}
}

func TestVersionsAdvance(t *testing.T) {
	w := NewWorld(2, 10_000, epoch, DefaultRates())
	for off := int64(1); off <= 2000; off++ {
		s := w.Static(off)
		a, b := w.At(&s, epoch.Add(month)), w.At(&s, epoch.Add(2*month))
		if b.Versions < a.Versions || b.Updated.Before(a.Updated) {
			t.Fatalf("app %d went back: %+v then %+v", off, a, b)
		}
		if b.Versions > a.Versions && (b.Version == a.Version || !b.Updated.After(epoch.Add(month))) {
			t.Fatalf("app %d shipped without a new version or date: %+v then %+v", off, a, b)
		}
		if a.Versions == 0 && (a.Version != s.Version() || !a.Updated.Equal(s.Updated)) {
			t.Fatalf("app %d changed without shipping: %+v", off, a)
		}
	}
	if got := BumpVersion("2.3.9", false); got != "2.3.10" {
		t.Fatal(got)
	}
	if got := BumpVersion("5.2", true); got != "5.3.0" {
		t.Fatal(got)
	}
}

func TestNewAppsAppearAndAreFindable(t *testing.T) {
	w := NewWorld(5, 2000, epoch, DefaultRates()) // 2 new apps a day, 20 niches
	ix := NewIndex(w)
	off := int64(w.Base) + 3
	s := w.Static(off)
	if !s.Appear.After(epoch) || s.Appear.After(epoch.Add(2*day)) {
		t.Fatalf("the 3rd new app appears at %v", s.Appear)
	}
	if w.Exists(&s, s.Appear.Add(-time.Second)) || !w.Exists(&s, s.Appear) {
		t.Fatal("a new app exists before its appearance, or not at it")
	}
	title := w.TextOf(&s).Title
	found := func(at time.Time) bool {
		return slices.ContainsFunc(ix.Search(title, at, 200), func(h Hit) bool { return h.Off == off })
	}
	if found(s.Appear.Add(-time.Second)) {
		t.Fatal("search found an app before it appeared")
	}
	if !found(s.Appear) {
		t.Fatalf("search for %q at its appearance did not find it", title)
	}
	if got := w.At(&s, s.Appear); got.Version != "1.0" || got.Ratings != 0 || !got.Updated.Equal(s.Appear) {
		t.Fatalf("a new app starts as %+v", got)
	}
}

func TestRemovedAppsLeaveSearch(t *testing.T) {
	rates := DefaultRates()
	rates.RemovalsPerDayPerMillion = 50_000 // 5% a day, so a month removes many
	w := NewWorld(5, 2000, epoch, rates)
	ix := NewIndex(w)
	var s Static
	for off := int64(1); ; off++ {
		if s = w.Static(off); !s.Removed.IsZero() && s.Removed.Before(epoch.Add(month)) {
			break
		}
	}
	title := w.TextOf(&s).Title
	has := func(at time.Time) bool {
		return slices.ContainsFunc(ix.Search(title, at, 200), func(h Hit) bool { return h.Off == s.Off })
	}
	if !has(s.Removed.Add(-time.Second)) || has(s.Removed) {
		t.Fatalf("app %d removed at %v: found before %v, after %v", s.Off, s.Removed, has(s.Removed.Add(-time.Second)), has(s.Removed))
	}
	if w.Exists(&s, s.Removed) {
		t.Fatal("a removed app exists")
	}
}

func TestSameSeedSameAnswers(t *testing.T) {
	at := epoch.Add(45 * day)
	a, b, c := NewIndex(NewWorld(9, 5000, epoch, DefaultRates())), NewIndex(NewWorld(9, 5000, epoch, DefaultRates())), NewIndex(NewWorld(10, 5000, epoch, DefaultRates()))
	term := a.World().Niches[0].Vocab[0]
	x, y := a.Search(term, at, 200), b.Search(term, at, 200)
	if len(x) == 0 || !slices.Equal(x, y) {
		t.Fatalf("the same seed answered %d and %d hits differently", len(x), len(y))
	}
	// Answers depend on t alone, not on what was asked before.
	a.Search(term, at.Add(100*day), 200)
	if z := a.Search(term, at, 200); !slices.Equal(x, z) {
		t.Fatal("a later search changed an earlier time's answer")
	}
	sa, sc := a.World().Static(77), c.World().Static(77)
	if sa == c.World().Static(77) || sa != b.World().Static(77) || a.World().TextOf(&sa) == c.World().TextOf(&sc) {
		t.Fatal("seeds do not decide the apps")
	}
}

// Results are ordered by relevance × log popularity, and relevance is
// the weighted fields that hold the query's terms.
func TestSearchRelevanceOrdering(t *testing.T) {
	w := NewWorld(4, 20_000, epoch, DefaultRates())
	ix := NewIndex(w)
	n := w.Niches[0]
	query := n.Vocab[0] + " " + n.Vocab[1]
	at := epoch.Add(10 * day)
	hits := ix.Search(query, at, 200)
	if len(hits) != 200 {
		t.Fatalf("%d hits for %q", len(hits), query)
	}
	for i, h := range hits {
		s := w.Static(h.Off)
		txt := w.TextOf(&s)
		want := 0
		for _, term := range Tokens(query) {
			if slices.Contains(Tokens(txt.Title), term) {
				want += titleWeight
			}
			if slices.Contains(Tokens(txt.Subtitle), term) {
				want += subtitleWeight
			}
			if slices.Contains(Tokens(txt.Description), term) {
				want += descriptionWeight
			}
		}
		if h.Relevance != want || h.Ratings != w.RatingsAt(&s, at) || h.Score != Score(want, h.Ratings) {
			t.Fatalf("hit %d (app %d): %+v, want relevance %d ratings %d", i, h.Off, h, want, w.RatingsAt(&s, at))
		}
		if i > 0 && !better(hits[i-1], h) {
			t.Fatalf("hit %d out of order: %+v after %+v", i, h, hits[i-1])
		}
	}
	if Score(6, 100) <= Score(5, 100) || Score(5, 1000) <= Score(5, 100) {
		t.Fatal("more fields or more ratings does not rank higher")
	}
	// Ranks move as ratings grow at each app's own pace.
	later := ix.Search(query, at.Add(3*365*day), 200)
	same := true
	for i := range min(len(hits), len(later)) {
		same = same && hits[i].Off == later[i].Off
	}
	if same {
		t.Fatal("three years of ratings moved no rank")
	}
}

func TestChartsForEveryGenre(t *testing.T) {
	w := NewWorld(1, 45_000, epoch, DefaultRates())
	ix := NewIndex(w)
	all := func(a ChartApp) (int64, bool) { return a.Ratings, true }
	for _, g := range Genres {
		ids := ix.Chart(epoch, g.ID, 50, all)
		if len(ids) == 0 {
			t.Errorf("genre %d %s: empty chart", g.ID, g.Name)
		}
		for _, off := range ids {
			s := w.Static(off)
			p, sub := w.GenreOf(&s)
			if p.ID != g.ID && sub.ID != g.ID {
				t.Fatalf("genre %d chart holds app %d of %d/%d", g.ID, off, p.ID, sub.ID)
			}
		}
	}
}

func TestByDeveloper(t *testing.T) {
	w := NewWorld(1, 4000, epoch, DefaultRates())
	ix := NewIndex(w)
	at := epoch.Add(200 * day)
	for dev := range 20 {
		var want []int64
		for off := int64(1); off <= w.Total(at); off++ {
			if s := w.Static(off); s.Dev == dev && w.Exists(&s, at) {
				want = append(want, off)
			}
		}
		if got := ix.ByDeveloper(dev, at); !slices.Equal(got, want) {
			t.Fatalf("developer %d: %v, want %v", dev, got, want)
		}
	}
}

func TestHintTerms(t *testing.T) {
	w := NewWorld(1, 1_100_000, epoch, DefaultRates())
	got := w.HintTerms("s", 10)
	if len(got) != 10 {
		t.Fatalf("%d hints", len(got))
	}
	for _, h := range got {
		if h[0] != 's' {
			t.Fatalf("hint %q for prefix s", h)
		}
	}
	if len(w.HintTerms("zzzz", 5)) != 0 {
		t.Fatal("hints for an unknown prefix")
	}
	if !slices.Equal(got, w.HintTerms("S ", 10)) {
		t.Fatal("hints depend on case or spaces")
	}
}
