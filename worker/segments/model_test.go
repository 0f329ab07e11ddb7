package segments

import (
	"math"
	"reflect"
	"testing"
)

func TestAdjustedRand(t *testing.T) {
	for _, c := range []struct {
		a, b []int
		want float64
	}{
		{[]int{0, 0, 1, 1}, []int{5, 5, 9, 9}, 1},                   // same partition, other labels
		{[]int{0, 0, 0, 1, 1, 1}, []int{0, 0, 1, 1, 2, 2}, 0.24242}, // sklearn's adjusted_rand_score
		{[]int{0, 0, 1, 1}, []int{0, 1, 0, 1}, -0.5},
		{[]int{0, 0, 0}, []int{0, 0, 0}, 1},
	} {
		if got := AdjustedRand(c.a, c.b); math.Abs(got-c.want) > 1e-4 {
			t.Errorf("ARI(%v, %v) = %.5f, want %.5f", c.a, c.b, got, c.want)
		}
	}
}

// Two 4-cliques joined by one edge: Louvain finds the two cliques.
func TestLouvainFindsTwoCliques(t *testing.T) {
	var tops [][]int32
	// Keywords 0–3 share apps 0–2, keywords 4–7 apps 3–5; keywords 3 and 4
	// share app 6.
	for k := range 8 {
		base := int32(0)
		if k >= 4 {
			base = 3
		}
		top := []int32{base, base + 1, base + 2}
		if k == 3 || k == 4 {
			top = append(top, 6)
		}
		tops = append(tops, top)
	}
	g := Project(tops, 7)
	c := Louvain(g)
	want := []int32{0, 0, 0, 0, 1, 1, 1, 1}
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("communities %v, want %v", c, want)
	}
	if q := Modularity(g, c); q < 0.3 {
		t.Fatalf("modularity %.3f", q)
	}
	if !reflect.DeepEqual(Partition(tops, 7), want) {
		t.Fatalf("partition %v", Partition(tops, 7))
	}
}

func TestMatchKeepsIdsAndRecordsSplitsAndMerges(t *testing.T) {
	old := map[string]int64{"a": 1, "b": 1, "c": 1, "d": 1, "e": 2, "f": 2, "g": 2, "h": 2, "i": 3, "j": 3, "k": 4, "l": 4}
	size := map[int64]int{1: 4, 2: 4, 3: 2, 4: 2}
	comms := [][]string{
		{"a", "b", "c", "d", "x"}, // segment 1 plus a new keyword: keeps 1
		{"e", "f"},                // segment 2 split in two: neither half reaches ½ ... 2/4
		{"g", "h", "y"},
		{"i", "j", "k", "l"}, // 3 and 4 merged
	}
	m := Match(comms, old, size, 10)
	if m.IDs[0] != 1 {
		t.Fatalf("ids %v", m.IDs)
	}
	// {e,f}: J = 2/4 = 0.5 → keeps 2; {g,h,y}: J = 2/5 → new.
	if m.IDs[1] != 2 || m.IDs[2] != 10 {
		t.Fatalf("ids %v", m.IDs)
	}
	// {i,j,k,l} vs 3: J = 2/4 = 0.5, vs 4: 0.5; the lower id wins.
	if m.IDs[3] != 3 || !reflect.DeepEqual(m.Retired, []int64{4}) {
		t.Fatalf("ids %v retired %v", m.IDs, m.Retired)
	}
	want := []LineageEdge{{2, 10, KindSplit, 2}, {4, 3, KindMerge, 2}}
	if !reflect.DeepEqual(m.Lineage, want) {
		t.Fatalf("lineage %+v, want %+v", m.Lineage, want)
	}
	if m.NextID != 11 {
		t.Fatal(m.NextID)
	}
}

func TestTrend(t *testing.T) {
	f := func(x float64) *float64 { return &x }
	now := Point{TotalRatings: 1030, Apps: []int64{1, 2, 3}}
	if tr := Trend(now, nil, nil, nil, nil); tr.Trend != Steady || tr.DemandGrowth7d != nil {
		t.Fatalf("no history: %+v", tr)
	}
	week := &Point{TotalRatings: 1000, Apps: []int64{1, 2}}
	month := &Point{TotalRatings: 900, Apps: []int64{1}}
	tr := Trend(now, week, month, f(10), f(8))
	if tr.Trend != Heating || *tr.DemandGrowth7d != 0.03 || *tr.NewEntrants7d != 1 || *tr.NewEntrants30d != 2 {
		t.Fatalf("+3%% a week: %+v", tr)
	}
	// +1% a week, leaders accelerating: heating.
	if tr := Trend(Point{TotalRatings: 1010}, week, month, f(10), f(5)); tr.Trend != Heating {
		t.Fatalf("%+v", tr)
	}
	// +1% a week at the month's pace: steady.
	if tr := Trend(Point{TotalRatings: 1010}, week, month, f(5), f(5)); tr.Trend != Steady {
		t.Fatalf("%+v", tr)
	}
	// +0.2% over the month, leaders slowing: cooling.
	flat := &Point{TotalRatings: 1000}
	if tr := Trend(Point{TotalRatings: 1002}, flat, flat, f(1), f(5)); tr.Trend != Cooling {
		t.Fatalf("%+v", tr)
	}
	h, s, c := Trend(now, week, month, f(10), f(8)).Score, Trend(Point{TotalRatings: 1010}, week, month, f(5), f(5)).Score, Trend(Point{TotalRatings: 1002}, flat, flat, f(1), f(5)).Score
	if !(h > s && s > c) {
		t.Fatalf("scores %v %v %v", h, s, c)
	}
}

func TestBuildScoresASegmentByMarketsFormulas(t *testing.T) {
	c := func(x float64) *float64 { return &x }
	tops := map[string][]int64{"budget app": {1, 2}, "budget planner": {1, 3}, "expense tracker": {1, 2, 3}}
	stats := map[int64]AppStat{1: {Ratings: 600, Rating: 4.0, Competitiveness: c(60), Velocity7d: c(2)}, 2: {Ratings: 300, Rating: 4.5, Competitiveness: c(40)}, 3: {Ratings: 100, Rating: 3.0}}
	b := Build([]string{"expense tracker", "budget planner", "budget app"}, tops, stats)
	if b.Name != "budget expense planner" {
		t.Fatalf("name %q", b.Name)
	}
	if len(b.Apps) != 3 || b.Apps[0].TrackID != 1 || b.Apps[0].Share != 0.6 || b.Apps[0].Keywords != 3 {
		t.Fatalf("apps %+v", b.Apps)
	}
	s := b.Scores
	// HHI .36+.09+.01; avg (2400+1350+300)/1000.
	if s.HHI != 0.46 || s.Fragmentation != 0.54 || s.AvgRating != 4.05 || s.TotalRatings != 1000 || *s.Competitiveness != 50 || *s.Velocity7d != 2 {
		t.Fatalf("scores %+v", s)
	}
	if s.Opportunity <= 0 || s.Demand != 3 {
		t.Fatalf("scores %+v", s)
	}
}

func TestRelate(t *testing.T) {
	r := Relate(map[int64][]int64{1: {10, 11, 12}, 2: {10, 11}, 3: {12}, 4: {99}})
	if !reflect.DeepEqual(r[1], []Relation{{2, 2}, {3, 1}}) || len(r[4]) != 0 {
		t.Fatalf("%+v", r)
	}
}
