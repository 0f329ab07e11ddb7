// Package keywords is the two numbers an App Store optimisation user reads
// first for a search term in a storefront: its popularity (how much people
// search for it, from Apple's search hints) and its difficulty (how strong
// the apps ranking for it are, from the stored rankings and apps), with the
// term's result count and its top apps' rank history (GET
// /v1/keywords/{term}). The formulas are pure functions, documented with
// their reasons in docs/keywords.md.
package keywords

import (
	"context"
	"errors"
	"math"
	"strings"
	"unicode/utf8"
)

// Popularity's bounds and weights.
const (
	// PopularityMaxPrefix is the longest prefix asked: a term not suggested
	// by its 15th character is searched too rarely to score, and the bound
	// caps a term's hint requests at 15 (one a prefix length). Real search
	// terms are mostly shorter, so the length score spreads over the
	// lengths they are suggested at.
	PopularityMaxPrefix = 15
	// PopularityPositions are the places among a prefix's hints that score:
	// the first is the most searched completion, the fifth and later score
	// as the fifth (the tools scoring hints read the first five likewise).
	PopularityPositions = 5
)

// HintsFetcher asks Apple's search hints for a prefix in one storefront:
// the suggested terms, in Apple's order (the most searched first). A
// refusal of the upstream or the limiter is a *RateLimited error.
type HintsFetcher interface {
	Hints(ctx context.Context, prefix string) ([]string, error)
}

// RateLimited is a hints request the upstream or the global limit refused:
// the run stops there and asks the scheduler to back off.
type RateLimited struct{ RetryAfterS int }

func (e *RateLimited) Error() string { return "hints: rate limited" }

// Normalize is a term as the metrics compare it: lower case, trimmed, its
// inner spaces single (Apple's hints are lower case).
func Normalize(term string) string {
	return strings.Join(strings.Fields(strings.ToLower(term)), " ")
}

// Prefixes are the prefixes asked for term (normalized), shortest first:
// one a character up to PopularityMaxPrefix, skipping those ending in a
// space (the same letters as the one before, a request saved).
func Prefixes(term string) []string {
	term = Normalize(term)
	var out []string
	n := 0
	for i, r := range term {
		n++
		if n > PopularityMaxPrefix {
			break
		}
		if r == ' ' {
			continue
		}
		out = append(out, term[:i+utf8.RuneLen(r)])
	}
	return out
}

// Suggested is where the hints first suggest a term: after Prefix
// characters, at Position (0-based) among that prefix's hints. Prefix 0:
// not suggested by any prefix asked.
type Suggested struct {
	Prefix   int `json:"prefix"`
	Position int `json:"position"`
}

// Find reads where term is first suggested, from the hints of each of its
// prefixes (Prefixes; a prefix missing from the map was not asked, and
// stops the read: a shorter prefix not asked cannot be skipped).
func Find(term string, hintsByPrefix map[string][]string) Suggested {
	want := Normalize(term)
	for _, p := range Prefixes(want) {
		hints, asked := hintsByPrefix[p]
		if !asked {
			break
		}
		if i := indexOf(hints, want); i >= 0 {
			return Suggested{Prefix: utf8.RuneCountInString(p), Position: i}
		}
	}
	return Suggested{}
}

func indexOf(hints []string, term string) int {
	for i, h := range hints {
		if Normalize(h) == term {
			return i
		}
	}
	return -1
}

// Score is popularity on 0–100 from where the term is first suggested:
// 0 when it never is; otherwise 1 + 99 × steps / 14.8, where steps =
// (PopularityMaxPrefix − prefix) + (4 − min(position, 4)) / 5: 14 for each
// character before the 15th the term is suggested at, plus 0.8 first among
// the hints down to 0 fifth or later. One character earlier always
// outranks any place in the list (Apple suggests a term after fewer
// letters the more it is searched); the place orders terms suggested
// equally early. Any suggested term scores at least 1: Apple suggests it,
// so people search it.
func (s Suggested) Score() int {
	if s.Prefix <= 0 {
		return 0
	}
	last := PopularityPositions - 1
	place := float64(last-min(max(s.Position, 0), last)) / PopularityPositions
	steps := float64(PopularityMaxPrefix-min(s.Prefix, PopularityMaxPrefix)) + place
	top := float64(PopularityMaxPrefix-1) + float64(last)/PopularityPositions
	return 1 + int(math.Round(99*steps/top))
}

// Popularity is term's popularity (0–100, Suggested.Score) from the hints
// of its prefixes.
func Popularity(term string, hintsByPrefix map[string][]string) int {
	return Find(term, hintsByPrefix).Score()
}

// Measure asks the hints of term's prefixes, shortest first, until one
// suggests the term (one request a prefix length, at most
// PopularityMaxPrefix) and returns where, with the requests made. It asks
// nothing when budget is below the term's prefix count, so a run never
// spends requests on a term it cannot finish (ok false). An error (a
// *RateLimited among them) stops it: nothing is measured.
func Measure(ctx context.Context, f HintsFetcher, term string, budget int) (s Suggested, requests int, ok bool, err error) {
	prefixes := Prefixes(term)
	if len(prefixes) == 0 || budget < len(prefixes) {
		return Suggested{}, 0, false, nil
	}
	seen := map[string][]string{}
	for _, p := range prefixes {
		hints, err := f.Hints(ctx, p)
		requests++
		if err != nil {
			return Suggested{}, requests, false, err
		}
		seen[p] = hints
		if s := Find(term, seen); s.Prefix > 0 {
			return s, requests, true, nil
		}
	}
	return Suggested{}, requests, true, nil
}

// IsRateLimited reports whether err is a refusal (*RateLimited) and the
// wait it asked for.
func IsRateLimited(err error) (bool, int) {
	var rl *RateLimited
	if errors.As(err, &rl) {
		return true, rl.RetryAfterS
	}
	return false, 0
}
