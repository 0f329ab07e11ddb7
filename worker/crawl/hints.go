package crawl

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"

	"storecrawl/internal/objects"
	"storecrawl/worker/appstore"
	"storecrawl/worker/d1"
	"storecrawl/worker/logx"
	"storecrawl/worker/ratelimit"
	"storecrawl/worker/upstream"
)

// Keyword sourcing: a term becomes a keyword when people type it. The App
// Store's search field completes a prefix to the terms most typed
// (appstore.ParseHints); the keyword-hints task asks it for prefixes
// taken from seeds and keeps the terms it answers as pending keywords
// (source 'hints'), which keyword mapping then searches by value.
//
// Seeds, each a prefix with a value (what its terms are expected to be
// worth): the words of a genre's name (HintGenreValue), the words of the
// names of the apps at the top of that genre's charts (HintChartValue at
// rank 1, less down the chart, summed over the apps sharing a word: a
// word many charted apps carry is what the category is searched by), and
// prefixes waiting in keyword_hint_prefixes: an operator's seed
// (HintOperatorSeedValue, SeedPrefixStmt) or a term of a full answer,
// which may hide more completions (its prefix's value × HintChildDecay).
// A run takes one genre (a cursor over category_scans, so each genre
// comes round every few hours), adds the best waiting prefixes, drops
// those asked within their rest, and asks the best HintRequestsPerRun.
//
// Budget. A new keyword costs its first search and clustering (~116 rows
// written, docs/scale.md) whatever the catalogue's growth, so the day's
// new keywords are held to what the plan affords, not to the new apps:
// at the design's share (100,000 keywords at 1.1M apps, 0.091 a new app)
// the fill month's 37,767 new apps a day would bring ~3,400 a day, 11M
// rows written a month, more than the fill month leaves of the plan's
// 50M. HintNewKeywordsPerDay takes half that pace: the design's keywords
// in about two months, and a steady month's ~100 a day far under it.
// Requests: an answer carries about ten terms, most of them known once a
// category has been asked, so HintRequestsPerDay asks enough prefixes to
// find that many new terms, and stays far under the hints host's limit.

// Sourcing bounds and values.
const (
	// HintRunEvery is the keyword-hints task's period.
	HintRunEvery = 10 * time.Minute
	// HintRequestsPerDay bounds the hints asked in a day (one every two
	// minutes on average); a run asks its share (HintRequestsPerRun).
	HintRequestsPerDay = 720
	// HintNewKeywordsPerDay bounds the keywords the sourcing adds in a
	// day: about half the design's share at the fill month's pace (0.091
	// a new app × 37,767 new apps a day), 6M rows written a month at most.
	HintNewKeywordsPerDay = 1800
	// HintRequestsPerRun and HintNewKeywordsPerRun are a run's shares of
	// the day's budgets (144 runs a day): 5 and 12.
	HintRequestsPerRun    = HintRequestsPerDay / hintRunsPerDay
	HintNewKeywordsPerRun = HintNewKeywordsPerDay / hintRunsPerDay
	hintRunsPerDay        = int(24 * time.Hour / HintRunEvery)
	// HintGenresPerRun bounds the genres a run reads for seeds (a chart
	// read each), until their seeds fill HintRequestsPerRun.
	HintGenresPerRun = HintRequestsPerRun

	// HintPrefixRest: a prefix is asked again after a month (completions
	// move slowly; a new month's terms are found then).
	HintPrefixRest = 30 * 24 * time.Hour
	// HintEmptyRest: a prefix that completed to nothing rests three months.
	HintEmptyRest = 90 * 24 * time.Hour
	// HintMinPrefixLen: a shorter prefix completes to the store's most
	// typed terms whatever the seed, not to the seed's.
	HintMinPrefixLen = 3

	// HintOperatorSeedValue: an operator's seed is asked before any other
	// prefix (the markets' top score).
	HintOperatorSeedValue = MaxOpportunityScore
	// HintGenreValue: a genre's name words, what its apps are searched by.
	HintGenreValue = 50.0
	// HintChartValue is a chart's first rank's word; rank r adds
	// HintChartValue × (1 − (r−1)/HintChartRanks).
	HintChartValue = 20.0
	// HintChartRanks: the top of each chart of the genre is read (3
	// charts × 10 ranks, by primary key).
	HintChartRanks = 10
	// HintFullAnswer: an answer this long may hide more completions, so
	// its most typed longer term that the run keeps as a new keyword
	// becomes a prefix (HintChildrenPerAnswer, at HintChildDecay of its
	// prefix's value): a row and an index entry each, so one an answer
	// keeps a new keyword's share under HintKeywordRowsMax.
	HintFullAnswer        = 10
	HintChildrenPerAnswer = 1
	HintChildDecay        = 0.5
	// HintTermValue: a new keyword's value over FirstSearchValue for the
	// first completion of its answer, less down the answer (the order is
	// how much it is typed).
	HintTermValue = 10.0

	hintsCursorName = "keyword-hints"
)

// HintSeed is a prefix to ask and what its completions are expected to be
// worth.
type HintSeed struct {
	Prefix string  `json:"prefix"`
	Value  float64 `json:"value"`
}

// HintPrefixState is what keyword_hint_prefixes holds of an asked prefix.
type HintPrefixState struct {
	AskedAt time.Time
	Terms   int
}

// ChartedApp is an app at the top of a chart of the run's genre.
type ChartedApp struct {
	Name string
	Rank int
}

// hintStopWords are words no one types alone to find an app.
var hintStopWords = map[string]bool{
	"and": true, "app": true, "apps": true, "for": true, "free": true, "the": true, "with": true, "your": true,
	"pro": true, "plus": true, "lite": true, "you": true, "new": true, "best": true, "all": true, "one": true,
}

// hintWords are the lower-case words of s that may be prefixes.
func hintWords(s string) []string {
	ws := strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	out := ws[:0]
	for _, w := range ws {
		if len([]rune(w)) >= HintMinPrefixLen && !hintStopWords[w] && strings.IndexFunc(w, unicode.IsLetter) >= 0 {
			out = append(out, w)
		}
	}
	return out
}

// GenreSeeds are a genre name's words ("Health & Fitness": health, fitness).
func GenreSeeds(name string) []HintSeed {
	var out []HintSeed
	for _, w := range hintWords(name) {
		out = append(out, HintSeed{w, HintGenreValue})
	}
	return out
}

// ChartSeeds are the words of charted apps' names, each valued by its
// apps' ranks (summed: a word several charted apps carry names the
// category).
func ChartSeeds(apps []ChartedApp) []HintSeed {
	var out []HintSeed
	for _, a := range apps {
		if a.Rank < 1 || a.Rank > HintChartRanks {
			continue
		}
		v := HintChartValue * float64(HintChartRanks-a.Rank+1) / HintChartRanks
		seen := map[string]bool{}
		for _, w := range hintWords(a.Name) {
			if !seen[w] {
				seen[w] = true
				out = append(out, HintSeed{w, v})
			}
		}
	}
	return out
}

// MergeSeeds sums the values of a prefix's seeds, each capped at
// HintOperatorSeedValue, in value order (ties by prefix).
func MergeSeeds(seeds ...[]HintSeed) []HintSeed {
	sum := map[string]float64{}
	for _, ss := range seeds {
		for _, s := range ss {
			if p := normalPrefix(s.Prefix); p != "" {
				sum[p] += s.Value
			}
		}
	}
	out := make([]HintSeed, 0, len(sum))
	for p, v := range sum {
		out = append(out, HintSeed{p, min(v, HintOperatorSeedValue)})
	}
	sortSeeds(out)
	return out
}

func sortSeeds(s []HintSeed) {
	slices.SortFunc(s, func(a, b HintSeed) int {
		return cmp.Or(cmp.Compare(b.Value, a.Value), strings.Compare(a.Prefix, b.Prefix))
	})
}

// normalPrefix is a prefix as asked: lower case, single spaces; "" when
// shorter than HintMinPrefixLen.
func normalPrefix(p string) string {
	p = strings.Join(strings.Fields(strings.ToLower(p)), " ")
	if len([]rune(p)) < HintMinPrefixLen {
		return ""
	}
	return p
}

// Resting is whether a prefix asked as st is still resting at now: a
// month after an answer with terms, three after an empty one.
func Resting(st HintPrefixState, now time.Time) bool {
	if st.AskedAt.IsZero() {
		return false
	}
	rest := HintPrefixRest
	if st.Terms == 0 {
		rest = HintEmptyRest
	}
	return now.Before(st.AskedAt.Add(rest))
}

// ChoosePrefixes is the run's asks: the best n of the candidates (merged
// seeds and waiting prefixes) whose prefix is not resting at now.
func ChoosePrefixes(cands []HintSeed, state map[string]HintPrefixState, now time.Time, n int) []HintSeed {
	cands = MergeSeeds(cands)
	out := make([]HintSeed, 0, min(n, len(cands)))
	for _, c := range cands {
		if len(out) == n {
			break
		}
		if st, ok := state[c.Prefix]; ok && Resting(st, now) {
			continue
		}
		out = append(out, c)
	}
	return out
}

// HintAnswer is one prefix's completions, in the answer's order.
type HintAnswer struct {
	Prefix HintSeed
	Terms  []string
}

// HintKeyword is a term to keep as a pending keyword, with its value.
type HintKeyword struct {
	Keyword string
	Value   float64
}

// HintTermKeywordValue is a new keyword's value from its place i in an
// answer of n terms: FirstSearchValue plus HintTermValue for the first,
// less down the answer.
func HintTermKeywordValue(i, n int) float64 {
	if n <= 0 {
		return FirstSearchValue
	}
	return FirstSearchValue + HintTermValue*(1-float64(i)/float64(n))
}

// NewHintKeywords are the answers' terms no keyword holds yet (known),
// each once, the most valuable first, at most n: the run's new keywords.
func NewHintKeywords(answers []HintAnswer, known map[string]bool, n int) []HintKeyword {
	best := map[string]float64{}
	for _, a := range answers {
		for i, t := range a.Terms {
			t = strings.ToLower(strings.TrimSpace(t))
			if t == "" || known[t] || len(t) > appstore.MaxHintTermLen {
				continue
			}
			best[t] = max(best[t], HintTermKeywordValue(i, len(a.Terms)))
		}
	}
	out := make([]HintKeyword, 0, len(best))
	for k, v := range best {
		out = append(out, HintKeyword{k, v})
	}
	slices.SortFunc(out, func(a, b HintKeyword) int {
		return cmp.Or(cmp.Compare(b.Value, a.Value), strings.Compare(a.Keyword, b.Keyword))
	})
	return out[:min(n, len(out))]
}

// Expansions are the prefixes a full answer adds: its first
// HintChildrenPerAnswer terms that extend the prefix by more words and
// are new keywords (kept), at HintChildDecay of its value. A short answer
// has shown all there is; a known term was an answer's before.
func Expansions(a HintAnswer, kept map[string]bool) []HintSeed {
	if len(a.Terms) < HintFullAnswer {
		return nil
	}
	var out []HintSeed
	for _, t := range a.Terms {
		p := normalPrefix(t)
		if p == "" || !kept[p] || !strings.HasPrefix(p, a.Prefix.Prefix+" ") {
			continue
		}
		out = append(out, HintSeed{p, a.Prefix.Value * HintChildDecay})
		if len(out) == HintChildrenPerAnswer {
			break
		}
	}
	return out
}

// The sourcing's SQL.
const (
	// hintGenreSQL is the genre after the cursor (?1), by primary key.
	hintGenreSQL = `SELECT genre_id, name FROM category_scans WHERE genre_id > ?1 ORDER BY genre_id LIMIT ?2`
	// hintChartSQL is the top ?3 ranks of each of the genre's (?2) charts
	// in country ?1: a primary-key range a chart, with the apps' names.
	hintChartSQL = `SELECT COALESCE(a.name, '') AS name, min(p.rank) AS rank FROM chart_positions p JOIN app_registry a ON a.track_id = p.track_id
WHERE p.country = ?1 AND p.collection IN (SELECT value FROM json_each(?4)) AND p.genre_id = ?2 AND p.rank <= ?3
GROUP BY p.track_id`
	// hintPendingSQL is the best ?1 waiting prefixes, from their partial index.
	hintPendingSQL = `SELECT prefix, value FROM keyword_hint_prefixes WHERE asked_at IS NULL ORDER BY value DESC LIMIT ?1`
	// hintStateSQL is what is known of the candidate prefixes (?1, a JSON
	// array), by primary key.
	hintStateSQL = `SELECT prefix, asked_at, COALESCE(terms, 0) AS terms FROM keyword_hint_prefixes
WHERE prefix IN (SELECT value FROM json_each(?1)) AND asked_at IS NOT NULL`
	// hintKnownSQL is which of the terms (?1) are keywords already, by
	// the keywords' unique index.
	hintKnownSQL = `SELECT keyword FROM crawl_keywords WHERE keyword IN (SELECT value FROM json_each(?1))`
	// hintAskedSQL records an asked prefix (?1, its value ?2, at ?3, ?4 terms).
	hintAskedSQL = `INSERT INTO keyword_hint_prefixes (prefix, value, asked_at, terms) VALUES (?1, ?2, ?3, ?4)
ON CONFLICT (prefix) DO UPDATE SET value = excluded.value, asked_at = excluded.asked_at, terms = excluded.terms`
	// hintWaitSQL adds a prefix to ask later (?1, value ?2); a known one
	// is left as it is.
	hintWaitSQL = `INSERT INTO keyword_hint_prefixes (prefix, value) VALUES (?1, ?2) ON CONFLICT (prefix) DO NOTHING`
	// hintKeywordSQL queues a term as a pending keyword (?1, source ?2,
	// at ?3, value ?4); a term a keyword holds meanwhile is left alone.
	hintKeywordSQL = `INSERT INTO crawl_keywords (keyword, source, created_at, value) VALUES (?1, ?2, ?3, ?4)
ON CONFLICT (keyword) DO NOTHING`
)

// SeedPrefixStmt queues an operator's seed term as a prefix the sourcing
// asks first (HintOperatorSeedValue): its completions, not the seed
// itself, become keywords. A waiting or asked prefix is left as it is.
func SeedPrefixStmt(term string) (d1.Stmt, bool) {
	p := normalPrefix(term)
	if p == "" {
		return d1.Stmt{}, false
	}
	return d1.Stmt{SQL: hintWaitSQL, Args: []any{p, HintOperatorSeedValue}}, true
}

// HintStatements records a run: each asked prefix, the prefixes full
// answers add (Expansions of the new keywords), the new keywords, and the
// genre cursor (cursorStmts).
func HintStatements(answers []HintAnswer, keywords []HintKeyword, cursorStmts []d1.Stmt, now time.Time) []d1.Stmt {
	ts := d1.Time(now)
	var stmts []d1.Stmt
	for _, a := range answers {
		stmts = append(stmts, d1.Stmt{SQL: hintAskedSQL, Args: []any{a.Prefix.Prefix, a.Prefix.Value, ts, len(a.Terms)}})
	}
	kept := map[string]bool{}
	for _, k := range keywords {
		kept[k.Keyword] = true
	}
	for _, a := range answers {
		for _, c := range Expansions(a, kept) {
			stmts = append(stmts, d1.Stmt{SQL: hintWaitSQL, Args: []any{c.Prefix, c.Value}})
		}
	}
	for _, k := range keywords {
		stmts = append(stmts, d1.Stmt{SQL: hintKeywordSQL, Args: []any{k.Keyword, KeywordSourceHints, ts, k.Value}})
	}
	return append(stmts, cursorStmts...)
}

// HintResult is what one sourcing run did.
type HintResult struct {
	Genre       string   `json:"genre,omitempty"`
	Asked       int      `json:"asked"`
	Terms       int      `json:"terms"`
	NewKeywords int      `json:"new_keywords"`
	Prefixes    []string `json:"prefixes,omitempty"`
	RateLimited bool     `json:"rate_limited,omitempty"`
	Error       string   `json:"error,omitempty"`
}

// Summary is the run's line in the scheduler's status.
func (r HintResult) Summary() string {
	return fmt.Sprintf("%s: %d prefixes asked, %d terms, %d new keywords", r.Genre, r.Asked, r.Terms, r.NewKeywords)
}

// SourceHints runs one sourcing run: the next genre's seeds and the
// waiting prefixes, the best HintRequestsPerRun of them not resting asked
// of the hints (get, through the hints' limit), the new terms (at most
// HintNewKeywordsPerRun) queued as keywords, in one batch. A refusal
// stops the asks; what was answered is kept.
func SourceHints(ctx context.Context, s D1Store, get func(ctx context.Context, url string) upstream.Response, hintsBase, country string, now time.Time) HintResult {
	var res HintResult
	cur, err := d1.ReadCursor(ctx, s.DB, hintsCursorName)
	if err != nil {
		return HintResult{Error: "cursor: " + err.Error()}
	}
	var genres []struct {
		GenreID int    `json:"genre_id"`
		Name    string `json:"name"`
	}
	if err := s.DB.Query(ctx, &genres, hintGenreSQL, cur.Int(), HintGenresPerRun); err != nil {
		return HintResult{Error: "genre: " + err.Error()}
	}
	if len(genres) == 0 && cur.Int() != 0 { // past the last: start over
		if err := s.DB.Query(ctx, &genres, hintGenreSQL, 0, HintGenresPerRun); err != nil {
			return HintResult{Error: "genre: " + err.Error()}
		}
	}
	// Genres in turn until their seeds fill the run's asks: a genre of one
	// word and no charts yet (a fresh catalogue) leaves the rest of the
	// run's asks to the next genres instead of to the next run.
	var seeds []HintSeed
	var cursorStmts []d1.Stmt
	var names []string
	for _, g := range genres {
		var charted []struct {
			Name string `json:"name"`
			Rank int    `json:"rank"`
		}
		if err := s.DB.Query(ctx, &charted, hintChartSQL, country, g.GenreID, HintChartRanks, jsonArray(appstore.ChartCollections)); err != nil {
			return HintResult{Error: "charts: " + err.Error()}
		}
		apps := make([]ChartedApp, len(charted))
		for i, c := range charted {
			apps[i] = ChartedApp{c.Name, c.Rank}
		}
		seeds = append(seeds, GenreSeeds(g.Name)...)
		seeds = append(seeds, ChartSeeds(apps)...)
		names = append(names, g.Name)
		cursorStmts = cur.Write(g.GenreID, now)
		if len(seeds) >= HintRequestsPerRun {
			break
		}
	}
	res.Genre = strings.Join(names, ", ")
	var pending []HintSeed
	if err := s.DB.Query(ctx, &pending, hintPendingSQL, HintRequestsPerRun); err != nil {
		return HintResult{Error: "pending prefixes: " + err.Error()}
	}
	cands := MergeSeeds(seeds, pending)
	names = make([]string, len(cands))
	for i, c := range cands {
		names[i] = c.Prefix
	}
	var states []struct {
		Prefix  string `json:"prefix"`
		AskedAt string `json:"asked_at"`
		Terms   int    `json:"terms"`
	}
	if len(names) > 0 {
		if err := s.DB.Query(ctx, &states, hintStateSQL, jsonArray(names)); err != nil {
			return HintResult{Error: "prefix state: " + err.Error()}
		}
	}
	state := map[string]HintPrefixState{}
	for _, st := range states {
		at, _ := time.Parse(d1.Layout, st.AskedAt)
		state[st.Prefix] = HintPrefixState{AskedAt: at, Terms: st.Terms}
	}
	asks := ChoosePrefixes(cands, state, now, HintRequestsPerRun)
	answers := askHints(ratelimit.Reserved(ctx, len(asks)), asks, get, hintsBase, &res)
	var terms []string
	for _, a := range answers {
		res.Prefixes = append(res.Prefixes, a.Prefix.Prefix)
		res.Terms += len(a.Terms)
		terms = append(terms, a.Terms...)
	}
	res.Asked = len(answers)
	known := map[string]bool{}
	if len(terms) > 0 {
		var rows []struct {
			Keyword string `json:"keyword"`
		}
		if err := s.DB.Query(ctx, &rows, hintKnownSQL, jsonArray(terms)); err != nil {
			res.Error = joinErr(res.Error, "known keywords: "+err.Error())
			return res
		}
		for _, r := range rows {
			known[r.Keyword] = true
		}
	}
	kws := NewHintKeywords(answers, known, HintNewKeywordsPerRun)
	if res.RateLimited || res.Error != "" {
		cursorStmts = nil // the genre is asked again next run
	}
	if stmts := HintStatements(answers, kws, cursorStmts, now); len(stmts) > 0 {
		if _, err := s.DB.ExecAtomic(ctx, stmts...); err != nil {
			res.Error = joinErr(res.Error, "save: "+err.Error())
			return res
		}
	}
	res.NewKeywords = len(kws)
	return res
}

// askHints asks each prefix in turn; a refusal stops the asks (the rest
// wait for a later run), a failure skips its prefix (it is asked again).
func askHints(ctx context.Context, asks []HintSeed, get func(ctx context.Context, url string) upstream.Response, base string, res *HintResult) []HintAnswer {
	var out []HintAnswer
	for _, p := range asks {
		resp := get(ctx, appstore.HintsURL(base, p.Prefix))
		if resp.Class == objects.ClassRateLimit {
			res.RateLimited = true
			logx.Event("crawl.hints_refused", map[string]any{"level": logx.Warn, "prefix": p.Prefix, "left": len(asks) - len(out)})
			break
		}
		if resp.Class != objects.ClassOK {
			res.Error = joinErr(res.Error, fmt.Sprintf("hints %q: %v", p.Prefix, resp.Err))
			continue
		}
		hints, err := appstore.ParseHints(resp.Body)
		resp.Release()
		if err != nil {
			res.Error = joinErr(res.Error, fmt.Sprintf("hints %q: %v", p.Prefix, err))
			continue
		}
		a := HintAnswer{Prefix: p}
		for _, h := range hints {
			a.Terms = append(a.Terms, strings.ToLower(h.Term))
		}
		out = append(out, a)
	}
	return out
}

func jsonArray(xs []string) string {
	b, _ := json.Marshal(xs)
	return string(b)
}

// HintHotQueries are the sourcing's reads.
func HintHotQueries() []d1.NamedQuery {
	return []d1.NamedQuery{
		{Name: "hints genre", SQL: hintGenreSQL, Args: []any{6000, HintGenresPerRun}},
		{Name: "hints charted apps", SQL: hintChartSQL, Args: []any{"us", 6000, HintChartRanks, jsonArray(appstore.ChartCollections)}},
		{Name: "hints pending prefixes", SQL: hintPendingSQL, Args: []any{HintRequestsPerRun}},
		{Name: "hints prefix state", SQL: hintStateSQL, Args: []any{`["budget","chess"]`}},
		{Name: "hints known terms", SQL: hintKnownSQL, Args: []any{`["budget","budget planner"]`}},
	}
}
