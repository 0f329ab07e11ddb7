package main

import "slices"

// EagerMaxApps is the largest catalogue generated up front (about 2 KB an
// app: 200,000 apps are ~0.5 GB). Above it apps are generated on demand,
// each from its own PCG stream exactly as the eager catalogue does, and
// only a compact index is kept (lazyIndex: ~22 bytes an app, ~25 MB at
// 1.1M apps) for what needs every app at once: search, charts and the
// "more by this developer" shelf.
const EagerMaxApps = 200_000

// maxLazyApps bounds -apps for the lazy catalogue (its index is sized by n).
const maxLazyApps = 5_000_000

// appSummary is what search and charts need of one app.
type appSummary struct {
	ratingCount int64
	nameCombo   uint16 // index into nameCombos
	genre       uint8  // index into genres
	paid        bool
	iaps        uint8
}

// nameCombos are every name the generator can make, in the order comboOf
// numbers them: adjective × noun × (no suffix, then each suffix).
var nameCombos = func() []string {
	var out []string
	for _, adj := range nameAdjectives {
		for _, noun := range nameNouns {
			out = append(out, adj+" "+noun)
			for _, suf := range nameSuffixes {
				out = append(out, adj+" "+noun+" "+suf)
			}
		}
	}
	return out
}()

var comboOf = func() map[string]uint16 {
	m := make(map[string]uint16, len(nameCombos))
	for i, n := range nameCombos {
		m[n] = uint16(i)
	}
	return m
}()

var genreIndex = func() map[int]uint8 {
	m := map[int]uint8{}
	for i, g := range genres {
		m[g.ID] = uint8(i)
	}
	return m
}()

// lazyIndex is a lazy catalogue: n, its seed, and the compact index.
type lazyIndex struct {
	n, numDevs int
	seed       uint64
	sum        []appSummary
	// devStart[d]..devStart[d+1] index devApps, the offsets of developer
	// d's apps in id order (a CSR index: two int32 per app and developer).
	devStart []int32
	devApps  []int32
}

func newLazyIndex(n, numDevs int, seed uint64) *lazyIndex {
	l := &lazyIndex{n: n, numDevs: numDevs, seed: seed, sum: make([]appSummary, n)}
	devOf := make([]int32, n)
	counts := make([]int32, numDevs+1)
	for i := range n {
		a := generate(int64(i+1), n, numDevs, seed)
		l.sum[i] = appSummary{ratingCount: a.RatingCount, nameCombo: comboOf[a.Name], genre: genreIndex[a.Genre.ID],
			paid: a.Price > 0, iaps: uint8(len(a.IAPs))}
		d := int32(a.DevID - baseDeveloperID - 1)
		devOf[i] = d
		counts[d+1]++
	}
	for d := 1; d <= numDevs; d++ {
		counts[d] += counts[d-1]
	}
	l.devStart = slices.Clone(counts)
	l.devApps = make([]int32, n)
	for i, d := range devOf {
		l.devApps[counts[d]] = int32(i + 1)
		counts[d]++
	}
	return l
}

func (l *lazyIndex) get(off int64) (*App, bool) {
	if off < 1 || off > int64(l.n) {
		return nil, false
	}
	a := generate(off, l.n, l.numDevs, l.seed)
	return &a, true
}

func (l *lazyIndex) byDeveloper(devID int64) []int64 {
	d := devID - baseDeveloperID - 1
	if d < 0 || d >= int64(l.numDevs) {
		return nil
	}
	var ids []int64
	for _, off := range l.devApps[l.devStart[d]:l.devStart[d+1]] {
		ids = append(ids, baseTrackID+int64(off))
	}
	return ids
}

func (l *lazyIndex) each(fn func(a *App)) {
	var a App
	iaps := make([]IAP, 256)
	for i, s := range l.sum {
		a.ID, a.Name, a.Genre, a.RatingCount = baseTrackID+int64(i+1), nameCombos[s.nameCombo], genres[s.genre], s.ratingCount
		a.Price = 0
		if s.paid {
			a.Price = 1 // the sign is all Each promises
		}
		a.IAPs = iaps[:s.iaps]
		fn(&a)
	}
}
