package segments

import "sort"

// Identity bounds.
const (
	// MatchJaccard: a new community keeps an old segment's id when the
	// Jaccard index of their keywords is at least this (each old segment
	// to one community, the best overlaps first). Over ½ no two
	// communities can match one segment.
	MatchJaccard = 0.5
	// LineageMinShare: a split or merge is recorded when at least this
	// share of the parent's keywords went to the child (smaller moves are
	// a few keywords drifting, not a split).
	LineageMinShare = 0.2
)

// Lineage kinds.
const (
	KindSplit = "split" // part of a segment became (part of) another
	KindMerge = "merge" // a segment took in a large part of another
)

// LineageEdge is one recorded split or merge: Keywords of Parent's went
// to Child.
type LineageEdge struct {
	Parent   int64
	Child    int64
	Kind     string
	Keywords int
}

// Matched is the identity of a run's communities: each community's
// segment id (old ones kept, new ones from nextID on), the old segments
// no community continues (retired), and the lineage.
type Matched struct {
	IDs     []int64
	Retired []int64
	Lineage []LineageEdge
	NextID  int64
}

// Match gives new communities (their keywords) ids, keeping old segments'
// (old: each keyword's old segment, over the keywords being re-partitioned;
// oldSize: each old segment's keyword count). Pairs are taken by
// descending Jaccard, ties by old id then community index, each side once,
// while at least MatchJaccard; the rest of the communities get new ids.
// A parent whose keywords went in shares of at least LineageMinShare to
// two or more children is a split to each other child; a child that took
// such shares of two or more parents records a merge from each other
// parent.
func Match(comms [][]string, old map[string]int64, oldSize map[int64]int, nextID int64) Matched {
	overlap := make([]map[int64]int, len(comms))
	sizes := make([]int, len(comms))
	for c, kws := range comms {
		overlap[c] = map[int64]int{}
		sizes[c] = len(kws)
		for _, k := range kws {
			if s, ok := old[k]; ok {
				overlap[c][s]++
			}
		}
	}
	return matchOverlaps(sizes, overlap, oldSize, nextID)
}

// matchOverlaps is Match over each community's size and its keywords'
// count in each old segment (overlap[c]: old id → keywords).
func matchOverlaps(sizes []int, overlap []map[int64]int, oldSize map[int64]int, nextID int64) Matched {
	type pair struct {
		c       int
		s       int64
		overlap int
		j       float64
	}
	comms := sizes
	var pairs []pair
	for c, n := range sizes {
		for s, o := range overlap[c] {
			j := float64(o) / float64(n+oldSize[s]-o)
			pairs = append(pairs, pair{c, s, o, j})
		}
	}
	sort.Slice(pairs, func(i, j int) bool {
		if pairs[i].j != pairs[j].j {
			return pairs[i].j > pairs[j].j
		}
		if pairs[i].s != pairs[j].s {
			return pairs[i].s < pairs[j].s
		}
		return pairs[i].c < pairs[j].c
	})
	m := Matched{IDs: make([]int64, len(comms)), NextID: nextID}
	usedS := map[int64]bool{}
	for _, p := range pairs {
		if p.j < MatchJaccard {
			break
		}
		if m.IDs[p.c] != 0 || usedS[p.s] {
			continue
		}
		m.IDs[p.c], usedS[p.s] = p.s, true
	}
	for c := range comms {
		if m.IDs[c] == 0 {
			m.IDs[c] = m.NextID
			m.NextID++
		}
	}
	for s := range oldSize {
		if !usedS[s] {
			m.Retired = append(m.Retired, s)
		}
	}
	sort.Slice(m.Retired, func(i, j int) bool { return m.Retired[i] < m.Retired[j] })
	// Lineage from the significant flows parent → child.
	type flow struct {
		parent, child int64
		n             int
	}
	var flows []flow
	children, parents := map[int64]int{}, map[int64]int{}
	for c := range comms {
		for s, o := range overlap[c] {
			if oldSize[s] > 0 && float64(o)/float64(oldSize[s]) >= LineageMinShare {
				flows = append(flows, flow{s, m.IDs[c], o})
				children[s]++
				parents[m.IDs[c]]++
			}
		}
	}
	sort.Slice(flows, func(i, j int) bool {
		if flows[i].parent != flows[j].parent {
			return flows[i].parent < flows[j].parent
		}
		return flows[i].child < flows[j].child
	})
	for _, f := range flows {
		if f.parent == f.child {
			continue
		}
		switch {
		case children[f.parent] >= 2:
			m.Lineage = append(m.Lineage, LineageEdge{Parent: f.parent, Child: f.child, Kind: KindSplit, Keywords: f.n})
		case parents[f.child] >= 2:
			m.Lineage = append(m.Lineage, LineageEdge{Parent: f.parent, Child: f.child, Kind: KindMerge, Keywords: f.n})
		default:
			// One parent, one child, not matched (a renewal under the
			// Jaccard bar): recorded as a split to its one successor.
			m.Lineage = append(m.Lineage, LineageEdge{Parent: f.parent, Child: f.child, Kind: KindSplit, Keywords: f.n})
		}
	}
	return m
}
