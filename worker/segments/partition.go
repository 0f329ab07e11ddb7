package segments

// Partition bounds.
const (
	// MinSegmentKeywords: a community of fewer keywords is no market
	// segment (a keyword or a pair whose apps rank nowhere else); its
	// keywords stay unsegmented, keyword markets only.
	MinSegmentKeywords = 3
	// MinSplitModularity: a community is split by Louvain run on it alone
	// when that split's modularity is at least this. Modularity has a
	// resolution limit: on a graph of thousands of niches it merges two
	// niches joined by a single link. Run alone, two niches so joined split
	// at Q ≈ 0.5, while a single dense niche's best split stays under ~0.2.
	// A market whose keywords share a subject word ("chess", "chess
	// puzzles", "chess clock") splits at Q 0.3–0.4 along lines that cross
	// its niches, so the bar sits above that (docs/markets.md, "Segments
	// on the living simulator").
	MinSplitModularity = 0.45
	// MaxRefineDepth bounds how many times a community is split again.
	MaxRefineDepth = 4
	// PassMemoryLimit is the Go heap a pass asks the collector to stay
	// under while it partitions (debug.SetMemoryLimit): the Worker's
	// isolate has 128 MB for everything, and wasm memory once grown is
	// never given back, so the pass's garbage must be collected early,
	// not left to GOGC's doubling.
	PassMemoryLimit = 64 << 20
)

// Partition groups keywords (tops[i]: keyword i's top apps, indices below
// apps) into segments: the keyword graph's communities (Louvain, each
// community then split again while it holds well-separated parts),
// settled against the apps (settle), those of at least MinSegmentKeywords
// keywords. It returns each keyword's
// segment, numbered 0.. in order of first keyword, or −1 for an
// unsegmented keyword.
func Partition(tops [][]int32, apps int) []int32 {
	g := Project(tops, apps)
	c := Louvain(g)
	c = refine(g, c, MaxRefineDepth)
	g = nil
	c = settle(tops, apps, c)
	size := map[int32]int{}
	for _, x := range c {
		size[x]++
	}
	id := map[int32]int32{}
	out := make([]int32, len(c))
	for i, x := range c {
		if size[x] < MinSegmentKeywords {
			out[i] = -1
			continue
		}
		v, ok := id[x]
		if !ok {
			v = int32(len(id))
			id[x] = v
		}
		out[i] = v
	}
	return out
}

// refine splits each community of g whose own Louvain partition reaches
// MinSplitModularity, depth times at most; it returns the new labels.
func refine(g *Graph, c []int32, depth int) []int32 {
	if depth == 0 {
		return c
	}
	groups := map[int32][]int32{}
	for i, x := range c {
		groups[x] = append(groups[x], int32(i))
	}
	next := int32(len(groups))
	out := make([]int32, len(c))
	copy(out, c)
	local := make([]int32, len(c))
	for x := int32(0); x < int32(len(groups)); x++ {
		nodes := groups[x]
		if len(nodes) < 2*MinSegmentKeywords {
			continue
		}
		sub := induced(g, nodes, local)
		sc := Louvain(sub)
		if maxLabel(sc) == 0 || Modularity(sub, sc) < MinSplitModularity {
			continue
		}
		sc = refine(sub, sc, depth-1)
		for k, i := range nodes {
			if sc[k] > 0 {
				out[i] = next + sc[k] - 1
			}
		}
		next += maxLabel(sc)
	}
	return renumber(out)
}

// induced is g restricted to nodes (local: scratch of g's size).
func induced(g *Graph, nodes []int32, local []int32) *Graph {
	for k, i := range nodes {
		local[i] = int32(k) + 1
	}
	sub := &Graph{Off: make([]int32, len(nodes)+1), Loop: make([]float64, len(nodes))}
	for k, i := range nodes {
		sub.Loop[k] = g.Loop[i]
		for e := g.Off[i]; e < g.Off[i+1]; e++ {
			if l := local[g.Adj[e]]; l > 0 {
				sub.Adj = append(sub.Adj, l-1)
				sub.W = append(sub.W, g.W[e])
			}
		}
		sub.Off[k+1] = int32(len(sub.Adj))
	}
	for _, i := range nodes {
		local[i] = 0
	}
	return sub
}

func maxLabel(c []int32) int32 {
	m := int32(0)
	for _, x := range c {
		m = max(m, x)
	}
	return m
}
