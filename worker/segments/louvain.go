package segments

import "slices"

// Louvain's bounds.
const (
	// Resolution is modularity's γ: 1 is Newman's modularity.
	Resolution = 1.0
	// MaxLevels bounds the aggregation levels, MaxSweeps the local-moving
	// sweeps a level: each sweep is O(edges), and Louvain settles in a few.
	MaxLevels = 12
	MaxSweeps = 16
	// minGain is the modularity gain under which a move is not worth it
	// (float noise would otherwise shuffle nodes between equal choices).
	minGain = 1e-12
)

// Louvain partitions g's nodes into communities of high modularity
// (Blondel et al. 2008): move each node to the neighbouring community
// that gains most, until none moves; merge each community into one node;
// repeat on that graph. Nodes are visited in index order, so the same
// graph always gives the same partition. It returns each node's community,
// numbered 0.. in order of each community's first node.
func Louvain(g *Graph) []int32 {
	n := g.N()
	comm := make([]int32, n)
	for i := range comm {
		comm[i] = int32(i)
	}
	for level := 0; level < MaxLevels && g.N() > 0; level++ {
		local, moved := moveNodes(g)
		// Compose: each original node's community is its level node's.
		for i := range comm {
			comm[i] = local[comm[i]]
		}
		if !moved {
			break
		}
		g = aggregate(g, local)
	}
	return renumber(comm)
}

// moveNodes is the local-moving phase: each node's community (renumbered
// 0..k−1) and whether any node moved.
func moveNodes(g *Graph) ([]int32, bool) {
	n := g.N()
	k := make([]float64, n)
	var m2 float64
	for i := range n {
		k[i] = g.Degree(i)
		m2 += k[i]
	}
	c := make([]int32, n)
	tot := make([]float64, n)
	for i := range n {
		c[i] = int32(i)
		tot[i] = k[i]
	}
	if m2 == 0 {
		return c, false
	}
	wTo := make([]float64, n)
	seen := make([]bool, n)
	var near []int32
	movedAny := false
	for sweep := 0; sweep < MaxSweeps; sweep++ {
		moves := 0
		for i := range n {
			own := c[i]
			near = near[:0]
			for e := g.Off[i]; e < g.Off[i+1]; e++ {
				j := g.Adj[e]
				cj := c[j]
				if !seen[cj] {
					seen[cj] = true
					near = append(near, cj)
				}
				wTo[cj] += float64(g.W[e])
			}
			tot[own] -= k[i]
			best, bestGain := own, wTo[own]-Resolution*tot[own]*k[i]/m2
			for _, cj := range near {
				gain := wTo[cj] - Resolution*tot[cj]*k[i]/m2
				if gain > bestGain+minGain {
					best, bestGain = cj, gain
				}
			}
			tot[best] += k[i]
			if best != own {
				c[i] = best
				moves++
			}
			for _, cj := range near {
				wTo[cj], seen[cj] = 0, false
			}
			wTo[own] = 0
		}
		if moves == 0 {
			break
		}
		movedAny = true
	}
	return renumber(c), movedAny
}

// aggregate makes each community of g one node: its edges to the others
// summed, the weight inside it its self-weight.
func aggregate(g *Graph, c []int32) *Graph {
	nc := 0
	for _, x := range c {
		nc = max(nc, int(x)+1)
	}
	members := make([][]int32, nc)
	for i, x := range c {
		members[x] = append(members[x], int32(i))
	}
	out := &Graph{Off: make([]int32, nc+1), Loop: make([]float64, nc)}
	acc := make([]float64, nc)
	var touched []int32
	for cc, ms := range members {
		touched = touched[:0]
		for _, i := range ms {
			out.Loop[cc] += g.Loop[i]
			for e := g.Off[i]; e < g.Off[i+1]; e++ {
				d := c[g.Adj[e]]
				if int(d) == cc {
					out.Loop[cc] += float64(g.W[e])
					continue
				}
				if acc[d] == 0 {
					touched = append(touched, d)
				}
				acc[d] += float64(g.W[e])
			}
		}
		sortInt32(touched)
		for _, d := range touched {
			out.Adj = append(out.Adj, d)
			out.W = append(out.W, float32(acc[d]))
			acc[d] = 0
		}
		out.Off[cc+1] = int32(len(out.Adj))
	}
	return out
}

// renumber numbers communities 0.. in order of their first member.
func renumber(c []int32) []int32 {
	id := map[int32]int32{}
	out := make([]int32, len(c))
	for i, x := range c {
		v, ok := id[x]
		if !ok {
			v = int32(len(id))
			id[x] = v
		}
		out[i] = v
	}
	return out
}

// Modularity is Q = Σ_c [in_c/2m − γ(tot_c/2m)²] of a partition of g.
func Modularity(g *Graph, c []int32) float64 {
	var m2 float64
	in := map[int32]float64{}
	tot := map[int32]float64{}
	for i := 0; i < g.N(); i++ {
		k := g.Degree(i)
		m2 += k
		tot[c[i]] += k
		in[c[i]] += g.Loop[i]
		for e := g.Off[i]; e < g.Off[i+1]; e++ {
			if c[g.Adj[e]] == c[i] {
				in[c[i]] += float64(g.W[e])
			}
		}
	}
	if m2 == 0 {
		return 0
	}
	var q float64
	for x, t := range tot {
		q += in[x]/m2 - Resolution*(t/m2)*(t/m2)
	}
	return q
}

func sortInt32(s []int32) { slices.Sort(s) }
