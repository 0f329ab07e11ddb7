package segments

// AdjustedRand is the adjusted Rand index of two labelings of the same
// items (Hubert & Arabie 1985): 1 for identical partitions (whatever the
// labels), about 0 for independent ones, negative for worse than chance.
// Used to hold the segmentation against known niches.
func AdjustedRand(a, b []int) float64 {
	if len(a) != len(b) {
		panic("segments: AdjustedRand of labelings of different lengths")
	}
	n := len(a)
	if n < 2 {
		return 1
	}
	pair := map[[2]int]int{}
	ra, rb := map[int]int{}, map[int]int{}
	for i := range a {
		pair[[2]int{a[i], b[i]}]++
		ra[a[i]]++
		rb[b[i]]++
	}
	c2 := func(x int) float64 { return float64(x) * float64(x-1) / 2 }
	var index, sa, sb float64
	for _, v := range pair {
		index += c2(v)
	}
	for _, v := range ra {
		sa += c2(v)
	}
	for _, v := range rb {
		sb += c2(v)
	}
	expected := sa * sb / c2(n)
	maxIndex := (sa + sb) / 2
	if maxIndex == expected {
		return 1 // both partitions trivial (all one cluster, or all singletons)
	}
	return (index - expected) / (maxIndex - expected)
}
