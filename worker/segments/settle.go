package segments

import "slices"

// Settling bounds.
const (
	// SettleRounds is how many rounds settle runs: each round places every
	// app by its keywords' evidence and every keyword by its top apps.
	// The moves shrink round by round and are few after ten rounds.
	SettleRounds = 10
	// SettlePurityPower weighs a keyword's evidence for an app by its
	// purity (the share of its top apps in its own segment) to this power:
	// a keyword whose top spans several segments (a subject word, a brand
	// with a subject) says little about which of them an app belongs to,
	// while a keyword whose top is one segment's apps says much. To the
	// fourth power a half-mixed keyword counts a sixteenth of a pure one;
	// a higher power gains little and merges more segments (docs/markets.md,
	// "Segments on the living simulator", gives the powers' figures).
	SettlePurityPower = 4
)

// settle refines a partition of keywords (seg[i]: keyword i's segment, −1
// none) by co-clustering keywords and their top apps (tops[i], indices
// below apps), SettleRounds times: each app is placed in the segment its
// keywords give the most evidence for, a keyword's evidence being its
// purity to SettlePurityPower; then each keyword joins the segment most
// of its top apps are in (ties: its own, then the lower), its purity
// being that share. Keywords with no placed app keep their segment.
// Louvain on the keyword graph finds communities joined by shared apps,
// but an app ranking for the mixed keywords of a subject (its name word,
// brand-and-subject pairs) is pulled towards whatever community those
// keywords fell into; settling lets the pure keywords decide. It returns
// the new labels (same numbering, some segments possibly emptied).
func settle(tops [][]int32, apps int, seg []int32) []int32 {
	out := slices.Clone(seg)
	nseg := int32(0)
	for _, s := range seg {
		nseg = max(nseg, s+1)
	}
	if nseg == 0 {
		return out
	}
	// The apps' keywords, in compressed rows.
	off := make([]int32, apps+1)
	for _, t := range tops {
		for _, a := range t {
			off[a+1]++
		}
	}
	for a := 1; a <= apps; a++ {
		off[a] += off[a-1]
	}
	akw := make([]int32, off[apps])
	fill := slices.Clone(off[:apps])
	for i, t := range tops {
		for _, a := range t {
			akw[fill[a]] = int32(i)
			fill[a]++
		}
	}
	fill = nil
	purity := make([]float32, len(tops))
	appSeg := make([]int32, apps)
	acc := make([]float32, nseg)
	var touched []int32
	// count tallies a keyword's top apps by segment: the segment most of
	// them are in (ties: cur, then the lower) and its share of the top.
	count := func(t []int32, cur int32) (int32, float32) {
		touched = touched[:0]
		for _, a := range t {
			if s := appSeg[a]; s >= 0 {
				if acc[s] == 0 {
					touched = append(touched, s)
				}
				acc[s]++
			}
		}
		best, bn := cur, float32(0)
		if cur >= 0 {
			bn = acc[cur]
		}
		for _, s := range touched {
			if acc[s] > bn || acc[s] == bn && best != cur && s < best {
				best, bn = s, acc[s]
			}
		}
		for _, s := range touched {
			acc[s] = 0
		}
		if len(t) == 0 {
			return best, 0
		}
		return best, bn / float32(len(t))
	}
	// The first round weighs every segmented keyword alike: the apps are
	// placed by plain majority.
	for i := range purity {
		if out[i] >= 0 {
			purity[i] = 1
		}
	}
	for round := 0; round < SettleRounds; round++ {
		for a := 0; a < apps; a++ {
			touched = touched[:0]
			for _, i := range akw[off[a]:off[a+1]] {
				s := out[i]
				if s < 0 || purity[i] == 0 {
					continue
				}
				if acc[s] == 0 {
					touched = append(touched, s)
				}
				p := purity[i]
				for k := 1; k < SettlePurityPower; k++ {
					p *= purity[i]
				}
				acc[s] += p
			}
			best, bw := int32(-1), float32(0)
			for _, s := range touched {
				if acc[s] > bw || acc[s] == bw && s < best {
					best, bw = s, acc[s]
				}
				acc[s] = 0
			}
			appSeg[a] = best
		}
		moved := 0
		for i, t := range tops {
			s, p := count(t, out[i])
			if s != out[i] {
				moved++
			}
			out[i], purity[i] = s, p
		}
		if moved == 0 && round > 0 {
			break
		}
	}
	return out
}
