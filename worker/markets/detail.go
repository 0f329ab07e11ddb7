package markets

import (
	"context"
	"encoding/json"
	"sort"
	"strings"

	"storecrawl/worker/d1"
)

// Bounds of one market's page (GET /v1/clusters/{id}).
const (
	// DetailMembers is how many members (by rank) the detail lists.
	DetailMembers = 100
	// NeighbourApps is how many of the top members' other keywords are
	// read for the neighbouring markets, NeighbourKeywordsPerApp each.
	NeighbourApps           = 10
	NeighbourKeywordsPerApp = 30
	// Neighbours is how many neighbouring markets the detail names.
	Neighbours = 10
)

// detailSQL reads one market by primary key: its scores (null while not
// scored), its first DetailMembers members by rank, each with its share of
// the market's ratings.
var detailSQL = `SELECT json_object(` + scoreFields + `, 'top_share', c.top_share, 'computed_at', c.computed_at, 'scored_at', o.computed_at,
  'members', (SELECT json_group_array(json_object('track_id', m.track_id, 'rank', m.rank, 'name', a.name,
      'developer_name', a.developer_name, 'rating_count', a.rating_count, 'average_rating', a.average_rating,
      'share', CASE WHEN c.total_ratings > 0 THEN round(COALESCE(a.rating_count, 0) * 1.0 / c.total_ratings, 4) END))
    FROM (SELECT track_id, rank FROM crawl_rankings WHERE keyword = c.cluster_id ORDER BY rank LIMIT ` + itoa(DetailMembers) + `) m
    CROSS JOIN app_registry a ON a.track_id = m.track_id)) AS market
FROM market_clusters c LEFT JOIN opportunity_scores o ON o.cluster_id = c.cluster_id WHERE c.cluster_id = ?`

// neighbourSQL reads the other keywords of n top members, at most
// NeighbourKeywordsPerApp each (idx_crawl_rankings_track), each with its
// market's score when it has one.
func neighbourSQL(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = `SELECT * FROM (SELECT keyword FROM crawl_rankings WHERE track_id = ? LIMIT ` + itoa(NeighbourKeywordsPerApp) + `)`
	}
	return `SELECT k.keyword AS keyword, count(*) AS shared,
  (SELECT o.score FROM opportunity_scores o WHERE o.cluster_id = k.keyword) AS opportunity_score,
  EXISTS (SELECT 1 FROM market_clusters c WHERE c.cluster_id = k.keyword) AS is_market
FROM (` + unionAll(parts) + `) k WHERE k.keyword <> ? GROUP BY k.keyword`
}

// unionAll joins selects with UNION ALL, nested so that no compound holds
// more than d1.CompoundSelectMax terms (D1 refuses one that does): groups
// of that many, each a subquery, joined the same way until one is left.
func unionAll(parts []string) string {
	for len(parts) > d1.CompoundSelectMax {
		var groups []string
		for i := 0; i < len(parts); i += d1.CompoundSelectMax {
			groups = append(groups, "SELECT * FROM ("+strings.Join(parts[i:min(i+d1.CompoundSelectMax, len(parts))], "\nUNION ALL ")+")")
		}
		parts = groups
	}
	return strings.Join(parts, "\nUNION ALL ")
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// Neighbour is a market sharing apps with another.
type Neighbour struct {
	ClusterID        string   `json:"cluster_id"`
	SharedApps       int      `json:"shared_apps"`
	OpportunityScore *float64 `json:"opportunity_score"`
}

// Market reads one market (GET /v1/clusters/{id}): its scores, members with
// their share, and the neighbouring markets (those its top members also
// rank in, by apps shared). found is false for an unknown cluster.
func (m *Markets) Market(ctx context.Context, id string) (json.RawMessage, bool, error) {
	var rows []struct {
		Market string `json:"market"`
	}
	if err := m.DB.Query(ctx, &rows, detailSQL, id); err != nil || len(rows) == 0 {
		return nil, false, err
	}
	var market map[string]json.RawMessage
	if err := json.Unmarshal([]byte(rows[0].Market), &market); err != nil {
		return nil, false, err
	}
	var members []struct {
		TrackID int64 `json:"track_id"`
	}
	json.Unmarshal(market["members"], &members)
	neighbours := []Neighbour{}
	if n := min(len(members), NeighbourApps); n > 0 {
		args := make([]any, 0, n+1)
		for _, mb := range members[:n] {
			args = append(args, mb.TrackID)
		}
		var ns []struct {
			Keyword string   `json:"keyword"`
			Shared  int      `json:"shared"`
			Score   *float64 `json:"opportunity_score"`
			Market  int      `json:"is_market"`
		}
		if err := m.DB.Query(ctx, &ns, neighbourSQL(n), append(args, id)...); err != nil {
			return nil, false, err
		}
		for _, x := range ns {
			if x.Market == 1 {
				neighbours = append(neighbours, Neighbour{ClusterID: x.Keyword, SharedApps: x.Shared, OpportunityScore: x.Score})
			}
		}
		sort.Slice(neighbours, func(i, j int) bool {
			if neighbours[i].SharedApps != neighbours[j].SharedApps {
				return neighbours[i].SharedApps > neighbours[j].SharedApps
			}
			return neighbours[i].ClusterID < neighbours[j].ClusterID
		})
		neighbours = neighbours[:min(len(neighbours), Neighbours)]
	}
	market["neighbours"], _ = json.Marshal(neighbours)
	out, err := json.Marshal(market)
	return out, true, err
}

// DetailHotQueries are the market page's reads with sample arguments.
func DetailHotQueries() []d1.NamedQuery {
	return []d1.NamedQuery{
		{Name: "market detail", SQL: detailSQL, Args: []any{"budget"}},
		{Name: "market neighbours", SQL: neighbourSQL(NeighbourApps), Args: []any{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, "budget"}},
	}
}
