package worker

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
	c := Cluster{ID: "x", TotalRatings: 12000, AvgRating: 3.9, TopShare: 0.4}
	c.Score()
	built := BuildClusters([]RankedApp{{"x", 1, 1, 4800, 3.9}, {"x", 2, 2, 3600, 3.9}, {"x", 3, 3, 3600, 3.9}})[0]
	if c.OpportunityScore != built.OpportunityScore || len(ScoreStatements([]Cluster{c}, time.Now())) != 1 {
		t.Fatalf("%v vs %v", c.OpportunityScore, built.OpportunityScore)
	}
}
