//go:build !js

package analyst

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"storecrawl/worker/d1"
	"storecrawl/worker/d1/d1test"
	"storecrawl/worker/markets"
	"storecrawl/worker/reviews"
)

// seedMarket writes a 50-app cluster through the markets' own statements
// (clustered, fragmentation analysed, scored), as the pipeline does; no
// member is enriched, so none has a competitiveness score.
func seedMarket(t *testing.T, db *d1.DB, drv *d1test.Driver, id string) markets.Cluster {
	t.Helper()
	ctx := context.Background()
	var rows []markets.RankedApp
	for i := range 50 {
		tid := int64(200000001 + i)
		ratings := int64(40000 / (i + 1))
		drv.Exec(t, `INSERT INTO app_registry (track_id, name, developer_name, rating_count, average_rating) VALUES (?, ?, 'Dev', ?, 3.9)`,
			tid, fmt.Sprintf("Tracker %d", i), ratings)
		rows = append(rows, markets.RankedApp{Keyword: id, TrackID: tid, Rank: i + 1, RatingCount: ratings, Rating: 3.9})
		// The search's ranking: a market's members are its keyword's rankings.
		drv.Exec(t, `INSERT INTO crawl_rankings (keyword, track_id, rank, seen_at) VALUES (?, ?, ?, ?)`, id, tid, i+1, d1.Time(day0))
	}
	cs := markets.BuildClusters(rows)
	if len(cs) != 1 {
		t.Fatalf("clusters %+v", cs)
	}
	counts := []int64{}
	for _, r := range rows {
		counts = append(counts, r.RatingCount)
	}
	fs := markets.AnalyzeFragmentation(map[string][]int64{id: counts})
	var stmts []d1.Stmt
	stmts = append(stmts, markets.ClusterStatements(cs, day0)...)
	stmts = append(stmts, markets.FragmentationStatements(fs, day0)...)
	stmts = append(stmts, markets.ScoreStatements(cs, day0)...)
	if _, err := db.Exec(ctx, stmts...); err != nil {
		t.Fatal(err)
	}
	return cs[0]
}

// The brief's input shows a cluster's scores exactly as GET
// /v1/opportunities serves them (markets.List is that endpoint's source):
// the opportunity score on its 0–100 scale, not divided by 100.
func TestBriefInputScoresEqualTheAPIs(t *testing.T) {
	db, drv := d1test.New(t)
	c := seedMarket(t, db, drv, "habit tracker")
	ctx := context.Background()
	listed, _, err := (&markets.Markets{DB: db}).List(ctx, true, 20, "")
	if err != nil || len(listed) != 1 {
		t.Fatalf("list: %v %d", err, len(listed))
	}
	var api markets.Scores
	if err := json.Unmarshal(listed[0], &api); err != nil {
		t.Fatal(err)
	}
	costCtx, cost := d1.WithCost(ctx)
	in, err := Store{DB: db}.GatherInput(costCtx, "habit tracker")
	if err != nil {
		t.Fatal(err)
	}
	// What one gathering reads for a 50-app cluster without reviews: the
	// scores (1 row), the leaders (5), the members' names (50), each
	// leader's reviews and the cluster's (none), whether any was fetched (1).
	if v := cost.View(); v.Queries != 5+MaxLeaders || v.RowsRead != 1+MaxLeaders+50+1 {
		t.Errorf("gathering read %+v", v)
	}
	if fmt.Sprintf("%+v", derefScores(in.Market)) != fmt.Sprintf("%+v", derefScores(api)) {
		t.Fatalf("brief input %+v\nAPI answer  %+v", derefScores(in.Market), derefScores(api))
	}
	if in.Market.OpportunityScore == nil || *in.Market.OpportunityScore != c.OpportunityScore || c.OpportunityScore <= 1 {
		t.Fatalf("opportunity %v, want the scored %v on the 0–100 scale", in.Market.OpportunityScore, c.OpportunityScore)
	}
	// In the prompt the model reads the same number.
	_, shown, err := BuildBriefPrompt(in)
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf(`"opportunity_score": %v`, c.OpportunityScore); !strings.Contains(string(shown), want) {
		t.Errorf("prompt input lacks %s:\n%s", want, shown)
	}
	// No leader is enriched: competitiveness is unknown (null), never 0.00.
	if in.LeadersCompetitiveness != nil || in.CompetitivenessScored != 0 || !strings.Contains(string(shown), `"leaders_competitiveness": null`) {
		t.Errorf("unscored leaders: competitiveness %v (%d scored)", in.LeadersCompetitiveness, in.CompetitivenessScored)
	}
	// Two leaders enriched and scored (0–100, as GET /v1/apps/{id} serves it): their mean.
	err = (&markets.Markets{DB: db}).SaveAppScores(ctx, map[int64]markets.AppScores{
		200000001: {Demand: 1, Competitiveness: 71.4}, 200000002: {Demand: 1, Competitiveness: 58.2}}, day0)
	if err != nil {
		t.Fatal(err)
	}
	in, _ = Store{DB: db}.GatherInput(ctx, "habit tracker")
	if in.LeadersCompetitiveness == nil || *in.LeadersCompetitiveness != 64.8 || in.CompetitivenessScored != 2 ||
		in.Leaders[0].Competitiveness == nil || *in.Leaders[0].Competitiveness != 71.4 || in.Leaders[2].Competitiveness != nil {
		t.Errorf("scored leaders: %v (%d scored), leaders %+v", in.LeadersCompetitiveness, in.CompetitivenessScored, in.Leaders)
	}
}

type plainScores struct {
	ID                                      string
	Opp, Demand, Frag, HHI, Gap, AvgRating  float64
	Apps                                    int
	Ratings                                 int64
	OppNil, DemNil, FragNil, HHINil, GapNil bool
}

func derefScores(s markets.Scores) plainScores {
	v := func(p *float64) (float64, bool) {
		if p == nil {
			return 0, true
		}
		return *p, false
	}
	p := plainScores{ID: s.ClusterID, AvgRating: s.AvgRating, Apps: s.AppCount, Ratings: s.TotalRatings}
	p.Opp, p.OppNil = v(s.OpportunityScore)
	p.Demand, p.DemNil = v(s.Demand)
	p.Frag, p.FragNil = v(s.Fragmentation)
	p.HHI, p.HHINil = v(s.HHI)
	p.Gap, p.GapNil = v(s.QualityGap)
	return p
}

// A 50-app cluster with one member's reviews fetched is not briefed
// automatically: its leaders (those the brief describes) have none yet.
func TestTopClustersWaitForTheirLeadersReviews(t *testing.T) {
	a, drv, f, _, _ := newAnalyst(t, 1)
	drv.Exec(t, `DELETE FROM analyst_briefs`)
	drv.Exec(t, `DELETE FROM opportunity_scores`)
	seedMarket(t, a.Store.DB, drv, "habit tracker")
	ts := d1.Time(day0)
	drv.Exec(t, `INSERT INTO review_fetches (app_id, country, fetched_at, reviews) VALUES (200000040, 'us', ?, 10)`, ts)
	ctx := context.Background()
	if res := a.Run(ctx); res.Queued != 0 || f.calls != 0 {
		t.Fatalf("one fetched member of 50 queued a brief: %+v", res)
	}
	for i := range MaxLeaders - 1 {
		drv.Exec(t, `INSERT INTO review_fetches (app_id, country, fetched_at, reviews) VALUES (?, 'us', ?, 0)`, 200000001+i, ts)
	}
	if res := a.Run(ctx); res.Queued != 0 {
		t.Fatalf("a leader without fetched reviews queued a brief: %+v", res)
	}
	drv.Exec(t, `INSERT INTO review_fetches (app_id, country, fetched_at, reviews) VALUES (?, 'us', ?, 0)`, 200000001+MaxLeaders-1, ts)
	if res := a.Run(ctx); res.Queued != 1 || res.Done != 1 {
		t.Fatalf("leaders fetched: %+v", res)
	}
	v, _, _ := a.Brief(ctx, "habit tracker")
	if v.ThemesMissingReason != NoReviewsStored {
		t.Errorf("fetched, none stored: reason %q", v.ThemesMissingReason)
	}
}

// Asked for explicitly, a cluster whose reviews were never fetched gets a
// brief that says why it has no themes: in its input (so the model is told,
// not handed empty lists) and in the answer of GET /v1/opportunities/{id}/brief.
func TestRequestedBriefWithoutReviewsSaysWhy(t *testing.T) {
	a, drv, f, _, _ := newAnalyst(t, 1)
	seedMarket(t, a.Store.DB, drv, "habit tracker")
	ctx := context.Background()
	if _, found, created, err := a.Request(ctx, "habit tracker"); !found || !created || err != nil {
		t.Fatalf("request: %v %v %v", found, created, err)
	}
	drv.Exec(t, `DELETE FROM analyst_briefs WHERE cluster_id != 'habit tracker'`)
	drv.Exec(t, `DELETE FROM opportunity_scores WHERE cluster_id != 'habit tracker'`)
	if res := a.Run(ctx); res.Done != 1 || f.calls != 1 {
		t.Fatalf("run %+v", res)
	}
	v, ok, err := a.Brief(ctx, "habit tracker")
	if err != nil || !ok || v.State != StateDone {
		t.Fatalf("brief %v %v %+v", ok, err, v)
	}
	if v.ThemesMissingReason != NoReviewsFetched {
		t.Errorf("themes_missing_reason %q, want %q", v.ThemesMissingReason, NoReviewsFetched)
	}
	var in map[string]any
	if err := json.Unmarshal(v.Input, &in); err != nil {
		t.Fatal(err)
	}
	if _, has := in["cluster_complaint_themes"]; has || in["themes_missing_reason"] != NoReviewsFetched {
		t.Errorf("input shows empty themes instead of the reason: %v", in)
	}
	for _, l := range in["leaders"].([]any) {
		l := l.(map[string]any)
		if _, has := l["complaint_themes"]; has || l["themes_missing_reason"] != NoReviewsFetched {
			t.Errorf("leader %v: %v", l["app_id"], l)
		}
	}
	row, _, _ := a.Store.Latest(ctx, "habit tracker")
	if !strings.Contains(row.MessagesJSON, "themes_missing_reason") {
		t.Error("the prompt does not tell the model why there are no themes")
	}
}

func TestThemesMissing(t *testing.T) {
	for _, c := range []struct {
		fetched      bool
		read, themes int
		want         string
	}{
		{true, 40, 2, ""}, {false, 0, 0, NoReviewsFetched}, {true, 0, 0, NoReviewsStored}, {true, 40, 0, NoThemeRecurs},
	} {
		if got := themesMissing(c.fetched, c.read, c.themes); got != c.want {
			t.Errorf("themesMissing(%v, %d, %d) = %q, want %q", c.fetched, c.read, c.themes, got, c.want)
		}
	}
}

// The reviews an app keeps (reviews.KeptPerApp) cover every read the
// input makes of one app: its leader's newest and the cluster's newest,
// which one app can fill.
func TestReadsFitTheReviewsKept(t *testing.T) {
	if MaxLeaderReviews > reviews.KeptPerApp || MaxClusterReviews > reviews.KeptPerApp {
		t.Fatalf("the input reads %d a leader and %d a cluster; an app keeps %d", MaxLeaderReviews, MaxClusterReviews, reviews.KeptPerApp)
	}
}
