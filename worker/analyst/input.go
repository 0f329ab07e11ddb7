package analyst

import (
	"context"
	"errors"
	"math"
	"strings"

	"storecrawl/worker/reviews"
)

// Bounds of what the input gathering reads.
const (
	// MaxLeaderReviews is the newest reviews of each leader read for its
	// themes (app_reviews_by_app).
	MaxLeaderReviews = 200
	// MaxClusterReviews is the newest reviews of the cluster's members read
	// for the cluster's themes.
	MaxClusterReviews = 1000
	// scoreScale turns the stored 0–100 opportunity score into the prompt's 0–1.
	scoreScale = 100
)

// ErrNoCluster / ErrNoLeaders: a brief that can never be written (failed,
// not retried).
var (
	ErrNoCluster = errors.New("analyst: no such cluster")
	ErrNoLeaders = errors.New("analyst: the cluster has no member apps")
)

const (
	inputClusterSQL = `SELECT c.cluster_id, c.app_count, COALESCE(o.score, 0) AS score, COALESCE(o.demand, 0) AS demand,
  COALESCE(o.fragmentation, 0) AS fragmentation
FROM market_clusters c LEFT JOIN opportunity_scores o ON o.cluster_id = c.cluster_id WHERE c.cluster_id = ?`
	inputLeadersSQL = `SELECT a.track_id, COALESCE(a.name, '') AS name, COALESCE(a.developer_name, '') AS developer_name,
  COALESCE(a.average_rating, 0) AS average_rating, COALESCE(a.rating_count, 0) AS rating_count, COALESCE(a.price, 0) AS price,
  a.competitiveness_score
FROM market_cluster_members m JOIN app_registry a ON a.track_id = m.track_id
WHERE m.cluster_id = ? ORDER BY m.position, m.track_id LIMIT ?`
	inputAppReviewsSQL = `SELECT id, app_id, country, rating, title, body, version, author_hash FROM app_reviews
WHERE app_id = ? ORDER BY reviewed_at DESC, id LIMIT ?`
	inputClusterReviewsSQL = `SELECT r.id, r.app_id, r.country, r.rating, r.title, r.body, r.version, r.author_hash
FROM market_cluster_members m JOIN app_reviews r ON r.app_id = m.track_id
WHERE m.cluster_id = ? ORDER BY r.reviewed_at DESC, r.id LIMIT ?`
	inputMemberNamesSQL = `SELECT COALESCE(a.name, '') AS name, COALESCE(a.developer_name, '') AS developer_name
FROM market_cluster_members m JOIN app_registry a ON a.track_id = m.track_id WHERE m.cluster_id = ?`
)

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

// GatherInput reads what the analyst shows the model for a cluster: its
// scores, its leaders (by position) with their complaint themes, and the
// cluster's themes, quoting example reviews. Deterministic for a given D1
// state.
func (s Store) GatherInput(ctx context.Context, clusterID string) (BriefInput, error) {
	var cl []struct {
		ClusterID     string  `json:"cluster_id"`
		Apps          int     `json:"app_count"`
		Score         float64 `json:"score"`
		Demand        float64 `json:"demand"`
		Fragmentation float64 `json:"fragmentation"`
	}
	if err := s.DB.Query(ctx, &cl, inputClusterSQL, clusterID); err != nil {
		return BriefInput{}, err
	}
	if len(cl) == 0 {
		return BriefInput{}, ErrNoCluster
	}
	in := BriefInput{ClusterID: clusterID, Label: clusterID, Keywords: []string{clusterID}, Apps: cl[0].Apps,
		Opportunity: round3(cl[0].Score / scoreScale), Demand: round3(cl[0].Demand), Fragmentation: round3(cl[0].Fragmentation)}
	var leaders []struct {
		TrackID         int64    `json:"track_id"`
		Name            string   `json:"name"`
		Developer       string   `json:"developer_name"`
		Rating          float64  `json:"average_rating"`
		RatingCount     int64    `json:"rating_count"`
		Price           float64  `json:"price"`
		Competitiveness *float64 `json:"competitiveness_score"`
	}
	if err := s.DB.Query(ctx, &leaders, inputLeadersSQL, clusterID, MaxLeaders); err != nil {
		return BriefInput{}, err
	}
	if len(leaders) == 0 {
		return BriefInput{}, ErrNoLeaders
	}
	var names []struct {
		Name      string `json:"name"`
		Developer string `json:"developer_name"`
	}
	if err := s.DB.Query(ctx, &names, inputMemberNamesSQL, clusterID); err != nil {
		return BriefInput{}, err
	}
	var exclude []string
	for _, n := range names {
		exclude = append(exclude, strings.Fields(strings.ToLower(n.Name+" "+n.Developer))...)
	}
	byID := map[string]reviews.Review{}
	var comp float64
	nComp := 0
	for _, l := range leaders {
		var rs []reviews.Review
		if err := s.DB.Query(ctx, &rs, inputAppReviewsSQL, l.TrackID, MaxLeaderReviews); err != nil {
			return BriefInput{}, err
		}
		for _, r := range rs {
			byID[r.ID] = r
		}
		themes := reviews.ComplaintThemes(reviews.ScoreAll(rs), reviews.ThemeOptions{Exclude: exclude})
		in.Leaders = append(in.Leaders, LeaderInput{AppID: l.TrackID, Name: l.Name, Developer: l.Developer,
			Rating: round3(l.Rating), RatingCount: l.RatingCount, Price: l.Price, Reviews: len(rs), Themes: ThemeInputs(themes, byID)})
		if l.Competitiveness != nil {
			comp += *l.Competitiveness
			nComp++
		}
	}
	if nComp > 0 {
		in.Competition = round3(comp / float64(nComp))
	}
	var rs []reviews.Review
	if err := s.DB.Query(ctx, &rs, inputClusterReviewsSQL, clusterID, MaxClusterReviews); err != nil {
		return BriefInput{}, err
	}
	for _, r := range rs {
		byID[r.ID] = r
	}
	in.ClusterThemes = ThemeInputs(reviews.ComplaintThemes(reviews.ScoreAll(rs), reviews.ThemeOptions{Exclude: exclude}), byID)
	return in.Bounded(), nil
}
