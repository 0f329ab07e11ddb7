package analyst

import (
	"context"
	"errors"
	"math"
	"strings"

	"storecrawl/worker/markets"
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
)

// Why a brief has no complaint themes (themes_missing_reason).
const (
	NoReviewsFetched = "no reviews fetched yet: reviews-refresh has not reached these apps"
	NoReviewsStored  = "reviews were fetched but none was stored (the apps have no recent reviews)"
	NoThemeRecurs    = "reviews were read but no complaint recurs often enough to be a theme"
)

// ErrNoCluster / ErrNoLeaders: a brief that can never be written (failed,
// not retried).
var (
	ErrNoCluster = errors.New("analyst: no such cluster")
	ErrNoLeaders = errors.New("analyst: the cluster has no member apps")
)

const (
	inputLeadersSQL = `SELECT a.track_id, COALESCE(a.name, '') AS name, COALESCE(a.developer_name, '') AS developer_name,
  COALESCE(a.average_rating, 0) AS average_rating, COALESCE(a.rating_count, 0) AS rating_count, COALESCE(a.price, 0) AS price,
  a.competitiveness_score, EXISTS (SELECT 1 FROM review_fetches f WHERE f.app_id = a.track_id) AS fetched
FROM crawl_rankings m JOIN app_registry a ON a.track_id = m.track_id
WHERE m.keyword = ? ORDER BY m.rank, m.track_id LIMIT ?`
	inputAppReviewsSQL = `SELECT id, app_id, country, rating, title, body, version, author_hash FROM app_reviews
WHERE app_id = ? ORDER BY reviewed_at DESC, id LIMIT ?`
	inputClusterReviewsSQL = `SELECT r.id, r.app_id, r.country, r.rating, r.title, r.body, r.version, r.author_hash
FROM crawl_rankings m JOIN app_reviews r ON r.app_id = m.track_id
WHERE m.keyword = ? ORDER BY r.reviewed_at DESC, r.id LIMIT ?`
	// inputClusterFetchedSQL: whether any member's reviews were fetched.
	inputClusterFetchedSQL = `SELECT EXISTS (SELECT 1 FROM crawl_rankings m JOIN review_fetches f ON f.app_id = m.track_id
WHERE m.keyword = ?) AS n`
	inputMemberNamesSQL = `SELECT COALESCE(a.name, '') AS name, COALESCE(a.developer_name, '') AS developer_name
FROM crawl_rankings m JOIN app_registry a ON a.track_id = m.track_id WHERE m.keyword = ?`
)

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

// themesMissing says why a set of apps has no complaint themes: none of
// them fetched, reviews fetched but none stored, or none recurs.
func themesMissing(fetched bool, reviewsRead, themes int) string {
	switch {
	case themes > 0:
		return ""
	case !fetched:
		return NoReviewsFetched
	case reviewsRead == 0:
		return NoReviewsStored
	}
	return NoThemeRecurs
}

// GatherInput reads what the analyst shows the model for a cluster: its
// scores as the API serves them, its leaders (by position) with their
// complaint themes, and the cluster's themes, quoting example reviews; where
// there are no themes, why. Deterministic for a given D1 state.
func (s Store) GatherInput(ctx context.Context, clusterID string) (BriefInput, error) {
	sc, ok, err := markets.ReadScores(ctx, s.DB, clusterID)
	if err != nil {
		return BriefInput{}, err
	}
	if !ok {
		return BriefInput{}, ErrNoCluster
	}
	in := BriefInput{ClusterID: clusterID, Label: clusterID, Keywords: []string{clusterID}, Market: sc}
	var leaders []struct {
		TrackID         int64    `json:"track_id"`
		Name            string   `json:"name"`
		Developer       string   `json:"developer_name"`
		Rating          float64  `json:"average_rating"`
		RatingCount     int64    `json:"rating_count"`
		Price           float64  `json:"price"`
		Competitiveness *float64 `json:"competitiveness_score"`
		Fetched         int      `json:"fetched"`
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
	comps := make([]*float64, 0, len(leaders))
	for _, l := range leaders {
		var rs []reviews.Review
		if err := s.DB.Query(ctx, &rs, inputAppReviewsSQL, l.TrackID, MaxLeaderReviews); err != nil {
			return BriefInput{}, err
		}
		for _, r := range rs {
			byID[r.ID] = r
		}
		themes := ThemeInputs(reviews.ComplaintThemes(reviews.ScoreAll(rs), reviews.ThemeOptions{Exclude: exclude}), byID)
		in.Leaders = append(in.Leaders, LeaderInput{AppID: l.TrackID, Name: l.Name, Developer: l.Developer,
			Rating: round3(l.Rating), RatingCount: l.RatingCount, Price: l.Price, Competitiveness: l.Competitiveness,
			Reviews: len(rs), Themes: themes, ThemesMissingReason: themesMissing(l.Fetched != 0, len(rs), len(themes))})
		comps = append(comps, l.Competitiveness)
	}
	in.LeadersCompetitiveness, in.CompetitivenessScored = markets.MeanCompetitiveness(comps)
	var rs []reviews.Review
	if err := s.DB.Query(ctx, &rs, inputClusterReviewsSQL, clusterID, MaxClusterReviews); err != nil {
		return BriefInput{}, err
	}
	for _, r := range rs {
		byID[r.ID] = r
	}
	in.ClusterThemes = ThemeInputs(reviews.ComplaintThemes(reviews.ScoreAll(rs), reviews.ThemeOptions{Exclude: exclude}), byID)
	var fetched []struct {
		N int `json:"n"`
	}
	if err := s.DB.Query(ctx, &fetched, inputClusterFetchedSQL, clusterID); err != nil {
		return BriefInput{}, err
	}
	in.ThemesMissingReason = themesMissing(len(fetched) > 0 && fetched[0].N > 0, len(rs), len(in.ClusterThemes))
	return in.Bounded(), nil
}
