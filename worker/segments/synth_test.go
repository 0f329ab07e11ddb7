package segments

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// synthStore is a store whose apps come from hidden niches: each
// keyword belongs to a niche and ranks the niche's apps by relevance
// (popularity within the niche, with noise), some of its top slots taken
// by apps of other niches or by generalists that rank everywhere.
type synthStore struct {
	keywords []string
	niche    []int     // the hidden truth, by keyword
	tops     [][]int32 // each keyword's top TopN apps, in rank order
	apps     int
}

type synthShape struct {
	niches, keywordsPerNiche, appsPerNiche int
	// noise is the chance a top slot is taken by an app of another niche.
	noise float64
	// generalists rank in a keyword's top slots with chance generalistRate.
	generalists    int
	generalistRate float64
}

func synth(seed uint64, s synthShape) synthStore {
	r := rand.New(rand.NewPCG(seed, 0xfeed))
	var st synthStore
	st.apps = s.niches*s.appsPerNiche + s.generalists
	// Popularity within a niche falls as a power of its rank (Zipf-like).
	cum := make([]float64, s.appsPerNiche)
	var sum float64
	for i := range cum {
		sum += 1 / math.Pow(float64(i+1), 0.9)
		cum[i] = sum
	}
	pick := func() int {
		i, _ := slices.BinarySearch(cum, r.Float64()*sum)
		return min(s.appsPerNiche-1, i)
	}
	for k := range s.niches {
		for w := range s.keywordsPerNiche {
			st.keywords = append(st.keywords, fmt.Sprintf("n%04d-w%03d", k, w))
			st.niche = append(st.niche, k)
			seen := map[int32]bool{}
			var top []int32
			for len(top) < TopN {
				var a int32
				switch x := r.Float64(); {
				case x < s.generalistRate && s.generalists > 0:
					a = int32(s.niches*s.appsPerNiche + r.IntN(s.generalists))
				case x < s.generalistRate+s.noise:
					a = int32(r.IntN(s.niches)*s.appsPerNiche + pick())
				default:
					a = int32(k*s.appsPerNiche + pick())
				}
				if !seen[a] {
					seen[a] = true
					top = append(top, a)
				}
			}
			st.tops = append(st.tops, top)
		}
	}
	return st
}

// scoreAgainstTruth is the ARI of a partition against the hidden niches
// (each unsegmented keyword its own singleton) and its coverage (the share
// of keywords segmented).
func scoreAgainstTruth(st synthStore, part []int32) (ari, coverage float64) {
	labels := make([]int, len(part))
	covered := 0
	for i, p := range part {
		if p < 0 {
			labels[i] = -1 - i
			continue
		}
		labels[i] = int(p)
		covered++
	}
	return AdjustedRand(st.niche, labels), float64(covered) / float64(len(part))
}
