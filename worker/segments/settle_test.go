package segments

import (
	"slices"
	"testing"
)

// Two niches: apps 0–5 (A) and 6–11 (B), each ranked by its own keywords.
func settleTops() [][]int32 {
	a := []int32{0, 1, 2, 3, 4, 5}
	b := []int32{6, 7, 8, 9, 10, 11}
	return [][]int32{
		a, a, // 0, 1: A's keywords
		b, b, // 2, 3: B's
		a,                      // 4: an A keyword the graph put with B
		{0, 1, 6, 7, 8},        // 5: a mixed keyword, mostly B's apps
		{12, 0, 1, 2},          // 6: app 12 ranks with A's apps here...
		{12, 6, 7, 0, 1, 2, 3}, // 7: ...and in a mixed keyword, mostly A's apps
	}
}

func TestSettleMovesAKeywordToItsAppsSegment(t *testing.T) {
	seg := []int32{0, 0, 1, 1, 1, 1, 0, 1}
	got := settle(settleTops(), 13, seg)
	// Keyword 4's apps are all A's: it joins A. Keyword 5 stays with B, whose
	// apps most of its top are; keyword 7, most of whose top is A's, joins A.
	want := []int32{0, 0, 1, 1, 0, 1, 0, 0}
	if !slices.Equal(got, want) {
		t.Fatalf("settled %v, want %v", got, want)
	}
	if !slices.Equal(seg, []int32{0, 0, 1, 1, 1, 1, 0, 1}) {
		t.Fatalf("input changed: %v", seg)
	}
}

func TestSettleKeepsASettledPartition(t *testing.T) {
	seg := []int32{0, 0, 1, 1, 0, 1, 0, 0}
	if got := settle(settleTops(), 13, seg); !slices.Equal(got, seg) {
		t.Fatalf("settled %v, want it unchanged %v", got, seg)
	}
	// A keyword tied between two segments keeps its own.
	tops := [][]int32{{0, 1}, {0, 1}, {2, 3}, {2, 3}, {0, 1, 2, 3}}
	for _, own := range []int32{0, 1} {
		seg := []int32{0, 0, 1, 1, own}
		if got := settle(tops, 4, seg); got[4] != own {
			t.Fatalf("tied keyword in %d moved to %d", own, got[4])
		}
	}
}

func TestSettleWeighsPureKeywordsOverMixedOnes(t *testing.T) {
	// App 6 ranks in two keywords of segment 1 whose tops are three of
	// seven segment 0's apps, and in one keyword of segment 0 whose top
	// is mostly segment 0's: by plain majority it is segment 1's, by
	// evidence segment 0's, so keyword 5 (apps 6 and 7, 7 being segment
	// 0's) joins segment 0, where plain majority would leave it tied.
	tops := [][]int32{
		{0, 1, 2, 6, 7},       // 0: segment 0's, pure
		{0, 1, 2, 7},          // 1
		{3, 4, 5, 0, 1, 2, 6}, // 2: segment 1's, mixed
		{3, 4, 5, 0, 1, 2, 6}, // 3
		{3, 4, 5},             // 4
		{6, 7},                // 5
	}
	seg := []int32{0, 0, 1, 1, 1, 1}
	got := settle(tops, 8, seg)
	if got[5] != 0 {
		t.Fatalf("settled %v: keyword 5 should follow its apps to segment 0", got)
	}
}
