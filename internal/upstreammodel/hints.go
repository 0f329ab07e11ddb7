package upstreammodel

import (
	"cmp"
	"slices"
	"strings"
	"unicode"
)

// Search hints: what the App Store's search field completes a prefix to.
// The real endpoint says nothing of how it ranks, but its completions are
// what people type, most typed first; the model's stand-in for "how many
// people type a term" is how many people rated the apps whose names carry
// it (an app's ratings follow its users). A term is a word of an app's
// name, two adjacent words, or the whole name, lower case.

// MaxHintsSoftware is how many completions one answer carries: the App
// Store returns up to about ten for Software.
const MaxHintsSoftware = 10

// minHintWordLen: shorter words ("hd", "2") are not typed as terms alone.
const minHintWordLen = 3

// HintApp is what the hints read of an app.
type HintApp struct {
	Name    string
	Ratings int64
}

type termPopularity struct {
	term string
	pop  int64
}

// HintIndex is a catalogue's terms with their popularity, in term order.
type HintIndex struct {
	terms []termPopularity
}

// NewHintIndex indexes the terms of apps. A term nobody rated an app for
// is nobody's search: it is left out.
func NewHintIndex(apps []HintApp) *HintIndex {
	pop := map[string]int64{}
	for _, a := range apps {
		if a.Ratings <= 0 {
			continue
		}
		for t := range nameTerms(a.Name) {
			pop[t] += a.Ratings
		}
	}
	ix := &HintIndex{terms: make([]termPopularity, 0, len(pop))}
	for t, p := range pop {
		ix.terms = append(ix.terms, termPopularity{t, p})
	}
	slices.SortFunc(ix.terms, func(a, b termPopularity) int { return strings.Compare(a.term, b.term) })
	return ix
}

// nameTerms are a name's terms: its words of minHintWordLen or more, its
// adjacent word pairs, and the whole name.
func nameTerms(name string) map[string]bool {
	ws := strings.FieldsFunc(strings.ToLower(name), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	out := map[string]bool{}
	for i, w := range ws {
		if len([]rune(w)) >= minHintWordLen {
			out[w] = true
		}
		if i+1 < len(ws) {
			out[w+" "+ws[i+1]] = true
		}
	}
	if len(ws) > 0 {
		out[strings.Join(ws, " ")] = true
	}
	return out
}

// Complete is the terms starting with prefix (case and surrounding space
// ignored), most popular first (ties in term order), at most n. An empty
// prefix completes to nothing.
func (ix *HintIndex) Complete(prefix string, n int) []string {
	p := strings.Join(strings.Fields(strings.ToLower(prefix)), " ")
	if p == "" || n <= 0 {
		return nil
	}
	if strings.HasSuffix(prefix, " ") {
		p += " " // "budget " completes to the terms after the word
	}
	lo, _ := slices.BinarySearchFunc(ix.terms, p, func(t termPopularity, p string) int { return strings.Compare(t.term, p) })
	var hits []termPopularity
	for i := lo; i < len(ix.terms) && strings.HasPrefix(ix.terms[i].term, p); i++ {
		hits = append(hits, ix.terms[i])
	}
	slices.SortStableFunc(hits, func(a, b termPopularity) int { return cmp.Compare(b.pop, a.pop) })
	out := make([]string, 0, min(n, len(hits)))
	for _, h := range hits[:min(n, len(hits))] {
		out = append(out, h.term)
	}
	return out
}

// Len is how many terms the index holds.
func (ix *HintIndex) Len() int { return len(ix.terms) }

// MostTyped is the index's n most popular terms, most popular first
// (ties in term order): the terms a crawl sourcing keywords from the
// hints finds first.
func (ix *HintIndex) MostTyped(n int) []string {
	byPop := slices.Clone(ix.terms)
	slices.SortStableFunc(byPop, func(a, b termPopularity) int { return cmp.Compare(b.pop, a.pop) })
	out := make([]string, 0, min(max(n, 0), len(byPop)))
	for _, t := range byPop[:cap(out)] {
		out = append(out, t.term)
	}
	return out
}
