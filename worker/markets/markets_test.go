package markets

import (
	"strings"
	"testing"
	"time"
)

func TestBuildClustersScoresMarkets(t *testing.T) {
	rows := []RankedApp{
		// "budget": fragmented, mediocre ratings, decent demand → good opportunity.
		{"budget", 1, 1, 5000, 3.9}, {"budget", 2, 2, 4000, 3.8}, {"budget", 3, 3, 3000, 4.0},
		// "chat": one giant, well rated → poor opportunity.
		{"chat", 4, 1, 2_000_000, 4.8}, {"chat", 5, 2, 1000, 4.1}, {"chat", 6, 3, 500, 3.0},
		// "rare": too few apps to be a market.
		{"rare", 7, 1, 10, 2.0}, {"rare", 8, 2, 10, 2.0},
	}
	cs := BuildClusters(rows)
	if len(cs) != 2 || cs[0].ID != "budget" || cs[1].ID != "chat" {
		t.Fatalf("clusters %+v", cs)
	}
	budget, chat := cs[0], cs[1]
	if budget.Apps != 3 || budget.TotalRatings != 12000 || budget.Members[0] != 1 {
		t.Fatalf("budget %+v", budget)
	}
	if budget.OpportunityScore <= chat.OpportunityScore || chat.TopShare < 0.99 || budget.OpportunityScore > 100 || chat.OpportunityScore < 0 {
		t.Fatalf("fragmented, underserved budget (%.1f) must beat concentrated chat (%.1f)", budget.OpportunityScore, chat.OpportunityScore)
	}
	stmts := ClusterStatements(cs, time.Now())
	members := 0
	for _, s := range stmts {
		if strings.Count(s.SQL, "?") != len(s.Args) {
			t.Fatalf("placeholders: %q", s.SQL)
		}
		if strings.Contains(s.SQL, "market_cluster_members (") {
			members++
		}
	}
	if members != 6 {
		t.Fatalf("member rows %d", members)
	}
}

func TestScoreIsRecomputableFromAggregates(t *testing.T) {
	// Shares .4/.3/.3: HHI .34, fragmentation .66.
	c := Cluster{ID: "x", TotalRatings: 12000, AvgRating: 3.9, TopShare: 0.4, HHI: 0.34, Fragmentation: 0.66}
	c.Score()
	built := BuildClusters([]RankedApp{{"x", 1, 1, 4800, 3.9}, {"x", 2, 2, 3600, 3.9}, {"x", 3, 3, 3600, 3.9}})[0]
	if c.OpportunityScore != built.OpportunityScore || len(ScoreStatements([]Cluster{c}, time.Now())) != 1 {
		t.Fatalf("%v vs %v", c.OpportunityScore, built.OpportunityScore)
	}
}

func TestHerfindahlAndFragmentation(t *testing.T) {
	cases := []struct {
		counts []int64
		hhi    float64
	}{
		{[]int64{100}, 1},                      // a monopoly
		{[]int64{100, 0, 0}, 1},                // all demand with one app
		{[]int64{50, 50}, 0.5},                 // two equal apps
		{[]int64{10, 10, 10, 10}, 0.25},        // n equal apps: 1/n
		{[]int64{1000, 2000, 3000, 4000}, 0.3}, // .01+.04+.09+.16
		{[]int64{0, 0, 0}, 0.333},              // no ratings: taken as equal
		{[]int64{-5, 10}, 1},                   // negative counts count as none
		{nil, 1},
	}
	for _, c := range cases {
		if got := Herfindahl(c.counts); got != c.hhi {
			t.Errorf("Herfindahl(%v) = %v, want %v", c.counts, got, c.hhi)
		}
	}
	if FragmentationOf(1) != 0 || FragmentationOf(0.3) != 0.7 || FragmentationOf(1.2) != 0 {
		t.Fatal("fragmentation is 1 − HHI, never negative")
	}
	// More equal competitors → more fragmented.
	if !(FragmentationOf(Herfindahl([]int64{1, 1, 1, 1, 1})) > FragmentationOf(Herfindahl([]int64{1, 1}))) {
		t.Fatal("five equal apps must be more fragmented than two")
	}
}

func TestAnalyzeFragmentationStoresPerCluster(t *testing.T) {
	fs := AnalyzeFragmentation(map[string][]int64{"chat": {2_000_000, 1000, 500}, "budget": {5000, 4000, 3000}})
	if len(fs) != 2 || fs[0].ClusterID != "budget" || fs[0].Apps != 3 || fs[1].Fragmentation > 0.01 || fs[0].Fragmentation < 0.6 {
		t.Fatalf("%+v", fs)
	}
	stmts := FragmentationStatements(fs, time.Now())
	if len(stmts) != 2 || !strings.HasPrefix(stmts[0].SQL, "UPDATE market_clusters SET hhi") || stmts[0].Args[3] != "budget" ||
		strings.Count(stmts[0].SQL, "?") != len(stmts[0].Args) {
		t.Fatalf("%+v", stmts)
	}
	// BuildClusters agrees with the stage, so a cluster scores the same either way.
	built := BuildClusters([]RankedApp{{"budget", 1, 1, 5000, 3.9}, {"budget", 2, 2, 4000, 3.8}, {"budget", 3, 3, 3000, 4.0}})[0]
	if built.HHI != fs[0].HHI || built.Fragmentation != fs[0].Fragmentation {
		t.Fatalf("built %+v vs analysed %+v", built, fs[0])
	}
	// Re-clustering clears the stored analysis: it described the old members.
	cl := ClusterStatements([]Cluster{built}, time.Now())
	if !strings.Contains(cl[0].SQL, "fragmentation = NULL") {
		t.Fatalf("%s", cl[0].SQL)
	}
}
