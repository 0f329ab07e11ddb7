package reviews

import (
	"math"
	"storecrawl/worker/appstore"
	"strings"
	"unicode"
)

// Sentiment is a deterministic, offline lexicon scorer: word weights, with
// negation ("not good", "never works"), intensifiers ("very slow"),
// downtoners ("a bit slow"), a contrast rule ("great app but crashes"
// leans on what follows "but") and a little emphasis for "!". The score is
// normalised into [-1, 1]. It reads English only; other languages score 0.

// Score bands for Label: the neutral band keeps reviews with no real
// opinion words ("ok", a bare feature request) out of both sides.
const (
	PositiveThreshold = 0.05
	NegativeThreshold = -0.05
)

// Tuning constants (the shapes follow VADER, Hutto & Gilbert 2014, whose
// published constants these are or are close to; the word list is ours).
const (
	// normAlpha maps a raw sum s to s/sqrt(s²+α): ±4 (one strong word,
	// intensified) lands near ±0.72, and sums saturate smoothly below 1.
	normAlpha = 15.0
	// negationFactor flips and damps a negated word: "not good" is less
	// negative than "bad" is.
	negationFactor = -0.74
	// negationScope is how many following tokens a negator reaches ("not
	// very good", "doesn't really work"); a clause break ends it sooner.
	negationScope = 3
	// negatedFunction is the weight of a negated "it works" verb: "doesn't
	// work", "won't load", "can't log in" are the commonest complaints in
	// app reviews and far stronger than the weak positive of "works".
	negatedFunction = -2.2
	// intensify / downtone multiply the next opinion word.
	intensify = 1.5
	downtone  = 0.6
	// beforeBut / afterBut weight the clauses around a contrast.
	beforeBut = 0.5
	afterBut  = 1.5
	// titleWeight: a review's title is its verdict in a few words.
	titleWeight = 1.5
	// exclaimBoost adds to |sum| per "!" (at most maxExclaims of them).
	exclaimBoost = 0.29
	maxExclaims  = 3
	// maxScoredRunes bounds the text scored (bodies are already cut to
	// MaxBodyRunes; this keeps Score safe on any input).
	maxScoredRunes = 4 * MaxBodyRunes
)

// SentimentLabel is a score's band.
type SentimentLabel string

const (
	Positive SentimentLabel = "positive"
	Neutral  SentimentLabel = "neutral"
	Negative SentimentLabel = "negative"
)

// Label bands a score.
func Label(score float64) SentimentLabel {
	switch {
	case score >= PositiveThreshold:
		return Positive
	case score <= NegativeThreshold:
		return Negative
	default:
		return Neutral
	}
}

// ScoreReview scores a review from its title and body.
func ScoreReview(title, body string) float64 {
	t := rawSum(title)
	b := rawSum(body)
	return normalize(titleWeight*t.sum+b.sum, t.exclaims+b.exclaims)
}

// Score scores one text in [-1, 1].
func Score(text string) float64 {
	r := rawSum(text)
	return normalize(r.sum, r.exclaims)
}

func normalize(sum float64, exclaims int) float64 {
	if sum == 0 {
		return 0
	}
	boost := exclaimBoost * float64(min(exclaims, maxExclaims))
	if sum > 0 {
		sum += boost
	} else {
		sum -= boost
	}
	s := sum / math.Sqrt(sum*sum+normAlpha)
	return math.Max(-1, math.Min(1, s))
}

type raw struct {
	sum      float64
	exclaims int
}

// token is a lower-cased word, or a clause break (".", ",", "but", …).
type token struct {
	word string
	brk  bool // punctuation that ends a negation scope
	but  bool // a contrast: "but", "however", "although", "though"
	bang bool // "!"
}

func tokenize(text string) []token {
	text = appstore.Truncate(text, maxScoredRunes)
	text = strings.NewReplacer("’", "'", "‘", "'", "`", "'").Replace(text)
	var out []token
	var b strings.Builder
	flush := func() {
		if b.Len() == 0 {
			return
		}
		w := strings.Trim(b.String(), "'")
		b.Reset()
		if w == "" {
			return
		}
		switch w {
		case "but", "however", "although", "though", "yet":
			out = append(out, token{word: w, brk: true, but: true})
		default:
			out = append(out, token{word: w})
		}
	}
	for _, r := range text {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '\'':
			b.WriteRune(unicode.ToLower(r))
		case isEmoji(r):
			flush()
			out = append(out, token{word: string(r)})
		case r == '!':
			flush()
			out = append(out, token{brk: true, bang: true})
		case r == '.' || r == ',' || r == ';' || r == ':' || r == '?' || r == '\n' || r == '(' || r == ')':
			flush()
			out = append(out, token{brk: true})
		default:
			flush()
		}
	}
	flush()
	return out
}

// rawSum adds up the weighted opinion words of text.
func rawSum(text string) raw {
	toks := tokenize(text)
	var r raw
	var clause []float64 // weights of the current contrast segment
	var segments [][]float64
	negLeft := 0 // tokens still inside a negation scope
	mult := 1.0  // pending intensifier/downtoner
	for _, t := range toks {
		if t.bang {
			r.exclaims++
		}
		if t.brk {
			negLeft, mult = 0, 1
			if t.but {
				segments = append(segments, clause)
				clause = nil
			}
			continue
		}
		w := t.word
		if negators[w] {
			negLeft = negationScope
			continue
		}
		if m, ok := modifiers[w]; ok {
			mult *= m
			continue
		}
		negated := negLeft > 0
		if negLeft > 0 {
			negLeft--
		}
		v, ok := lexicon[w]
		switch {
		case functionVerbs[w] && negated:
			v = negatedFunction * mult
		case !ok:
			continue
		case negated:
			v = v * negationFactor * mult
		default:
			v *= mult
		}
		clause = append(clause, v)
		mult = 1
		negLeft = 0 // one negator flips one opinion word
	}
	segments = append(segments, clause)
	for k, seg := range segments {
		weight := 1.0
		if len(segments) > 1 {
			if k < len(segments)-1 {
				weight = beforeBut
			} else {
				weight = afterBut
			}
		}
		for _, v := range seg {
			r.sum += weight * v
		}
	}
	return r
}

// negators flip the next opinion word within negationScope tokens.
var negators = setOf(
	"not", "no", "never", "neither", "nor", "nothing", "none", "nobody", "without",
	"don't", "dont", "doesn't", "doesnt", "didn't", "didnt", "isn't", "isnt", "wasn't", "wasnt",
	"aren't", "arent", "weren't", "werent", "can't", "cant", "cannot", "couldn't", "couldnt",
	"won't", "wont", "wouldn't", "wouldnt", "shouldn't", "shouldnt", "hasn't", "hasnt",
	"haven't", "havent", "hadn't", "hadnt", "ain't", "aint", "unable",
)

// functionVerbs are "it does its job" words: weakly positive alone, strongly
// negative when negated ("doesn't work", "won't load", "can't connect").
var functionVerbs = setOf(
	"work", "works", "working", "worked", "load", "loads", "loading", "open", "opens", "opening",
	"connect", "connects", "connecting", "sync", "syncs", "syncing", "login", "log", "sign",
	"play", "plays", "download", "downloads", "install", "installs", "update", "updates", "let",
	"show", "shows", "save", "saves", "send", "sends", "start", "starts", "launch", "launches",
	"recognize", "process", "accept", "accepts", "find", "finds", "help", "helps", "fix", "fixed",
	"support", "supports", "match", "matches", "enter", "respond", "responds", "get", "see", "use",
)

// modifiers scale the next opinion word.
var modifiers = map[string]float64{
	"very": intensify, "really": intensify, "so": intensify, "extremely": intensify, "super": intensify,
	"totally": intensify, "absolutely": intensify, "incredibly": intensify, "too": intensify,
	"completely": intensify, "utterly": intensify, "highly": intensify, "truly": intensify,
	"most": intensify, "such": intensify, "constantly": intensify, "always": intensify,
	"slightly": downtone, "somewhat": downtone, "kinda": downtone, "kind": downtone, "bit": downtone,
	"little": downtone, "fairly": downtone, "pretty": downtone, "mostly": downtone, "occasionally": downtone,
	"sometimes": downtone,
}

// lexicon weights opinion words from -3 (hostile) to +3 (delighted). It is
// general English plus the vocabulary of app-store complaints.
var lexicon = map[string]float64{
	// positive
	"good": 1.9, "great": 3.1, "excellent": 3, "amazing": 2.8, "awesome": 3.1, "love": 3.2, "loved": 2.9,
	"loves": 2.7, "lovely": 2.8, "best": 3.2, "perfect": 2.7, "perfectly": 2.5, "nice": 1.8, "easy": 1.9,
	"easier": 1.6, "easily": 1.4, "helpful": 1.8, "useful": 1.9, "fantastic": 2.6, "wonderful": 2.7,
	"brilliant": 2.8, "intuitive": 1.9, "simple": 1.2, "smooth": 1.6, "fast": 1.2, "quick": 1.1,
	"reliable": 1.8, "recommend": 1.5, "recommended": 1.5, "happy": 2.7, "thanks": 1.9, "thank": 1.5,
	"beautiful": 2.9, "beautifully": 2.5, "fun": 2.3, "enjoy": 2.2, "enjoyed": 2.3, "superb": 3,
	"impressive": 2.5, "impressed": 2.4, "convenient": 1.6, "efficient": 1.5, "worth": 1.4,
	"favorite": 2, "favourite": 2, "incredible": 2.6, "outstanding": 2.8, "seamless": 2, "seamlessly": 1.8,
	"clean": 1.3, "neat": 1.6, "cool": 1.3, "wow": 2.3, "glad": 2, "pleased": 2, "satisfied": 1.8,
	"handy": 1.5, "accurate": 1.4, "friendly": 1.7, "solid": 1.3, "stable": 1.2, "saves": 1.2,
	"lifesaver": 2.8, "gem": 2.2, "top": 1.4, "fabulous": 2.9, "fine": 0.8, "ok": 0.9, "okay": 0.9,
	"well": 0.9, "better": 1.2, "improved": 1.3, "improvement": 1.2, "like": 1.5, "liked": 1.5,
	"likes": 1.4, "wonderfully": 2.5, "flawless": 2.7, "flawlessly": 2.5, "genius": 2.5, "thx": 1.5,
	"appreciate": 2.0, "appreciated": 2.0, "yay": 2.4, "yaaaay": 2.4, "yes": 0.8,
	// the "it does its job" verbs are weakly positive alone
	"work": 0.6, "works": 0.9, "working": 0.6, "worked": 0.6, "helps": 1.0, "help": 0.4,
	// negative
	"bad": -2.5, "terrible": -3.1, "horrible": -3, "awful": -3, "worst": -3.1, "poor": -2.1,
	"poorly": -2, "hate": -2.9, "hated": -2.8, "useless": -2.6, "waste": -2.3, "wasted": -2.2,
	"scam": -3, "fraud": -3, "ripoff": -2.8, "garbage": -2.8, "trash": -2.6, "junk": -2.4,
	"crash": -2.3, "crashes": -2.3, "crashed": -2.2, "crashing": -2.3, "bug": -1.6, "bugs": -1.8,
	"buggy": -2.3, "glitch": -1.8, "glitches": -1.9, "glitchy": -2.1, "freeze": -2, "freezes": -2.1,
	"frozen": -1.9, "freezing": -2, "lag": -1.6, "laggy": -2, "lags": -1.7, "slow": -1.6,
	"broken": -2.4, "broke": -1.8, "unusable": -2.8, "annoying": -2.1, "annoyed": -1.9,
	"frustrating": -2.4, "frustrated": -2.3, "frustration": -2.3, "disappointed": -2.3,
	"disappointing": -2.4, "disappointment": -2.3, "irritating": -2.2, "ridiculous": -2.1,
	"problem": -1.4, "problems": -1.6, "issue": -1.2, "issues": -1.4, "error": -1.6, "errors": -1.7,
	"fail": -2, "fails": -2.1, "failed": -2, "failing": -2, "failure": -2.2, "impossible": -1.9,
	"difficult": -1.4, "confusing": -1.7, "confused": -1.4, "expensive": -1.4, "overpriced": -2,
	"greedy": -2.2, "lost": -1.6, "lose": -1.4, "loses": -1.5, "missing": -1.1, "stranded": -2,
	"stuck": -1.8, "shame": -2, "shameful": -2.6, "shamefully": -2.4, "uninstall": -2.1,
	"uninstalled": -2.1, "deleted": -1.4, "delete": -1.2, "deleting": -1.4, "suspended": -1.9, "banned": -2,
	"refund": -1.8, "unfair": -2, "worse": -2.3, "sucks": -2.7, "suck": -2.5, "sad": -2.1,
	"angry": -2.3, "upset": -1.9, "disgusting": -2.9, "pathetic": -2.7, "stupid": -2.4, "spam": -2,
	"ads": -0.9, "advertisements": -1, "unreliable": -2.2, "inaccurate": -1.8, "wrong": -1.8,
	"horrendous": -3, "atrocious": -3, "lackluster": -1.7, "baffling": -1.6, "mess": -2,
	"nightmare": -2.7, "joke": -1.8, "unacceptable": -2.6, "hassle": -1.8, "lacking": -1.5,
	"rude": -2.2, "ignored": -1.6, "ignore": -1.2, "worthless": -2.8, "drain": -1.6, "drains": -1.7,
	"irrelevant": -1.3, "weird": -1.1, "odd": -0.9, "unfortunately": -1.5, "sadly": -1.6,
	"cancel": -1.1, "cancelled": -1.3, "canceled": -1.3, "charged": -1.4, "overcharged": -2.4,
	"outdated": -1.5, "clunky": -1.8, "bloated": -1.7, "hard": -0.8, "messed": -1.8,
	"disabled": -1.2, "locked": -1.3, "hacked": -2.5, "stolen": -2.5, "steal": -2.3,
	"rubbish": -2.6, "painful": -2.2, "quits": -2, "tedious": -1.8, "cumbersome": -1.9,
	"embarrassment": -2.3, "embarrassing": -2.3, "calamity": -2.5, "liars": -2.7, "lying": -2.5,
	"lie": -2.1, "lies": -2.2, "tired": -1.4, "wrongly": -1.8, "incorrect": -1.8, "incorrectly": -1.8,
	"miscalculated": -1.9, "complicated": -1.5, "annoys": -2, "painfully": -2, "trust": 1.5,
	"unhappy": -2.4, "dissatisfied": -2.2, "regret": -2, "avoid": -1.8, "beware": -2,
	// emoji read the same in every language
	"👍": 2, "⭐": 1.5, "🌟": 1.5, "❤": 2.5, "💓": 2.5, "💕": 2.5, "😍": 2.8, "🥰": 2.8, "😊": 2,
	"☺": 1.8, "😁": 1.8, "😄": 1.8, "👌": 1.8, "🫶": 2.2, "🙏": 1.2, "🔥": 1.5, "💯": 2,
	"👎": -2.2, "😡": -2.8, "😠": -2.5, "🤬": -3, "😤": -2, "😞": -2, "😢": -2, "😭": -2.2,
	"💩": -2.5, "🤮": -2.8, "😒": -1.5, "😔": -1.5,
}

// isEmoji reports a rune from the emoji blocks that carry opinion.
func isEmoji(r rune) bool {
	return (r >= 0x1F300 && r <= 0x1FAFF) || (r >= 0x2600 && r <= 0x27BF) || r == 0x2B50
}

func setOf(words ...string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
	}
	return m
}
