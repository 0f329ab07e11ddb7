package markets

import (
	"encoding/json"
	"fmt"
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
	// New clusters: one statement for their rows (their members are
	// their keywords' rankings), each with the sum of its members' ids.
	stmts := ClusterStatements(cs, time.Now())
	if len(stmts) != 1 || !strings.Contains(stmts[0].SQL, "INSERT INTO market_clusters (") {
		t.Fatalf("statements %+v", stmts)
	}
	var written [][8]any
	if err := json.Unmarshal([]byte(stmts[0].Args[0].(string)), &written); err != nil || len(written) != 2 || written[0][7] != 6.0 || written[1][7] != 15.0 {
		t.Fatalf("cluster rows %v %v", written, err)
	}
}

// stored is a cluster as D1 would hold it after writing c.
func stored(c Cluster) StoredCluster {
	s := StoredCluster{Apps: c.Apps, TotalRatings: c.TotalRatings, AvgRating: &c.AvgRating, TopShare: &c.TopShare,
		HHI: &c.HHI, Fragmentation: &c.Fragmentation, MemberSum: &c.MemberSum}
	return s
}

func TestDiffClustersWritesOnlyWhatChanged(t *testing.T) {
	rows := []RankedApp{{"budget", 1, 1, 5000, 3.9}, {"budget", 2, 2, 4000, 3.8}, {"budget", 3, 3, 3000, 4.0}}
	was := BuildClusters(rows)[0]
	held := map[string]StoredCluster{"budget": stored(was)}

	// The same rankings and ratings: nothing to write.
	if d := DiffClusters(BuildClusters(rows), held); len(d.Rows)+len(d.Changed) != 0 {
		t.Fatalf("unchanged: %+v", d)
	}
	// One app gained: the cluster's stats (the membership is its ranking).
	gained := BuildClusters(append(rows, RankedApp{"budget", 4, 4, 100, 3.0}))
	d := DiffClusters(gained, held)
	if len(d.Rows) != 1 || d.Rows[0].Apps != 4 || d.Rows[0].MemberSum != 10 || fmt.Sprint(d.Changed) != "[budget]" {
		t.Fatalf("gained: %+v", d)
	}
	// Two apps swapped ranks, the ratings the same: nothing (the stats do
	// not read ranks; the positions are the rankings').
	swapped := []RankedApp{{"budget", 1, 2, 5000, 3.9}, {"budget", 2, 1, 4000, 3.8}, {"budget", 3, 3, 3000, 4.0}}
	if d = DiffClusters(BuildClusters(swapped), held); len(d.Rows)+len(d.Changed) != 0 {
		t.Fatalf("swapped: %+v", d)
	}
	// One app replaced by another with the same ratings: the stats are the
	// same, the row is written for its member set (what the cron compares).
	replaced := []RankedApp{{"budget", 1, 1, 5000, 3.9}, {"budget", 2, 2, 4000, 3.8}, {"budget", 9, 3, 3000, 4.0}}
	d = DiffClusters(BuildClusters(replaced), held)
	if len(d.Rows) != 1 || d.Rows[0].MemberSum != 12 {
		t.Fatalf("replaced (same ratings, same stats): %+v", d)
	}
	// A rating moved: the cluster's row.
	rated := []RankedApp{{"budget", 1, 1, 5001, 3.9}, {"budget", 2, 2, 4000, 3.8}, {"budget", 3, 3, 3000, 4.0}}
	d = DiffClusters(BuildClusters(rated), held)
	if len(d.Rows) != 1 {
		t.Fatalf("rated: %+v", d)
	}
	// Stored without its analysis (NULL): the row, to store it.
	bare := stored(was)
	bare.HHI, bare.Fragmentation = nil, nil
	if d := DiffClusters(BuildClusters(rows), map[string]StoredCluster{"budget": bare}); len(d.Rows) != 1 {
		t.Fatalf("unanalysed: %+v", d)
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
	if len(stmts) != 1 || !strings.HasPrefix(stmts[0].SQL, "UPDATE market_clusters SET hhi") || !strings.HasPrefix(stmts[0].Args[0].(string), `[["budget",`) {
		t.Fatalf("%+v", stmts)
	}
	// BuildClusters agrees with the stage, so a cluster scores the same either way.
	built := BuildClusters([]RankedApp{{"budget", 1, 1, 5000, 3.9}, {"budget", 2, 2, 4000, 3.8}, {"budget", 3, 3, 3000, 4.0}})[0]
	if built.HHI != fs[0].HHI || built.Fragmentation != fs[0].Fragmentation {
		t.Fatalf("built %+v vs analysed %+v", built, fs[0])
	}
}
