//go:build !js

package crawl

import (
	"context"
	"fmt"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"storecrawl/internal/objects"
	"storecrawl/worker/appstore"
	"storecrawl/worker/d1"
	"storecrawl/worker/d1/d1test"
	"storecrawl/worker/upstream"
)

func TestHintSeedsAndChoice(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	genre := GenreSeeds("Health & Fitness")
	charts := ChartSeeds([]ChartedApp{{"Fitness Coach: Home Workouts", 1}, {"Yoga for Beginners", 6}, {"Step Counter Pro", 10}, {"Off Chart", 11}})
	got := MergeSeeds(genre, charts)
	// fitness: the genre's 50 and the first rank's 20; "for", "pro" are
	// not typed alone; rank 11 is past HintChartRanks.
	want := []HintSeed{{"fitness", 70}, {"health", 50}, {"coach", 20}, {"home", 20}, {"workouts", 20}, {"beginners", 10}, {"yoga", 10}, {"counter", 2}, {"step", 2}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("seeds %v\nwant  %v", got, want)
	}
	// Resting: asked a week ago with terms (a month's rest), empty two
	// months ago (three months' rest), asked 31 days ago (due again).
	state := map[string]HintPrefixState{
		"fitness": {AskedAt: now.Add(-7 * 24 * time.Hour), Terms: 10},
		"health":  {AskedAt: now.Add(-60 * 24 * time.Hour), Terms: 0},
		"coach":   {AskedAt: now.Add(-31 * 24 * time.Hour), Terms: 4},
	}
	asks := ChoosePrefixes(append(got, HintSeed{"fitness tracker", 35}), state, now, 3)
	if !reflect.DeepEqual(asks, []HintSeed{{"fitness tracker", 35}, {"coach", 20}, {"home", 20}}) {
		t.Fatalf("asks %v", asks)
	}
	if len(ChoosePrefixes(got, nil, now, HintRequestsPerRun)) != min(len(got), HintRequestsPerRun) {
		t.Fatal("the run's share is not asked")
	}
	if HintRequestsPerRun != 5 || HintNewKeywordsPerRun != 12 {
		t.Fatalf("per run: %d asks, %d new keywords", HintRequestsPerRun, HintNewKeywordsPerRun)
	}
}

func TestNewHintKeywordsAndExpansions(t *testing.T) {
	full := HintAnswer{Prefix: HintSeed{"budget", 60}, Terms: []string{"budget", "budget planner", "budgeting", "budget app", "budget tracker",
		"budget planner app", "budget book", "budget calculator", "budget app free", "budgets"}}
	short := HintAnswer{Prefix: HintSeed{"chess", 40}, Terms: []string{"chess", "Budget Planner", "chess clock"}}
	kws := NewHintKeywords([]HintAnswer{full, short}, map[string]bool{"budget": true, "chess": true}, 4)
	// The best place of each new term: "budget planner" second of ten
	// (19) and second of three (16.7): 19.
	want := []HintKeyword{{"budget planner", HintTermKeywordValue(1, 10)}, {"budgeting", HintTermKeywordValue(2, 10)},
		{"budget app", HintTermKeywordValue(3, 10)}, {"budget tracker", HintTermKeywordValue(4, 10)}}
	if !reflect.DeepEqual(kws, want) {
		t.Fatalf("new keywords %v\nwant %v", kws, want)
	}
	kept := map[string]bool{}
	for _, k := range kws {
		kept[k.Keyword] = true
	}
	delete(kept, "budget planner") // as if known: its answer was asked before
	if e := Expansions(full, kept); !reflect.DeepEqual(e, []HintSeed{{"budget app", 30}}) {
		t.Fatalf("expansions of a full answer: %v", e)
	}
	if e := Expansions(short, kept); e != nil {
		t.Fatalf("a short answer showed all: %v", e)
	}
	if st, ok := SeedPrefixStmt("  Habit  Tracker "); !ok || st.Args[0] != "habit tracker" || st.Args[1] != HintOperatorSeedValue {
		t.Fatalf("seed %+v", st)
	}
}

// hintsUpstream answers the hints from a fixed vocabulary, most typed
// first, and counts what it was asked.
type hintsUpstream struct {
	vocab  []string
	asked  []string
	refuse int // refuse the asks from this one on (0: never)
}

func (h *hintsUpstream) get(_ context.Context, u string) upstream.Response {
	pu, _ := url.Parse(u)
	q := pu.Query().Get("q")
	h.asked = append(h.asked, q)
	if h.refuse > 0 && len(h.asked) >= h.refuse {
		return upstream.Response{Class: objects.ClassRateLimit, Remaining: -1, Err: fmt.Errorf("429")}
	}
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?><plist version="1.0"><dict><key>title</key><string>Suggestions</string><key>hints</key><array>`)
	n := 0
	for _, v := range h.vocab {
		if strings.HasPrefix(v, q) && n < HintFullAnswer {
			fmt.Fprintf(&b, `<dict><key>term</key><string>%s</string><key>url</key><string>u</string></dict>`, v)
			n++
		}
	}
	b.WriteString(`</array></dict></plist>`)
	return upstream.Response{Class: objects.ClassOK, Body: []byte(b.String()), Remaining: -1}
}

// TestSourceHintsOnD1 runs the sourcing on the real SQL: a genre's seeds
// asked, their new terms queued as keywords (source 'hints'), the asked
// prefixes resting, full answers' longer terms waiting; the next run
// takes the next genre and the waiting prefixes; the rows written are
// counted.
func TestSourceHintsOnD1(t *testing.T) {
	db, drv := d1test.New(t)
	s := D1Store{DB: db}
	ctx := context.Background()
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	drv.Exec(t, `DELETE FROM category_scans`)
	drv.Exec(t, `INSERT INTO category_scans (genre_id, name, tier) VALUES (6015, 'Finance', 'high'), (6014, 'Games', 'high')`)
	for i, name := range []string{"Budget Planner & Tracker", "Money Manager", "Crypto Wallet"} {
		id := 500 + i
		drv.Exec(t, `INSERT INTO app_registry (track_id, name) VALUES (?, ?)`, id, name)
		drv.Exec(t, `INSERT INTO chart_positions (country, collection, genre_id, rank, track_id, seen_at) VALUES ('us', ?, 6015, ?, ?, ?)`,
			appstore.ChartCollections[0], i+1, id, d1.Time(now))
	}
	drv.Exec(t, `INSERT INTO crawl_keywords (keyword, source, created_at, value) VALUES ('budget', 'hints', ?, 20)`, d1.Time(now))
	up := &hintsUpstream{vocab: []string{"budget", "budget planner", "budget app", "budget tracker", "budgeting", "budget book",
		"budget calculator", "budget planner app", "budget app free", "budgets", "budget planner free",
		"finance", "finance app", "money", "money manager", "money transfer", "crypto", "crypto wallet", "tracker", "planner", "manager", "wallet",
		"games", "games for kids", "games free"}}

	before := drv.TotalChanges(t)
	r := SourceHints(ctx, s, up.get, "http://hints", "us", now)
	written := drv.TotalChanges(t) - before
	t.Logf("run 1: %s, asked %q; %d rows written", r.Summary(), up.asked, written)
	// Games (6014) comes first by id: one word, no charts, so the run goes
	// on to Finance for the rest of its asks.
	if r.Error != "" || r.Genre != "Games, Finance" || len(up.asked) < 3 || up.asked[0] != "finance" && up.asked[0] != "games" ||
		!slices.Contains(up.asked, "games") || !slices.Contains(up.asked, "finance") || !slices.Contains(up.asked, "budget") || r.NewKeywords < 3 {
		t.Fatalf("run 1: %+v asked %q", r, up.asked)
	}
	// budget (charted first: 20) is full: its most typed new longer term
	// waits, at half its value.
	if n := drv.Int(t, `SELECT count(*) FROM keyword_hint_prefixes WHERE asked_at IS NULL`); n != 1 {
		t.Fatalf("waiting prefixes: %d", n)
	}
	if v := drv.Rows(t, `SELECT source, value, searched_at FROM crawl_keywords WHERE keyword = 'budget planner'`); len(v) != 1 || v[0]["source"] != KeywordSourceHints || v[0]["searched_at"] != nil {
		t.Fatalf("budget planner: %v", v)
	}
	if v := drv.Rows(t, `SELECT value FROM crawl_keywords WHERE keyword = 'budget'`)[0]["value"]; v != 20.0 {
		t.Fatalf("a known keyword was rewritten: %v", v)
	}
	// Rows: each asked prefix, each waiting one, each new keyword, the cursor.
	asked, waiting := drv.Int(t, `SELECT count(*) FROM keyword_hint_prefixes WHERE asked_at = ?`, d1.Time(now)), int64(1)
	if want := asked + waiting + int64(r.NewKeywords) + 1; written != want || r.NewKeywords > HintNewKeywordsPerRun {
		t.Fatalf("run 1 wrote %d rows, want %d (%d asked, %d waiting, %d keywords, the cursor)", written, want, asked, waiting, r.NewKeywords)
	}
	// Run 2 wraps to Games and Finance, whose asked prefixes rest: the waiting
	// prefix is asked, with the seeds run 1's share did not reach; none
	// run 1 asked (they rest).
	first := up.asked
	up.asked = nil
	r = SourceHints(ctx, s, up.get, "http://hints", "us", now.Add(HintRunEvery))
	if r.Genre != "Games, Finance" || !slices.Contains(up.asked, "budget planner") || len(up.asked) > HintRequestsPerRun {
		t.Fatalf("run 2: %+v asked %q", r, up.asked)
	}
	for _, p := range up.asked {
		if slices.Contains(first, p) {
			t.Fatalf("run 2 asked %q again within its rest: %q", p, up.asked)
		}
	}
	// A refusal stops the asks; what was answered is kept, the genre not passed.
	up.asked, up.refuse = nil, 2
	drv.Exec(t, `DELETE FROM keyword_hint_prefixes`)
	cur := drv.Int(t, `SELECT cursor FROM sweep_cursors WHERE name = ?`, hintsCursorName)
	r = SourceHints(ctx, s, up.get, "http://hints", "us", now.Add(3*HintRunEvery))
	if !r.RateLimited || r.Asked != 1 || drv.Int(t, `SELECT cursor FROM sweep_cursors WHERE name = ?`, hintsCursorName) != cur {
		t.Fatalf("refused: %+v, asked %q", r, up.asked)
	}
}
