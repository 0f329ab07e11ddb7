package reviews

import (
	"cmp"
	"slices"
	"strings"
)

// Complaint themes: key-phrase grouping over an app's (or a cluster's)
// negative reviews. Each review yields candidate phrases (stemmed content
// words and adjacent pairs of them); a phrase is a theme candidate when at
// least MinThemeReviews complaints use it and complaints use it more often
// than happy reviews do (so the app's own name and its everyday vocabulary
// drop out). Candidates are taken most-mentioned first; one whose reviews
// are mostly covered already by a chosen theme that shares a word with it
// is folded into that theme ("log in" absorbs "log"; "crash" absorbs
// "crash open").

// Theme bounds.
const (
	// DefaultMaxThemes is how many themes an app or cluster keeps: the brief
	// names the top few weaknesses, not a long tail.
	DefaultMaxThemes = 5
	// MaxExamples is the example review ids kept per theme.
	MaxExamples = 3
	// MinThemeReviews: a phrase one reviewer used is an anecdote, not a theme.
	MinThemeReviews = 2
	// MaxThemeReviews bounds the reviews grouped in one call (a cluster of
	// 20 apps × 10 pages × 50 reviews); the caller passes the most recent.
	MaxThemeReviews = 10000
	// foldOverlap is the share of a candidate's reviews already in a chosen
	// theme, sharing a word with it, above which the candidate is folded in.
	foldOverlap = 0.6
	// minStemLen drops tokens too short to name anything ("ok", "hi").
	minStemLen = 3
)

// Theme is one complaint theme of a group of reviews.
type Theme struct {
	// Phrase is the theme's key phrase in its commonest surface form
	// ("crashes", "log in", "venmo integration").
	Phrase string `json:"phrase"`
	// Key is the stemmed phrase the grouping used ("crash", "log in").
	Key string `json:"key"`
	// Reviews counts the negative reviews in the theme.
	Reviews int `json:"reviews"`
	// Share is Reviews over all reviews of the group (its "share of
	// reviews"); NegativeShare is Reviews over the negative ones.
	Share         float64 `json:"share"`
	NegativeShare float64 `json:"negative_share"`
	// ExampleIDs are up to MaxExamples review ids, most negative first.
	ExampleIDs []string `json:"example_ids"`
	// AppIDs are the apps whose reviews are in the theme, most first (one id
	// for an app's own themes).
	AppIDs []int64 `json:"app_ids"`
}

// Scored is a review with its sentiment score, what ComplaintThemes reads.
type Scored struct {
	Review
	Score float64
}

// ScoreAll scores reviews (ScoreReview of title and body).
func ScoreAll(rs []Review) []Scored {
	out := make([]Scored, len(rs))
	for i, r := range rs {
		out[i] = Scored{Review: r, Score: ScoreReview(r.Title, r.Body)}
	}
	return out
}

// IsComplaint reports whether a review counts as negative for themes: one or
// two stars, or three stars with a negative text ("Glitchy", 3★).
func IsComplaint(s Scored) bool {
	return s.Rating <= 2 || (s.Rating == 3 && s.Score <= NegativeThreshold)
}

// isPraise reports a clearly happy review, the contrast set.
func isPraise(s Scored) bool { return s.Rating >= 4 && s.Score > NegativeThreshold }

// ThemeOptions tunes ComplaintThemes.
type ThemeOptions struct {
	// MaxThemes caps the themes returned (DefaultMaxThemes when <= 0).
	MaxThemes int
	// Exclude lists words that are never themes: the names of the apps and
	// developers reviewed ("instagram", "viber"), which complaints mention
	// more than praise does but which name no weakness.
	Exclude []string
}

// ComplaintThemes returns the top complaint themes of the given reviews,
// most-mentioned first. It is pure and deterministic: the same reviews in
// any order give the same themes. Reviews that are not English enough for
// the word lists (EnglishReadable) count in the shares' totals but offer no
// phrases.
func ComplaintThemes(rs []Scored, opts ThemeOptions) []Theme {
	maxThemes := opts.MaxThemes
	if maxThemes <= 0 {
		maxThemes = DefaultMaxThemes
	}
	exclude := map[string]bool{}
	for _, name := range opts.Exclude {
		for _, tok := range tokenize(name) {
			if !tok.brk {
				exclude[stemWord(tok.word)] = true
			}
		}
	}
	rs = slices.Clone(rs[:min(len(rs), MaxThemeReviews)])
	// Order-independence: work on the reviews sorted by id.
	slices.SortFunc(rs, func(a, b Scored) int { return cmp.Or(cmp.Compare(a.ID, b.ID), cmp.Compare(a.AppID, b.AppID)) })
	cands, negN, posN := themeCandidates(rs, exclude)
	if negN == 0 {
		return nil
	}
	picked := pickThemes(complaintCandidates(cands, negN, posN), maxThemes)
	out := make([]Theme, 0, len(picked))
	for _, p := range picked {
		out = append(out, themeOf(rs, p, negN))
	}
	slices.SortStableFunc(out, func(a, b Theme) int { return cmp.Or(cmp.Compare(b.Reviews, a.Reviews), cmp.Compare(a.Key, b.Key)) })
	return out
}

// themeCand is a phrase and the reviews it occurs in.
type themeCand struct {
	key      string
	words    []string
	neg, pos map[int]bool // review indexes
	surface  map[string]int
}

// themeCandidates collects every phrase of the readable complaints and
// praise in rs, with the number of complaints and of praise.
func themeCandidates(rs []Scored, exclude map[string]bool) (cands map[string]*themeCand, negN, posN int) {
	cands = map[string]*themeCand{}
	for i, r := range rs {
		complaint, praise := IsComplaint(r), isPraise(r)
		if !complaint && !praise {
			continue
		}
		if complaint {
			negN++
		} else {
			posN++
		}
		text := r.Title + " . " + r.Body
		if !EnglishReadable(text) {
			continue
		}
		for key, surf := range phrases(text) {
			if excluded(key, exclude) {
				continue
			}
			c := cands[key]
			if c == nil {
				c = &themeCand{key: key, words: strings.Fields(key), neg: map[int]bool{}, pos: map[int]bool{}, surface: map[string]int{}}
				cands[key] = c
			}
			if complaint {
				c.neg[i] = true
				c.surface[surf]++
			} else {
				c.pos[i] = true
			}
		}
	}
	return cands, negN, posN
}

// complaintCandidates keeps the phrases of at least MinThemeReviews
// complaints that are over-represented in complaints (neg/negN >
// pos/posN), most complaints first.
func complaintCandidates(cands map[string]*themeCand, negN, posN int) []*themeCand {
	var list []*themeCand
	for _, c := range cands {
		if len(c.neg) < MinThemeReviews {
			continue
		}
		if posN > 0 && len(c.neg)*posN <= len(c.pos)*negN {
			continue
		}
		list = append(list, c)
	}
	slices.SortFunc(list, func(a, b *themeCand) int {
		return cmp.Or(cmp.Compare(len(b.neg), len(a.neg)), cmp.Compare(len(b.words), len(a.words)), cmp.Compare(a.key, b.key))
	})
	return list
}

// pickedTheme is a chosen phrase and the complaints folded into it.
type pickedTheme struct {
	c    *themeCand
	docs map[int]bool
}

// pickThemes takes the candidates in order: one sharing a word with a
// theme already picked, and mostly the same complaints (foldOverlap),
// folds into it; the others become themes, at most maxThemes.
func pickThemes(list []*themeCand, maxThemes int) []*pickedTheme {
	var picked []*pickedTheme
	for _, c := range list {
		folded := false
		for _, p := range picked {
			if !sharesWord(p.c.words, c.words) {
				continue
			}
			in := 0
			for d := range c.neg {
				if p.docs[d] {
					in++
				}
			}
			if float64(in) >= foldOverlap*float64(len(c.neg)) {
				for d := range c.neg {
					p.docs[d] = true
				}
				folded = true
				break
			}
		}
		if folded || len(picked) >= maxThemes {
			continue
		}
		docs := make(map[int]bool, len(c.neg))
		for d := range c.neg {
			docs[d] = true
		}
		picked = append(picked, &pickedTheme{c: c, docs: docs})
	}
	return picked
}

// themeOf is a picked theme with its shares, examples (most negative
// first) and apps (most complaints first).
func themeOf(rs []Scored, p *pickedTheme, negN int) Theme {
	idx := make([]int, 0, len(p.docs))
	for d := range p.docs {
		idx = append(idx, d)
	}
	slices.SortFunc(idx, func(a, b int) int {
		return cmp.Or(cmp.Compare(rs[a].Score, rs[b].Score), cmp.Compare(rs[a].Rating, rs[b].Rating), cmp.Compare(rs[a].ID, rs[b].ID))
	})
	th := Theme{
		Phrase:        surfaceOf(p.c.surface, p.c.key),
		Key:           p.c.key,
		Reviews:       len(idx),
		Share:         float64(len(idx)) / float64(len(rs)),
		NegativeShare: float64(len(idx)) / float64(negN),
	}
	apps := map[int64]int{}
	for k, d := range idx {
		if k < MaxExamples {
			th.ExampleIDs = append(th.ExampleIDs, rs[d].ID)
		}
		apps[rs[d].AppID]++
	}
	for id := range apps {
		th.AppIDs = append(th.AppIDs, id)
	}
	slices.SortFunc(th.AppIDs, func(a, b int64) int { return cmp.Or(cmp.Compare(apps[b], apps[a]), cmp.Compare(a, b)) })
	return th
}

// excluded reports a phrase with an excluded word in it.
func excluded(key string, exclude map[string]bool) bool {
	for _, w := range strings.Fields(key) {
		if exclude[w] {
			return true
		}
	}
	return false
}

// englishMinShare is the share of a text's words that must be common English
// function words for the word lists to apply: English prose runs at 40-50%,
// French or Albanian at a few percent (shared words like "a", "me").
const englishMinShare = 0.2

// englishMinWords: texts this short ("Venmo login fails.") carry too few
// words to judge, and are read whatever their share.
const englishMinWords = 6

// EnglishReadable reports whether text reads as English enough for the
// sentiment lexicon and the theme word lists.
func EnglishReadable(text string) bool {
	words, common := 0, 0
	for _, t := range tokenize(text) {
		if t.brk {
			continue
		}
		words++
		if stopwords[t.word] || negators[t.word] || englishShort[t.word] {
			common++
		}
	}
	return words < englishMinWords || float64(common) >= englishMinShare*float64(words)
}

// englishShort are the commonest short English words (stopwords has only
// words of minStemLen or more runes that matter for themes).
var englishShort = setOf("i", "a", "an", "to", "of", "in", "on", "it", "is", "my", "me", "we", "be",
	"so", "do", "at", "or", "if", "as", "by", "up", "am", "no", "he", "us", "and", "the", "you", "for")

func sharesWord(a, b []string) bool {
	for _, x := range a {
		if slices.Contains(b, x) {
			return true
		}
	}
	return false
}

// surfaceOf is the commonest surface form (ties: the shorter, then the
// alphabetically first).
func surfaceOf(forms map[string]int, key string) string {
	best, n := key, 0
	for f, c := range forms {
		if c > n || (c == n && (len(f) < len(best) || (len(f) == len(best) && f < best))) {
			best, n = f, c
		}
	}
	return best
}

// phrases returns a review's candidate key phrases (stemmed unigrams and
// adjacent-content-word bigrams) mapped to one surface form each.
func phrases(text string) map[string]string {
	toks := tokenize(text)
	out := map[string]string{}
	var prevStem, prevSurf string
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		if t.brk {
			prevStem = ""
			continue
		}
		w := t.word
		// Multi-word verbs that name one feature: "log in", "sign in", "sign up".
		if (w == "log" || w == "logging" || w == "logged" || w == "sign" || w == "signing") && i+1 < len(toks) && !toks[i+1].brk {
			switch toks[i+1].word {
			case "in", "into", "on":
				w = "login"
				i++
			case "up":
				w = "signup"
				i++
			}
		}
		if w == "signin" || w == "logon" {
			w = "login"
		}
		if !themeable(w) {
			prevStem = ""
			continue
		}
		stem := stemWord(w)
		surf := w
		switch stem {
		case "login":
			surf = "log in"
		case "signup":
			surf = "sign up"
		}
		out[stem] = surf
		if prevStem != "" && prevStem != stem {
			out[prevStem+" "+stem] = prevSurf + " " + surf
		}
		prevStem, prevSurf = stem, surf
	}
	return out
}

// themeable reports whether a word can be part of a key phrase: not a stop
// word, not a pure opinion word ("terrible" says how, not what), not a
// number, long enough.
func themeable(w string) bool {
	if len(w) < minStemLen || stopwords[w] || negators[w] {
		return false
	}
	if _, ok := modifiers[w]; ok {
		return false
	}
	if _, ok := lexicon[w]; ok && !problemWords[w] {
		return false
	}
	if strings.IndexFunc(w, func(r rune) bool { return r < '0' || r > '9' }) < 0 {
		return false
	}
	return !isEmoji([]rune(w)[0])
}

// stemWord strips common English inflections so "crashes", "crashing" and
// "crashed" group as "crash". Deliberately light: it only has to make the
// forms of one word meet.
func stemWord(w string) string {
	if s, ok := stemExceptions[w]; ok {
		return s
	}
	switch {
	case strings.HasSuffix(w, "ies") && len(w) > 4:
		return w[:len(w)-3] + "y"
	case strings.HasSuffix(w, "ing") && len(w) > 5:
		return undouble(w[:len(w)-3])
	case strings.HasSuffix(w, "ed") && len(w) > 4 && !strings.HasSuffix(w, "eed"):
		return undouble(w[:len(w)-2])
	case strings.HasSuffix(w, "es") && len(w) > 4 && (strings.HasSuffix(w, "shes") || strings.HasSuffix(w, "ches") || strings.HasSuffix(w, "xes") || strings.HasSuffix(w, "sses")):
		return w[:len(w)-2]
	case strings.HasSuffix(w, "s") && len(w) > 3 && !strings.HasSuffix(w, "ss") && !strings.HasSuffix(w, "us") && !strings.HasSuffix(w, "is"):
		return w[:len(w)-1]
	}
	return w
}

// undouble turns "logg" into "log", "stopp" into "stop" (not "add" into
// "ad", nor "sell" into "sel").
func undouble(s string) string {
	n := len(s)
	if n >= 3 && s[n-1] == s[n-2] && strings.ContainsRune("bgmnprt", rune(s[n-1])) {
		return s[:n-1]
	}
	return s
}

var stemExceptions = map[string]string{
	"ads": "ad", "advert": "ad", "adverts": "ad", "advertisement": "ad", "advertisements": "ad",
	"advertising": "ad", "crashes": "crash", "crashed": "crash", "crashing": "crash",
	"froze": "freeze", "frozen": "freeze", "freezing": "freeze", "freezes": "freeze",
	"glitches": "glitch", "glitchy": "glitch", "buggy": "bug", "bugs": "bug", "laggy": "lag",
	"logins": "login", "subscriptions": "subscription", "subscribed": "subscription", "subscribe": "subscription",
	"notifications": "notification", "notif": "notification", "notifs": "notification",
	"updates": "update", "updated": "update", "updating": "update", "charged": "charge", "charges": "charge",
	"suspended": "suspend", "suspension": "suspend", "banned": "ban", "banning": "ban", "bans": "ban",
	"accounts": "account", "passwords": "password", "prices": "price", "pricing": "price",
	"loading": "load", "loads": "load", "loaded": "load", "syncing": "sync", "syncs": "sync", "synced": "sync",
}

// problemWords are opinion-lexicon words that also name the problem, so they
// may be themes ("crash", "ads", "slow", "refund").
var problemWords = setOf(
	"crash", "crashes", "crashed", "crashing", "bug", "bugs", "buggy", "glitch", "glitches", "glitchy",
	"freeze", "freezes", "frozen", "freezing", "lag", "laggy", "lags", "slow", "error", "errors",
	"ads", "advertisements", "expensive", "overpriced", "refund", "suspended", "banned", "hacked",
	"locked", "charged", "overcharged", "drain", "drains", "missing", "lost", "stuck", "spam",
	"cancel", "cancelled", "canceled", "disabled", "outdated", "clunky", "bloated", "quits",
	"miscalculated", "incorrect", "inaccurate", "confusing", "complicated", "stolen", "update", "updates",
)

var stopwords = setOf(
	"the", "and", "for", "are", "but", "not", "you", "all", "any", "can", "had", "her", "was", "one",
	"our", "out", "has", "him", "his", "how", "man", "new", "now", "old", "see", "two", "way", "who",
	"did", "its", "let", "put", "say", "she", "too", "use", "this", "that", "with", "have", "from", "through", "add", "added", "adding",
	"they", "will", "would", "there", "their", "what", "about", "which", "when", "make", "like",
	"time", "just", "know", "take", "into", "year", "your", "some", "could", "them", "than", "then",
	"look", "only", "come", "over", "think", "also", "back", "after", "work", "first", "even", "want",
	"because", "these", "give", "most", "very", "were", "been", "being", "more", "other", "such",
	"here", "where", "why", "while", "each", "every", "much", "many", "lot", "lots", "thing", "things",
	"still", "really", "app", "apps", "application", "please", "get", "got", "gets", "getting", "also",
	"using", "used", "uses", "need", "needs", "try", "tried", "trying", "tries", "going", "ever",
	"anything", "everything", "something", "nothing", "people", "i'm", "ive", "i've", "it's", "thats",
	"that's", "don't", "doesn't", "can't", "won't", "didn't", "isn't", "should", "does", "doing",
	"done", "same", "own", "those", "again", "since", "before", "until", "able", "way", "keep", "keeps",
	"kept", "said", "says", "tell", "told", "made", "makes", "day", "days", "week", "weeks", "month",
	"months", "years", "today", "yesterday", "last", "next", "another", "well", "good", "great",
	"you're", "youre", "i'd", "i'll", "they're", "there's", "what's", "let's", "he's", "she's",
	"we're", "we've", "you've", "it'll", "im", "dont", "doesnt", "cant", "wont", "didnt", "isnt",
	"way", "yet", "though", "however", "although", "instead", "actually", "literally", "basically",
	"seems", "seem", "seemed", "go", "goes", "went", "gone", "put", "yes", "yeah", "hey", "hello",
	"thank", "thanks", "anyone", "someone", "everyone", "everybody", "somebody", "guys", "star", "stars",
	"rating", "review", "reviews", "version", "phone", "iphone", "ipad", "ios", "apple", "store",
	"option", "options", "feature", "features", "use", "via", "per", "etc", "able", "allow", "allows",
	"fix", "fixed", "fixing", "fixes", "help", "helps", "why", "how", "who", "its", "wasn't", "wouldn't",
)
