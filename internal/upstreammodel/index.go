package upstreammodel

import (
	"container/heap"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// Index answers the questions that need many apps at once (search,
// charts, a developer's apps) without scanning the world: apps are
// bucketed by niche, by brand and by developer, so a term's candidates
// are the apps of the niches whose vocabulary holds it. Entries are cached
// statics (about 40 bytes an app); apps that appear later are added as
// the clock passes their appearance, in offset order, so an answer at t
// depends on (seed, t) alone. Safe for concurrent use.
type Index struct {
	w *World

	// terms maps a token to its posting lists (ids into postings).
	// Immutable after NewIndex.
	terms map[string][]int

	mu      sync.Mutex
	entries []entry // entries[off-1]
	// postings[niche*VocabSize+bit]: the niche's apps whose text holds
	// the word, with the weight of the fields that hold it; then
	// postings[brandLists+niche*len(brands)+brand]: the niche's apps whose
	// title opens with the brand. Each list is in offset order.
	postings [][]posting
	byNiche  [][]int32
	byDev    [][]int32
}

type entry struct {
	masks   Masks
	paid    bool
	iaps    uint8
	isNew   bool
	ratings int32 // Static.Ratings
	rate    float32
	start   int64 // seconds since Epoch: when it starts changing
	appear  int64 // seconds since Epoch
	removed int64 // seconds since Epoch; 0: never (none is removed at Epoch)
}

// A posting is one app holding a word: its entry index and the weight of
// the fields holding the word (postingShift bits), and a copy of what its
// score and existence need, so a search reads its postings in order and
// nothing else.
type posting struct {
	ref     uint32
	ratings int32
	rate    float32
	start   int32 // seconds since Epoch; > 0 only for a new app (its appearance)
	removed int32 // seconds since Epoch; 0: never
}

const postingShift = 3

func (p *posting) exists(now int64) bool {
	return (p.start == 0 || now >= int64(p.start)) && (p.removed == 0 || now < int64(p.removed))
}

func (p *posting) ratingsAt(now int64) int64 {
	return ratingsAt(int64(p.ratings), float64(p.rate), p.start > 0, int64(p.start), now)
}

// Field weights of a matched term: a title counts most.
const (
	titleWeight       = 3
	subtitleWeight    = 2
	descriptionWeight = 1
	// MaxQueryTerms bounds a query's distinct terms (so a relevance fits
	// a byte: 10 × 6).
	MaxQueryTerms = 10
	// MaxSearchResults is the Search API's cap.
	MaxSearchResults = 200
)

// NewIndex indexes w's apps at Epoch.
func NewIndex(w *World) *Index {
	k := len(w.Niches)
	ix := &Index{w: w, terms: map[string][]int{},
		postings: make([][]posting, k*(VocabSize+len(brands))), byNiche: make([][]int32, k), byDev: make([][]int32, w.Devs)}
	for niche, n := range w.Niches {
		for i, v := range n.Vocab {
			ix.terms[v] = append(ix.terms[v], niche*VocabSize+i)
		}
		for b, v := range brands {
			ix.terms[v] = append(ix.terms[v], ix.brandList(niche, b))
		}
	}
	ix.extendLocked(int64(w.Base))
	return ix
}

// World is the indexed world.
func (ix *Index) World() *World { return ix.w }

func (ix *Index) brandList(niche, brand int) int {
	return len(ix.w.Niches)*VocabSize + niche*len(brands) + brand
}

// listNiche is the niche of posting list id.
func (ix *Index) listNiche(id int) int {
	if n := len(ix.w.Niches) * VocabSize; id >= n {
		return (id - n) / len(brands)
	}
	return id / VocabSize
}

func (ix *Index) extendLocked(total int64) {
	for off := int64(len(ix.entries)) + 1; off <= total; off++ {
		s := ix.w.Static(off)
		e := entry{masks: s.Masks, paid: s.Price > 0, iaps: uint8(s.IAPs), isNew: off > int64(ix.w.Base),
			ratings: int32(s.Ratings), rate: float32(s.Rate), start: ix.w.secs(ix.w.start(&s)), appear: ix.w.secs(s.Appear)}
		if !s.Removed.IsZero() {
			e.removed = ix.w.secs(s.Removed)
		}
		i := int32(len(ix.entries))
		ix.entries = append(ix.entries, e)
		ix.byNiche[s.Niche] = append(ix.byNiche[s.Niche], i)
		post := func(list, f int) {
			p := posting{ref: uint32(i)<<postingShift | uint32(f), ratings: e.ratings, rate: e.rate, removed: int32(e.removed)}
			if e.isNew {
				p.start = int32(e.start)
			}
			ix.postings[list] = append(ix.postings[list], p)
		}
		for bit := range VocabSize {
			if f := fieldWeight(s.Masks, uint8(1)<<bit); f > 0 {
				post(s.Niche*VocabSize+bit, f)
			}
		}
		post(ix.brandList(s.Niche, s.Brand), titleWeight)
		ix.byDev[s.Dev] = append(ix.byDev[s.Dev], i)
	}
}

// view brings the index up to t and returns its entries (a prefix that is
// never rewritten, so it is read without the lock).
func (ix *Index) view(t time.Time) []entry {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.extendLocked(ix.w.Total(t))
	return ix.entries
}

func fieldWeight(m Masks, bit uint8) int {
	f := 0
	if m.Title&bit != 0 {
		f += titleWeight
	}
	if m.Subtitle&bit != 0 {
		f += subtitleWeight
	}
	if m.Description&bit != 0 {
		f += descriptionWeight
	}
	return f
}

func (e *entry) exists(t int64) bool {
	if e.isNew && t < e.appear {
		return false
	}
	return e.removed == 0 || t < e.removed
}

func (e *entry) ratingsAt(t int64) int64 {
	return ratingsAt(int64(e.ratings), float64(e.rate), e.isNew, e.start, t)
}

// Hit is one search result.
type Hit struct {
	Off       int64
	Relevance int // Σ over the query's terms of the fields holding it, weighted
	Ratings   int64
	Score     float64
}

// Score ranks a hit: relevance times log popularity, so a term in more
// fields, and a more popular app, rank higher.
func Score(relevance int, ratings int64) float64 {
	return float64(relevance) * math.Log(math.E+float64(ratings))
}

// Search answers a query at t: up to limit apps in the store at t whose
// title, subtitle or description holds a term of the query, best first
// (ties by offset).
func (ix *Index) Search(query string, t time.Time, limit int) []Hit {
	limit = min(max(limit, 0), MaxSearchResults)
	entries := ix.view(t)
	tokens := slices.Compact(slices.Sorted(slices.Values(Tokens(query))))
	tokens = tokens[:min(len(tokens), MaxQueryTerms)]
	now := ix.w.secs(t)
	top := topHits{limit: limit}
	// An app is in one niche, so its relevance is the sum over the
	// query's lists of its niche: each niche's lists are merged by entry.
	byNiche := map[int][]int{}
	for _, tok := range tokens {
		for _, id := range ix.terms[tok] {
			byNiche[ix.listNiche(id)] = append(byNiche[ix.listNiche(id)], id)
		}
	}
	n := uint32(len(entries))
	var lists [][]posting
	for _, ids := range byNiche {
		lists = lists[:0]
		for _, id := range ids {
			if l := ix.postings[id]; len(l) > 0 {
				lists = append(lists, l)
			}
		}
		for len(lists) > 0 {
			// The lowest entry at the lists' heads, and its relevance.
			lo := lists[0][0].ref >> postingShift
			for _, l := range lists[1:] {
				lo = min(lo, l[0].ref>>postingShift)
			}
			rel := 0
			var p *posting
			for j := 0; j < len(lists); {
				if lists[j][0].ref>>postingShift == lo {
					p = &lists[j][0]
					rel += int(p.ref & (1<<postingShift - 1))
					if lists[j] = lists[j][1:]; len(lists[j]) == 0 {
						lists[j] = lists[len(lists)-1]
						lists = lists[:len(lists)-1]
						continue
					}
				}
				j++
			}
			if lo >= n || !p.exists(now) {
				continue
			}
			r := p.ratingsAt(now)
			if !top.cannotEnter(rel, r) {
				top.offer(Hit{Off: int64(lo) + 1, Relevance: rel, Ratings: r, Score: Score(rel, r)})
			}
		}
	}
	return top.sorted()
}

// topHits keeps the best limit hits offered: a min-heap, the worst kept
// hit on top.
type topHits struct {
	limit int
	h     hitHeap
	// floor[rel] is, for the worst kept score floorAt[rel], the ratings below
	// which a hit of relevance rel scores less: most candidates are
	// refused by one comparison, without a logarithm.
	floorOK [MaxQueryTerms*(titleWeight+subtitleWeight+descriptionWeight) + 1]bool
	floor   [MaxQueryTerms*(titleWeight+subtitleWeight+descriptionWeight) + 1]float64
	floorAt [MaxQueryTerms*(titleWeight+subtitleWeight+descriptionWeight) + 1]float64
}

// cannotEnter reports whether a hit of relevance rel and r ratings
// surely scores below every kept hit (conservative by one rating, so
// ties and rounding are left to offer).
func (t *topHits) cannotEnter(rel int, r int64) bool {
	if len(t.h) < t.limit || t.limit == 0 {
		return t.limit == 0
	}
	worst := t.h[0].Score
	if !t.floorOK[rel] || t.floorAt[rel] != worst {
		t.floorOK[rel] = true
		t.floorAt[rel] = worst
		// Score(rel, r) < worst  ⟺  r < e^(worst/rel) − e
		t.floor[rel] = math.Exp(worst/float64(rel)) - math.E
	}
	return float64(r) < t.floor[rel]-1
}

func (t *topHits) offer(x Hit) {
	switch {
	case len(t.h) < t.limit:
		heap.Push(&t.h, x)
	case t.limit > 0 && better(x, t.h[0]):
		t.h[0] = x
		heap.Fix(&t.h, 0)
	}
}

func (t *topHits) sorted() []Hit {
	out := []Hit(t.h)
	slices.SortFunc(out, func(a, b Hit) int {
		if better(a, b) {
			return -1
		}
		return 1
	})
	return out
}

func better(a, b Hit) bool {
	if a.Score != b.Score {
		return a.Score > b.Score
	}
	return a.Off < b.Off
}

// hitHeap is a min-heap: the worst kept hit on top.
type hitHeap []Hit

func (h hitHeap) Len() int           { return len(h) }
func (h hitHeap) Less(i, j int) bool { return better(h[j], h[i]) }
func (h hitHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *hitHeap) Push(x any)        { *h = append(*h, x.(Hit)) }
func (h *hitHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// ChartApp is what a chart ranks an app by.
type ChartApp struct {
	Off     int64
	Ratings int64
	Paid    bool
	IAPs    int
}

// Chart is the top limit apps in the store at t of a genre (0: all; Games
// holds every game; a subgenre its games) by key, best first (ties by
// offset); key's false leaves an app out of the chart.
func (ix *Index) Chart(t time.Time, genre, limit int, key func(ChartApp) (int64, bool)) []int64 {
	entries := ix.view(t)
	now := ix.w.secs(t)
	// The best limit kept in a min-heap (scores as Hits: Score, then Off).
	top := topHits{limit: limit}
	for k, n := range ix.w.Niches {
		if genre != 0 && n.Genre.ID != genre && n.SubGenre.ID != genre {
			continue
		}
		for _, i := range ix.byNiche[k] {
			if i >= int32(len(entries)) || !entries[i].exists(now) {
				continue
			}
			e := &entries[i]
			c := ChartApp{Off: int64(i) + 1, Ratings: e.ratingsAt(now), Paid: e.paid, IAPs: int(e.iaps)}
			if score, in := key(c); in {
				x := Hit{Off: c.Off, Score: float64(score)}
				if len(top.h) < limit || better(x, top.h[0]) {
					top.offer(x)
				}
			}
		}
	}
	out := make([]int64, 0, len(top.h))
	for _, h := range top.sorted() {
		out = append(out, h.Off)
	}
	return out
}

// ByDeveloper is developer dev's apps in the store at t, in offset order.
func (ix *Index) ByDeveloper(dev int, t time.Time) []int64 {
	if dev < 0 || dev >= len(ix.byDev) {
		return nil
	}
	entries := ix.view(t)
	ix.mu.Lock()
	bucket := ix.byDev[dev]
	ix.mu.Unlock()
	var out []int64
	for _, i := range bucket {
		if i < int32(len(entries)) && entries[i].exists(ix.w.secs(t)) {
			out = append(out, int64(i)+1)
		}
	}
	return out
}

// HintTerms is up to n search terms starting with prefix, most popular
// first: niches' words and "subject facet" phrases, a term's popularity
// being the expected apps of the niches that use it.
func (w *World) HintTerms(prefix string, n int) []string {
	prefix = strings.ToLower(strings.TrimSpace(prefix))
	pop := map[string]float64{}
	k := float64(len(w.Niches))
	for i, niche := range w.Niches {
		// P(niche i) under Static's draw, K·u^nicheSkew.
		p := math.Pow(float64(i+1)/k, 1/nicheSkew) - math.Pow(float64(i)/k, 1/nicheSkew)
		for _, v := range niche.Vocab {
			pop[v] += p
		}
		pop[niche.Vocab[0]+" "+niche.Vocab[1]] += p
	}
	var terms []string
	for t := range pop {
		if strings.HasPrefix(t, prefix) {
			terms = append(terms, t)
		}
	}
	sort.Slice(terms, func(i, j int) bool {
		if pop[terms[i]] != pop[terms[j]] {
			return pop[terms[i]] > pop[terms[j]]
		}
		return terms[i] < terms[j]
	})
	return terms[:min(n, len(terms))]
}
