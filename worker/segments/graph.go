package segments

import (
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
// link nothing. Each keyword keeps its MaxNeighbours strongest links.
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
	// Each keyword's strongest links, from a dense scratch row.
	acc := make([]float32, n)
	var touched []int32
	type link struct {
		j int32
		w float32
	}
	var row []link
	kept := make([][]link, n)
	for i, t := range tops {
		touched = touched[:0]
		for _, a := range t {
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
		row = row[:0]
		for _, j := range touched {
			row = append(row, link{j, acc[j]})
			acc[j] = 0
		}
		if len(row) > MaxNeighbours {
			sort.Slice(row, func(x, y int) bool {
				if row[x].w != row[y].w {
					return row[x].w > row[y].w
				}
				return row[x].j < row[y].j
			})
			row = row[:MaxNeighbours]
		}
		kept[i] = slices.Clone(row)
	}
	// Symmetrise: an edge kept by either end is stored at both.
	cnt := make([]int32, n+1)
	for i, r := range kept {
		for _, l := range r {
			cnt[i+1]++
			cnt[l.j+1]++
		}
	}
	for i := 1; i <= n; i++ {
		cnt[i] += cnt[i-1]
	}
	adj := make([]int32, cnt[n])
	ws := make([]float32, cnt[n])
	pos := slices.Clone(cnt[:n])
	for i, r := range kept {
		for _, l := range r {
			adj[pos[i]], ws[pos[i]] = l.j, l.w
			pos[i]++
			adj[pos[l.j]], ws[pos[l.j]] = int32(i), l.w
			pos[l.j]++
		}
		kept[i] = nil
	}
	// Rows sorted by neighbour; an edge both ends kept appears twice with
	// the same weight: kept once.
	g := &Graph{Off: make([]int32, n+1), Loop: make([]float64, n)}
	out := 0
	for i := 0; i < n; i++ {
		lo, hi := cnt[i], cnt[i+1]
		r := rowSorter{adj[lo:hi], ws[lo:hi]}
		sort.Sort(r)
		for e := lo; e < hi; e++ {
			if e > lo && adj[e] == adj[e-1] {
				continue
			}
			adj[out], ws[out] = adj[e], ws[e]
			out++
		}
		g.Off[i+1] = int32(out)
	}
	g.Adj, g.W = slices.Clip(adj[:out]), slices.Clip(ws[:out])
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
