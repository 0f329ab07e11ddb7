package segments

import (
	"math"
	"slices"
	"sort"
)

// The keyword graph: two keywords are linked when their top-ranked apps
// overlap. Segments are its communities (Louvain, louvain.go).
//
// Why a keyword–keyword projection rather than the bipartite keyword–app
// graph: a segment is a set of keywords (what users search), and an app
// ranking well for keywords of two niches belongs to both; on the
// bipartite graph it would be forced into one community and pull the two
// niches together. The projection keeps apps out of the partition and
// lets a segment's apps be read afterwards from its keywords' rankings.
// Its cost is bounded by MaxAppKeywords and MaxNeighbours.

// Graph bounds.
const (
	// TopN is how many of a keyword's best-ranked apps link it to other
	// keywords: the apps a searcher actually sees.
	TopN = 10
	// MaxAppKeywords: an app in the top TopN of more keywords than this is
	// a generalist (a giant that ranks for everything) and links none of
	// them: its d(d−1)/2 pairs would say nothing about a niche and cost
	// the most.
	MaxAppKeywords = 200
	// MaxNeighbours is how many of its strongest links each keyword keeps
	// (an edge stays when either end keeps it): it bounds the graph at
	// 2 × MaxNeighbours × keywords entries, ~40 MB at 100,000 keywords
	// (docs/markets.md), whatever the overlap.
	MaxNeighbours = 24
)

// Graph is an undirected weighted graph in compressed rows: node i's
// neighbours are Adj[Off[i]:Off[i+1]] with weights W[...], each edge
// stored at both ends; Loop[i] is node i's self-weight (the weight inside
// it, each ordered pair counted: Louvain's aggregated communities).
type Graph struct {
	Off  []int32
	Adj  []int32
	W    []float32
	Loop []float64
}

// N is the number of nodes.
func (g *Graph) N() int { return len(g.Off) - 1 }

// Degree is k_i: the weight of node i's edges, its self-weight included.
func (g *Graph) Degree(i int) float64 {
	k := g.Loop[i]
	for e := g.Off[i]; e < g.Off[i+1]; e++ {
		k += float64(g.W[e])
	}
	return k
}

// Project builds the keyword graph from each keyword's top apps (tops[i],
// app indices below apps, at most TopN each): keywords i and j are linked
// with weight Σ 1/(dₐ−1) over the apps a in both tops, dₐ being the
// number of keywords a is top in (an app shared by two keywords only is
// strong evidence; one shared by fifty, weak). Apps over MaxAppKeywords
// link nothing. Each keyword keeps its MaxNeighbours strongest links (ties
// by the lower index); an edge either end keeps is stored at both.
//
// Memory: the rows are computed three times (each keyword's cut-off, the
// row sizes, the rows) instead of kept, so the pass holds the apps'
// keywords, two scalars a keyword and the graph itself, sized exactly.
func Project(tops [][]int32, apps int) *Graph {
	n := len(tops)
	// The apps' keywords, in compressed rows.
	deg := make([]int32, apps+1)
	for _, t := range tops {
		for _, a := range t {
			deg[a+1]++
		}
	}
	for a := 1; a <= apps; a++ {
		deg[a] += deg[a-1]
	}
	akw := make([]int32, deg[apps])
	fill := slices.Clone(deg[:apps])
	for i, t := range tops {
		for _, a := range t {
			akw[fill[a]] = int32(i)
			fill[a]++
		}
	}
	fill = nil
	// row computes keyword i's links into acc (touched: the keywords
	// linked). The shared apps are summed in ascending app order, so the
	// weight i→j is j→i's bit for bit and either end decides alike.
	acc := make([]float32, n)
	var touched, sorted []int32
	row := func(i int) {
		for _, j := range touched {
			acc[j] = 0
		}
		touched = touched[:0]
		sorted = append(sorted[:0], tops[i]...)
		slices.Sort(sorted)
		for _, a := range sorted {
			d := deg[a+1] - deg[a]
			if d < 2 || d > MaxAppKeywords {
				continue
			}
			w := 1 / float32(d-1)
			for _, j := range akw[deg[a]:deg[a+1]] {
				if int(j) == i {
					continue
				}
				if acc[j] == 0 {
					touched = append(touched, j)
				}
				acc[j] += w
			}
		}
	}
	// Each keyword's cut-off: its MaxNeighbours-th link (weight, then
	// index); a row of fewer keeps every link.
	type link struct {
		j int32
		w float32
	}
	cutW := make([]float32, n)
	cutJ := make([]int32, n)
	var links []link
	for i := range n {
		row(i)
		if len(touched) <= MaxNeighbours {
			cutJ[i] = math.MaxInt32
			continue
		}
		links = links[:0]
		for _, j := range touched {
			links = append(links, link{j, acc[j]})
		}
		sort.Slice(links, func(x, y int) bool {
			if links[x].w != links[y].w {
				return links[x].w > links[y].w
			}
			return links[x].j < links[y].j
		})
		cutW[i], cutJ[i] = links[MaxNeighbours-1].w, links[MaxNeighbours-1].j
	}
	keeps := func(i, j int32, w float32) bool { return w > cutW[i] || (w == cutW[i] && j <= cutJ[i]) }
	// Row sizes, then the rows, each sorted by neighbour.
	g := &Graph{Off: make([]int32, n+1), Loop: make([]float64, n)}
	for i := range n {
		row(i)
		c := int32(0)
		for _, j := range touched {
			if keeps(int32(i), j, acc[j]) || keeps(j, int32(i), acc[j]) {
				c++
			}
		}
		g.Off[i+1] = g.Off[i] + c
	}
	g.Adj, g.W = make([]int32, g.Off[n]), make([]float32, g.Off[n])
	for i := range n {
		row(i)
		e := g.Off[i]
		for _, j := range touched {
			if keeps(int32(i), j, acc[j]) || keeps(j, int32(i), acc[j]) {
				g.Adj[e], g.W[e] = j, acc[j]
				e++
			}
		}
		sort.Sort(rowSorter{g.Adj[g.Off[i]:e], g.W[g.Off[i]:e]})
	}
	return g
}

type rowSorter struct {
	adj []int32
	w   []float32
}

func (r rowSorter) Len() int           { return len(r.adj) }
func (r rowSorter) Less(i, j int) bool { return r.adj[i] < r.adj[j] }
func (r rowSorter) Swap(i, j int) {
	r.adj[i], r.adj[j] = r.adj[j], r.adj[i]
	r.w[i], r.w[j] = r.w[j], r.w[i]
}
