package appstore

import (
	"sort"
	"strings"
	"unicode"
)

// Keyword derivation bounds.
const (
	// MinKeywordLen: shorter words are rarely distinctive search terms.
	MinKeywordLen = 5
	// MaxShortTitleWords: a title this short is itself a search term.
	MaxShortTitleWords = 3
	// MaxKeywordsPerApp bounds what one app adds to the keyword table.
	MaxKeywordsPerApp = 8
)

// stopWords are frequent words that make poor search terms.
var stopWords = map[string]bool{
	"about": true, "after": true, "again": true, "apple": true, "apps": true, "best": true,
	"daily": true, "every": true, "first": true, "free": true, "from": true, "great": true,
	"into": true, "lite": true, "mobile": true, "more": true, "other": true, "plus": true,
	"simple": true, "their": true, "there": true, "these": true, "things": true, "which": true,
	"while": true, "with": true, "world": true, "your": true, "yours": true, "ultimate": true,
	"a": true, "an": true, "and": true, "app": true, "all": true, "are": true, "by": true, "for": true,
	"in": true, "its": true, "my": true, "new": true, "of": true, "on": true, "our": true, "the": true,
	"to": true, "you": true,
}

// words splits text into lower-case words of letters and digits.
func words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
}

// DeriveKeywords proposes search keywords from an app's title and
// subtitle: distinctive words of MinKeywordLen+ letters, bigrams of
// adjacent content words, and the whole title when it is short. Stop words
// are removed; the result is deduplicated, sorted and bounded.
func DeriveKeywords(title, subtitle string) []string {
	set := map[string]bool{}
	for _, text := range []string{title, subtitle} {
		ws := words(text)
		var content []string
		for _, w := range ws {
			if stopWords[w] {
				continue
			}
			content = append(content, w)
			if len([]rune(w)) >= MinKeywordLen && !isNumber(w) {
				set[w] = true
			}
		}
		for i := 0; i+1 < len(content); i++ {
			if len([]rune(content[i])) >= 3 && len([]rune(content[i+1])) >= 3 {
				set[content[i]+" "+content[i+1]] = true
			}
		}
	}
	if tw := words(title); len(tw) > 0 && len(tw) <= MaxShortTitleWords {
		set[strings.Join(tw, " ")] = true
	}
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	if len(out) > MaxKeywordsPerApp {
		out = out[:MaxKeywordsPerApp]
	}
	return out
}

func isNumber(w string) bool {
	for _, r := range w {
		if !unicode.IsDigit(r) {
			return false
		}
	}
	return true
}
